//! PostToolUse.

use super::*;

#[tokio::test]
async fn post_tool_use_context_goes_next_to_the_tool_result() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(
        &ws,
        json!({"PostToolUse": {"context": "POST_CONTEXT_MARKER"}}),
    )?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(hook_on("PostToolUse", "Read", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    let message = results_message(&run, 1);
    assert_eq!(message["content"][0]["type"], "tool_result");
    assert_eq!(
        content_text(&message["content"][0]),
        "1\talpha\n2\t",
        "the result is unchanged"
    );
    assert_eq!(message["content"][1]["type"], "text");
    assert!(
        content_text(&json!({"content": [message["content"][1].clone()]}))
            .contains("POST_CONTEXT_MARKER")
    );
    Ok(())
}

#[tokio::test]
async fn updated_tool_output_replaces_a_valid_output_and_keeps_an_invalid_one() -> TestResult {
    for (output, expected, warned) in [
        (json!("REPLACED OUTPUT"), json!("REPLACED OUTPUT"), false),
        (
            json!([{"type": "text", "text": "BLOCKS"}]),
            json!([{"type": "text", "text": "BLOCKS"}]),
            false,
        ),
        (json!(42), json!("1\talpha\n2\t"), true),
        (
            json!([{"type": "video", "url": "x"}]),
            json!("1\talpha\n2\t"),
            true,
        ),
    ] {
        let (_dir, ws) = workspace()?;
        std::fs::write(ws.join("a.txt"), "alpha\n")?;
        hook_script(&ws, json!({"PostToolUse": {"updated_output": output}}))?;
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("a.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_settings = Some(hook_on("PostToolUse", "", typed(&ws)));
        let run = support::run(setup, &ws, one("read it")).await?;
        assert_eq!(
            tool_result(&run, 1, "toolu_1")["content"],
            expected,
            "{output}"
        );
        let warnings = run.lines_of("system", Some("warning"));
        assert_eq!(
            warnings.len(),
            usize::from(warned),
            "{output}: {warnings:?}"
        );
        if warned {
            assert!(
                warnings[0]["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("original output was kept")
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_post_tool_use_block_tells_the_model_why() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(
        &ws,
        json!({"PostToolUse": {"block": "LINT_FAILED: fix the style"}}),
    )?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(hook_on("PostToolUse", "", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    assert_eq!(
        run.outcome.transitions,
        vec![Transition::NextTurn],
        "the loop goes on"
    );
    // Inside the call's result, as Claude Code tells a PostToolUse block.
    let told = content_text(&tool_result(&run, 1, "toolu_1"));
    assert!(
        told.starts_with("1\talpha\n2\n\n<system-reminder>\nPostToolUse:Read hook blocking error: LINT_FAILED: fix the style"),
        "{told}"
    );
    Ok(())
}

#[tokio::test]
async fn continue_false_from_post_tool_use_stops_the_run_after_the_batch() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(
        &ws,
        json!({"PostToolUse": {"stdout": {"continue": false, "stopReason": "HALT_REASON", "systemMessage": "SYSMSG"}}}),
    )?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("never"),
    ]);
    setup.hook_settings = Some(hook_on("PostToolUse", "Read", command_probe(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    assert_eq!(run.outcome.terminal, Terminal::HookStopped);
    assert_eq!(run.requests.len(), 1, "no request after the stop");
    assert_eq!(run.result()["terminal_reason"], "hook_stopped");
    assert_eq!(run.result()["num_turns"], 2);
    assert_eq!(run.result()["is_error"], false);
    assert_eq!(
        run.lines_of("user", None).len(),
        1,
        "the tool result was still printed"
    );
    let notices: Vec<String> = run
        .lines_of("system", Some("informational"))
        .iter()
        .map(|l| l["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(notices.iter().any(|n| n == "SYSMSG"), "{notices:?}");
    assert!(
        notices.iter().any(|n| n.contains("HALT_REASON")),
        "{notices:?}"
    );
    Ok(())
}

#[tokio::test]
async fn post_tool_use_failure_runs_on_a_failed_call_with_its_error() -> TestResult {
    let (_dir, ws) = workspace()?;
    hook_script(
        &ws,
        json!({"PostToolUseFailure": {"echo": true}, "PostToolUse": {"echo": true}}),
    )?;
    let missing = ws.join("missing.txt");
    let mut setup = Setup::new(vec![read_call("toolu_1", &missing), Reply::text("ok")]);
    setup.hook_settings = Some(json!({
        "PostToolUse": [{"hooks": [typed(&ws)]}],
        "PostToolUseFailure": [{"hooks": [typed(&ws)]}],
    }));
    let run = support::run(setup, &ws, one("read it")).await?;
    let context = texts(&results_message(&run, 1)).join("");
    assert!(context.contains("PostToolUseFailure"), "{context}");
    assert!(
        !context.contains("\"event\":\"PostToolUse\""),
        "only the failure event ran"
    );
    assert!(
        context.contains("does not exist") || context.contains("not found"),
        "{context}"
    );
    Ok(())
}

#[tokio::test]
async fn post_tool_batch_context_joins_the_results_and_a_block_stops_the_run() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(&ws, json!({"PostToolBatch": {"context": "BATCH_CONTEXT"}}))?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(hook_on("PostToolBatch", "", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert!(
        texts(&results_message(&run, 1))
            .join("")
            .contains("BATCH_CONTEXT")
    );

    hook_script(&ws, json!({"PostToolBatch": {"block": "audit says stop"}}))?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("never"),
    ]);
    setup.hook_settings = Some(hook_on("PostToolBatch", "", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    assert_eq!(run.outcome.terminal, Terminal::HookStopped);
    assert_eq!(
        run.requests.len(),
        1,
        "a PostToolBatch block does not re-enter the loop"
    );
    Ok(())
}
