//! Claude Code's `mcp_tool` hook: a tool of an MCP server the session has
//! connected, called with the hook's `input` — its string values taking
//! `${path}` from the event's JSON (`${tool_input.file_path}`) — its
//! answer read as a command hook's stdout. The server runs as it always
//! does (its bridge sandboxed, its process confined); the hook reaches
//! nothing else, and the call does not pass the tool pipeline, so no hook
//! runs on the hook's own call.

use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// Calls a tool of a connected MCP server: its text, and whether the
/// server said it failed.
pub trait McpToolCaller: Send + Sync {
    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<(String, bool), String>>;
}

/// One `mcp_tool` hook, as its settings describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolTarget {
    pub server: String,
    pub tool: String,
    pub input: Map<String, Value>,
}

impl McpToolTarget {
    /// The tool's arguments for the event whose JSON is `event`.
    pub fn arguments(&self, event: &Value) -> Value {
        Value::Object(
            self.input
                .iter()
                .map(|(key, value)| (key.clone(), fill(value, event)))
                .collect(),
        )
    }
}

/// `value` with every `${path}` in its strings (at any depth) replaced by
/// what the event's JSON holds there: a string as itself, anything else
/// as JSON, nothing when the path leads nowhere.
fn fill(value: &Value, event: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(interpolate(text, event)),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, event)).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), fill(v, event)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn interpolate(text: &str, event: &Value) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[at..]);
            return out;
        };
        let found = after[..end].split('.').try_fold(event, |v, key| v.get(key));
        match found {
            Some(Value::String(s)) => out.push_str(s),
            Some(Value::Null) | None => {}
            Some(other) => out.push_str(&other.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn input_strings_take_paths_from_the_event() {
        let target = McpToolTarget {
            server: "s".into(),
            tool: "t".into(),
            input: serde_json::from_value(json!({
                "path": "${tool_input.file_path}",
                "note": "${hook_event_name} on ${tool_name}: ${tool_input.missing}.",
                "nested": ["${tool_input.n}"],
                "kept": 3
            }))
            .unwrap_or_default(),
        };
        let event = json!({"hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": "/w/a.txt", "n": 7}});
        assert_eq!(
            target.arguments(&event),
            json!({"path": "/w/a.txt", "note": "PreToolUse on Write: .",
                   "nested": ["7"], "kept": 3})
        );
    }
}
