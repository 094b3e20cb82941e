//! Hooks through the loop: real hook components (the typed `hook-probe`
//! and the Claude Code–protocol `command-hook-probe`), loaded from settings
//! as the CLI loads them, against the scripted Messages server. Each test
//! asserts what the model was sent, not only the final line.
//!
//! The escape attempts at the end run hooks that try to reach what they
//! were not granted; each has a granted twin that succeeds, so a sandbox
//! that refuses everything cannot pass by accident.

mod support;

use carapace::agent::{Terminal, Transition};
use carapace::conversation::Prompts;
use carapace::hooks::HookEvent;
use carapace::policy::{
    Anchors, PermissionMode, Policy, PolicyConfig, Rule, RuleKind, RuleSet, RuleSource, SourceKind,
};
use carapace::sandbox::{Sandbox, SandboxConfig};
use scripted_server::{Block, Reply};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{
    Run, Setup, TestResult, command_probe, hook_on, hook_script, texts, typed_probe, workspace,
};

fn one(prompt: &str) -> Prompts {
    Prompts::One(prompt.into())
}

fn read_call(id: &str, path: &Path) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        id,
        "Read",
        json!({"file_path": path.display().to_string()}),
    )])
}

/// The tool_result block for `id` in request `n`.
fn tool_result(run: &Run, n: usize, id: &str) -> Value {
    for message in run.messages(n).as_array().cloned().unwrap_or_default() {
        for block in message["content"].as_array().cloned().unwrap_or_default() {
            if block["type"] == "tool_result" && block["tool_use_id"] == id {
                return block;
            }
        }
    }
    Value::Null
}

fn content_text(block: &Value) -> String {
    match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The message of request `n` that holds the tool results.
fn results_message(run: &Run, n: usize) -> Value {
    run.messages(n)
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or(Value::Null)
}

fn typed(ws: &Path) -> Value {
    typed_probe(ws, json!({}))
}

#[path = "hooks/escapes.rs"]
mod escapes;
#[path = "hooks/failures.rs"]
mod failures;
#[path = "hooks/middleware.rs"]
mod middleware;
#[path = "hooks/post_tool_use.rs"]
mod post_tool_use;
#[path = "hooks/pre_tool_use.rs"]
mod pre_tool_use;
#[path = "hooks/prompt_and_session.rs"]
mod prompt_and_session;
