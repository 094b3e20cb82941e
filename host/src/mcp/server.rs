//! One MCP server, connected through the bridge: started, initialised, its
//! tools listed, its calls made — every step in a fresh bridge instance.

use super::bridge::{
    BridgeError, HttpEndpoint, McpBridge, McpCallOutcome, McpLink, McpPrompt, McpPromptMessage,
    McpResource, McpSession, McpTool, ResourceList,
};
use super::channel::McpChannel;
use super::config::{ServerConfig, Transport};
use crate::sandbox::process::spawn_confined;
use crate::sandbox::{CallLimits, ProcessConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Pages of `tools/list` followed before giving up on a server.
const MAX_TOOL_PAGES: usize = 100;

/// An HTTP server's headers with the bearer token of carapace's sign-in
/// to it, when there is one and the configuration gives no
/// `Authorization` of its own (an ended token is refreshed first).
async fn signed_in(
    url: &str,
    headers: &[(String, String)],
    credentials: &super::Credentials,
) -> Vec<(String, String)> {
    let mut headers = headers.to_vec();
    if headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    {
        return headers;
    }
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default();
    match super::oauth::bearer(&http, credentials, url).await {
        Ok(Some(token)) => headers.push(("Authorization".into(), format!("Bearer {token}"))),
        Ok(None) => {}
        Err(e) => tracing::warn!(
            "the sign-in to {url} is unusable: {}",
            crate::sandbox::describe_chain(&e)
        ),
    }
    headers
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
    limits: CallLimits,
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
            Transport::Http { url, headers } => (
                McpLink::http(&config.name, url)?,
                Some(HttpEndpoint {
                    url: url.clone(),
                    headers: signed_in(url, headers, credentials).await,
                }),
            ),
            Transport::Sdk => {
                return Err(
                    "an SDK server lives in the Agent SDK's process; it is connected when the SDK is"
                        .into(),
                );
            }
        };
        Self::connect(&config.name, bridge, link, endpoint, limits, startup)
            .await
            .map_err(|e| match e.contains("HTTP 401") {
                true => format!("{e}; sign in with `carapace mcp login {}`", config.name),
                false => e,
            })
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
                next_id: AtomicU64::new(4),
                stale: AtomicBool::new(false),
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
                &self.session,
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
                &self.session,
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
                &self.session,
                &self.limits,
                (list, &next_id),
                MAX_TOOL_PAGES,
            )
            .await
    }

    /// `resources/read`: `{"contents": [...]}` as the bridge wrote it.
    pub async fn read_resource(&self, uri: &str) -> Result<String, BridgeError> {
        let id = self.id();
        self.bridge
            .read_resource(&self.link, &self.session, &self.limits, id, uri)
            .await
    }

    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    async fn refresh_tools(&self, limits: &CallLimits) -> Result<(), String> {
        let tools = self
            .bridge
            .list_tools(
                &self.link,
                &self.session,
                limits,
                &|| self.id(),
                MAX_TOOL_PAGES,
            )
            .await
            .map_err(|e| e.to_string())?;
        if let Ok(mut current) = self.tools.write() {
            *current = tools;
        }
        self.stale.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Reads the tool list again if the server announced a change (during
    /// a call, or since): `Ok(true)` when it was read again.
    pub async fn refresh_if_changed(&self) -> Result<bool, String> {
        if !self.stale.load(Ordering::Relaxed) {
            let changed = self
                .bridge
                .tools_changed(&self.link, &self.session, &self.limits)
                .await
                .map_err(|e| e.to_string())?;
            if !changed {
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
                (&self.link, &self.session),
                limits,
                self.id(),
                (tool, arguments),
                requests,
            )
            .await?;
        if outcome.tools_changed {
            self.stale.store(true, Ordering::Relaxed);
        }
        Ok(outcome)
    }

    pub async fn shutdown(&self) {
        self.link.shutdown().await;
    }
}
