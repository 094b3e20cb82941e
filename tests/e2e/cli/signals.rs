//! Signals: SIGINT and SIGTERM end a run cleanly, and a command's whole tree with it.

use super::streams::partial_then;
use super::*;

#[test]
fn sigint_while_streaming_ends_cleanly_as_aborted_streaming() -> TestResult {
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![
        Reply::message(vec![Block::text("partial answer")], "end_turn")
            .after_block(0, Step::Pause(Duration::from_secs(60))),
    ])?;
    let mut child = spawn(
        &server,
        ws.path(),
        &["-p", "hello", "--output-format", "stream-json", "--verbose"],
    )?;
    let printed = Printed::watch(&mut child)?;
    // Mid-stream: the first block was printed, the rest never comes.
    printed.wait_for(assistant_block("text"), "the first block never printed")?;
    signal(&child, "INT")?;
    let output = child.wait_with_output()?;
    assert_eq!(output.status.code(), Some(1));
    let stdout = printed.all();
    lines(&stdout)?; // nothing half-written: every line is whole JSON
    let result = last_line(&stdout)?;
    assert_eq!(result["type"], "result");
    assert_eq!(result["terminal_reason"], "aborted_streaming");
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(result["is_error"], true);
    Ok(())
}

#[test]
fn sigterm_while_a_tool_call_is_pending_pairs_it_and_exits_non_zero() -> TestResult {
    let ws = tempfile::tempdir()?;
    let wsp = std::fs::canonicalize(ws.path())?;
    std::fs::write(wsp.join("a.txt"), "alpha")?;
    // The tool call completes, then the stream stalls before message_stop.
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Read",
            json!({"file_path": wsp.join("a.txt")}),
        )])
        .after_block(0, Step::Pause(Duration::from_secs(60))),
    ])?;
    let mut child = spawn(
        &server,
        &wsp,
        &["-p", "hello", "--output-format", "stream-json", "--verbose"],
    )?;
    let printed = Printed::watch(&mut child)?;
    // The call is complete and pending: its block was printed.
    printed.wait_for(assistant_block("tool_use"), "the tool call never printed")?;
    signal(&child, "TERM")?;
    let output = child.wait_with_output()?;
    assert_eq!(output.status.code(), Some(1));
    let stdout = printed.all();
    let all = lines(&stdout)?;
    let results: Vec<&Value> = all
        .iter()
        .filter(|l| l["type"] == "user" && l["message"]["content"][0]["type"] == "tool_result")
        .collect();
    assert_eq!(
        results.len(),
        1,
        "the outstanding tool_use has exactly one result"
    );
    assert_eq!(
        results[0]["message"]["content"][0]["tool_use_id"],
        "toolu_1"
    );
    assert_eq!(last_line(&stdout)?["terminal_reason"], "aborted_streaming");
    Ok(())
}

#[test]
fn sigterm_during_a_command_ends_its_whole_tree() -> TestResult {
    let ws = tempfile::tempdir()?;
    let wsp = std::fs::canonicalize(ws.path())?;
    // A command that leaves a detached process behind, then runs on.
    let late = wsp.join("late");
    let command = format!(
        "setsid sh -c 'echo > detached; sleep 1; echo late > {}' > /dev/null 2>&1 < /dev/null & echo > started; sleep 60",
        late.display()
    );
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Bash",
            json!({"command": command}),
        )]),
        Reply::text("done"),
    ])?;
    let child = spawn(&server, &wsp, &["-p", "hello", "--allowedTools", "Bash"])?;
    wait_until(|| wsp.join("started").exists(), "the command never started")?;
    // The detached process itself is running (not merely asked for).
    wait_until(
        || wsp.join("detached").exists(),
        "the detached process never started",
    )?;
    signal(&child, "TERM")?;
    let output = child.wait_with_output()?;
    assert!(!output.status.success());
    // Once nothing that could write it runs, it was never written.
    let needle = late.to_string_lossy();
    carapace_test_support::processes::wait_until_none_mention(&needle, Duration::from_secs(30))
        .map_err(|left| format!("a process of the command outlived carapace: {left}"))?;
    assert!(!late.exists(), "a process of the command outlived carapace");
    Ok(())
}

#[test]
fn a_background_shell_dies_with_a_sigkilled_carapace() -> TestResult {
    let ws = tempfile::tempdir()?;
    let wsp = std::fs::canonicalize(ws.path())?;
    // Touches `alive` every 100 ms, for ever.
    let alive = wsp.join("alive");
    let command = format!("while true; do touch {}; sleep 0.1; done", alive.display());
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_bg",
            "Bash",
            json!({"command": command, "run_in_background": true}),
        )]),
        // carapace waits here for the model when it is killed.
        partial_then(Step::Pause(Duration::from_secs(60))),
    ])?;
    let mut child = spawn(&server, &wsp, &["-p", "hello", "--allowedTools", "Bash"])?;
    wait_for_requests(&server, 2)?;
    wait_until(|| alive.exists(), "the background shell never started")?;
    // SIGKILL: none of carapace's own clean-up runs. The call's init sees
    // its output pipe break and takes the namespace down with it.
    child.kill()?;
    child.wait()?;
    // The loop never ends by itself: gone means taken down with carapace.
    let needle = alive.to_string_lossy();
    carapace_test_support::processes::wait_until_none_mention(&needle, Duration::from_secs(30))
        .map_err(|left| format!("the background shell outlived a SIGKILLed carapace: {left}"))?;
    Ok(())
}
