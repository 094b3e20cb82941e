//! The registry: every tool the session can offer, by name, each with its
//! compiled input schema, its plugin's capability ceiling and limits, and
//! what runs its calls (a component, loaded on first use, or an MCP
//! server's tool).
//!
//! The registry never offers two tools under one name, and never offers a
//! tool whose schema is not valid JSON Schema. Components are loaded on
//! first use: a first-party one from the bytes embedded in the binary, an
//! installed one after its bytes are checked against the approved digest.

mod handle;
mod lazy;
mod mcp_set;
mod presentation;
mod typed;

use super::builtin::BUILTIN_PLUGINS;
use crate::mcp::McpServer;
use crate::model::ToolSpec;
use crate::policy::{CallApproval, Ceiling};
use crate::sandbox::{
    CallLimits, Sandbox, SandboxError, ToolAnnotations, ToolComponent, ToolDefinition,
};
pub use handle::{McpHandle, NativeTool, ToolHandle, run_by_the_pipeline};
use lazy::{LazyComponent, Source};
pub use mcp_set::{McpSet, McpToggleError};
pub use presentation::{
    CallView, Change, FileChange, Presentation, Presentations, Subject, Todo, ToolKind,
};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
pub use typed::TypedNativeTool;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("plugin `{plugin}`: {}", .source.describe())]
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
    #[error("first-party plugin `{plugin}`: {reason}")]
    Definition { plugin: String, reason: String },
    #[error(
        "unknown tool `{0}` in --tools, which chooses among the built-in tools ({1}); plugin and MCP tools are always offered, subject to the rules"
    )]
    UnknownSelection(String, String),
}

/// An installed plugin, as the registry takes it: its tools as approved,
/// where its bytes are and what they must hash to.
#[derive(Debug, Clone)]
pub struct InstalledTools {
    pub plugin: String,
    pub path: PathBuf,
    /// SHA-256 (lowercase hex) of the approved bytes.
    pub digest: String,
    /// The `carapace:tool` version it was installed as.
    pub contract: String,
    pub tools: Vec<ToolDefinition>,
    pub ceiling: Ceiling,
    pub limits: CallLimits,
    /// What it reads through `wasi:config/store` (the settings'
    /// `pluginConfig` for it).
    pub config: Vec<(String, String)>,
}

/// One tool, ready to be offered and called.
pub struct RegisteredTool {
    pub definition: ToolDefinition,
    pub schema: Value,
    /// Compiled when the tool is added, or — for schemas vetted before
    /// (first-party, approved at install) — on first use, so a session
    /// does not compile validators for tools it never calls.
    validator: std::sync::OnceLock<Result<jsonschema::Validator, String>>,
    provider: ToolProvider,
    pub ceiling: Arc<Ceiling>,
    /// How its calls are asked about beyond what they need.
    pub approval: CallApproval,
    /// The plugin's own limits, when its manifest sets them.
    pub limits: Option<CallLimits>,
    /// How its calls are shown.
    pub presentation: Presentation,
}

/// Where a tool's calls go.
#[derive(Clone)]
enum ToolProvider {
    /// A first-party component, built with carapace: the only kind that
    /// sees the session's read ledger.
    FirstParty(Arc<LazyComponent>),
    /// Anyone else's component.
    ThirdParty(Arc<LazyComponent>),
    Mcp(McpHandle),
    /// Run by the host itself.
    Native(Arc<dyn NativeTool>),
}

impl RegisteredTool {
    /// Whether its calls start a skill (a host tool that says so).
    pub fn starts_skills(&self) -> bool {
        matches!(&self.provider, ToolProvider::Native(tool) if tool.starts_skills())
    }

    /// Whether its calls widen later calls' permissions (RequestPermissions).
    pub fn grants_permissions(&self) -> bool {
        matches!(&self.provider, ToolProvider::Native(tool) if tool.grants_permissions())
    }

    /// Whether its calls run a script of tool calls (Script).
    pub fn runs_scripts(&self) -> bool {
        matches!(&self.provider, ToolProvider::Native(tool) if tool.runs_scripts())
    }

    /// What runs the tool's calls (loading its component on first use).
    pub async fn handle(&self) -> Result<ToolHandle, SandboxError> {
        match &self.provider {
            ToolProvider::Mcp(mcp) => Ok(ToolHandle::Mcp(mcp.clone())),
            ToolProvider::Native(native) => Ok(ToolHandle::Native(native.clone())),
            ToolProvider::FirstParty(lazy) => Ok(ToolHandle::Wasm {
                component: lazy.component().await?,
                ledger_access: true,
                ceiling: self.ceiling.clone(),
            }),
            ToolProvider::ThirdParty(lazy) => Ok(ToolHandle::Wasm {
                component: lazy.component().await?,
                ledger_access: false,
                ceiling: self.ceiling.clone(),
            }),
        }
    }

    /// The tool's component (loading it on first use); an MCP tool has
    /// none.
    pub async fn component(&self) -> Result<ToolComponent, SandboxError> {
        match self.handle().await? {
            ToolHandle::Wasm { component, .. } => Ok(component),
            ToolHandle::Mcp(mcp) => Err(SandboxError::Unavailable(format!(
                "{} is a tool of MCP server `{}`, not a component",
                mcp.tool, mcp.server.name
            ))),
            ToolHandle::Native(_) => Err(SandboxError::Unavailable(
                "a tool carapace runs itself is not a component".into(),
            )),
        }
    }

    /// The plugin (or `mcp:<server>`) the tool belongs to.
    pub fn plugin(&self) -> &str {
        match &self.provider {
            ToolProvider::FirstParty(lazy) | ToolProvider::ThirdParty(lazy) => &lazy.name,
            ToolProvider::Mcp(mcp) => &mcp.server.name,
            ToolProvider::Native(_) => "carapace",
        }
    }

    /// Whether the tool is carapace's own.
    pub fn is_first_party(&self) -> bool {
        matches!(self.provider, ToolProvider::FirstParty(_))
    }

    /// Every way `input` violates the tool's schema, one line each.
    pub fn schema_errors(&self, input: &Value) -> Vec<String> {
        let validator = self
            .validator
            .get_or_init(|| jsonschema::validator_for(&self.schema).map_err(|e| e.to_string()));
        let validator = match validator {
            Ok(validator) => validator,
            Err(reason) => {
                return vec![format!(
                    "the tool's input schema is not valid JSON Schema ({reason}), so no input can be checked against it"
                )];
            }
        };
        validator
            .iter_errors(input)
            .map(|e| {
                let at = e.instance_path().to_string();
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
    /// The first-party tools embedded in this binary. Their definitions
    /// come from the component cache when an earlier run stored them, so
    /// no component is compiled, loaded or run before one of its tools is
    /// called; otherwise each component is loaded now and its definitions
    /// stored for the next run.
    pub async fn builtin(sandbox: &Sandbox) -> Result<Self, RegistryError> {
        let mut registry = Self::default();
        for plugin in BUILTIN_PLUGINS {
            let tools = plugin
                .definitions()
                .map_err(|reason| RegistryError::Definition {
                    plugin: plugin.name.to_string(),
                    reason,
                })?;
            let lazy = LazyComponent {
                name: plugin.name.to_string(),
                tools,
                source: Source::Embedded {
                    sandbox: sandbox.clone(),
                    wasm: plugin.wasm,
                    digest: plugin.digest,
                },
                loaded: tokio::sync::OnceCell::new(),
            };
            let definitions = lazy.tools.clone();
            registry.add_tools(
                plugin.name,
                &definitions,
                ToolProvider::FirstParty(Arc::new(lazy)),
                Arc::new((plugin.ceiling)()),
                CallApproval::ByNeeds,
                None,
            )?;
        }
        Ok(registry)
    }

    /// Adds every tool of a third-party `component`.
    pub fn add(
        &mut self,
        component: ToolComponent,
        ceiling: Arc<Ceiling>,
    ) -> Result<(), RegistryError> {
        self.add_with_limits(component, ceiling, None)
    }

    /// Adds every tool of a third-party `component`, run under `limits`
    /// rather than the session's defaults when given.
    pub fn add_with_limits(
        &mut self,
        component: ToolComponent,
        ceiling: Arc<Ceiling>,
        limits: Option<CallLimits>,
    ) -> Result<(), RegistryError> {
        let name = component.name().to_string();
        let definitions = component.tools().to_vec();
        self.add_tools(
            &name,
            &definitions,
            ToolProvider::ThirdParty(Arc::new(LazyComponent::loaded(component))),
            ceiling,
            CallApproval::ByNeeds,
            limits,
        )
    }

    /// Adds an installed plugin's tools, as recorded when it was approved;
    /// its component is compiled or loaded from the cache on first use. The
    /// plugin's tools are all added or none is.
    pub fn add_installed(
        &mut self,
        sandbox: &Sandbox,
        plugin: InstalledTools,
    ) -> Result<(), RegistryError> {
        let InstalledTools {
            plugin: name,
            path,
            digest,
            contract,
            tools,
            ceiling,
            limits,
            config,
        } = plugin;
        if !path.is_file() {
            return Err(RegistryError::Installed {
                plugin: name,
                reason: format!(
                    "its component {} is missing; reinstall it with `carapace plugin add`",
                    path.display()
                ),
            });
        }
        let provider = ToolProvider::ThirdParty(Arc::new(LazyComponent {
            name: name.clone(),
            tools: tools.clone(),
            source: Source::Installed {
                sandbox: sandbox.clone(),
                path,
                digest,
                contract,
                config,
            },
            loaded: tokio::sync::OnceCell::new(),
        }));
        let mut staged = self.clone();
        let approval = CallApproval::ByNeeds;
        staged.add_tools(
            &name,
            &tools,
            provider,
            Arc::new(ceiling),
            approval,
            Some(limits),
        )?;
        *self = staged;
        Ok(())
    }

    /// Adds a connected MCP server's tools as `mcp__<server>__<tool>`. A
    /// tool that cannot be offered (a clashing or too long name, an invalid
    /// schema) is left out with a warning; the others are added.
    pub fn add_mcp(&mut self, server: &Arc<McpServer>) -> Vec<String> {
        let mut warnings = Vec::new();
        // What an MCP tool does is the server's business: every call asks
        // unless a rule allows it.
        let ceiling = Arc::new(Ceiling::none());
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
            let asks = CallApproval::Asks;
            let added = self.add_tools(
                &plugin,
                &[definition],
                provider,
                ceiling.clone(),
                asks,
                Some(server.limits()),
            );
            if let Err(e) = added {
                warnings.push(format!(
                    "MCP server `{}`: tool `{}` left out: {e}",
                    server.name, tool.name
                ));
            }
        }
        warnings
    }

    /// Replaces a tool the host runs itself with a new definition of it.
    pub fn replace_native(
        &mut self,
        definition: ToolDefinition,
        tool: Arc<dyn NativeTool>,
    ) -> Result<(), RegistryError> {
        self.tools.retain(|t| {
            !(matches!(t.provider, ToolProvider::Native(_)) && t.definition.name == definition.name)
        });
        self.add_native(definition, tool)
    }

    /// Adds a tool the host runs itself, with carapace's schema (vetted).
    pub fn add_native(
        &mut self,
        definition: ToolDefinition,
        tool: Arc<dyn NativeTool>,
    ) -> Result<(), RegistryError> {
        self.add_native_asking(definition, tool, CallApproval::ByNeeds)
    }

    /// [`Self::add_native`] for a tool whose calls ask whatever they need
    /// (ExitPlanMode, WebSearch, Skill). Host tools are granted nothing.
    pub fn add_native_asking(
        &mut self,
        definition: ToolDefinition,
        tool: Arc<dyn NativeTool>,
        approval: CallApproval,
    ) -> Result<(), RegistryError> {
        self.add_tools(
            "carapace",
            &[definition],
            ToolProvider::Native(tool),
            Arc::new(Ceiling::none()),
            approval,
            None,
        )
    }

    /// How each registered tool's calls are shown.
    pub fn presentations(&self) -> Presentations {
        self.tools
            .iter()
            .map(|t| (t.definition.name.clone(), t.presentation))
            .collect()
    }

    /// How `name`'s calls are shown (a tool not registered: by its input).
    pub fn presentation_of(&self, name: &str) -> Presentation {
        self.get(name).map(|t| t.presentation).unwrap_or_default()
    }

    fn add_tools(
        &mut self,
        plugin: &str,
        definitions: &[ToolDefinition],
        provider: ToolProvider,
        ceiling: Arc<Ceiling>,
        approval: CallApproval,
        limits: Option<CallLimits>,
    ) -> Result<(), RegistryError> {
        // Schemas vetted before are compiled on first use.
        let vetted = matches!(
            &provider,
            ToolProvider::FirstParty(_) | ToolProvider::Native(_)
        ) || matches!(&provider, ToolProvider::ThirdParty(lazy) if matches!(lazy.source, Source::Installed { .. }));
        // Declared where the tool is: the first-party table, a host tool.
        let presentation = match &provider {
            ToolProvider::FirstParty(_) => BUILTIN_PLUGINS
                .iter()
                .find(|p| p.name == plugin)
                .map(|p| p.presentation)
                .unwrap_or_default(),
            ToolProvider::Native(tool) => tool.presentation(),
            ToolProvider::ThirdParty(_) | ToolProvider::Mcp(_) => Presentation::default(),
        };
        for definition in definitions {
            if let Some(existing) = self.get(&definition.name) {
                return Err(RegistryError::DuplicateTool {
                    tool: definition.name.clone(),
                    first: existing.plugin().to_string(),
                    second: plugin.to_string(),
                });
            }
            let validator = std::sync::OnceLock::new();
            let schema = if vetted {
                checked_shape(plugin, definition)?
            } else {
                let (schema, compiled) = checked_definition(plugin, definition)?;
                let _ = validator.set(Ok(compiled));
                schema
            };
            self.tools.push(Arc::new(RegisteredTool {
                definition: definition.clone(),
                schema,
                validator,
                provider: provider.clone(),
                ceiling: ceiling.clone(),
                approval,
                limits,
                presentation,
            }));
        }
        Ok(())
    }

    /// `--tools`: which built-in tools are offered, in this order. As
    /// in Claude Code, the list chooses from the built-in set only: plugin
    /// and MCP tools stay (the rules decide about them).
    pub fn select(mut self, names: &[String]) -> Result<Self, RegistryError> {
        // Built in: carapace's components and the tools it runs itself.
        let first_party = |t: &Arc<RegisteredTool>| {
            matches!(
                t.provider,
                ToolProvider::FirstParty(_) | ToolProvider::Native(_)
            )
        };
        let mut selected = Vec::with_capacity(self.tools.len());
        for name in names {
            let Some(index) = self
                .tools
                .iter()
                .position(|t| first_party(t) && &t.definition.name == name)
            else {
                if selected
                    .iter()
                    .any(|t: &Arc<RegisteredTool>| &t.definition.name == name)
                {
                    continue; // named twice
                }
                let built_in: Vec<String> = self
                    .tools
                    .iter()
                    .chain(selected.iter())
                    .filter(|t| first_party(t))
                    .map(|t| t.definition.name.clone())
                    .collect();
                return Err(RegistryError::UnknownSelection(
                    name.clone(),
                    built_in.join(", "),
                ));
            };
            selected.push(self.tools.remove(index));
        }
        selected.extend(self.tools.into_iter().filter(|t| !first_party(t)));
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

    /// Takes the tools of the MCP server called `name` out of the registry;
    /// returns the server (to offer it again), `None` when no tool of a
    /// server by that name is here.
    pub fn remove_mcp_named(&mut self, name: &str) -> Option<Arc<McpServer>> {
        let server = self.tools.iter().find_map(|t| match &t.provider {
            ToolProvider::Mcp(mcp) if mcp.server.name == name => Some(mcp.server.clone()),
            _ => None,
        })?;
        self.tools.retain(|t| match &t.provider {
            ToolProvider::Mcp(mcp) => !Arc::ptr_eq(&mcp.server, &server),
            _ => true,
        });
        Some(server)
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

/// Checks that a plugin's tool can be offered: a name the API accepts, an
/// input schema that is valid JSON Schema for an object. Returns the schema
/// and its compiled validator.
pub fn checked_definition(
    plugin: &str,
    definition: &ToolDefinition,
) -> Result<(Value, jsonschema::Validator), RegistryError> {
    let schema = checked_shape(plugin, definition)?;
    let validator =
        jsonschema::validator_for(&schema).map_err(|e| RegistryError::InvalidSchema {
            plugin: plugin.to_string(),
            tool: definition.name.clone(),
            reason: e.to_string(),
        })?;
    Ok((schema, validator))
}

/// The checks of [`checked_definition`] short of compiling the schema: the
/// name, and a JSON object schema of `"type": "object"`.
fn checked_shape(plugin: &str, definition: &ToolDefinition) -> Result<Value, RegistryError> {
    if !valid_tool_name(&definition.name) {
        return Err(RegistryError::InvalidName {
            plugin: plugin.to_string(),
            tool: definition.name.clone(),
        });
    }
    let invalid = |reason: String| RegistryError::InvalidSchema {
        plugin: plugin.to_string(),
        tool: definition.name.clone(),
        reason,
    };
    let schema: Value =
        serde_json::from_str(&definition.input_schema).map_err(|e| invalid(e.to_string()))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(invalid(
            "the input schema must have `\"type\": \"object\"`".into(),
        ));
    }
    Ok(schema)
}

fn valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests;
