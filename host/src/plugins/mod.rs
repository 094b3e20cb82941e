//! Plugins: the components that provide tools, loaded into a registry of
//! tools by name, each with its compiled input schema and its plugin's
//! capability ceiling.
//!
//! The registry never offers two tools under one name, and never offers a
//! tool whose schema is not valid JSON Schema.

mod builtin;

pub use builtin::BUILTIN_PLUGINS;

use crate::model::ToolSpec;
use crate::policy::Ceiling;
use crate::sandbox::{Sandbox, SandboxError, ToolComponent, ToolDefinition};
use serde_json::Value;
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
    #[error("unknown tool `{0}` in --tools (available: {1})")]
    UnknownSelection(String, String),
}

/// One tool, ready to be offered and called.
pub struct RegisteredTool {
    pub definition: ToolDefinition,
    pub schema: Value,
    validator: jsonschema::Validator,
    pub component: ToolComponent,
    pub ceiling: Arc<Ceiling>,
}

impl RegisteredTool {
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

/// The tools of every loaded plugin, in a stable order.
#[derive(Default)]
pub struct ToolRegistry {
    tools: Vec<RegisteredTool>,
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
        for definition in component.tools() {
            let plugin = component.name().to_string();
            if !valid_tool_name(&definition.name) {
                return Err(RegistryError::InvalidName {
                    plugin,
                    tool: definition.name.clone(),
                });
            }
            if let Some(existing) = self.get(&definition.name) {
                return Err(RegistryError::DuplicateTool {
                    tool: definition.name.clone(),
                    first: existing.component.name().to_string(),
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
            self.tools.push(RegisteredTool {
                definition: definition.clone(),
                schema,
                validator,
                component: component.clone(),
                ceiling: ceiling.clone(),
            });
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
                    .any(|t: &RegisteredTool| &t.definition.name == name)
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
        self.tools.iter().find(|t| t.definition.name == name)
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
