//! The loop's state machine against the scripted Messages server: one test
//! per transition and per reachable terminal, asserting the `Transition` /
//! `Terminal` and the requests actually sent, not only the final text.

mod compaction;
mod structured_output;
mod support;

use carapace::agent::{Terminal, Transition};
use carapace::conversation::Prompts;
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

/// The control a "was the stopped tool's effect ever written?" check
/// waits on, instead of a sleep past the moment: the same kind of Probe
/// call, in a turn nobody stops, started after the stopped one and waiting
/// `ms` before it writes `name` in `ws`. Once it has written (which also
/// shows such a write succeeds unstopped), the stopped call, which began
/// earlier and waited no longer, would have written too.
async fn unstopped_control(ws: &std::path::Path, name: &str, ms: u64) -> TestResult {
    let written = ws.join(name);
    let setup = Setup::new(vec![
        Reply::tool_uses(vec![probe(
            "toolu_control",
            json!([{"op": "sleep", "ms": ms}, {"op": "create", "path": written.to_string_lossy()}]),
            json!([{"kind": "write-tree", "target": ws.to_string_lossy()}]),
            false,
        )]),
        Reply::text("the control is done"),
    ]);
    run(setup, ws, one("control")).await?;
    assert!(written.exists(), "the unstopped control wrote its file");
    Ok(())
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
