//! MCP servers: configured like Claude Code's (`.mcp.json`,
//! `--mcp-config`), started by the host under its OS sandbox, spoken to
//! through the sandboxed bridge component, their tools offered as
//! `mcp__<server>__<tool>` through the same pipeline as every other tool.
//!
//! Imports: `hooks`, `sandbox` — folders below it; nothing that imports it.

pub mod bridge;
mod callback;
pub mod channel;
pub mod config;
mod credentials;
pub mod oauth;
mod records;
mod requests;
mod server;
mod watch;

pub use config::{McpConfigError, ServerConfig, Transport};
pub use credentials::{CREDENTIALS_FILE, Credentials, CredentialsError, SignIn};
pub use records::{
    HttpEndpoint, McpCallOutcome, McpEvents, McpPrompt, McpPromptMessage, McpResource, McpSession,
    McpTool, ResourceList,
};
pub use requests::{ElicitAnswer, ElicitRequest, McpProgress, ServerRequests};
pub use server::McpServer;

use crate::sandbox::{CallLimits, ProcessConfig, Sandbox, SandboxError};
pub use bridge::BRIDGE_WASM;
use bridge::McpBridge;
use std::sync::Arc;
use std::time::Duration;

/// How long a server may take to start, answer `initialize` and list its
/// tools (`MCP_TIMEOUT`, in milliseconds, as Claude Code reads it).
pub const DEFAULT_STARTUP: Duration = Duration::from_secs(30);

/// One configured server, connected or not.
#[derive(Debug)]
pub struct ServerStatus {
    pub name: String,
    pub outcome: Result<Arc<McpServer>, String>,
}

impl ServerStatus {
    /// `system`/`init`'s `mcp_servers` entry.
    pub fn to_json(&self) -> serde_json::Value {
        match &self.outcome {
            Ok(_) => serde_json::json!({"name": self.name, "status": "connected"}),
            Err(error) => {
                serde_json::json!({"name": self.name, "status": "failed", "error": error})
            }
        }
    }
}

/// A server's instructions kept at most (a server's text is its own; it
/// should not fill the model's context).
const MAX_INSTRUCTIONS_CHARS: usize = 10_000;

/// The servers' instructions as the model reads them, in a reminder at
/// the head of the conversation (where Claude Code places them): each
/// server's under its name, in the order they were configured.
pub fn instructions_reminder(servers: &[Arc<McpServer>]) -> Option<String> {
    let sections: Vec<String> = servers
        .iter()
        .filter_map(|server| {
            let text = server.session().instructions.as_deref()?.trim();
            if text.is_empty() {
                return None;
            }
            let cut: String = text.chars().take(MAX_INSTRUCTIONS_CHARS).collect();
            let marker = if cut.len() < text.len() {
                " [cut short]"
            } else {
                ""
            };
            Some(format!("## {}\n{cut}{marker}", server.name))
        })
        .collect();
    (!sections.is_empty()).then(|| {
        format!(
            "<system-reminder>\n# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to use their tools and resources:\n\n{}\n</system-reminder>\n",
            sections.join("\n\n")
        )
    })
}

/// Starts every server at once; a server that fails is reported in its
/// status, never an error for the session.
pub async fn start_all(
    sandbox: &Sandbox,
    servers: &[ServerConfig],
    process: &ProcessConfig,
    (limits, startup): (CallLimits, Duration),
    credentials: &Credentials,
) -> Result<Vec<ServerStatus>, SandboxError> {
    // The SDK's own servers are connected once the SDK is (print mode).
    let servers: Vec<&ServerConfig> = servers
        .iter()
        .filter(|s| s.transport != Transport::Sdk)
        .collect();
    if servers.is_empty() {
        return Ok(Vec::new());
    }
    let bridge = McpBridge::load(sandbox, BRIDGE_WASM)?;
    let starts = servers.into_iter().map(|config| {
        let bridge = bridge.clone();
        async move {
            ServerStatus {
                name: config.name.clone(),
                outcome: McpServer::start(config, &bridge, process, (limits, startup), credentials)
                    .await,
            }
        }
    });
    Ok(futures::future::join_all(starts).await)
}

/// Connects the Agent SDK's in-process servers, each over its `line`.
pub async fn connect_sdk(
    sandbox: &Sandbox,
    servers: Vec<(String, Arc<dyn channel::McpLine>)>,
    limits: CallLimits,
    startup: Duration,
) -> Result<Vec<ServerStatus>, SandboxError> {
    if servers.is_empty() {
        return Ok(Vec::new());
    }
    let bridge = McpBridge::load(sandbox, BRIDGE_WASM)?;
    let connects = servers.into_iter().map(|(name, line)| {
        let bridge = bridge.clone();
        async move {
            let link = bridge::McpLink::lent(&name, line);
            ServerStatus {
                outcome: McpServer::connect(&name, &bridge, link, None, limits, startup).await,
                name,
            }
        }
    });
    Ok(futures::future::join_all(connects).await)
}

/// What starting a server needs, kept for the servers the Agent SDK adds
/// or reconnects while the session runs (`mcp_set_servers`,
/// `mcp_reconnect`): each starts as those configured at the start did.
#[derive(Clone)]
pub struct McpLauncher {
    sandbox: Sandbox,
    process: ProcessConfig,
    limits: CallLimits,
    startup: Duration,
    credentials: Credentials,
}

impl McpLauncher {
    pub fn new(
        sandbox: Sandbox,
        process: ProcessConfig,
        (limits, startup): (CallLimits, Duration),
        credentials: Credentials,
    ) -> Self {
        Self {
            sandbox,
            process,
            limits,
            startup,
            credentials,
        }
    }

    /// Starts a server the host reaches itself (stdio or HTTP).
    pub async fn start(&self, config: &ServerConfig) -> Result<Arc<McpServer>, String> {
        let bridge = McpBridge::load(&self.sandbox, BRIDGE_WASM).map_err(|e| e.describe())?;
        let timing = (self.limits, self.startup);
        McpServer::start(config, &bridge, &self.process, timing, &self.credentials).await
    }

    /// Connects a server over a line someone else carries (the SDK's).
    pub async fn connect(
        &self,
        name: &str,
        line: Arc<dyn channel::McpLine>,
    ) -> Result<Arc<McpServer>, String> {
        let bridge = McpBridge::load(&self.sandbox, BRIDGE_WASM).map_err(|e| e.describe())?;
        let link = bridge::McpLink::lent(name, line);
        McpServer::connect(name, &bridge, link, None, self.limits, self.startup).await
    }
}

/// The model's name for a server's tool: `mcp__<server>__<tool>`, with any
/// character the API does not accept replaced by `_` (as Claude Code does).
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("mcp__{}__{}", clean(server), clean(tool))
}

#[cfg(test)]
mod tests {
    #[test]
    fn tool_names_are_made_acceptable() {
        assert_eq!(super::tool_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(
            super::tool_name("my.srv", "get data/v2"),
            "mcp__my_srv__get_data_v2"
        );
    }
}
