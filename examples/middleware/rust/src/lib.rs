//! The guard middleware in Rust, as a `carapace:hook@0.2.0` component.
//!
//! Around every tool call: a Bash command line that removes files
//! recursively is answered with a refusal — the tool never runs — and
//! every other call is passed on with `next`, its result coming back with
//! anything shaped like an AWS access key id (`AKIA` and 16 capitals or
//! digits) replaced by `[redacted]`. The same middleware exists in
//! Python, JavaScript and C next to this directory.

wit_bindgen::generate!({
    world: "middleware-hook",
    path: "../../../wit/hook/v0.2.0",
});

use carapace::hook::next;
use carapace::hook::types::{Context, EventKind, SubagentSpawn, ToolCall, ToolOffer, ToolResult};
use exports::carapace::hook::middleware::Guest;
use serde_json::Value;

/// The wording every version of this middleware uses.
const REFUSAL: &str = "Recursive deletion is refused by the guard middleware.";
const REDACTED: &str = "[redacted]";

struct Guard;

/// Whether a simple command of `line` is `rm` with a recursive flag
/// (`-r`, `-R`, a flag group holding either, `--recursive`).
fn removes_recursively(line: &str) -> bool {
    line.split([';', '&', '|', '\n', '(', ')'])
        .any(|segment| {
            let mut words = segment
                .split_whitespace()
                .skip_while(|w| w.contains('=') || matches!(*w, "sudo" | "env" | "command"));
            words.next() == Some("rm")
                && words.any(|w| {
                    w == "--recursive"
                        || (w.starts_with('-') && !w.starts_with("--") && w.contains(['r', 'R']))
                })
        })
}

/// `text` with every AWS access key id replaced.
fn redact(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let key = bytes[i..].starts_with(b"AKIA")
            && bytes.len() >= i + 20
            && bytes[i + 4..i + 20]
                .iter()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        if key {
            out.push_str(REDACTED);
            i += 20;
        } else {
            let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
            out.push(ch);
            i += ch.len_utf8().max(1);
        }
    }
    out
}

/// The result with its text redacted: a string, or text blocks.
fn redacted(mut result: ToolResult) -> ToolResult {
    let Ok(mut content) = serde_json::from_str::<Value>(&result.content) else {
        return result;
    };
    match &mut content {
        Value::String(text) => *text = redact(text),
        Value::Array(blocks) => {
            for block in blocks {
                if let Some(Value::String(text)) = block.get_mut("text") {
                    *text = redact(text);
                }
            }
        }
        _ => {}
    }
    result.content = content.to_string();
    result
}

impl Guest for Guard {
    fn events() -> Vec<EventKind> {
        vec![EventKind::ToolCall]
    }

    fn on_tool_call(_ctx: Context, call: ToolCall) -> ToolResult {
        if call.tool_name == "Bash" {
            let input: Value = serde_json::from_str(&call.tool_input).unwrap_or(Value::Null);
            if removes_recursively(input["command"].as_str().unwrap_or_default()) {
                return ToolResult {
                    content: Value::String(REFUSAL.into()).to_string(),
                    is_error: true,
                };
            }
        }
        redacted(next::call_tool(&call))
    }

    // Registered for tool calls only: these are never called.
    fn on_tool_list(_ctx: Context, tools: Vec<ToolOffer>) -> Vec<ToolOffer> {
        next::offer_tools(&tools)
    }

    fn on_subagent_spawn(_ctx: Context, spawn: SubagentSpawn) -> Result<String, String> {
        next::spawn_subagent(&spawn)
    }

    fn on_session_start(_ctx: Context, _source: String) {
        next::pass();
    }

    fn on_session_end(_ctx: Context, _reason: String) {
        next::pass();
    }
}

export!(Guard);
