//! A middleware hook for the middleware tests. Its settings entry's
//! `options` say what it does:
//!
//! ```json
//! {"role": "deny", "tool": "Bash", "pattern": "rm ", "tag": "org"}
//! ```
//!
//! - `deny`: a call to `tool` whose input contains `pattern` is answered
//!   with an error, without `next`;
//! - `answer`: a call to `tool` is answered with `content`, without `next`
//!   (the tool never runs);
//! - `undo`: `next`, then an error result is turned into `content`;
//! - `cache`: Read answered from `dir` (granted) when the file was read
//!   before; else `next`, and the result kept there;
//! - `rewrite`: `next` with `input` merged into the call's input;
//! - `pass`: `next`, unchanged — with `tag`, the tag is appended to the
//!   result's text on the way back (the order hooks ran in);
//! - `hide`: the tool list without `tools`;
//! - `spawn`: a spawn of `agent` is refused; others get `prefix` before
//!   their prompt;
//! - `trap` / `spin`: misbehaves on a tool call.
//!
//! With `log`, each event is appended to that (granted) file as a line.

wit_bindgen::generate!({
    world: "middleware-hook",
    path: "../../../wit/hook/v0.2.0",
});

use carapace::hook::next;
use carapace::hook::types::{Context, EventKind, SubagentSpawn, ToolCall, ToolOffer, ToolResult};
use exports::carapace::hook::middleware::Guest;
use serde_json::{Value, json};
use std::io::Write;

struct Probe;

fn options(ctx: &Context) -> Value {
    serde_json::from_str(&ctx.options).unwrap_or(Value::Null)
}

fn log(options: &Value, line: Value) {
    if let Some(path) = options["log"].as_str() {
        let line = format!("{line}\n");
        // A log that cannot be written is a failure the test sees.
        let mut file = match std::fs::OpenOptions::new().create(true).append(true).open(path) {
            Ok(file) => file,
            Err(e) => panic!("cannot log to {path}: {e}"),
        };
        if let Err(e) = file.write_all(line.as_bytes()) {
            panic!("cannot log to {path}: {e}");
        }
    }
}

fn text(content: &str) -> String {
    Value::String(content.into()).to_string()
}

fn tier(ctx: &Context) -> &'static str {
    use carapace::hook::types::Tier;
    match ctx.tier {
        Tier::ManagedFirst => "managed-first",
        Tier::User => "user",
        Tier::Project => "project",
        Tier::ManagedLast => "managed-last",
    }
}

/// The cache file for a Read of `path`.
fn cache_file(dir: &str, path: &str) -> String {
    let name: String = path
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{dir}/{name}.json")
}

fn tagged(mut result: ToolResult, tag: &str) -> ToolResult {
    let mark = format!("[{tag}]");
    let content: Value = serde_json::from_str(&result.content).unwrap_or(Value::Null);
    result.content = match content {
        Value::String(s) => Value::String(format!("{s}{mark}")).to_string(),
        Value::Array(mut blocks) => {
            blocks.push(json!({"type": "text", "text": mark}));
            Value::Array(blocks).to_string()
        }
        _ => result.content,
    };
    result
}

impl Guest for Probe {
    fn events() -> Vec<EventKind> {
        vec![
            EventKind::ToolCall,
            EventKind::ToolList,
            EventKind::SubagentSpawn,
            EventKind::SessionStart,
            EventKind::SessionEnd,
        ]
    }

    fn on_tool_call(ctx: Context, call: ToolCall) -> ToolResult {
        let options = options(&ctx);
        log(&options, json!({"event": "tool-call", "tier": tier(&ctx), "tool": call.tool_name, "input": call.tool_input, "agent": ctx.agent_type}));
        let role = options["role"].as_str().unwrap_or("pass");
        let for_tool = options["tool"].as_str().is_none_or(|t| t == call.tool_name);
        match role {
            "deny" if for_tool
                && options["pattern"]
                    .as_str()
                    .is_some_and(|p| call.tool_input.contains(p)) =>
            {
                ToolResult {
                    content: text(&format!(
                        "{} refused by the {} policy",
                        call.tool_name,
                        options["tag"].as_str().unwrap_or("middleware")
                    )),
                    is_error: true,
                }
            }
            "answer" if for_tool => ToolResult {
                content: text(options["content"].as_str().unwrap_or("answered")),
                is_error: false,
            },
            "undo" if for_tool => {
                let result = next::call_tool(&call);
                match result.is_error {
                    true => ToolResult {
                        content: text(options["content"].as_str().unwrap_or("all fine")),
                        is_error: false,
                    },
                    false => result,
                }
            }
            "cache" if call.tool_name == "Read" => cached_read(&options, call),
            "rewrite" if for_tool => {
                let mut input: Value = serde_json::from_str(&call.tool_input).unwrap_or(json!({}));
                if let (Some(input), Some(merged)) = (input.as_object_mut(), options["input"].as_object()) {
                    for (k, v) in merged {
                        input.insert(k.clone(), v.clone());
                    }
                }
                next::call_tool(&ToolCall { tool_input: input.to_string(), ..call })
            }
            "trap" if for_tool => panic!("asked to trap"),
            "spin" if for_tool => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            _ => {
                let result = next::call_tool(&call);
                match options["tag"].as_str() {
                    Some(tag) if role == "pass" => tagged(result, tag),
                    _ => result,
                }
            }
        }
    }

    fn on_tool_list(ctx: Context, tools: Vec<ToolOffer>) -> Vec<ToolOffer> {
        let options = options(&ctx);
        log(&options, json!({"event": "tool-list", "tier": tier(&ctx), "count": tools.len()}));
        let hidden: Vec<&str> = match options["role"].as_str() {
            Some("hide") => options["tools"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let kept = tools
            .into_iter()
            .filter(|t| !hidden.contains(&t.name.as_str()))
            .collect::<Vec<_>>();
        next::offer_tools(&kept)
    }

    fn on_subagent_spawn(ctx: Context, spawn: SubagentSpawn) -> Result<String, String> {
        let options = options(&ctx);
        log(&options, json!({"event": "subagent-spawn", "tier": tier(&ctx), "agent": spawn.agent_type, "prompt": spawn.prompt}));
        if options["role"] != "spawn" {
            return next::spawn_subagent(&spawn);
        }
        if options["agent"].as_str() == Some(spawn.agent_type.as_str()) {
            return Err(format!("the {} agent is not allowed here", spawn.agent_type));
        }
        let prefix = options["prefix"].as_str().unwrap_or("");
        next::spawn_subagent(&SubagentSpawn {
            prompt: format!("{prefix}{}", spawn.prompt),
            ..spawn
        })
    }

    fn on_session_start(ctx: Context, source: String) {
        log(&options(&ctx), json!({"event": "session-start", "tier": tier(&ctx), "source": source}));
        next::pass();
    }

    fn on_session_end(ctx: Context, reason: String) {
        log(&options(&ctx), json!({"event": "session-end", "tier": tier(&ctx), "reason": reason}));
        next::pass();
    }
}

fn cached_read(options: &Value, call: ToolCall) -> ToolResult {
    let dir = options["dir"].as_str().unwrap_or(".");
    let input: Value = serde_json::from_str(&call.tool_input).unwrap_or(Value::Null);
    let path = input["file_path"].as_str().unwrap_or_default();
    let file = cache_file(dir, path);
    if let Ok(kept) = std::fs::read_to_string(&file) {
        return ToolResult {
            content: kept,
            is_error: false,
        };
    }
    let result = next::call_tool(&call);
    if !result.is_error {
        // A cache that cannot be written only costs the next read.
        let _ = std::fs::write(&file, &result.content);
    }
    result
}

export!(Probe);
