//! Faults a model server can cause, through the binary (issue 27): a
//! response of 10,000 tool calls, a tool input of 100 MB. Each run must
//! end on its own, with every call answered, and keep nothing unbounded.

use super::support;
use scripted_server::{Block, Reply, ScriptedServer, Step};
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;
use support::{TestResult, last_line};

#[test]
fn ten_thousand_tool_calls_in_one_response_are_each_answered_once() -> TestResult {
    let ws = tempfile::tempdir()?;
    let cwd = ws.path().canonicalize()?;
    let file = cwd.join("notes.txt");
    std::fs::write(&file, "one line\n")?;
    const CALLS: usize = 10_000;
    let calls: Vec<Block> = (0..CALLS)
        .map(|i| match i % 2 {
            0 => Block::tool_use(format!("toolu_{i}"), "Read", json!({"file_path": file})),
            _ => Block::tool_use(format!("toolu_{i}"), "NoSuchTool", json!({})),
        })
        .collect();
    let server = ScriptedServer::start(vec![Reply::tool_uses(calls), Reply::text("all read")])?;
    let child = support::against(&server, &cwd)
        .args(["-p", "go", "--output-format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let run = support::finish_within(child, Duration::from_secs(600))?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert_eq!(last_line(&run.stdout)?["result"], "all read");
    // Results come as the calls finish (as Claude Code gives them: a
    // refusal is ready before a read); each call has exactly one.
    let results = support::second_request_results(&server)?;
    assert_eq!(results.len(), CALLS, "every call answered, once");
    let mut answered = vec![false; CALLS];
    for result in &results {
        assert_eq!(result["type"], "tool_result");
        let id = result["tool_use_id"].as_str().ok_or("no id")?;
        let i: usize = id.trim_start_matches("toolu_").parse()?;
        assert!(
            !std::mem::replace(&mut answered[i], true),
            "{id} answered twice"
        );
        assert_eq!(result["is_error"] == json!(true), i % 2 == 1, "{result}");
    }
    Ok(())
}

/// A Write whose input streams 100 MB in 1 MB pieces.
fn huge_write(path: &std::path::Path) -> Reply {
    let start = json!({"type": "message_start", "message": {"id": "msg_huge", "type": "message",
        "role": "assistant", "model": "m", "content": [], "stop_reason": null,
        "usage": {"input_tokens": 5, "output_tokens": 1}}});
    let mut steps = vec![
        Step::Event(start),
        Step::Event(
            json!({"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_huge", "name": "Write", "input": {}}}),
        ),
    ];
    let delta = |partial: String| {
        Step::Event(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": partial}}))
    };
    steps.push(delta(format!(
        "{{\"file_path\": {}, \"content\": \"",
        json!(path)
    )));
    let piece = "x".repeat(1 << 20);
    for _ in 0..100 {
        steps.push(delta(piece.clone()));
    }
    steps.push(delta("\"}".into()));
    steps.push(Step::Event(
        json!({"type": "content_block_stop", "index": 0}),
    ));
    steps.push(Step::Event(json!({"type": "message_delta",
        "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})));
    steps.push(Step::Event(json!({"type": "message_stop"})));
    Reply::Events(steps)
}

#[test]
fn a_tool_input_of_100_mb_fails_its_call_and_is_not_kept() -> TestResult {
    let ws = tempfile::tempdir()?;
    let cwd = ws.path().canonicalize()?;
    let target = cwd.join("huge.txt");
    let server = ScriptedServer::start(vec![huge_write(&target), Reply::text("understood")])?;
    let child = support::against(&server, &cwd)
        .args([
            "-p",
            "go",
            "--output-format",
            "json",
            "--permission-mode",
            "acceptEdits",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let run = support::finish_within(child, Duration::from_secs(300))?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert_eq!(last_line(&run.stdout)?["result"], "understood");
    assert!(!target.exists(), "the call ran");
    let results = support::second_request_results(&server)?;
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["is_error"], true);
    assert!(
        support::text_of(&results[0]).contains("more than carapace takes"),
        "{}",
        results[0]
    );
    // The history keeps the call and the head of its input, not its
    // 100 MB: the next request is small.
    let second = &server.requests()[1].body;
    assert!(
        second.to_string().len() < 1 << 20,
        "the input went back to the model"
    );
    let messages = second["messages"].as_array().ok_or("no messages")?;
    let call = &messages[messages.len() - 2]["content"][0];
    assert_eq!(call["id"], "toolu_huge");
    assert!(call["input"].to_string().len() < 4096, "{call}");
    Ok(())
}
