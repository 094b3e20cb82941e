//! Code mode on the screen: Esc stops a script and the call it is
//! running, as it stops any call, and the session goes on.

use super::screen::*;
use super::support::{TestResult, running, wait_for};
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::json;

#[test]
fn esc_stops_a_script_and_the_command_it_runs() -> TestResult {
    let dir = workspace()?;
    let code = "await tools.Bash({command: \"touch started; sleep 29.75; touch finished\"});\nwhile (true) {}";
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_script",
            "Script",
            json!({"code": code}),
        )]),
        Reply::text("after the interruption"),
    ])?;
    let args = ["--code-mode", "--allowedTools", "Bash"];
    let mut screen = Screen::open(&server, dir.path(), &args)?;
    screen.wait_for("> ")?;
    screen.send("run the script")?;
    wait_for("the script's command to start", || {
        dir.path().join("started").exists()
    })?;
    assert!(running("sleep 29.75"), "the command runs");
    screen.keys("\x1b")?;
    screen.wait_for("Interrupted")?;
    wait_for("the script's command to be stopped", || {
        !running("sleep 29.75")
    })?;
    assert!(!dir.path().join("finished").exists());
    screen.send("go on")?;
    screen.wait_for("after the interruption")?;
    // The Script call was paired with a result in what the model was sent.
    let requests = server.requests();
    let sent = requests.last().ok_or("no request")?.body.to_string();
    assert!(
        sent.contains("toolu_script") && sent.contains("tool_result"),
        "{sent}"
    );
    screen.exit()
}
