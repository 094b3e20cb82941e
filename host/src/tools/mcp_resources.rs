//! ListMcpResourcesTool and ReadMcpResourceTool: the MCP servers'
//! resources, as Claude Code offers them to the model. Host-native because
//! the servers are the session's; each server is spoken to only through
//! its sandboxed bridge, and what comes back is JSON the bridge wrote.
//! Both only read: never asked, though rules may deny them.

use crate::mcp::{McpServer, ResourceList};
use crate::sandbox::{CallContext, ToolContent, ToolDefinition, ToolFailure, ToolOutput};
use crate::tools::{McpSet, Presentation, Subject, ToolKind, TypedNativeTool};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;

pub const LIST_RESOURCES_TOOL: &str = "ListMcpResourcesTool";
pub const READ_RESOURCE_TOOL: &str = "ReadMcpResourceTool";

pub fn list_definition() -> ToolDefinition {
    ToolDefinition {
        name: LIST_RESOURCES_TOOL.into(),
        description: "Lists the resources the connected MCP servers offer (documents, records, files a server exposes by URI), and the URI templates they accept. Each entry has the server's fields (uri or uriTemplate, name, description, mimeType) and `server`, the server it belongs to. Read one with ReadMcpResourceTool.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "Only this server's resources (all servers' when left out)"}
            },
            "additionalProperties": false
        })
        .to_string(),
        annotations: Default::default(),
    }
}

pub fn read_definition() -> ToolDefinition {
    ToolDefinition {
        name: READ_RESOURCE_TOOL.into(),
        description: "Reads one resource from an MCP server by its URI (from ListMcpResourcesTool, or a template filled in).".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The MCP server's name"},
                "uri": {"type": "string", "description": "The resource's URI"}
            },
            "required": ["server", "uri"],
            "additionalProperties": false
        })
        .to_string(),
        annotations: Default::default(),
    }
}

/// The server `name`, among those connected and turned on; a name that is
/// none of them is the call's error, worded as Claude Code words it.
fn server(servers: &McpSet, name: &str) -> Result<Arc<McpServer>, ToolOutput> {
    let connected = servers.enabled();
    connected
        .iter()
        .find(|s| s.name == name)
        .cloned()
        .ok_or_else(|| {
            let names: Vec<&str> = connected.iter().map(|s| s.name.as_str()).collect();
            let mut output = text(format!(
                "Server \"{name}\" not found. Available servers: {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
            output.is_error = true;
            output
        })
}

fn text(text: String) -> ToolOutput {
    ToolOutput {
        content: vec![ToolContent::Text(text)],
        is_error: false,
        structured: None,
    }
}

#[derive(serde::Deserialize)]
pub struct ListInput {
    server: Option<String>,
}

pub struct ListResourcesTool {
    pub servers: Arc<McpSet>,
}

impl ListResourcesTool {
    /// `server`'s resources then its templates, each entry marked with
    /// the server's name.
    async fn entries(server: &McpServer) -> Result<Vec<Value>, ToolFailure> {
        let mut entries = Vec::new();
        for list in [ResourceList::Resources, ResourceList::Templates] {
            let found = server
                .resources(list)
                .await
                .map_err(|e| ToolFailure::Failed(format!("MCP server `{}`: {e}", server.name)))?;
            for resource in found {
                let mut entry: Value = serde_json::from_str(&resource.entry)
                    .unwrap_or_else(|_| json!({"uri": resource.uri, "name": resource.name}));
                entry["server"] = json!(server.name);
                entries.push(entry);
            }
        }
        Ok(entries)
    }
}

impl TypedNativeTool for ListResourcesTool {
    type Input = ListInput;
    const CONCURRENCY_SAFE: bool = true;
    const PRESENTATION: Presentation = Presentation {
        kind: ToolKind::Read,
        action: Some("list MCP resources"),
        subject: Subject::Field("server"),
        ..Presentation::UNKNOWN
    };

    fn run<'a>(
        &'a self,
        _context: &'a CallContext,
        input: ListInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let servers = match &input.server {
                Some(name) => match server(&self.servers, name) {
                    Ok(found) => vec![found],
                    Err(not_found) => return Ok(not_found),
                },
                None => self.servers.enabled(),
            };
            let mut entries = Vec::new();
            for server in servers {
                entries.extend(Self::entries(&server).await?);
            }
            Ok(text(Value::Array(entries).to_string()))
        })
    }
}

#[derive(serde::Deserialize)]
pub struct ReadInput {
    server: String,
    uri: String,
}

pub struct ReadResourceTool {
    pub servers: Arc<McpSet>,
}

impl TypedNativeTool for ReadResourceTool {
    type Input = ReadInput;
    const CONCURRENCY_SAFE: bool = true;
    const PRESENTATION: Presentation = Presentation {
        kind: ToolKind::Read,
        action: Some("read an MCP resource"),
        subject: Subject::Field("uri"),
        ..Presentation::UNKNOWN
    };

    fn run<'a>(
        &'a self,
        _context: &'a CallContext,
        input: ReadInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let server = match server(&self.servers, &input.server) {
                Ok(found) => found,
                Err(not_found) => return Ok(not_found),
            };
            let contents = server
                .read_resource(&input.uri)
                .await
                .map_err(|e| ToolFailure::Failed(format!("MCP server `{}`: {e}", server.name)))?;
            Ok(text(contents))
        })
    }
}
