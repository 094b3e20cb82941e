//! What an ACP client sends, made into what a session takes: a prompt's
//! content blocks as the user message's text, the client's MCP servers as
//! an `.mcp.json`-shaped configuration.

use crate::model::ImageSource;
use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource, McpServer};
use serde_json::{Map, Value, json};

/// A prompt's blocks as one user message: text as written; a resource
/// link as an `@` mention of its file (read with the Read tool's grant,
/// like a mention typed on the screen) or, for another scheme, its URI;
/// an embedded text resource as a context block; images as image blocks
/// before the text. What carapace does not take (audio, binary
/// resources) is refused by name — the capabilities it announced say so.
pub fn prompt(blocks: &[ContentBlock]) -> Result<(String, Vec<ImageSource>), String> {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(match link.uri.strip_prefix("file://") {
                    Some(path) => format!("@{path}"),
                    None => link.uri.clone(),
                })
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(text) => parts.push(format!(
                    "<context ref=\"{}\">\n{}\n</context>",
                    text.uri, text.text
                )),
                _ => return Err("binary embedded resources are not taken".into()),
            },
            ContentBlock::Image(image) => images.push(
                ImageSource::base64(&image.mime_type, &image.data).map_err(|e| e.to_string())?,
            ),
            ContentBlock::Audio(_) => return Err("audio is not taken in prompts".into()),
            _ => return Err("a content block of a kind carapace does not know".into()),
        }
    }
    let text = parts.join("\n");
    match text.trim().is_empty() && images.is_empty() {
        true => Err("the prompt is empty".into()),
        false => Ok((text, images)),
    }
}

/// The client's MCP servers in `.mcp.json`'s shape: they start through
/// the same sandboxed bridge as the project's `.mcp.json` servers.
pub fn mcp_config(servers: &[McpServer]) -> Result<Option<Value>, String> {
    if servers.is_empty() {
        return Ok(None);
    }
    let mut configured = Map::new();
    for server in servers {
        let (name, config) = match server {
            McpServer::Stdio(stdio) => (
                stdio.name.clone(),
                json!({
                    "command": stdio.command,
                    "args": stdio.args,
                    "env": pairs(stdio.env.iter().map(|v| (&v.name, &v.value))),
                }),
            ),
            McpServer::Http(http) => (
                http.name.clone(),
                json!({
                    "type": "http",
                    "url": http.url,
                    "headers": pairs(http.headers.iter().map(|h| (&h.name, &h.value))),
                }),
            ),
            _ => return Err("only stdio and HTTP MCP servers are taken".into()),
        };
        if configured.insert(name.clone(), config).is_some() {
            return Err(format!("two MCP servers are named `{name}`"));
        }
    }
    Ok(Some(json!({"mcpServers": configured})))
}

fn pairs<'a>(items: impl Iterator<Item = (&'a String, &'a String)>) -> Value {
    Value::Object(
        items
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect(),
    )
}
