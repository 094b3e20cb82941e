//! A typed hook for the hook tests. It reads what to answer from
//! `<cwd>/hook-script.json` — which it can only do when its settings grant
//! that file — keyed by event name:
//!
//! ```json
//! {"PreToolUse": {"decision": "deny", "reason": "no", "context": "…",
//!                 "updated_input": {…}, "attempts": [{"op": "read", "path": "/etc/passwd"}]},
//!  "Stop": {"block": "keep going", "unless_active": true}}
//! ```
//!
//! `attempts` are tried inside the sandbox and reported (as JSON) in the
//! additional context, so a test can see what worked; `log` appends the
//! event to a file; `sleep_ms`, `spin`, `trap` and `error` misbehave.

wit_bindgen::generate!({
    world: "hook-plugin",
    path: "../../../wit/hook/v0.1.0",
});

use carapace::hook::types::{Common, Event, EventKind, Outcome, PermissionDecision};
use exports::carapace::hook::handler::Guest;
use serde_json::{Value, json};
use std::io::{Read, Write};

struct Probe;

impl Guest for Probe {
    fn events() -> Vec<EventKind> {
        vec![
            EventKind::PreToolUse,
            EventKind::PostToolUse,
            EventKind::PostToolUseFailure,
            EventKind::PostToolBatch,
            EventKind::Stop,
            EventKind::SubagentStop,
            EventKind::UserPromptSubmit,
            EventKind::SessionStart,
            EventKind::SessionEnd,
            EventKind::PreCompact,
            EventKind::Notification,
        ]
    }

    fn handle(common: Common, event: Event) -> Result<Outcome, String> {
        // A prompt that is itself a script (a JSON object keyed by event)
        // drives a hook that was granted nothing, for the escape tests.
        let inline = match &event {
            Event::UserPromptSubmit(prompt) => serde_json::from_str::<Value>(prompt)
                .ok()
                .filter(|v| v.get("UserPromptSubmit").is_some()),
            _ => None,
        };
        let script = match inline {
            Some(script) => script,
            None => {
                let script_path = format!("{}/hook-script.json", common.cwd);
                std::fs::read_to_string(&script_path)
                    .map_err(|e| format!("cannot read {script_path}: {e}"))
                    .and_then(|text| {
                        serde_json::from_str(&text).map_err(|e| format!("{script_path}: {e}"))
                    })?
            }
        };
        let step = &script[&common.hook_event_name];
        let described = describe(&common, &event);
        if let Some(path) = step["log"].as_str() {
            let line = format!("{described}\n");
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(line.as_bytes()))
                .map_err(|e| format!("cannot log to {path}: {e}"))?;
        }
        if let Some(ms) = step["sleep_ms"].as_u64() {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        if step["spin"] == true {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        if step["trap"] == true {
            panic!("the script asked this hook to crash");
        }
        if let Some(message) = step["error"].as_str() {
            return Err(message.to_string());
        }
        let text = |v: &Value| v.as_str().map(str::to_string);
        let stop_active =
            matches!(&event, Event::Stop(s) | Event::SubagentStop(s) if s.stop_hook_active);
        let mut outcome = Outcome {
            decision: step["decision"].as_str().and_then(|d| match d {
                "allow" => Some(PermissionDecision::Allow),
                "deny" => Some(PermissionDecision::Deny),
                "ask" => Some(PermissionDecision::Ask),
                "defer" => Some(PermissionDecision::Defer),
                _ => None,
            }),
            reason: text(&step["reason"]),
            block: false,
            updated_input: (!step["updated_input"].is_null())
                .then(|| step["updated_input"].to_string()),
            additional_context: text(&step["context"]),
            updated_tool_output: (!step["updated_output"].is_null())
                .then(|| step["updated_output"].to_string()),
            stop_reason: text(&step["stop"]),
            system_message: text(&step["system_message"]),
        };
        if let Some(reason) = text(&step["block"])
            && !(step["unless_active"] == true && stop_active)
        {
            outcome.block = true;
            outcome.reason = Some(reason);
        }
        if let Some(attempts) = step["attempts"].as_array() {
            let report: Vec<Value> = attempts.iter().map(attempt).collect();
            let report = Value::Array(report).to_string();
            outcome.additional_context = Some(match outcome.additional_context {
                Some(context) => format!("{context}\n{report}"),
                None => report,
            });
        }
        if step["echo"] == true {
            outcome.additional_context = Some(described);
        }
        Ok(outcome)
    }
}

export!(Probe);

/// The event as JSON, for logs and `echo`.
fn describe(common: &Common, event: &Event) -> String {
    let call = |c: &carapace::hook::types::ToolCall| json!({"tool_name": c.tool_name, "tool_input": c.tool_input, "tool_use_id": c.tool_use_id});
    let detail = match event {
        Event::PreToolUse(c) => call(c),
        Event::PostToolUse(done) => {
            json!({"call": call(&done.call), "tool_response": done.tool_response})
        }
        Event::PostToolUseFailure(failed) => {
            json!({"call": call(&failed.call), "error": failed.error})
        }
        Event::PostToolBatch(calls) => Value::Array(
            calls
                .iter()
                .map(|done| json!({"call": call(&done.call), "tool_response": done.tool_response}))
                .collect(),
        ),
        Event::Stop(s) | Event::SubagentStop(s) => {
            json!({"stop_hook_active": s.stop_hook_active, "last_assistant_message": s.last_assistant_message})
        }
        Event::UserPromptSubmit(text)
        | Event::SessionStart(text)
        | Event::SessionEnd(text)
        | Event::PreCompact(text)
        | Event::Notification(text) => json!(text),
    };
    json!({"event": common.hook_event_name, "session_id": common.session_id, "cwd": common.cwd,
           "permission_mode": common.permission_mode, "detail": detail})
    .to_string()
}

fn attempt(spec: &Value) -> Value {
    let target = spec["path"]
        .as_str()
        .or(spec["addr"].as_str())
        .or(spec["name"].as_str())
        .unwrap_or("");
    let result: Result<String, String> = match spec["op"].as_str() {
        Some("read") => std::fs::read_to_string(target).map_err(|e| e.to_string()),
        Some("write") => std::fs::write(target, b"written by a hook")
            .map(|()| "written".to_string())
            .map_err(|e| e.to_string()),
        Some("list") => std::fs::read_dir(target)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .map_err(|e| e.to_string()),
        Some("connect") => std::net::TcpStream::connect(target)
            .and_then(|mut s| {
                s.write_all(b"GET / HTTP/1.0\r\n\r\n")?;
                let mut buf = [0u8; 16];
                let n = s.read(&mut buf)?;
                Ok(format!("connected, read {n} bytes"))
            })
            .map_err(|e| e.to_string()),
        Some("env") => std::env::var(target).map_err(|e| e.to_string()),
        Some("create") => std::fs::write(target, b"")
            .map(|()| "created".to_string())
            .map_err(|e| e.to_string()),
        Some("wait_for") => {
            let limit = spec["timeout_ms"].as_u64().unwrap_or(5_000);
            let started = std::time::Instant::now();
            loop {
                if std::path::Path::new(target).exists() {
                    break Ok(format!(
                        "appeared after {} ms",
                        started.elapsed().as_millis()
                    ));
                }
                if started.elapsed().as_millis() as u64 >= limit {
                    break Err(format!("did not appear within {limit} ms"));
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        Some("env_all") => {
            let names: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
            if names.is_empty() {
                Err("no variables".into())
            } else {
                Ok(names.join(","))
            }
        }
        other => Err(format!("unknown op {other:?}")),
    };
    match result {
        Ok(detail) => json!({"op": spec["op"], "target": target, "ok": true, "detail": detail}),
        Err(detail) => json!({"op": spec["op"], "target": target, "ok": false, "detail": detail}),
    }
}
