//! Faults in the middle of a turn, through the binary (issue 27): the
//! model's connection dropped at each event of a tool-using response, the
//! disk filling while the transcript is appended, and `kill -9` at each
//! stage of a turn followed by `--resume`, and hooks and MCP servers that
//! hang, crash, stop mid-line or flood. Each must end with every call
//! paired, no tool run twice, and nothing lost that the run claimed kept.

mod support;

#[path = "turn_faults/disk_full.rs"]
mod disk_full;
#[path = "turn_faults/kills.rs"]
mod kills;
#[path = "turn_faults/peers.rs"]
mod peers;

use scripted_server::{Block, Reply, ScriptedServer, Step};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use support::{TestResult, lines};

/// The first response: a text block and a Bash call that records that it
/// ran after a second, in SSE events (message_start first, message_stop
/// last).
fn tool_using_response(log: &Path) -> Vec<Value> {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_cut", "type": "message", "role": "assistant", "model": "m", "content": [],
        "stop_reason": null, "usage": {"input_tokens": 5, "output_tokens": 1}}})];
    events.extend(scripted_server::block_events(0, Block::text("Running it.")));
    events.extend(scripted_server::block_events(
        1,
        Block::tool_use("toolu_cut", "Bash", json!({"command": slow_append(log)})),
    ));
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
        "usage": {"output_tokens": 9}}),
    );
    events.push(json!({"type": "message_stop"}));
    events
}

/// A command whose effect comes a second after it starts: a run stopped
/// in that second leaves no line.
fn slow_append(log: &Path) -> String {
    format!("sleep 1 && echo ran >> '{}'", log.display())
}

/// What a run cut before event `cut` of the first response did.
struct CutRun {
    stdout: Vec<Value>,
    requests: Vec<Value>,
    runs_logged: usize,
}

fn cut_before(cut: usize) -> Result<CutRun, Box<dyn std::error::Error + Send + Sync>> {
    let ws = tempfile::tempdir()?;
    let cwd = ws.path().canonicalize()?;
    let log = cwd.join("runs.log");
    let mut steps: Vec<Step> = tool_using_response(&log)
        .into_iter()
        .take(cut)
        .map(Step::Event)
        .collect();
    // Time for what was sent to be read before the break: a reset can
    // discard bytes the peer has not read yet.
    steps.push(Step::Pause(Duration::from_millis(300)));
    steps.push(Step::Cut);
    let server = ScriptedServer::start(vec![
        Reply::Events(steps),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_retry",
            "Bash",
            json!({"command": slow_append(&log)}),
        )]),
        Reply::text("done"),
    ])?;
    let child = support::against(&server, &cwd)
        .args([
            "-p",
            "run it",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .args(["--permission-mode", "bypassPermissions"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let run = support::finish_within(child, Duration::from_secs(120)).map_err(|e| e.to_string())?;
    if run.status != Some(0) {
        return Err(format!("cut {cut}: exit {:?}\n{}", run.status, run.stderr).into());
    }
    let runs_logged = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count();
    Ok(CutRun {
        stdout: lines(&run.stdout)?,
        requests: server.requests().into_iter().map(|r| r.body).collect(),
        runs_logged,
    })
}

fn system_lines<'a>(stdout: &'a [Value], subtype: &str) -> Vec<&'a Value> {
    stdout
        .iter()
        .filter(|l| l["type"] == "system" && l["subtype"] == subtype)
        .collect()
}

#[test]
fn a_connection_dropped_at_each_event_is_retried_once_and_no_tool_runs_twice() -> TestResult {
    let events = tool_using_response(Path::new("/unused")).len();
    // Every cut but after message_stop (then the response is whole). The
    // runs are independent: all at once.
    let runs: Vec<_> = (0..events)
        .map(|cut| (cut, std::thread::spawn(move || cut_before(cut))))
        .collect();
    for (cut, handle) in runs {
        let run = handle
            .join()
            .map_err(|_| format!("cut {cut}: the run panicked"))?
            .map_err(|e| e.to_string())?;
        // The right retry: the same request again, the voided response
        // nowhere in it.
        assert_eq!(run.requests.len(), 3, "cut {cut}");
        assert_eq!(run.requests[0], run.requests[1], "cut {cut}");
        assert_eq!(system_lines(&run.stdout, "api_retry").len(), 1, "cut {cut}");
        // A tombstone once something of the response was shown (a block
        // finished), naming the calls it voids.
        let tombstones = system_lines(&run.stdout, "tombstone");
        let shown = cut > 3; // the text block stops at event 3
        assert_eq!(
            tombstones.len(),
            usize::from(shown),
            "cut {cut}: {:?}",
            run.stdout
        );
        if let Some(tombstone) = tombstones.first() {
            let voided_call = cut > 7; // the call stops at event 7
            let expected = if voided_call {
                json!(["toolu_cut"])
            } else {
                json!([])
            };
            assert_eq!(
                tombstone["tool_use_ids"], expected,
                "cut {cut}: {tombstone}"
            );
        }
        // The retry's call ran once and is the only one answered; the voided
        // call, started or not, never took effect.
        assert_eq!(run.runs_logged, 1, "cut {cut}: the command's runs");
        let results: Vec<&Value> = run.requests[2]["messages"]
            .as_array()
            .ok_or("no messages")?
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .filter(|b| b["type"] == "tool_result")
            .collect();
        assert_eq!(results.len(), 1, "cut {cut}: {results:?}");
        assert_eq!(results[0]["tool_use_id"], "toolu_retry", "cut {cut}");
        let last = run.stdout.last().ok_or("no output")?;
        assert_eq!(last["type"], "result");
        assert_eq!(last["result"], "done", "cut {cut}");
    }
    Ok(())
}
