//! `carapace mcp serve`: carapace's tools — first-party and installed
//! WebAssembly plugins — offered to any MCP client over stdio. Every call
//! goes through the same pipeline as in a session: schema, plan, policy,
//! a sandboxed instance holding only the grant. Nobody is there to answer a
//! question, so what the policy would ask about is refused.
//!
//! A front end, beside `acp`, `interactive` and `worker`: it imports no
//! other front end, and only `cli` imports it (which opens the session it
//! serves). Imports: `agent`, `model`, `tools` — rooms below it.

pub mod http;

use crate::agent::{ToolCall, ToolRuntime};
use crate::model::{ToolResultBlock, ToolResultContent};
use crate::tools::ToolPipeline;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// The revisions served through the `initialize` handshake, newest first.
const VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The current revision: no handshake; each request names the revision
/// in its `_meta`, and is answered in kind.
const MODERN: &str = "2026-07-28";

/// JSON-RPC error for a revision this server does not speak.
const UNSUPPORTED_VERSION: i64 = -32022;

const INSTRUCTIONS: &str = "carapace's tools; every call runs in a WebAssembly sandbox holding only what the policy grants it.";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// Serves `pipeline`'s tools on `input`/`output` (newline-delimited
/// JSON-RPC) until the client closes its side. Calls run concurrently;
/// replies are written whole, one per line.
pub async fn serve<R, W>(pipeline: Arc<ToolPipeline>, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let output = Arc::new(tokio::sync::Mutex::new(output));
    let mut lines = input.lines();
    let mut calls = tokio::task::JoinSet::new();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let pipeline = pipeline.clone();
        let output = output.clone();
        // Each message is answered on its own task: a long call does not
        // hold up a ping or a listing.
        calls.spawn(async move {
            if let Some(reply) = answer(&pipeline, &line).await {
                let _ = write(&output, &reply).await;
            }
        });
    }
    // The client is done: let running calls answer before leaving.
    while calls.join_next().await.is_some() {}
    Ok(())
}

/// The reply to one JSON-RPC message; `None` for a notification.
pub async fn answer(pipeline: &Arc<ToolPipeline>, text: &str) -> Option<Value> {
    let message: Value = match serde_json::from_str(text) {
        Ok(message) => message,
        Err(e) => return Some(error(Value::Null, PARSE_ERROR, &format!("not JSON: {e}"))),
    };
    let id = message.get("id").cloned()?; // a notification: nothing to answer
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    let params = message.get("params").cloned().unwrap_or(json!({}));
    let era = match Era::of(&params) {
        Ok(era) => era,
        Err(asked) => return Some(unsupported(id, &asked)),
    };
    Some(match method {
        "initialize" => initialized(id, &params),
        "server/discover" => result(id, era.complete(discovered(), true)),
        "ping" => result(id, era.complete(json!({}), false)),
        "tools/list" => result(
            id,
            era.complete(json!({"tools": tool_list(pipeline)}), true),
        ),
        "tools/call" => call(pipeline, id, &params, era).await,
        "" => error(id, INVALID_REQUEST, "a request needs a method"),
        other => error(
            id,
            METHOD_NOT_FOUND,
            &format!("carapace does not serve `{other}`"),
        ),
    })
}

/// The revision a request speaks: the current one when its `_meta` names
/// it, else the one the handshake agreed (whose results carry nothing
/// more). A request naming a revision this server does not speak is
/// refused with what it does speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    Handshake,
    Modern,
}

impl Era {
    fn of(params: &Value) -> Result<Self, String> {
        let named = params
            .pointer("/_meta/io.modelcontextprotocol~1protocolVersion")
            .and_then(Value::as_str);
        match named {
            None => Ok(Era::Handshake),
            Some(MODERN) => Ok(Era::Modern),
            Some(other) => Err(other.to_string()),
        }
    }

    /// `result` as this revision answers it: the current one says the
    /// result is complete and who answered, and how long a listing may be
    /// cached (not at all: the tools follow the user's settings).
    fn complete(self, mut result: Value, cacheable: bool) -> Value {
        if self == Era::Modern
            && let Some(object) = result.as_object_mut()
        {
            object.insert("resultType".into(), json!("complete"));
            object.insert(
                "_meta".into(),
                json!({"io.modelcontextprotocol/serverInfo": server_info()}),
            );
            if cacheable {
                object.insert("cacheScope".into(), json!("private"));
                object.insert("ttlMs".into(), json!(0));
            }
        }
        result
    }
}

fn server_info() -> Value {
    json!({"name": "carapace", "version": env!("CARGO_PKG_VERSION")})
}

/// `initialize` (the earlier revisions): the client's revision when it is
/// one of them, else the newest.
fn initialized(id: Value, params: &Value) -> Value {
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or(VERSIONS[0]);
    let version = VERSIONS
        .iter()
        .find(|v| **v == asked)
        .unwrap_or(&VERSIONS[0]);
    result(
        id,
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        }),
    )
}

/// `server/discover` (the current revision): what this server speaks.
fn discovered() -> Value {
    json!({
        "supportedVersions": [MODERN],
        "capabilities": {"tools": {"listChanged": false}},
        "instructions": INSTRUCTIONS,
    })
}

fn unsupported(id: Value, asked: &str) -> Value {
    let mut supported = vec![MODERN];
    supported.extend(VERSIONS);
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": UNSUPPORTED_VERSION,
        "message": format!("carapace does not speak MCP revision `{asked}`"),
        "data": {"supported": supported, "requested": asked},
    }})
}

fn tool_list(pipeline: &ToolPipeline) -> Vec<Value> {
    let registry = pipeline.registry();
    pipeline
        .offered_names()
        .iter()
        .filter_map(|name| registry.get(name))
        .map(|tool| {
            let a = tool.definition.annotations;
            json!({
                "name": tool.definition.name,
                "description": tool.definition.description,
                "inputSchema": tool.schema,
                "annotations": {
                    "readOnlyHint": a.read_only,
                    "destructiveHint": a.destructive,
                    "idempotentHint": a.idempotent,
                    "openWorldHint": a.open_world,
                },
            })
        })
        .collect()
}

async fn call(pipeline: &Arc<ToolPipeline>, id: Value, params: &Value, era: Era) -> Value {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return error(id, INVALID_PARAMS, "tools/call needs a tool `name`");
    };
    let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
    let call = ToolCall {
        id: format!("mcp_{}", uuid::Uuid::new_v4().simple()),
        name: name.to_string(),
        input: arguments,
        invalid_input: None,
    };
    let outcome = pipeline.clone().call(call).await;
    let content: Vec<Value> = match &outcome.content {
        ToolResultContent::Text(text) => vec![json!({"type": "text", "text": text})],
        ToolResultContent::Blocks(blocks) => blocks
            .iter()
            .map(|block| match block {
                ToolResultBlock::Text { text } => json!({"type": "text", "text": text}),
                ToolResultBlock::Image { source } => json!({
                    "type": "image",
                    "data": source.data,
                    "mimeType": source.media_type,
                }),
            })
            .collect(),
    };
    let answered = json!({"content": content, "isError": outcome.is_error});
    result(id, era.complete(answered, false))
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

async fn write<W: AsyncWrite + Unpin>(
    output: &tokio::sync::Mutex<W>,
    message: &Value,
) -> std::io::Result<()> {
    let mut line = message.to_string();
    line.push('\n');
    let mut output = output.lock().await;
    output.write_all(line.as_bytes()).await?;
    output.flush().await
}
