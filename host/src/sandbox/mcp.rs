//! The MCP bridge component (`carapace:mcp`) and the connection the host
//! lends it.
//!
//! The host owns the server's process and its pipes ([`McpChannel`]); it only
//! moves lines. A fresh bridge instance, with no capability but the lent
//! connection, performs each operation — handshake, one page of
//! `tools/list`, one `tools/call` — and parses everything the server says.
//! Operations on one connection never overlap (the channel's lock): a reply
//! can only reach the instance that asked for it.

use super::engine::{CallCore, CallIo, Sandbox, SandboxInner, World, wasi_http_view, wasi_view};
use super::grant::Grant;
use super::http::HttpParts;
use super::limits::CallLimits;
use super::{CacheOutcome, SandboxError};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use wasmtime::component::{HasSelf, Linker};

mod bindings {
    wasmtime::component::bindgen!({
        world: "mcp-bridge",
        path: "../wit/mcp/v0.1.0",
        imports: { default: async },
        exports: { default: async },
    });
}

use bindings::carapace::mcp::{transport, types};
use bindings::{McpBridge as Bindings, McpBridgePre};

/// The longest message a server may send on one line.
const MAX_MESSAGE_BYTES: usize = 16 << 20;
/// What is kept of a server's stderr, to explain its death.
const STDERR_TAIL_BYTES: usize = 4096;

/// The bridge world's context: WASI (with no grant), `wasi:http` to the one
/// origin of an HTTP server, and the MCP transport lent for one operation.
/// Only the bridge links the transport; tools and hooks cannot.
pub(crate) struct BridgeState {
    core: CallCore,
    http: HttpParts,
    mcp: Option<Arc<dyn McpLine>>,
}

/// A connection a bridge instance speaks JSON-RPC over, one message at a
/// time: a stdio server's pipes, or the Agent SDK's in-process server
/// reached through the control protocol.
pub trait McpLine: Send + Sync {
    fn send<'a>(&'a self, message: &'a str) -> futures::future::BoxFuture<'a, Result<(), String>>;
    /// The next message, or `None` when none came within `timeout` (zero:
    /// only one already there).
    fn receive(
        &self,
        timeout: Duration,
    ) -> futures::future::BoxFuture<'_, Result<Option<String>, String>>;
    fn shutdown(&self) -> futures::future::BoxFuture<'_, ()>;
}

impl McpLine for McpChannel {
    fn send<'a>(&'a self, message: &'a str) -> futures::future::BoxFuture<'a, Result<(), String>> {
        Box::pin(McpChannel::send(self, message))
    }

    fn receive(
        &self,
        timeout: Duration,
    ) -> futures::future::BoxFuture<'_, Result<Option<String>, String>> {
        Box::pin(McpChannel::receive(self, timeout))
    }

    fn shutdown(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(McpChannel::shutdown(self))
    }
}

wasi_view!(BridgeState);
wasi_http_view!(BridgeState);

impl World for BridgeState {
    fn link(linker: &mut Linker<Self>) -> Result<(), SandboxError> {
        super::file_streams::add_to_linker(linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
            .map_err(|e| SandboxError::Prepare(format!("linking wasi:http: {e:#}")))?;
        transport::add_to_linker::<BridgeState, HasSelf<BridgeState>>(linker, |state| state)
            .map_err(|e| SandboxError::Prepare(format!("linking carapace:mcp/transport: {e:#}")))
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

/// A running stdio server: its stdin, the lines it wrote, its stderr tail.
pub struct McpChannel {
    server: String,
    stdin: tokio::sync::Mutex<Option<tokio::process::ChildStdin>>,
    lines: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Result<String, String>>>,
    stderr: Arc<std::sync::Mutex<VecDeque<u8>>>,
    child: std::sync::Mutex<Option<tokio::process::Child>>,
    /// The server's private temp dir, removed with the channel.
    _temp_dir: Option<tempfile::TempDir>,
    /// Protected paths it must not leave behind.
    sweep: super::process::Sweep,
}

impl std::fmt::Debug for McpChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpChannel")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl McpChannel {
    /// Wraps a spawned process whose stdin, stdout and stderr are piped.
    pub fn from_child(
        server: &str,
        confined: super::process::ConfinedChild,
    ) -> Result<Arc<Self>, String> {
        let super::process::ConfinedChild {
            mut child,
            temp_dir,
            sweep,
        } = confined;
        let stdin = child
            .stdin
            .take()
            .ok_or("the server's stdin is not piped")?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the server's stdout is not piped")?;
        let stderr = child
            .stderr
            .take()
            .ok_or("the server's stderr is not piped")?;
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        tokio::spawn(read_lines(stdout, tx));
        let tail = Arc::new(std::sync::Mutex::new(VecDeque::new()));
        tokio::spawn(keep_tail(stderr, tail.clone()));
        Ok(Arc::new(Self {
            server: server.to_string(),
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            lines: tokio::sync::Mutex::new(rx),
            stderr: tail,
            child: std::sync::Mutex::new(Some(child)),
            _temp_dir: Some(temp_dir),
            sweep,
        }))
    }

    async fn send(&self, message: &str) -> Result<(), String> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(self.gone("its input is closed"));
        };
        let mut line = message.replace('\n', " ");
        line.push('\n');
        if let Err(e) = pipe.write_all(line.as_bytes()).await {
            *stdin = None;
            return Err(self.gone(&format!("writing failed: {e}")));
        }
        pipe.flush()
            .await
            .map_err(|e| self.gone(&format!("writing failed: {e}")))
    }

    async fn receive(&self, timeout: Duration) -> Result<Option<String>, String> {
        let mut lines = self.lines.lock().await;
        let next = if timeout.is_zero() {
            match lines.try_recv() {
                Ok(line) => Some(line),
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => return Ok(None),
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => None,
            }
        } else {
            match tokio::time::timeout(timeout, lines.recv()).await {
                Ok(line) => line,
                Err(_) => return Ok(None),
            }
        };
        match next {
            Some(Ok(line)) => Ok(Some(line)),
            Some(Err(e)) => Err(self.gone(&e)),
            None => Err(self.gone("it closed its output")),
        }
    }

    /// "server X exited (status): stderr tail".
    fn gone(&self, what: &str) -> String {
        let status = self
            .child
            .lock()
            .ok()
            .and_then(|mut c| c.as_mut().and_then(|c| c.try_wait().ok().flatten()));
        let tail = self
            .stderr
            .lock()
            .map(|t| String::from_utf8_lossy(&t.iter().copied().collect::<Vec<_>>()).into_owned())
            .unwrap_or_default();
        let mut message = format!("MCP server `{}` is gone: {what}", self.server);
        if let Some(status) = status {
            message.push_str(&format!(" ({status})"));
        }
        if !tail.trim().is_empty() {
            message.push_str(&format!("; it last wrote to stderr: {}", tail.trim()));
        }
        message
    }

    /// Ends the server: closes its input, then kills what is left.
    pub async fn shutdown(&self) {
        self.stdin.lock().await.take();
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(mut child) = child {
            // A moment to exit on its own once its input is closed; then
            // the helper ends the server's tree and removes its cgroup, and
            // what the server created among protected paths goes too.
            let _ = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
            super::process::end_helper(child, self.sweep.clone(), self.server.clone());
        }
    }
}

impl Drop for McpChannel {
    fn drop(&mut self) {
        if let Some(child) = self.child.get_mut().ok().and_then(Option::take) {
            super::process::end_helper(child, self.sweep.clone(), self.server.clone());
        }
    }
}

async fn read_lines(
    stdout: tokio::process::ChildStdout,
    tx: tokio::sync::mpsc::Sender<Result<String, String>>,
) {
    let mut reader = tokio::io::BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bounded: a server cannot make the host buffer without limit.
        let read = (&mut reader)
            .take(MAX_MESSAGE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => return,
            Ok(_) if line.len() > MAX_MESSAGE_BYTES => {
                let _ = tx
                    .send(Err(format!(
                        "it sent a message longer than {MAX_MESSAGE_BYTES} bytes"
                    )))
                    .await;
                return;
            }
            Ok(_) => {
                let text = String::from_utf8_lossy(&line).trim().to_string();
                if !text.is_empty() && tx.send(Ok(text)).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Err(format!("reading failed: {e}"))).await;
                return;
            }
        }
    }
}

async fn keep_tail(
    mut stderr: tokio::process::ChildStderr,
    tail: Arc<std::sync::Mutex<VecDeque<u8>>>,
) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            return;
        }
        if let Ok(mut tail) = tail.lock() {
            tail.extend(&buf[..n]);
            while tail.len() > STDERR_TAIL_BYTES {
                tail.pop_front();
            }
        }
    }
}

/// What `initialize` agreed with a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSession {
    /// An HTTP server's URL and headers.
    pub endpoint: Option<HttpEndpoint>,
    /// The `Mcp-Session-Id` an HTTP server gave.
    pub http_session: Option<String>,
    pub protocol_version: String,
    pub server_name: String,
    pub server_version: String,
    pub instructions: Option<String>,
    pub tools_list_changed: bool,
}

/// A Streamable HTTP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpEndpoint {
    pub url: String,
    pub headers: Vec<(String, String)>,
}

/// How bridge instances reach one server: the lent stdio connection, or
/// HTTP to its origin (the one host their grant names). Operations on one
/// server never overlap.
pub struct McpLink {
    name: String,
    channel: Option<Arc<dyn McpLine>>,
    grant: Grant,
    operation: tokio::sync::Mutex<()>,
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
        let pattern = super::HostPattern::parse(&authority).map_err(|e| e.to_string())?;
        Ok(Arc::new(Self {
            name: name.to_string(),
            channel: None,
            // The user configured this server: its address is reached even
            // when it is internal (a local server).
            grant: Grant::none().http_internal(pattern),
            operation: tokio::sync::Mutex::new(()),
        }))
    }

    pub async fn shutdown(&self) {
        if let Some(channel) = &self.channel {
            channel.shutdown().await;
        }
    }
}

/// One of a server's tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    pub input_schema: String,
    pub read_only: bool,
}

/// The result of one `tools/call`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCallOutcome {
    pub content: Vec<super::ToolContent>,
    pub structured: Option<String>,
    pub is_error: bool,
    /// The server said its tool list changed.
    pub tools_changed: bool,
}

/// The bridge, built from `plugins/mcp-bridge` and embedded in the binary.
pub const BRIDGE_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/mcp-bridge.wasm"));

/// The bridge component, compiled and linked once.
#[derive(Clone)]
pub struct McpBridge {
    sandbox: Arc<SandboxInner>,
    pre: McpBridgePre<BridgeState>,
    load_outcome: CacheOutcome,
}

impl McpBridge {
    pub fn load(sandbox: &Sandbox, wasm: &[u8]) -> Result<Self, SandboxError> {
        let (component, load_outcome) = sandbox.load_component(wasm)?;
        let inner = sandbox.inner().clone();
        let instance_pre = inner.instantiate_pre::<BridgeState>(&component)?;
        let pre = McpBridgePre::new(instance_pre)
            .map_err(|e| SandboxError::Contract(format!("carapace:mcp: {e:#}")))?;
        Ok(Self {
            sandbox: inner,
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
    ) -> Result<Result<R, String>, SandboxError> {
        let _operation = link.operation.lock().await;
        let pre = self.pre.clone();
        let http = HttpParts::for_grant(&link.grant);
        let mcp = link.channel.clone();
        let (value, _) = self
            .sandbox
            .execute(
                &format!("mcp:{}", link.name),
                &link.grant,
                limits,
                CallIo::default(),
                move |core| BridgeState { core, http, mcp },
                move |store| Box::pin(async move { pre.instantiate_async(store).await }),
                f,
            )
            .await?;
        Ok(value)
    }

    pub async fn initialize(
        &self,
        link: &McpLink,
        endpoint: Option<HttpEndpoint>,
        limits: &CallLimits,
        request_id: u64,
    ) -> Result<Result<McpSession, String>, SandboxError> {
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
        Ok(answer.map(|s| McpSession {
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
        }))
    }

    /// Every tool, following `nextCursor` (at most `max_pages` pages).
    pub async fn list_tools(
        &self,
        link: &McpLink,
        session: &McpSession,
        limits: &CallLimits,
        next_id: &(dyn Fn() -> u64 + Sync),
        max_pages: usize,
    ) -> Result<Result<Vec<McpTool>, String>, SandboxError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..max_pages {
            let wit_session = to_wit(session);
            let id = next_id();
            let page_cursor = cursor.clone();
            let answer = self
                .run(link, limits, move |b, store| {
                    Box::pin(async move {
                        b.carapace_mcp_bridge()
                            .call_list_tools(store, &wit_session, page_cursor.as_deref(), id)
                            .await
                    })
                })
                .await?;
            let (page, _events) = match answer {
                Ok(page) => page,
                Err(message) => return Ok(Err(message)),
            };
            tools.extend(page.tools.into_iter().map(|t| McpTool {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
                read_only: t.read_only,
            }));
            match page.next_cursor {
                Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                _ => return Ok(Ok(tools)),
            }
        }
        Ok(Err(format!(
            "the server's tool list goes on for more than {max_pages} pages"
        )))
    }

    pub async fn call_tool(
        &self,
        link: &McpLink,
        session: &McpSession,
        limits: &CallLimits,
        request_id: u64,
        name: &str,
        arguments: &str,
    ) -> Result<Result<McpCallOutcome, String>, SandboxError> {
        let wit_session = to_wit(session);
        let (name, arguments) = (name.to_string(), arguments.to_string());
        let answer = self
            .run(link, limits, move |b, store| {
                Box::pin(async move {
                    b.carapace_mcp_bridge()
                        .call_call_tool(store, &wit_session, &name, &arguments, request_id)
                        .await
                })
            })
            .await?;
        Ok(answer.map(|(outcome, events)| McpCallOutcome {
            content: outcome
                .content
                .into_iter()
                .map(|c| match c {
                    types::Content::Text(text) => super::ToolContent::Text(text),
                    types::Content::Image(image) => super::ToolContent::Image {
                        media_type: image.media_type,
                        data: image.data,
                    },
                })
                .collect(),
            structured: outcome.structured,
            is_error: outcome.is_error,
            tools_changed: events.tools_changed,
        }))
    }

    /// Whether the server announced a changed tool list since the last
    /// operation.
    pub async fn tools_changed(
        &self,
        link: &McpLink,
        session: &McpSession,
        limits: &CallLimits,
    ) -> Result<Result<bool, String>, SandboxError> {
        let wit_session = to_wit(session);
        let answer = self
            .run(link, limits, move |b, store| {
                Box::pin(async move {
                    b.carapace_mcp_bridge()
                        .call_drain(store, &wit_session)
                        .await
                })
            })
            .await?;
        Ok(answer.map(|events| events.tools_changed))
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
    }
}
