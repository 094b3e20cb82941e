//! The loop's state machine against the scripted Messages server: one test
//! per transition and per reachable terminal, asserting the `Transition` /
//! `Terminal` and the requests actually sent, not only the final text.

mod compaction;
mod structured_output;
mod support;

use carapace::agent::{Terminal, Transition};
use carapace::cli::print::Prompts;
use scripted_server::{Block, Reply, Step};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use support::{Run, Setup, TestResult, run, texts, workspace};

fn one(prompt: &str) -> Prompts {
    Prompts::One(prompt.into())
}

fn thinking_only() -> Reply {
    Reply::message(vec![Block::Thinking("only thinking".into())], "end_turn")
}

fn probe(id: &str, attempts: Value, needs: Value, safe: bool) -> Block {
    Block::tool_use(
        id,
        "Probe",
        json!({"attempts": attempts, "needs": needs, "safe": safe}),
    )
}

/// The report of the Probe call `id`, from the tool_result in `run`'s
/// request `n`.
fn probe_report(run: &Run, n: usize, id: &str) -> Vec<Value> {
    let results = run.messages(n).as_array().cloned().unwrap_or_default();
    for message in results {
        for block in message["content"].as_array().cloned().unwrap_or_default() {
            if block["type"] == "tool_result" && block["tool_use_id"] == id {
                let text = block["content"].as_str().unwrap_or_default();
                return serde_json::from_str(text).unwrap_or_else(|_| vec![json!({"raw": text})]);
            }
        }
    }
    Vec::new()
}

#[path = "loop/streaming.rs"]
mod streaming;
#[path = "loop/terminals.rs"]
mod terminals;
#[path = "loop/transitions.rs"]
mod transitions;
