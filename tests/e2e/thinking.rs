//! Extended thinking through the binary, against Claude Code's recordings
//! (`tests/claude-code/thinking-*.json`): for each model and each knob,
//! the same `max_tokens`, `thinking`, `context_management`, `temperature`
//! and `output_config`, and the thinking and effort betas where Claude Code
//! sent them.

use super::support;
use scripted_server::{Reply, ScriptedServer};
use serde_json::Value;
use support::TestResult;

/// The betas carapace sends for what it sends (Claude Code's others name
/// its own product features).
const COMPARED_BETAS: &[&str] = &[
    "interleaved-thinking-2025-05-14",
    "context-management-2025-06-27",
    "effort-2025-11-24",
];

#[test]
fn thinking_is_asked_for_as_claude_code_asks() -> TestResult {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/claude-code");
    let mut compared = 0;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !name.starts_with("thinking-") {
            continue;
        }
        let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        // A behaviour recording (record.py), not a parameters one.
        if recorded.get("params").is_none() {
            continue;
        }
        let args: Vec<String> = recorded["args"]
            .as_array()
            .ok_or("no args")?
            .iter()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        let ws = tempfile::tempdir()?;
        let server = ScriptedServer::start(vec![Reply::text("done")])?;
        let mut command = support::against(&server, ws.path());
        for (key, value) in recorded["env"].as_object().into_iter().flatten() {
            // carapace's name for Claude Code's output cap.
            let key = key.replace(
                "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
                "CARAPACE_MAX_OUTPUT_TOKENS",
            );
            command.env(key, value.as_str().unwrap_or_default());
        }
        let out = command.args(&args).output()?;
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sent = server.requests();
        let want = &recorded["params"][0];
        let body = &sent.first().ok_or("no request")?.body;
        for key in [
            "max_tokens",
            "thinking",
            "context_management",
            "temperature",
            "output_config",
        ] {
            assert_eq!(body[key], want[key], "{name}: {key}");
        }
        let ours = sent[0]
            .headers
            .get("anthropic-beta")
            .cloned()
            .unwrap_or_default();
        let theirs = want["anthropic-beta"].as_str().unwrap_or_default();
        for beta in COMPARED_BETAS {
            assert_eq!(
                ours.contains(beta),
                theirs.contains(beta),
                "{name}: {beta} in {ours}"
            );
        }
        compared += 1;
    }
    assert!(compared >= 12, "{compared} recordings");
    Ok(())
}

/// With `--include-partial-messages` a thinking block streams as Claude
/// Code 2.1.197 streams it: a `thinking` block start, `thinking_delta`,
/// `signature_delta`, then the whole block in an `assistant` line.
#[test]
fn thinking_deltas_stream_with_partial_messages() -> TestResult {
    use scripted_server::Block;
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![Reply::message(
        vec![
            Block::Thinking("Let me think.".into()),
            Block::Text("done".into()),
        ],
        "end_turn",
    )])?;
    let out = support::against(&server, ws.path())
        .args([
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ])
        .output()?;
    assert!(out.status.success());
    let lines = support::lines(&String::from_utf8(out.stdout)?)?;
    let deltas: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "stream_event")
        .filter_map(|l| l["event"]["delta"]["type"].as_str())
        .collect();
    assert_eq!(deltas, ["thinking_delta", "signature_delta", "text_delta"]);
    let started = lines
        .iter()
        .find(|l| l["event"]["type"] == "content_block_start")
        .ok_or("no block start")?;
    assert_eq!(started["event"]["content_block"]["type"], "thinking");
    let thought = lines
        .iter()
        .find(|l| l["type"] == "assistant")
        .ok_or("no assistant line")?;
    assert_eq!(
        thought["message"]["content"][0]["thinking"],
        "Let me think."
    );
    assert!(thought["message"]["content"][0]["signature"].is_string());
    Ok(())
}

/// `--task-budget` as Claude Code 2.1.197 sends it (recorded,
/// `tests/claude-code/task-budget-*.json`): `output_config.task_budget` on
/// every request, with its beta, whatever the model.
#[test]
fn a_task_budget_is_sent_as_claude_code_sends_it() -> TestResult {
    for model in ["claude-opus-4-8", "claude-sonnet-4-5"] {
        let recorded = support::recording(&format!("task-budget-{model}"))?;
        let ws = tempfile::tempdir()?;
        let server = ScriptedServer::start(vec![Reply::text("a")])?;
        let out = support::against(&server, ws.path())
            .args(["-p", "hi", "--model", model, "--task-budget", "50000"])
            .output()?;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sent = &server.requests()[0];
        let theirs = &recorded["params"][0];
        assert_eq!(
            sent.body["output_config"]["task_budget"], theirs["output_config"]["task_budget"],
            "{model}"
        );
        let betas = sent
            .headers
            .get("anthropic-beta")
            .cloned()
            .unwrap_or_default();
        assert!(
            betas.split(',').any(|b| b == "task-budgets-2026-03-13"),
            "{model}: {betas}"
        );
        assert!(
            theirs["anthropic-beta"]
                .as_str()
                .unwrap_or("")
                .contains("task-budgets-2026-03-13")
        );
    }
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![])?;
    let out = support::against(&server, ws.path())
        .args(["-p", "hi", "--task-budget", "0"])
        .output()?;
    assert!(!out.status.success(), "a budget of no tokens is refused");
    Ok(())
}
