//! Prompt and session hooks.

use super::*;

#[tokio::test]
async fn user_prompt_submit_adds_context_or_blocks_the_prompt() -> TestResult {
    let (_dir, ws) = workspace()?;
    hook_script(
        &ws,
        json!({"UserPromptSubmit": {"context": "PROMPT_CONTEXT"}, "SessionStart": {"context": "SESSION_CONTEXT"}}),
    )?;
    let mut setup = Setup::new(vec![Reply::text("ok")]);
    setup.hook_settings = Some(json!({
        "UserPromptSubmit": [{"hooks": [typed(&ws)]}],
        "SessionStart": [{"hooks": [typed(&ws)]}],
    }));
    let run = support::run(setup, &ws, one("THE_PROMPT")).await?;
    let first = texts(&run.messages(0)[0]);
    assert_eq!(first.len(), 3, "{first:?}");
    assert!(first[0].contains("SESSION_CONTEXT") && first[1].contains("PROMPT_CONTEXT"));
    assert_eq!(first[2], "THE_PROMPT");

    hook_script(
        &ws,
        json!({"UserPromptSubmit": {"block": "PROMPT_BLOCKED"}}),
    )?;
    let mut setup = Setup::new(vec![Reply::text("never")]);
    setup.hook_settings = Some(hook_on("UserPromptSubmit", "", typed(&ws)));
    let run = support::run(setup, &ws, one("forbidden")).await?;
    assert!(run.requests.is_empty(), "nothing is sent");
    assert_eq!(run.result()["num_turns"], 0);
    assert!(
        run.result()["result"]
            .as_str()
            .unwrap_or("")
            .contains("PROMPT_BLOCKED")
    );
    assert_eq!(
        run.lines_of("system", Some("informational"))[0]["prevent_continuation"],
        true
    );
    Ok(())
}
