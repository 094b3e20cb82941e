//! Plugins: the components that provide tools, loaded into a registry of
//! tools by name, each with its compiled input schema and its plugin's
//! capability ceiling and limits.
//!
//! The registry never offers two tools under one name, and never offers a
//! tool whose schema is not valid JSON Schema. Installed plugins are offered
//! from their records and compiled (or loaded from the cache) on first use,
//! after their bytes are checked against the approved digest.

mod builtin;
pub mod install;
pub mod manifest;
pub mod store;

pub use builtin::BUILTIN_PLUGINS;
pub use install::{Candidate, InstallContext, InstallError, PluginSource};
pub use manifest::{Manifest, ManifestError, Placeholders};
pub use store::{InstalledPlugin, PluginStore, Scope, StoreError};

use crate::mcp::McpServer;
use crate::model::ToolSpec;
use crate::policy::Ceiling;
use crate::sandbox::{
    CallContext, CallLimits, CallPlan, Grant, InterruptBehavior, ReadLedger, Sandbox, SandboxError,
    ToolAnnotations, ToolComponent, ToolContent, ToolDefinition, ToolFailure, ToolOutput,
};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("plugin `{plugin}`: {source}")]
    Load {
        plugin: String,
        #[source]
        source: SandboxError,
    },
    #[error("plugin `{plugin}`: tool `{tool}` has an invalid input schema: {reason}")]
    InvalidSchema {
        plugin: String,
        tool: String,
        reason: String,
    },
    #[error(
        "plugin `{plugin}`: `{tool}` is not a valid tool name (1-64 of A-Z a-z 0-9 _ -, starting with a letter)"
    )]
    InvalidName { plugin: String, tool: String },
    #[error("tool `{tool}` is provided by both `{first}` and `{second}`")]
    DuplicateTool {
        tool: String,
        first: String,
        second: String,
    },
    #[error("plugin `{plugin}`: {reason}")]
    Installed { plugin: String, reason: String },
    #[error("unknown tool `{0}` in --tools (available: {1})")]
    UnknownSelection(String, String),
}

/// One tool, ready to be offered and called.
pub struct RegisteredTool {
    pub definition: ToolDefinition,
    pub schema: Value,
    validator: jsonschema::Validator,
    provider: ToolProvider,
    pub ceiling: Arc<Ceiling>,
    /// The plugin's own limits, when its manifest sets them.
    pub limits: Option<CallLimits>,
}

/// Where a tool's component comes from.
#[derive(Clone)]
enum ToolProvider {
    Ready(ToolComponent),
    Installed(Arc<InstalledProvider>),
    Mcp(McpHandle),
}

/// One tool of an MCP server.
#[derive(Clone)]
pub struct McpHandle {
    server: Arc<McpServer>,
    /// The server's own name for the tool.
    tool: String,
    read_only: bool,
}

/// What runs a tool's calls: a component, or an MCP server's tool through
/// the bridge.
#[derive(Clone)]
pub enum ToolHandle {
    Wasm(ToolComponent),
    Mcp(McpHandle),
}

impl ToolHandle {
    /// What one call needs. An MCP tool needs nothing the host could grant
    /// (the server has what it was started with); it is concurrency-safe
    /// when the server marks it read-only.
    pub async fn plan(
        &self,
        tool: &str,
        input: &str,
    ) -> Result<Result<CallPlan, String>, SandboxError> {
        match self {
            ToolHandle::Wasm(component) => component.plan(tool, input).await,
            ToolHandle::Mcp(mcp) => Ok(Ok(CallPlan {
                concurrency_safe: mcp.read_only,
                interrupt: InterruptBehavior::Cancel,
                needs: Vec::new(),
            })),
        }
    }

    pub async fn call_in_session(
        &self,
        tool: &str,
        input: &str,
        grant: &Grant,
        limits: &CallLimits,
        reads: Option<&Arc<ReadLedger>>,
        context: &CallContext,
    ) -> Result<Result<ToolOutput, ToolFailure>, SandboxError> {
        match self {
            ToolHandle::Wasm(component) => {
                component
                    .call_in_session(tool, input, grant, limits, reads, context)
                    .await
            }
            ToolHandle::Mcp(mcp) => {
                let answer = mcp.server.call(&mcp.tool, input, limits).await?;
                Ok(match answer {
                    Err(message) => Err(ToolFailure::Failed(message)),
                    Ok(outcome) => {
                        let mut content = outcome.content;
                        // Structured content stands in for empty content.
                        if content.is_empty()
                            && let Some(structured) = outcome.structured
                        {
                            content.push(ToolContent::Text(structured));
                        }
                        Ok(ToolOutput {
                            content,
                            is_error: outcome.is_error,
                        })
                    }
                })
            }
        }
    }

    pub async fn call(
        &self,
        tool: &str,
        input: &str,
        grant: &Grant,
        limits: &CallLimits,
    ) -> Result<Result<ToolOutput, ToolFailure>, SandboxError> {
        self.call_in_session(tool, input, grant, limits, None, &CallContext::default())
            .await
    }
}

/// An installed plugin, loaded on first use.
struct InstalledProvider {
    sandbox: Sandbox,
    name: String,
    path: PathBuf,
    digest: String,
    contract: String,
    tools: Vec<ToolDefinition>,
    loaded: tokio::sync::OnceCell<Result<ToolComponent, String>>,
}

impl InstalledProvider {
    async fn component(self: &Arc<Self>) -> Result<ToolComponent, SandboxError> {
        let this = self.clone();
        let loaded = self
            .loaded
            .get_or_init(|| async move {
                // Reading, hashing and compiling are blocking work.
                tokio::task::spawn_blocking(move || this.load())
                    .await
                    .unwrap_or_else(|e| Err(format!("loading stopped: {e}")))
            })
            .await;
        loaded.clone().map_err(SandboxError::Unavailable)
    }

    fn load(&self) -> Result<ToolComponent, String> {
        let wasm = std::fs::read(&self.path).map_err(|e| {
            format!(
                "plugin `{}` cannot be read ({}: {e}); reinstall it with `carapace plugin add`",
                self.name,
                self.path.display()
            )
        })?;
        let digest = store::digest(&wasm);
        if digest != self.digest {
            return Err(format!(
                "plugin `{}` changed on disk since it was approved ({}); it will not run until it is approved again with `carapace plugin add`",
                self.name,
                self.path.display()
            ));
        }
        ToolComponent::load_known(
            &self.sandbox,
            &self.name,
            &wasm,
            &digest,
            &self.contract,
            self.tools.clone(),
        )
        .map_err(|e| format!("plugin `{}`: {e}", self.name))
    }
}

impl RegisteredTool {
    /// The tool's component, loading an installed plugin on first use.
    pub async fn component(&self) -> Result<ToolComponent, SandboxError> {
        match &self.provider {
            ToolProvider::Ready(component) => Ok(component.clone()),
            ToolProvider::Installed(provider) => provider.component().await,
            ToolProvider::Mcp(mcp) => Err(SandboxError::Unavailable(format!(
                "{} is a tool of MCP server `{}`, not a component",
                mcp.tool, mcp.server.name
            ))),
        }
    }

    /// What runs the tool's calls (loading an installed plugin on first use).
    pub async fn handle(&self) -> Result<ToolHandle, SandboxError> {
        match &self.provider {
            ToolProvider::Mcp(mcp) => Ok(ToolHandle::Mcp(mcp.clone())),
            _ => self.component().await.map(ToolHandle::Wasm),
        }
    }

    /// The plugin (or `mcp:<server>`) the tool belongs to.
    pub fn plugin(&self) -> &str {
        match &self.provider {
            ToolProvider::Ready(component) => component.name(),
            ToolProvider::Installed(provider) => &provider.name,
            ToolProvider::Mcp(mcp) => &mcp.server.name,
        }
    }

    /// Every way `input` violates the tool's schema, one line each.
    pub fn schema_errors(&self, input: &Value) -> Vec<String> {
        self.validator
            .iter_errors(input)
            .map(|e| {
                let at = e.instance_path.to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{e} (at `{at}`)")
                }
            })
            .collect()
    }
}

/// The tools of every loaded plugin, in a stable order. Cheap to clone:
/// the tools are shared.
#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: Vec<Arc<RegisteredTool>>,
}

impl ToolRegistry {
    /// Loads the first-party plugins embedded in this binary.
    pub async fn builtin(sandbox: &Sandbox) -> Result<Self, RegistryError> {
        let mut registry = Self::default();
        for plugin in BUILTIN_PLUGINS {
            let component = ToolComponent::load(sandbox, plugin.name, plugin.wasm)
                .await
                .map_err(|source| RegistryError::Load {
                    plugin: plugin.name.to_string(),
                    source,
                })?;
            registry.add(component, Arc::new((plugin.ceiling)()))?;
        }
        Ok(registry)
    }

    /// Adds every tool of `component`.
    pub fn add(
        &mut self,
        component: ToolComponent,
        ceiling: Arc<Ceiling>,
    ) -> Result<(), RegistryError> {
        self.add_with_limits(component, ceiling, None)
    }

    /// Adds every tool of `component`, run under `limits` rather than the
    /// session's defaults when given.
    pub fn add_with_limits(
        &mut self,
        component: ToolComponent,
        ceiling: Arc<Ceiling>,
        limits: Option<CallLimits>,
    ) -> Result<(), RegistryError> {
        let definitions = component.tools().to_vec();
        self.add_tools(
            component.name(),
            &definitions,
            ToolProvider::Ready(component.clone()),
            ceiling,
            limits,
        )
    }

    /// Adds an installed plugin's tools, as recorded when it was approved;
    /// its component is compiled or loaded from the cache on first use. The
    /// plugin's tools are all added or none is.
    pub fn add_installed(
        &mut self,
        sandbox: &Sandbox,
        store: &PluginStore,
        plugin: &InstalledPlugin,
        places: &Placeholders,
        defaults: &CallLimits,
    ) -> Result<(), RegistryError> {
        let name = plugin.name().to_string();
        let ceiling = plugin
            .manifest
            .ceiling(places)
            .map_err(|e| RegistryError::Installed {
                plugin: name.clone(),
                reason: e.to_string(),
            })?;
        let path = store.component_path(plugin);
        if !path.is_file() {
            return Err(RegistryError::Installed {
                plugin: name,
                reason: format!(
                    "its component {} is missing; reinstall it with `carapace plugin add`",
                    path.display()
                ),
            });
        }
        let definitions: Vec<ToolDefinition> =
            plugin.tools.iter().map(ToolDefinition::from).collect();
        let provider = ToolProvider::Installed(Arc::new(InstalledProvider {
            sandbox: sandbox.clone(),
            name: name.clone(),
            path,
            digest: plugin.digest.clone(),
            contract: plugin.contract.clone(),
            tools: definitions.clone(),
            loaded: tokio::sync::OnceCell::new(),
        }));
        let mut staged = Self::default();
        for definition in &definitions {
            if let Some(existing) = self.get(&definition.name) {
                return Err(RegistryError::DuplicateTool {
                    tool: definition.name.clone(),
                    first: existing.plugin().to_string(),
                    second: name,
                });
            }
        }
        staged.add_tools(
            &name,
            &definitions,
            provider,
            Arc::new(ceiling),
            Some(plugin.manifest.limits(defaults)),
        )?;
        self.tools.append(&mut staged.tools);
        Ok(())
    }

    /// Adds a connected MCP server's tools as `mcp__<server>__<tool>`. A
    /// tool that cannot be offered (a clashing or too long name, an invalid
    /// schema) is left out with a warning; the others are added.
    pub fn add_mcp(&mut self, server: &Arc<McpServer>) -> Vec<String> {
        let mut warnings = Vec::new();
        let ceiling = Arc::new(Ceiling::none().with_calls_needing_approval());
        for tool in server.tools() {
            let name = crate::mcp::tool_name(&server.name, &tool.name);
            let definition = ToolDefinition {
                name: name.clone(),
                description: tool.description.clone(),
                input_schema: tool.input_schema.clone(),
                annotations: ToolAnnotations {
                    read_only: tool.read_only,
                    ..ToolAnnotations::default()
                },
            };
            let provider = ToolProvider::Mcp(McpHandle {
                server: server.clone(),
                tool: tool.name.clone(),
                read_only: tool.read_only,
            });
            let plugin = format!("mcp:{}", server.name);
            if let Err(e) = self.add_tools(&plugin, &[definition], provider, ceiling.clone(), None)
            {
                warnings.push(format!(
                    "MCP server `{}`: tool `{}` left out: {e}",
                    server.name, tool.name
                ));
            }
        }
        warnings
    }

    fn add_tools(
        &mut self,
        plugin: &str,
        definitions: &[ToolDefinition],
        provider: ToolProvider,
        ceiling: Arc<Ceiling>,
        limits: Option<CallLimits>,
    ) -> Result<(), RegistryError> {
        for definition in definitions {
            let plugin = plugin.to_string();
            if !valid_tool_name(&definition.name) {
                return Err(RegistryError::InvalidName {
                    plugin,
                    tool: definition.name.clone(),
                });
            }
            if let Some(existing) = self.get(&definition.name) {
                return Err(RegistryError::DuplicateTool {
                    tool: definition.name.clone(),
                    first: existing.plugin().to_string(),
                    second: plugin,
                });
            }
            let invalid = |reason: String| RegistryError::InvalidSchema {
                plugin: plugin.clone(),
                tool: definition.name.clone(),
                reason,
            };
            let schema: Value = serde_json::from_str(&definition.input_schema)
                .map_err(|e| invalid(e.to_string()))?;
            if schema.get("type").and_then(Value::as_str) != Some("object") {
                return Err(invalid(
                    "the input schema must have `\"type\": \"object\"`".into(),
                ));
            }
            let validator =
                jsonschema::validator_for(&schema).map_err(|e| invalid(e.to_string()))?;
            self.tools.push(Arc::new(RegisteredTool {
                definition: definition.clone(),
                schema,
                validator,
                provider: provider.clone(),
                ceiling: ceiling.clone(),
                limits,
            }));
        }
        Ok(())
    }

    /// Keeps only the named tools (`--tools`), in the order given.
    pub fn select(mut self, names: &[String]) -> Result<Self, RegistryError> {
        let mut selected = Vec::with_capacity(names.len());
        for name in names {
            let Some(index) = self.tools.iter().position(|t| &t.definition.name == name) else {
                if selected
                    .iter()
                    .any(|t: &Arc<RegisteredTool>| &t.definition.name == name)
                {
                    continue; // named twice
                }
                return Err(RegistryError::UnknownSelection(
                    name.clone(),
                    self.names().join(", "),
                ));
            };
            selected.push(self.tools.remove(index));
        }
        Ok(Self { tools: selected })
    }

    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools
            .iter()
            .find(|t| t.definition.name == name)
            .map(|t| &**t)
    }

    /// The tool, shared (to hold across a call while the registry changes).
    pub fn get_shared(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        self.tools
            .iter()
            .find(|t| t.definition.name == name)
            .cloned()
    }

    /// Replaces an MCP server's tools with its current list.
    pub fn replace_mcp(&mut self, server: &Arc<McpServer>) -> Vec<String> {
        self.tools.retain(|t| match &t.provider {
            ToolProvider::Mcp(mcp) => !Arc::ptr_eq(&mcp.server, server),
            _ => true,
        });
        self.add_mcp(server)
    }

    pub fn names(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|t| t.definition.name.clone())
            .collect()
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|t| ToolSpec {
                name: t.definition.name.clone(),
                description: t.definition.description.clone(),
                input_schema: t.schema.clone(),
            })
            .collect()
    }
}

fn valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::valid_tool_name;

    #[test]
    fn tool_names_follow_the_api_rules() {
        for ok in ["Read", "mcp__srv__tool", "a-b", &"x".repeat(64)] {
            assert!(valid_tool_name(ok), "{ok}");
        }
        for bad in ["", "1abc", "a b", "naïve", &"x".repeat(65), "_x"] {
            assert!(!valid_tool_name(bad), "{bad}");
        }
    }
}
