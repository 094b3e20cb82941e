//! The MCP servers the Agent SDK sets while the session runs
//! (`mcp_set_servers`) and the servers it reconnects (`mcp_reconnect`), as
//! Claude Code 2.1.197 answers them: a set replaces the servers the SDK set
//! before (those configured at the start stay), says which names were
//! added and removed and why any failed; a server that fails is still
//! listed, as `failed`. Their tools reach the model from the next request,
//! through the same pipeline, policy and sandbox as the others.

use super::{ControlChannel, SdkMcpLine};
use crate::mcp::{McpLauncher, ServerConfig, Transport};
use crate::tools::ToolPipeline;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Reads the SDK's server entries (the `mcpServers` shape, `${VAR}`
/// expanded as in `--mcp-config`).
pub type ServerParser = Box<dyn Fn(&str) -> Result<Vec<ServerConfig>, String> + Send + Sync>;

/// Told the tools and servers after a change (the next `system`/`init`).
pub type ServersChanged = Box<dyn Fn(Vec<Value>) + Send + Sync>;

pub struct McpServers {
    launcher: McpLauncher,
    pipeline: Arc<ToolPipeline>,
    channel: Arc<ControlChannel>,
    /// The servers configured at the start, by name.
    configured: Vec<ServerConfig>,
    /// The servers the SDK set, by name; one change at a time.
    dynamic: tokio::sync::Mutex<BTreeMap<String, ServerConfig>>,
    /// `mcp_status`'s answer, shared with the session's control.
    status: Arc<Mutex<Vec<Value>>>,
    parse: ServerParser,
    changed: Option<ServersChanged>,
}

impl McpServers {
    pub fn new(
        launcher: McpLauncher,
        pipeline: Arc<ToolPipeline>,
        channel: Arc<ControlChannel>,
        configured: Vec<ServerConfig>,
        status: Arc<Mutex<Vec<Value>>>,
        parse: ServerParser,
    ) -> Self {
        Self {
            launcher,
            pipeline,
            channel,
            configured,
            dynamic: Default::default(),
            status,
            parse,
            changed: None,
        }
    }

    pub fn on_change(mut self, changed: ServersChanged) -> Self {
        self.changed = Some(changed);
        self
    }

    /// `mcp_set_servers`: `{added, removed, errors}`.
    pub async fn set(&self, servers: &Value) -> Result<Value, String> {
        let servers = servers
            .as_object()
            .ok_or("mcp_set_servers: `servers` is not an object of servers by name")?;
        let wanted = (self.parse)(&json!({"mcpServers": servers}).to_string())?;
        if let Some(taken) = wanted
            .iter()
            .find(|w| self.configured.iter().any(|c| c.name == w.name))
        {
            return Err(format!(
                "mcp_set_servers: a server named `{}` is configured for this session already",
                taken.name
            ));
        }
        let mut dynamic = self.dynamic.lock().await;
        let mut removed = Vec::new();
        for (name, config) in dynamic.iter() {
            if !wanted.iter().any(|w| w == config) {
                removed.push(name.clone());
            }
        }
        for name in &removed {
            dynamic.remove(name);
            self.forget(name).await;
        }
        let (mut added, mut errors) = (Vec::new(), serde_json::Map::new());
        for config in wanted {
            if dynamic.contains_key(&config.name) {
                continue;
            }
            if let Err(error) = self.start(&config).await {
                errors.insert(config.name.clone(), json!(error));
            }
            added.push(config.name.clone());
            dynamic.insert(config.name.clone(), config);
        }
        self.announce();
        Ok(json!({"added": added, "removed": removed, "errors": errors}))
    }

    /// `mcp_reconnect`: the server stopped and started again, set or
    /// configured; an error when it cannot start.
    pub async fn reconnect(&self, name: &str) -> Result<Value, String> {
        let dynamic = self.dynamic.lock().await;
        let config = dynamic
            .get(name)
            .or_else(|| self.configured.iter().find(|c| c.name == name))
            .cloned()
            .ok_or_else(|| format!("Server not found: {name}"))?;
        self.forget(name).await;
        let started = self.start(&config).await;
        drop(dynamic);
        self.announce();
        started.map(|()| Value::Null)
    }

    /// Connects one server and offers its tools; its status either way.
    async fn start(&self, config: &ServerConfig) -> Result<(), String> {
        let outcome = match config.transport {
            Transport::Sdk => {
                let line = Arc::new(SdkMcpLine::new(&config.name, self.channel.clone()));
                self.launcher.connect(&config.name, line).await
            }
            _ => self.launcher.start(config).await,
        };
        let dynamic = !self.configured.iter().any(|c| c.name == config.name);
        let mut entry = match &outcome {
            Ok(_) => json!({"name": config.name, "status": "connected"}),
            Err(error) => json!({"name": config.name, "status": "failed", "error": error}),
        };
        if dynamic {
            entry["scope"] = json!("dynamic");
        }
        if let Ok(mut status) = self.status.lock() {
            status.retain(|s| s["name"] != config.name.as_str());
            status.push(entry);
        }
        let server = outcome?;
        for warning in self.pipeline.add_mcp_server(&server) {
            eprintln!("carapace: warning: {warning}");
        }
        Ok(())
    }

    /// Stops offering a server's tools, shuts it down, drops its status.
    async fn forget(&self, name: &str) {
        if let Some(server) = self.pipeline.remove_mcp_server(name) {
            server.shutdown().await;
        }
        if let Ok(mut status) = self.status.lock() {
            status.retain(|s| s["name"] != name);
        }
    }

    fn announce(&self) {
        if let (Some(changed), Ok(status)) = (&self.changed, self.status.lock()) {
            changed(status.clone());
        }
    }
}
