//! Terminals.

use super::*;

#[tokio::test]
async fn max_turns_counts_model_iterations_not_tools() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha")?;
    let path = ws.join("a.txt").to_string_lossy().into_owned();
    let mut setup = Setup::new(vec![
        Reply::tool_uses(vec![
            Block::tool_use("toolu_1", "Read", json!({"file_path": path})),
            Block::tool_use("toolu_2", "Read", json!({"file_path": path})),
        ]),
        Reply::text("never"),
    ]);
    setup.max_turns = Some(1);
    let run = run(setup, &ws, one("read twice")).await?;
    assert_eq!(run.requests.len(), 1);
    assert_eq!(
        run.lines_of("user", None).len(),
        2,
        "both tools of the batch ran and printed"
    );
    assert_eq!(run.outcome.terminal, Terminal::MaxTurns);
    let result = run.result();
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["stop_reason"], "tool_use");
    assert!(result.get("result").is_none());
    Ok(())
}

#[tokio::test]
async fn a_prompt_that_is_too_long_ends_as_prompt_too_long() -> TestResult {
    let (_dir, ws) = workspace()?;
    let run = run(
        Setup::new(vec![Reply::status(
            400,
            "invalid_request_error",
            "prompt is too long: 250000 tokens > 200000 maximum",
        )]),
        &ws,
        one("hello"),
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::PromptTooLong);
    assert_eq!(run.result()["terminal_reason"], "prompt_too_long");
    assert_eq!(run.result()["is_error"], true);
    Ok(())
}

#[tokio::test]
async fn a_broken_event_stream_ends_as_model_error_once_retries_are_spent() -> TestResult {
    let (_dir, ws) = workspace()?;
    let garbage = Reply::Events(vec![Step::Event(
        json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": "before any message_start"}}),
    )]);
    let mut setup = Setup::new(vec![garbage.clone(), garbage]);
    setup.max_retries = 1;
    let run = run(setup, &ws, one("hello")).await?;
    assert_eq!(run.requests.len(), 2);
    assert_eq!(run.outcome.terminal, Terminal::ModelError);
    // Printed as Claude Code prints a failed model call.
    assert_eq!(run.result()["subtype"], "success");
    assert_eq!(run.result()["is_error"], true);
    assert_eq!(run.result()["terminal_reason"], "api_error");
    Ok(())
}

#[tokio::test]
async fn the_budget_stops_the_run_before_the_next_request() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha")?;
    let path = ws.join("a.txt").to_string_lossy().into_owned();
    let mut setup = Setup::new(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Read",
            json!({"file_path": path}),
        )]),
        Reply::text("never"),
    ]);
    setup.max_budget_usd = Some(0.0001);
    let run = run(setup, &ws, one("hello")).await?;
    assert_eq!(run.requests.len(), 1);
    assert_eq!(run.outcome.terminal, Terminal::BudgetExhausted);
    let result = run.result();
    assert_eq!(result["subtype"], "error_max_budget_usd");
    assert_eq!(
        result["errors"],
        json!(["Reached maximum budget ($0.0001)"])
    );
    // The tool call still gets a result: no tool_use is left unpaired.
    let results = run.lines_of("user", None);
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0]["message"]["content"][0]["tool_use_id"],
        "toolu_1"
    );
    Ok(())
}

#[tokio::test]
async fn an_abort_while_streaming_ends_as_aborted_streaming() -> TestResult {
    let (_dir, ws) = workspace()?;
    let setup = Setup::new(vec![
        Reply::message(vec![Block::text("partial")], "end_turn")
            .after_block(0, Step::Pause(Duration::from_secs(30))),
    ]);
    let abort = setup.abort.clone();
    let counter = setup.counter.clone();
    tokio::spawn(async move {
        // Once the request is at the server (the stream then pauses 30 s
        // after its first block), not after a guessed delay.
        if let Some(counter) = counter.get_or_wait().await {
            counter.wait_for(1).await;
        }
        abort.cancel();
    });
    let run = run(setup, &ws, one("hello")).await?;
    assert_eq!(run.outcome.terminal, Terminal::AbortedStreaming);
    assert_eq!(run.result()["subtype"], "error_during_execution");
    assert_eq!(run.result()["terminal_reason"], "aborted_streaming");
    Ok(())
}

#[tokio::test]
async fn an_abort_while_tools_run_cancels_them_and_pairs_every_call() -> TestResult {
    let (_dir, ws) = workspace()?;
    let started = ws.join("slow-started");
    let marker = ws.join("slow-done");
    let ws_s = ws.to_string_lossy().into_owned();
    // The tool says it started (well after its response's stream ended:
    // the abort must land among running tools, not in the stream), then
    // would finish 1.5 s later.
    let setup = Setup::new(vec![
        Reply::tool_uses(vec![probe(
            "toolu_slow",
            json!([
                {"op": "sleep", "ms": 600},
                {"op": "create", "path": started.to_string_lossy()},
                {"op": "sleep", "ms": 1500},
                {"op": "create", "path": marker.to_string_lossy()}
            ]),
            json!([{"kind": "write-tree", "target": ws_s}]),
            false,
        )]),
        Reply::text("never"),
    ]);
    let abort = setup.abort.clone();
    let seen = started.clone();
    // The abort lands while the tool runs: once it has started, not after
    // a guessed delay.
    tokio::spawn(async move {
        wait_for_file(&seen).await;
        abort.cancel();
    });
    let run = run(setup, &ws, one("hello")).await?;
    assert!(started.exists(), "the tool ran");
    assert_eq!(run.outcome.terminal, Terminal::AbortedTools);
    assert_eq!(run.requests.len(), 1);
    let results = run.lines_of("user", None);
    assert_eq!(
        results[0]["message"]["content"][0]["tool_use_id"],
        "toolu_slow"
    );
    assert_eq!(results[0]["message"]["content"][0]["is_error"], true);
    assert_eq!(
        results[1]["isSynthetic"], true,
        "the interruption is marked"
    );
    // Checked once a tool started later and unstopped has finished.
    unstopped_control(&ws, "control-done", 1500).await?;
    assert!(!marker.exists(), "the cancellable tool was stopped");
    assert_eq!(run.result()["terminal_reason"], "aborted_tools");
    Ok(())
}

/// Waits (up to 30 s) until a tool's marker file exists: the event a test
/// acts on, instead of a guessed delay.
pub(super) async fn wait_for_file(path: &std::path::Path) {
    for _ in 0..3000 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
