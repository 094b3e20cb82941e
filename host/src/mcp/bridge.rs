//! The MCP bridge world and component (`carapace:mcp`): a fresh instance
//! per operation, holding only the connection the host lends it.
//!
//! The host owns the server's process and its pipes ([`McpChannel`]); it only
//! moves lines. A fresh bridge instance, with no capability but the lent
//! connection, performs each operation — handshake, one page of
//! `tools/list`, one `tools/call` — and parses everything the server says.
//! Operations on one connection never overlap (the channel's lock): a reply
//! can only reach the instance that asked for it.

use super::channel::{McpChannel, McpLine};
use super::records::{
    HttpEndpoint, McpCallOutcome, McpEvents, McpPrompt, McpPromptMessage, McpResource, McpSession,
    McpTool, ResourceList,
};
use super::requests::{ElicitAnswer, ElicitRequest, McpProgress, ServerRequests};
use crate::sandbox::world::{
    CallCore, CallIo, EngineInner, HttpParts, World, link_file_streams, wasi_http_view, wasi_view,
};
use crate::sandbox::{CacheOutcome, CallClock, CallLimits, Grant, Sandbox, SandboxError};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::{HasSelf, Linker};

mod bindings {
    wasmtime::component::bindgen!({
        world: "mcp-bridge",
        path: "../wit/mcp/v0.2.0",
        imports: { default: async },
        exports: { default: async },
    });
}

use bindings::carapace::mcp::{client, transport, types};
use bindings::{McpBridge as Bindings, McpBridgePre};

/// The bridge world's context: WASI (with no grant), `wasi:http` to the one
/// origin of an HTTP server, and the MCP transport lent for one operation.
/// Only the bridge links the transport; tools and hooks cannot.
pub(crate) struct BridgeState {
    core: CallCore,
    http: HttpParts,
    mcp: Option<Arc<dyn McpLine>>,
    /// Who hears the server's progress and answers its questions during
    /// this operation; none: progress is dropped, questions cancelled.
    requests: Option<Arc<dyn ServerRequests>>,
    /// The operation's deadline, touched by progress and paused while
    /// the user answers.
    clock: Option<Arc<CallClock>>,
    /// The server's configured name.
    server: String,
}

wasi_view!(BridgeState);
wasi_http_view!(BridgeState);

impl World for BridgeState {
    fn link(linker: &mut Linker<Self>) -> Result<(), SandboxError> {
        link_file_streams(linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
            .map_err(SandboxError::setup("linking wasi:http"))?;
        transport::add_to_linker::<BridgeState, HasSelf<BridgeState>>(linker, |state| state)
            .map_err(SandboxError::setup("linking carapace:mcp/transport"))?;
        client::add_to_linker::<BridgeState, HasSelf<BridgeState>>(linker, |state| state)
            .map_err(SandboxError::setup("linking carapace:mcp/client"))
    }

    fn core(&mut self) -> &mut CallCore {
        &mut self.core
    }
}

impl transport::Host for BridgeState {
    async fn send(&mut self, message: String) -> Result<(), String> {
        match &self.mcp {
            Some(channel) => channel.send(&message).await,
            None => Err("no MCP connection is lent to this instance".into()),
        }
    }

    async fn receive(&mut self, timeout_ms: u32) -> Result<Option<String>, String> {
        match &self.mcp {
            Some(channel) => {
                channel
                    .receive(Duration::from_millis(u64::from(timeout_ms)))
                    .await
            }
            None => Err("no MCP connection is lent to this instance".into()),
        }
    }
}

impl types::Host for BridgeState {}

impl client::Host for BridgeState {
    async fn report_progress(&mut self, update: types::Progress) {
        if let Some(clock) = &self.clock {
            clock.touch();
        }
        if let Some(requests) = &self.requests {
            requests.progress(McpProgress {
                progress: update.progress,
                total: update.total,
                message: update.message,
            });
        }
    }

    async fn elicit(&mut self, request: types::Elicitation) -> types::ElicitAnswer {
        let Some(requests) = self.requests.clone() else {
            return types::ElicitAnswer::Cancel;
        };
        let request = ElicitRequest {
            server: self.server.clone(),
            message: request.message,
            url: request.url,
            elicitation_id: request.elicitation_id,
            requested_schema: request
                .requested_schema
                .and_then(|s| serde_json::from_str(&s).ok()),
        };
        // The user's time is not the server's: the deadline waits.
        let _paused = self.clock.as_ref().map(|c| c.pause());
        match requests.elicit(request).await {
            ElicitAnswer::Accept(content) => {
                types::ElicitAnswer::Accept(content.map(|c| c.to_string()))
            }
            ElicitAnswer::Decline => types::ElicitAnswer::Decline,
            ElicitAnswer::Cancel => types::ElicitAnswer::Cancel,
        }
    }
}

/// How bridge instances reach one server: the lent stdio connection, or
/// HTTP to its origin (the one host their grant names). Operations on one
/// server never overlap.
pub struct McpLink {
    name: String,
    channel: Option<Arc<dyn McpLine>>,
    grant: Grant,
    operation: tokio::sync::Mutex<()>,
    /// What the server said unasked, gathered from every operation until
    /// taken.
    heard: std::sync::Mutex<McpEvents>,
}

impl McpLink {
    pub fn stdio(channel: Arc<McpChannel>) -> Arc<Self> {
        let name = channel.server.clone();
        Self::lent(&name, channel)
    }

    /// Bridge instances for this link are lent `line` and nothing else.
    pub fn lent(name: &str, line: Arc<dyn McpLine>) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_string(),
            channel: Some(line),
            grant: Grant::none(),
            operation: tokio::sync::Mutex::new(()),
            heard: std::sync::Mutex::default(),
        })
    }

    /// Bridge instances for this link may reach `url`'s host and port,
    /// nothing else — even when that is an internal address (a local
    /// server): the user configured it, or trusted the project that did.
    pub fn http(name: &str, url: &str) -> Result<Arc<Self>, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("`{url}` is not an http(s) URL"));
        }
        let host = parsed.host_str().ok_or(format!("`{url}` has no host"))?;
        let authority = match parsed.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let pattern = crate::sandbox::HostPattern::parse(&authority).map_err(|e| e.to_string())?;
        Ok(Arc::new(Self {
            name: name.to_string(),
            channel: None,
            // The user configured this server: its address is reached even
            // when it is internal (a local server).
            grant: Grant::none().http_internal(pattern),
            operation: tokio::sync::Mutex::new(()),
            heard: std::sync::Mutex::default(),
        }))
    }

    /// What the server said unasked since it was last taken.
    pub fn take_heard(&self) -> McpEvents {
        self.heard
            .lock()
            .map(|mut heard| std::mem::take(&mut *heard))
            .unwrap_or_default()
    }

    fn note(&self, events: types::Events) {
        if let Ok(mut heard) = self.heard.lock() {
            heard.merge(events.tools_changed, events.resources_updated);
        }
    }

    pub async fn shutdown(&self) {
        if let Some(channel) = &self.channel {
            channel.shutdown().await;
        }
    }
}

/// Why an operation on a server gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// The server (or the bridge speaking to it) said what went wrong.
    #[error("{0}")]
    Server(String),
    /// The bridge's instance was stopped or could not run.
    #[error("{}", .0.describe())]
    Sandbox(SandboxError),
}

/// How many times its deadline an operation may run in all when the
/// server keeps reporting progress (each report restarts the deadline).
pub const MAX_DEADLINE_TIMES: u32 = 10;

/// The bridge, built from `plugins/mcp-bridge` and embedded in the binary.
pub const BRIDGE_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/mcp-bridge.wasm"));

/// The bridge component, compiled and linked once.
#[derive(Clone)]
pub struct McpBridge {
    engine: Arc<EngineInner>,
    pre: McpBridgePre<BridgeState>,
    load_outcome: CacheOutcome,
}

impl McpBridge {
    pub fn load(sandbox: &Sandbox, wasm: &[u8]) -> Result<Self, SandboxError> {
        let (instance_pre, load_outcome) = sandbox.link::<BridgeState>(wasm)?;
        let pre = McpBridgePre::new(instance_pre).map_err(SandboxError::link("carapace:mcp"))?;
        Ok(Self {
            engine: sandbox.sandbox_engine().inner().clone(),
            pre,
            load_outcome,
        })
    }

    pub fn load_outcome(&self) -> CacheOutcome {
        self.load_outcome
    }

    /// Runs one operation in a fresh instance holding only `channel`.
    async fn run<R: Send + 'static>(
        &self,
        link: &McpLink,
        limits: &CallLimits,
        f: impl for<'a> FnOnce(
            &'a Bindings,
            &'a mut wasmtime::Store<BridgeState>,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = wasmtime::Result<Result<R, String>>> + Send + 'a>,
        > + Send,
    ) -> Result<R, BridgeError> {
        self.run_answering(link, limits, None, f).await
    }

    /// [`Self::run`], with `requests` hearing the server's progress
    /// (which also restarts the deadline, up to ten times it) and
    /// answering its questions (the deadline waits meanwhile).
    async fn run_answering<R: Send + 'static>(
        &self,
        link: &McpLink,
        limits: &CallLimits,
        requests: Option<Arc<dyn ServerRequests>>,
        f: impl for<'a> FnOnce(
            &'a Bindings,
            &'a mut wasmtime::Store<BridgeState>,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = wasmtime::Result<Result<R, String>>> + Send + 'a>,
        > + Send,
    ) -> Result<R, BridgeError> {
        let _operation = link.operation.lock().await;
        let pre = self.pre.clone();
        let http = HttpParts::for_grant(&link.grant);
        let mcp = link.channel.clone();
        let clock = Arc::new(CallClock::idle(limits.deadline * MAX_DEADLINE_TIMES));
        let io = CallIo {
            clock: Some(clock.clone()),
            ..CallIo::default()
        };
        let server = link.name.clone();
        let (value, _) = self
            .engine
            .execute(
                &format!("mcp:{}", link.name),
                &link.grant,
                limits,
                io,
                move |core| BridgeState {
                    core,
                    http,
                    mcp,
                    requests,
                    clock: Some(clock),
                    server,
                },
                move |store| Box::pin(async move { pre.instantiate_async(store).await }),
                f,
            )
            .await?;
        value.map_err(BridgeError::Server)
    }

    pub async fn initialize(
        &self,
        link: &McpLink,
        endpoint: Option<HttpEndpoint>,
        limits: &CallLimits,
        request_id: u64,
    ) -> Result<McpSession, BridgeError> {
        let endpoint = endpoint.map(|e| types::HttpEndpoint {
            url: e.url,
            headers: e.headers,
        });
        let answer = self
            .run(link, limits, move |b, store| {
                Box::pin(async move {
                    b.carapace_mcp_bridge()
                        .call_initialize(
                            store,
                            endpoint.as_ref(),
                            "carapace",
                            env!("CARGO_PKG_VERSION"),
                            request_id,
                        )
                        .await
                })
            })
            .await?;
        Ok(answer).map(|s| McpSession {
            endpoint: s.endpoint.map(|e| HttpEndpoint {
                url: e.url,
                headers: e.headers,
            }),
            http_session: s.http_session,
            protocol_version: s.protocol_version,
            server_name: s.server_name,
            server_version: s.server_version,
            instructions: s.instructions,
            tools_list_changed: s.tools_list_changed,
            resources: s.resources,
            resources_subscribe: s.resources_subscribe,
            prompts: s.prompts,
        })
    }

    /// Every tool, following `nextCursor` (at most `max_pages` pages).
    pub async fn list_tools(
        &self,
        link: &McpLink,
        session: &McpSession,
        limits: &CallLimits,
        next_id: &(dyn Fn() -> u64 + Sync),
        max_pages: usize,
    ) -> Result<Vec<McpTool>, BridgeError> {
        all_pages(("tool list", max_pages), |cursor| async move {
            let (wit_session, id) = (to_wit(session), next_id());
            let (page, events) = self
                .run(link, limits, move |b, store| {
                    Box::pin(async move {
                        b.carapace_mcp_bridge()
                            .call_list_tools(store, &wit_session, cursor.as_deref(), id)
                            .await
                    })
                })
                .await?;
            link.note(events);
            let tools = page.tools.into_iter().map(|t| McpTool {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
                read_only: t.read_only,
            });
            Ok((tools.collect(), page.next_cursor))
        })
        .await
    }

    /// Every resource (or template), following `nextCursor`.
    pub async fn list_resources(
        &self,
        link: &McpLink,
        session: &McpSession,
        limits: &CallLimits,
        (list, next_id): (ResourceList, &(dyn Fn() -> u64 + Sync)),
        max_pages: usize,
    ) -> Result<Vec<McpResource>, BridgeError> {
        all_pages(("resource list", max_pages), |cursor| async move {
            let (wit_session, id) = (to_wit(session), next_id());
            let (page, events) = self
                .run(link, limits, move |b, store| {
                    Box::pin(async move {
                        let bridge = b.carapace_mcp_bridge();
                        let cursor = cursor.as_deref();
                        match list {
                            ResourceList::Resources => {
                                bridge
                                    .call_list_resources(store, &wit_session, cursor, id)
                                    .await
                            }
                            ResourceList::Templates => {
                                bridge
                                    .call_list_resource_templates(store, &wit_session, cursor, id)
                                    .await
                            }
                        }
                    })
                })
                .await?;
            link.note(events);
            let resources = page.resources.into_iter().map(|r| McpResource {
                uri: r.uri,
                name: r.name,
                entry: r.entry,
            });
            Ok((resources.collect(), page.next_cursor))
        })
        .await
    }

    /// `resources/read`: `{"contents": [...]}` as the bridge wrote it.
    pub async fn read_resource(
        &self,
        link: &McpLink,
        session: &McpSession,
        limits: &CallLimits,
        request_id: u64,
        uri: &str,
    ) -> Result<String, BridgeError> {
        let (wit_session, uri) = (to_wit(session), uri.to_string());
        let (contents, events) = self
            .run(link, limits, move |b, store| {
                Box::pin(async move {
                    b.carapace_mcp_bridge()
                        .call_read_resource(store, &wit_session, &uri, request_id)
                        .await
                })
            })
            .await?;
        link.note(events);
        Ok(contents)
    }

    /// Every prompt, following `nextCursor`.
    pub async fn list_prompts(
        &self,
        link: &McpLink,
        session: &McpSession,
        limits: &CallLimits,
        next_id: &(dyn Fn() -> u64 + Sync),
        max_pages: usize,
    ) -> Result<Vec<McpPrompt>, BridgeError> {
        all_pages(("prompt list", max_pages), |cursor| async move {
            let (wit_session, id) = (to_wit(session), next_id());
            let (page, events) = self
                .run(link, limits, move |b, store| {
                    Box::pin(async move {
                        b.carapace_mcp_bridge()
                            .call_list_prompts(store, &wit_session, cursor.as_deref(), id)
                            .await
                    })
                })
                .await?;
            link.note(events);
            let prompts = page.prompts.into_iter().map(|p| McpPrompt {
                name: p.name,
                description: p.description,
                arguments: (p.arguments.into_iter())
                    .map(|a| (a.name, a.description, a.required))
                    .collect(),
            });
            Ok((prompts.collect(), page.next_cursor))
        })
        .await
    }

    /// `prompts/get`: the prompt's messages, filled in with `arguments`.
    pub async fn get_prompt(
        &self,
        link: &McpLink,
        session: &McpSession,
        limits: &CallLimits,
        request_id: u64,
        (name, arguments): (&str, Vec<(String, String)>),
    ) -> Result<Vec<McpPromptMessage>, BridgeError> {
        let (wit_session, name) = (to_wit(session), name.to_string());
        let (messages, events) = self
            .run(link, limits, move |b, store| {
                Box::pin(async move {
                    b.carapace_mcp_bridge()
                        .call_get_prompt(store, &wit_session, &name, &arguments, request_id)
                        .await
                })
            })
            .await?;
        link.note(events);
        Ok(messages
            .into_iter()
            .map(|m| McpPromptMessage {
                assistant: m.role == "assistant",
                content: content(m.content),
            })
            .collect())
    }

    pub async fn call_tool(
        &self,
        (link, session): (&McpLink, &McpSession),
        limits: &CallLimits,
        request_id: u64,
        (name, arguments): (&str, &str),
        requests: Option<Arc<dyn ServerRequests>>,
    ) -> Result<McpCallOutcome, BridgeError> {
        let wit_session = to_wit(session);
        let (name, arguments) = (name.to_string(), arguments.to_string());
        let answer = self
            .run_answering(link, limits, requests, move |b, store| {
                Box::pin(async move {
                    b.carapace_mcp_bridge()
                        .call_call_tool(store, &wit_session, &name, &arguments, request_id)
                        .await
                })
            })
            .await?;
        let (outcome, events) = answer;
        link.note(events);
        Ok(McpCallOutcome {
            content: outcome.content.into_iter().map(content).collect(),
            structured: outcome.structured,
            is_error: outcome.is_error,
        })
    }

    /// Reads what the server said unasked since the last operation (into
    /// the link's [`McpLink::take_heard`]).
    pub async fn drain(
        &self,
        link: &McpLink,
        session: &McpSession,
        limits: &CallLimits,
    ) -> Result<(), BridgeError> {
        let wit_session = to_wit(session);
        let events = self
            .run(link, limits, move |b, store| {
                Box::pin(async move {
                    b.carapace_mcp_bridge()
                        .call_drain(store, &wit_session)
                        .await
                })
            })
            .await?;
        link.note(events);
        Ok(())
    }

    /// Asks the server to say when `uri` changes.
    pub async fn subscribe_resource(
        &self,
        (link, session): (&McpLink, &McpSession),
        limits: &CallLimits,
        request_id: u64,
        uri: &str,
    ) -> Result<(), BridgeError> {
        let (wit_session, uri) = (to_wit(session), uri.to_string());
        let events = self
            .run(link, limits, move |b, store| {
                Box::pin(async move {
                    b.carapace_mcp_bridge()
                        .call_subscribe_resource(store, &wit_session, &uri, request_id)
                        .await
                })
            })
            .await?;
        link.note(events);
        Ok(())
    }
}

/// Every page of a listing, each asked with the cursor the one before
/// gave, until one gives none (or the same again); a listing longer than
/// `max_pages` is refused rather than followed for ever.
async fn all_pages<T, Page>(
    (what, max_pages): (&str, usize),
    mut page: impl FnMut(Option<String>) -> Page,
) -> Result<Vec<T>, BridgeError>
where
    Page: std::future::Future<Output = Result<(Vec<T>, Option<String>), BridgeError>>,
{
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..max_pages {
        let (items, next) = page(cursor.clone()).await?;
        all.extend(items);
        match next {
            Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
            _ => return Ok(all),
        }
    }
    Err(BridgeError::Server(format!(
        "the server's {what} goes on for more than {max_pages} pages"
    )))
}

fn content(content: types::Content) -> crate::sandbox::ToolContent {
    match content {
        types::Content::Text(text) => crate::sandbox::ToolContent::Text(text),
        types::Content::Image(image) => crate::sandbox::ToolContent::Image {
            media_type: image.media_type,
            data: image.data,
        },
    }
}

fn to_wit(session: &McpSession) -> types::Session {
    types::Session {
        endpoint: session.endpoint.as_ref().map(|e| types::HttpEndpoint {
            url: e.url.clone(),
            headers: e.headers.clone(),
        }),
        http_session: session.http_session.clone(),
        protocol_version: session.protocol_version.clone(),
        server_name: session.server_name.clone(),
        server_version: session.server_version.clone(),
        instructions: session.instructions.clone(),
        tools_list_changed: session.tools_list_changed,
        resources: session.resources,
        resources_subscribe: session.resources_subscribe,
        prompts: session.prompts,
    }
}

impl From<SandboxError> for BridgeError {
    fn from(e: SandboxError) -> Self {
        BridgeError::Sandbox(e)
    }
}
