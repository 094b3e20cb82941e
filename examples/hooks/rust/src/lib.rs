//! The audit policy hook in Rust, as a typed `carapace:hook` component.
//!
//! Blocks Bash commands that remove files recursively (`rm -r`, `rm -rf`,
//! `rm --recursive`, anywhere in a command line) and logs every tool call to
//! `<cwd>/.audit/tool-calls.jsonl` — the one directory its settings grant.
//! The same hook exists in Python, JavaScript and C next to this directory.

wit_bindgen::generate!({
    world: "hook-plugin",
    path: "../../../wit/hook/v0.1.0",
});

use carapace::hook::types::{Common, Event, EventKind, Outcome, PermissionDecision};
use exports::carapace::hook::handler::Guest;
use serde_json::{Value, json};
use std::io::Write;

/// Characters that end a simple command (`&&`, `||` and pipes included).
const SEPARATORS: &[char] = &[';', '&', '|', '\n', '(', ')', '`'];
/// Words that run the command after them.
const WRAPPERS: &[&str] = &[
    "sudo", "command", "env", "nice", "nohup", "time", "xargs", "exec",
];

/// The first simple command of `command` that is `rm` with a recursive flag.
pub fn recursive_rm(command: &str) -> Option<String> {
    for segment in command.split(SEPARATORS) {
        let words = shlex::split(segment).unwrap_or_else(|| {
            // Unbalanced quotes: fall back to whitespace, quotes dropped.
            segment
                .split_whitespace()
                .map(|w| w.trim_matches(['\'', '"']).to_string())
                .collect()
        });
        let mut words = words
            .iter()
            .skip_while(|w| WRAPPERS.contains(&w.as_str()) || w.contains('='));
        let Some(program) = words.next() else {
            continue;
        };
        if program.rsplit('/').next() != Some("rm") {
            continue;
        }
        for arg in words {
            if arg == "--" {
                break;
            }
            if arg == "--recursive"
                || (arg.starts_with('-') && !arg.starts_with("--") && arg.contains(['r', 'R']))
            {
                return Some(segment.trim().to_string());
            }
        }
    }
    None
}

struct AuditPolicy;

impl Guest for AuditPolicy {
    fn events() -> Vec<EventKind> {
        vec![EventKind::PreToolUse]
    }

    fn handle(common: Common, event: Event) -> Result<Outcome, String> {
        let mut outcome = Outcome {
            decision: None,
            reason: None,
            block: false,
            updated_input: None,
            additional_context: None,
            updated_tool_output: None,
            stop_reason: None,
            system_message: None,
        };
        let Event::PreToolUse(call) = event else {
            return Ok(outcome);
        };
        let input: Value = serde_json::from_str(&call.tool_input)
            .unwrap_or(Value::String(call.tool_input.clone()));
        let blocked = match (call.tool_name.as_str(), input["command"].as_str()) {
            ("Bash", Some(command)) => recursive_rm(command),
            _ => None,
        };
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let entry = json!({
            "time": time,
            "hook": "rust",
            "session_id": common.session_id,
            "tool_use_id": call.tool_use_id,
            "tool_name": call.tool_name,
            "tool_input": input,
            "verdict": if blocked.is_some() { "deny" } else { "pass" },
        });
        // An unlogged call is an error: carapace reports it, and denies the
        // call when the settings say the hook fails closed.
        let dir = format!("{}/.audit", common.cwd);
        std::fs::create_dir_all(&dir)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(format!("{dir}/tool-calls.jsonl"))
            })
            // One write per line: hooks run in parallel, and appends of
            // whole lines do not interleave.
            .and_then(|mut log| log.write_all(format!("{entry}\n").as_bytes()))
            .map_err(|e| format!("cannot write the audit log: {e}"))?;
        if let Some(segment) = blocked {
            outcome.decision = Some(PermissionDecision::Deny);
            outcome.reason = Some(format!(
                "Recursive deletion is blocked by the audit policy hook: `{segment}`. Remove specific files instead."
            ));
        }
        Ok(outcome)
    }
}

export!(AuditPolicy);
