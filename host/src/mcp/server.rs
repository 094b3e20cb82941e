//! One MCP server, connected through the bridge: started, initialised, its
//! tools listed, its calls made — every step in a fresh bridge instance.

use super::bridge::{BridgeError, McpBridge, McpLink};
use super::channel::McpChannel;
use super::config::{ServerConfig, Transport};
use super::records::{
    HttpEndpoint, McpCallOutcome, McpPrompt, McpPromptMessage, McpResource, McpSession, McpTool,
    ResourceList,
};
use super::watch::{Followed, ResourceWatch};
use crate::sandbox::process::spawn_confined;
use crate::sandbox::{CallLimits, ProcessConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Pages of `tools/list` followed before giving up on a server.
const MAX_TOOL_PAGES: usize = 100;

/// carapace's sign-in to an HTTP server, and the client its token is
/// refreshed with.
struct SignedIn {
    store: super::Credentials,
    url: String,
    http: reqwest::Client,
}

/// An HTTP server's headers with the bearer token of carapace's sign-in
/// to it, when there is one and the configuration gives no
/// `Authorization` of its own (an ended token is refreshed first); the
/// sign-in, when one is used.
async fn signed_in(
    url: &str,
    headers: &[(String, String)],
    credentials: &super::Credentials,
) -> (Vec<(String, String)>, Option<SignedIn>) {
    let mut headers = headers.to_vec();
    if headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    {
        return (headers, None);
    }
    let bearer = match super::oauth::http_client() {
        Ok(http) => super::oauth::bearer(&http, credentials, url)
            .await
            .map(|token| token.map(|token| (token, http))),
        Err(e) => Err(e),
    };
    match bearer {
        Ok(Some((token, http))) => {
            headers.push(bearer_header(&token));
            let store = credentials.clone();
            let url = url.to_string();
            (headers, Some(SignedIn { store, url, http }))
        }
        Ok(None) => (headers, None),
        Err(e) => {
            let why = crate::sandbox::describe_chain(&e);
            tracing::warn!("the sign-in to {url} is unusable: {why}");
            (headers, None)
        }
    }
}

/// The header a sign-in's token goes in. Its value is marked as the
/// sign-in's own, so a configured `Authorization` is never taken for one.
fn bearer_header(token: &str) -> (String, String) {
    (SIGN_IN_HEADER.into(), format!("Bearer {token}"))
}

/// The sign-in's header name: `Authorization`, spelled so that it is told
/// from one the configuration gives (HTTP header names are caseless).
const SIGN_IN_HEADER: &str = "authorization";

fn is_sign_in((name, _): &(String, String)) -> bool {
    name == SIGN_IN_HEADER
}

/// A connected server.
pub struct McpServer {
    pub name: String,
    bridge: McpBridge,
    link: Arc<McpLink>,
    session: McpSession,
    tools: std::sync::RwLock<Vec<McpTool>>,
    /// Its prompts, listed when it connected.
    prompts: Vec<McpPrompt>,
    next_id: AtomicU64,
    /// The server said its tools changed; the list is read again before
    /// the next turn.
    stale: AtomicBool,
    /// The resources the model read, followed when the server offers
    /// subscriptions.
    watch: ResourceWatch,
    limits: CallLimits,
    /// carapace's sign-in to it (an HTTP server behind OAuth): each
    /// operation carries the token as it is then, refreshed when it ends.
    sign_in: std::sync::OnceLock<SignedIn>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Starts the server, performs the handshake and lists its tools, all
    /// within `startup`.
    pub async fn start(
        config: &ServerConfig,
        bridge: &McpBridge,
        process: &ProcessConfig,
        (limits, startup): (CallLimits, Duration),
        credentials: &super::Credentials,
    ) -> Result<Arc<Self>, String> {
        let mut signed = None;
        let (link, endpoint) = match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                allow_network,
            } => {
                let process = ProcessConfig {
                    allow_network: process.allow_network || *allow_network,
                    ..process.clone()
                };
                let child = spawn_confined(&process, command, args, env)?;
                (
                    McpLink::stdio(McpChannel::from_child(&config.name, child)?),
                    None,
                )
            }
            Transport::Http { url, headers } => {
                let (headers, sign_in) = signed_in(url, headers, credentials).await;
                signed = sign_in;
                let url = url.clone();
                let endpoint = HttpEndpoint { url, headers };
                (McpLink::http(&config.name, &endpoint.url)?, Some(endpoint))
            }
            Transport::Sdk => {
                return Err(
                    "an SDK server lives in the Agent SDK's process; it is connected when the SDK is"
                        .into(),
                );
            }
        };
        let server = Self::connect(&config.name, bridge, link, endpoint, limits, startup)
            .await
            .map_err(|e| match e.contains("HTTP 401") {
                true => format!("{e}; sign in with `carapace mcp login {}`", config.name),
                false => e,
            })?;
        if let Some(signed) = signed {
            let _ = server.sign_in.set(signed);
        }
        Ok(server)
    }

    /// The session as the next operation speaks it: with the sign-in's
    /// token as it is now (refreshed if it ended since).
    async fn current(&self) -> std::borrow::Cow<'_, McpSession> {
        let Some(signed) = self.sign_in.get() else {
            return std::borrow::Cow::Borrowed(&self.session);
        };
        let bearer = super::oauth::bearer(&signed.http, &signed.store, &signed.url).await;
        let Ok(Some(token)) = bearer else {
            return std::borrow::Cow::Borrowed(&self.session);
        };
        let mut session = self.session.clone();
        if let Some(endpoint) = &mut session.endpoint {
            endpoint.headers.retain(|h| !is_sign_in(h));
            endpoint.headers.push(bearer_header(&token));
        }
        std::borrow::Cow::Owned(session)
    }

    /// The handshake and the tool list over `link`, within `startup`.
    pub async fn connect(
        name: &str,
        bridge: &McpBridge,
        link: Arc<McpLink>,
        endpoint: Option<HttpEndpoint>,
        limits: CallLimits,
        startup: Duration,
    ) -> Result<Arc<Self>, String> {
        let connect = async {
            let handshake = CallLimits {
                deadline: startup,
                ..limits
            };
            let session = bridge
                .initialize(&link, endpoint, &handshake, 1)
                .await
                .map_err(|e| e.to_string())?;
            let mut server = Self {
                name: name.to_string(),
                bridge: bridge.clone(),
                link: link.clone(),
                session,
                tools: std::sync::RwLock::new(Vec::new()),
                prompts: Vec::new(),
                sign_in: std::sync::OnceLock::new(),
                next_id: AtomicU64::new(4),
                stale: AtomicBool::new(false),
                watch: ResourceWatch::default(),
                limits,
            };
            server.refresh_tools(&handshake).await?;
            server.prompts = server.read_prompts(&handshake).await?;
            let server = Arc::new(server);
            Ok::<_, String>(server)
        };
        match tokio::time::timeout(startup, connect).await {
            Ok(Ok(server)) => Ok(server),
            Ok(Err(e)) => {
                link.shutdown().await;
                Err(e)
            }
            Err(_) => {
                link.shutdown().await;
                Err(format!(
                    "it did not finish starting within {} s",
                    startup.as_secs()
                ))
            }
        }
    }

    pub fn session(&self) -> &McpSession {
        &self.session
    }

    pub fn tools(&self) -> Vec<McpTool> {
        self.tools.read().map(|t| t.clone()).unwrap_or_default()
    }

    /// Its prompts, as listed when it connected.
    pub fn prompts(&self) -> &[McpPrompt] {
        &self.prompts
    }

    async fn read_prompts(&self, limits: &CallLimits) -> Result<Vec<McpPrompt>, String> {
        if !self.session.prompts {
            return Ok(Vec::new());
        }
        self.bridge
            .list_prompts(
                &self.link,
                &*self.current().await,
                limits,
                &|| self.id(),
                MAX_TOOL_PAGES,
            )
            .await
            .map_err(|e| e.to_string())
    }

    /// `prompts/get`: the prompt `name` filled in with `arguments`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Vec<(String, String)>,
    ) -> Result<Vec<McpPromptMessage>, BridgeError> {
        let id = self.id();
        self.bridge
            .get_prompt(
                &self.link,
                &*self.current().await,
                &self.limits,
                id,
                (name, arguments),
            )
            .await
    }

    /// Its resources (or resource templates); none when it offers none.
    pub async fn resources(&self, list: ResourceList) -> Result<Vec<McpResource>, BridgeError> {
        if !self.session.resources {
            return Ok(Vec::new());
        }
        let next_id = || self.id();
        self.bridge
            .list_resources(
                &self.link,
                &*self.current().await,
                &self.limits,
                (list, &next_id),
                MAX_TOOL_PAGES,
            )
            .await
    }

    /// `resources/read`: `{"contents": [...]}` as the bridge wrote it.
    /// A server that offers subscriptions is asked to say when the
    /// resource changes (over HTTP, where no stream outlives an operation,
    /// it is read again between turns instead).
    pub async fn read_resource(&self, uri: &str) -> Result<String, BridgeError> {
        let contents = self.read_resource_once(uri).await?;
        if !self.session.resources_subscribe {
            return Ok(contents);
        }
        let first = self.watch.read(uri, &contents) == Followed::New;
        if first && self.session.endpoint.is_none() {
            let session = self.current().await;
            let subscribed = self
                .bridge
                .subscribe_resource((&self.link, &session), &self.limits, self.id(), uri)
                .await;
            self.absorb();
            if let Err(e) = subscribed {
                tracing::warn!(server = %self.name, %uri, "cannot follow the resource: {e}");
                self.watch.forget(uri);
            }
        }
        Ok(contents)
    }

    async fn read_resource_once(&self, uri: &str) -> Result<String, BridgeError> {
        let id = self.id();
        let session = self.current().await;
        let contents = (self.bridge)
            .read_resource(&self.link, &session, &self.limits, id, uri)
            .await;
        self.absorb();
        contents
    }

    /// The resources the model read that changed since the last time
    /// asked, each once: what the server said (stdio), or what reads
    /// again differently (HTTP).
    pub async fn resource_updates(&self) -> Vec<String> {
        let followed = self.watch.followed();
        if followed.is_empty() {
            return self.watch.take_updated();
        }
        if self.session.endpoint.is_none() {
            let session = self.current().await;
            if let Err(e) = self.bridge.drain(&self.link, &session, &self.limits).await {
                tracing::warn!(server = %self.name, "cannot read what it said: {e}");
            }
        } else {
            for uri in followed {
                match self.read_resource_once(&uri).await {
                    Ok(contents) => self.watch.reread(&uri, &contents),
                    Err(e) => tracing::warn!(server = %self.name, %uri, "cannot read again: {e}"),
                }
            }
        }
        self.absorb();
        self.watch.take_updated()
    }

    /// Takes in what the server said unasked during the last operations.
    fn absorb(&self) {
        let heard = self.link.take_heard();
        if heard.tools_changed {
            self.stale.store(true, Ordering::Relaxed);
        }
        for uri in &heard.resources_updated {
            self.watch.updated_uri(uri);
        }
    }

    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Reads the tool list again; whether it differs from the one held.
    async fn refresh_tools(&self, limits: &CallLimits) -> Result<bool, String> {
        let tools = self
            .bridge
            .list_tools(
                &self.link,
                &*self.current().await,
                limits,
                &|| self.id(),
                MAX_TOOL_PAGES,
            )
            .await
            .map_err(|e| e.to_string())?;
        let changed = match self.tools.write() {
            Ok(mut current) => {
                let changed = *current != tools;
                *current = tools;
                changed
            }
            Err(_) => true,
        };
        self.stale.store(false, Ordering::Relaxed);
        Ok(changed)
    }

    /// Reads the tool list again if the server announced a change (during
    /// a call, or since): `Ok(true)` when it changed. An HTTP server that
    /// says its list changes tells it on a stream no bridge instance
    /// outlives; its list is read again between turns instead, and counts
    /// as changed when it differs.
    pub async fn refresh_if_changed(&self) -> Result<bool, String> {
        let polled = self.session.endpoint.is_some() && self.session.tools_list_changed;
        if polled && !self.stale.load(Ordering::Relaxed) {
            return self.refresh_tools(&self.limits).await;
        }
        if !self.stale.load(Ordering::Relaxed) {
            (self.bridge)
                .drain(&self.link, &*self.current().await, &self.limits)
                .await
                .map_err(|e| e.to_string())?;
            self.absorb();
            if !self.stale.load(Ordering::Relaxed) {
                return Ok(false);
            }
        }
        self.refresh_tools(&self.limits).await?;
        Ok(true)
    }

    /// What each of its calls runs under (`MCP_TOOL_TIMEOUT` sets the
    /// deadline).
    pub fn limits(&self) -> CallLimits {
        self.limits
    }

    /// `tools/call`; `requests` hears its progress and answers the
    /// server's questions.
    pub async fn call(
        &self,
        (tool, arguments): (&str, &str),
        limits: &CallLimits,
        requests: Option<Arc<dyn super::ServerRequests>>,
    ) -> Result<McpCallOutcome, BridgeError> {
        let outcome = self
            .bridge
            .call_tool(
                (&self.link, &*self.current().await),
                limits,
                self.id(),
                (tool, arguments),
                requests,
            )
            .await;
        self.absorb();
        outcome
    }

    pub async fn shutdown(&self) {
        self.link.shutdown().await;
    }
}
