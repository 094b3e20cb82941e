//! Failures: timeouts and crashes.

use super::*;

#[tokio::test]
async fn a_hanging_hook_fails_open_by_default_and_closed_when_it_says_so() -> TestResult {
    for fail_closed in [false, true] {
        let (_dir, ws) = workspace()?;
        std::fs::write(ws.join("a.txt"), "alpha\n")?;
        hook_script(&ws, json!({"PreToolUse": {"spin": true}}))?;
        let mut handler = typed(&ws);
        handler["timeout"] = json!(0.5);
        handler["failClosed"] = json!(fail_closed);
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("a.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_settings = Some(hook_on("PreToolUse", "", handler));
        let run = support::run(setup, &ws, one("read it")).await?;
        let result = tool_result(&run, 1, "toolu_1");
        let response = run.lines_of("system", Some("hook_response"));
        assert_eq!(response[0]["outcome"], "error");
        assert!(
            response[0]["stderr"]
                .as_str()
                .unwrap_or("")
                .contains("timed out"),
            "{response:?}"
        );
        if fail_closed {
            assert_eq!(result["is_error"], true);
            assert!(content_text(&result).contains("fails closed"), "{result}");
        } else {
            assert_eq!(content_text(&result), "1\talpha\n2\t", "the call ran");
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_command_hook_that_exits_with_an_error_blocks_only_when_it_fails_closed() -> TestResult {
    for fail_closed in [false, true] {
        let (_dir, ws) = workspace()?;
        std::fs::write(ws.join("a.txt"), "alpha\n")?;
        hook_script(
            &ws,
            json!({"PreToolUse": {"stderr": "cannot reach the audit log", "exit": 1}}),
        )?;
        let mut handler = command_probe(&ws);
        handler["failClosed"] = json!(fail_closed);
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("a.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_settings = Some(hook_on("PreToolUse", "", handler));
        let run = support::run(setup, &ws, one("read it")).await?;
        let result = tool_result(&run, 1, "toolu_1");
        if fail_closed {
            assert_eq!(result["is_error"], true);
            let text = content_text(&result);
            assert!(
                text.contains("fails closed") && text.contains("cannot reach the audit log"),
                "{text}"
            );
        } else {
            assert_eq!(
                content_text(&result),
                "1\talpha\n2\t",
                "a non-blocking error: the call ran"
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_crashing_hook_is_a_hook_error_and_the_run_goes_on() -> TestResult {
    for step in [json!({"trap": true}), json!({"error": "HOOK_SAYS_NO_IDEA"})] {
        let (_dir, ws) = workspace()?;
        std::fs::write(ws.join("a.txt"), "alpha\n")?;
        hook_script(
            &ws,
            json!({ "PreToolUse": step.clone(), "PostToolUse": step.clone() }),
        )?;
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("a.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_settings = Some(json!({
            "PreToolUse": [{"hooks": [typed(&ws)]}],
            "PostToolUse": [{"hooks": [typed(&ws)]}],
        }));
        let run = support::run(setup, &ws, one("read it")).await?;
        assert_eq!(run.outcome.terminal, Terminal::Completed, "{step}");
        assert_eq!(
            content_text(&tool_result(&run, 1, "toolu_1")),
            "1\talpha\n2\t"
        );
        let responses = run.lines_of("system", Some("hook_response"));
        assert_eq!(responses.len(), 2);
        assert!(
            responses.iter().all(|r| r["outcome"] == "error"),
            "{responses:?}"
        );
    }
    Ok(())
}
