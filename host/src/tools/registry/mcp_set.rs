//! [`McpSet`]: the MCP servers a session holds, and their lifecycle as
//! the registry sees it — a server's tools offered when it joins, replaced
//! when its list changes, taken back when it is turned off or removed, and
//! every server shut down at the session's end.

use super::ToolRegistry;
use crate::mcp::McpServer;
use std::sync::{Arc, Mutex, RwLock};

/// Why a server's tools could not be turned on or off.
#[derive(Debug, thiserror::Error)]
pub enum McpToggleError {
    #[error("the MCP server list is unusable")]
    Unusable,
    #[error("No MCP server named `{0}` offers tools in this session.")]
    NotOffering(String),
    #[error("No MCP server named `{0}` in this session.")]
    NoServer(String),
}

/// The session's MCP servers: connected ones, and those turned off.
#[derive(Default)]
pub struct McpSet {
    servers: RwLock<Vec<Arc<McpServer>>>,
    /// Turned off (the SDK's `mcp_toggle`): still connected, their tools
    /// not offered.
    disabled: Mutex<Vec<Arc<McpServer>>>,
}

impl McpSet {
    /// Holds `servers` (their tools already in the registry).
    pub fn holding(servers: Vec<Arc<McpServer>>) -> Self {
        Self {
            servers: RwLock::new(servers),
            disabled: Mutex::default(),
        }
    }

    /// Holds `server` too and offers its tools; returns warnings.
    pub fn add(&self, registry: &RwLock<ToolRegistry>, server: &Arc<McpServer>) -> Vec<String> {
        if let Ok(mut servers) = self.servers.write() {
            servers.retain(|s| s.name != server.name);
            servers.push(server.clone());
        }
        match registry.write() {
            Ok(mut registry) => registry.add_mcp(server),
            Err(_) => vec!["the tool registry is unusable".into()],
        }
    }

    /// Stops offering a server's tools and forgets it, turned off or not;
    /// the caller shuts it down.
    pub fn remove(&self, registry: &RwLock<ToolRegistry>, name: &str) -> Option<Arc<McpServer>> {
        if let Ok(mut registry) = registry.write() {
            registry.remove_mcp_named(name);
        }
        if let Ok(mut disabled) = self.disabled.lock() {
            disabled.retain(|s| s.name != name);
        }
        let mut servers = self.servers.write().ok()?;
        let at = servers.iter().position(|s| s.name == name)?;
        Some(servers.remove(at))
    }

    /// Shuts down every server held (the session's end).
    pub async fn shutdown(&self) {
        let servers = self
            .servers
            .write()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        for server in servers {
            server.shutdown().await;
        }
    }

    /// Stops or starts offering a server's tools; it stays connected.
    pub fn toggle(
        &self,
        registry: &RwLock<ToolRegistry>,
        name: &str,
        enabled: bool,
    ) -> Result<(), McpToggleError> {
        let mut disabled = self.disabled.lock().map_err(|_| McpToggleError::Unusable)?;
        let mut registry = registry.write().map_err(|_| McpToggleError::Unusable)?;
        let off = disabled.iter().position(|s| s.name == name);
        match (enabled, off) {
            (true, Some(at)) => {
                let server = disabled.remove(at);
                for warning in registry.add_mcp(&server) {
                    tracing::warn!("{warning}");
                }
                Ok(())
            }
            (false, None) => match registry.remove_mcp_named(name) {
                Some(server) => {
                    disabled.push(server);
                    Ok(())
                }
                None => Err(McpToggleError::NotOffering(name.to_string())),
            },
            // Already as asked.
            (true, None)
                if registry
                    .names()
                    .iter()
                    .any(|n| n.starts_with(&format!("mcp__{name}__"))) =>
            {
                Ok(())
            }
            (true, None) => Err(McpToggleError::NoServer(name.to_string())),
            (false, Some(_)) => Ok(()),
        }
    }

    /// Asks each server that is on whether its tools changed, and offers
    /// the new lists; whether any did.
    pub async fn refresh(&self, registry: &RwLock<ToolRegistry>) -> bool {
        let mut changed = false;
        let servers = self.servers.read().map(|s| s.clone()).unwrap_or_default();
        for server in servers.iter().filter(|s| !self.is_disabled(s)) {
            match server.refresh_if_changed().await {
                Ok(false) => {}
                Ok(true) => {
                    if let Ok(mut registry) = registry.write() {
                        for warning in registry.replace_mcp(server) {
                            tracing::warn!("{warning}");
                        }
                    }
                    changed = true;
                }
                Err(e) => {
                    tracing::warn!(server = %server.name, "cannot refresh its tools: {e}")
                }
            }
        }
        changed
    }

    /// The resources the model read that changed since the last time
    /// asked, as reminders for it (`<mcp-resource-update>`, as Claude Code
    /// draws them), from each server that is on.
    pub async fn resource_updates(&self) -> Vec<String> {
        let mut reminders = Vec::new();
        for server in self.enabled() {
            for uri in server.resource_updates().await {
                reminders.push(resource_update(&server.name, &uri));
            }
        }
        reminders
    }

    /// The server prompt a command names (`mcp__server__prompt`), among
    /// the servers turned on.
    pub fn prompt(&self, command: &str) -> Option<(Arc<McpServer>, crate::mcp::McpPrompt)> {
        let rest = command.strip_prefix("mcp__")?;
        self.enabled().into_iter().find_map(|server| {
            let name = rest
                .strip_prefix(server.name.as_str())?
                .strip_prefix("__")?;
            let prompt = server.prompts().iter().find(|p| p.name == name)?.clone();
            Some((server, prompt))
        })
    }

    /// Every prompt of the servers turned on, as commands
    /// (`mcp__server__prompt`) with their descriptions.
    pub fn prompt_commands(&self) -> Vec<(String, String)> {
        self.enabled()
            .iter()
            .flat_map(|server| {
                server.prompts().iter().map(|p| {
                    let name = format!("mcp__{}__{}", server.name, p.name);
                    (name, p.description.clone().unwrap_or_default())
                })
            })
            .collect()
    }

    /// The servers connected and turned on.
    pub fn enabled(&self) -> Vec<Arc<McpServer>> {
        let servers = self.servers.read().map(|s| s.clone()).unwrap_or_default();
        servers
            .into_iter()
            .filter(|s| !self.is_disabled(s))
            .collect()
    }

    fn is_disabled(&self, server: &McpServer) -> bool {
        self.disabled
            .lock()
            .is_ok_and(|d| d.iter().any(|s| s.name == server.name))
    }
}

/// What the model is told when a resource it read changed: the server and
/// the URI in the tag Claude Code reads, and what to do about it.
fn resource_update(server: &str, uri: &str) -> String {
    let attribute = |text: &str| {
        text.replace('&', "&amp;")
            .replace('"', "&quot;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    format!(
        "<mcp-resource-update server=\"{}\" uri=\"{}\">\nThe server says this resource changed since you read it. Read it again with ReadMcpResourceTool if its contents matter to your task.\n</mcp-resource-update>",
        attribute(server),
        attribute(uri)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_resource_update_names_the_server_and_the_uri_escaped() {
        let text = super::resource_update("ledger", "ledger://a?\"x\"<y>");
        assert!(text.starts_with(
            "<mcp-resource-update server=\"ledger\" uri=\"ledger://a?&quot;x&quot;&lt;y&gt;\">\n"
        ));
        assert!(text.ends_with("\n</mcp-resource-update>"));
    }
}
