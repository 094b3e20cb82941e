//! A plugin in the layout of Claude Code's plugin catalogue, loaded with
//! `--plugin-dir` as its README says: every part works — the SessionStart
//! greeting, the Python PreToolUse guard, the shell PostToolUse reminder
//! (each run in the command sandbox) and the MCP server of its bare-map
//! `.mcp.json`.

use super::*;

fn guard_kit() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/claude-plugins/guard-kit")
}

#[test]
fn every_part_of_a_plugin_folder_works() -> TestResult {
    let (ws_dir, home_dir) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let ws = std::fs::canonicalize(ws_dir.path())?;
    std::fs::create_dir(ws.join("keep"))?;
    let note = "mcp__plugin_guard-kit_notes__add_note";
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_rm",
            "Bash",
            json!({"command": "rm -rf keep"}),
        )]),
        Reply::tool_uses(vec![
            Block::tool_use(
                "toolu_echo",
                "Bash",
                json!({"command": "echo kit=$GUARD_KIT_ACTIVE path=$PATH"}),
            ),
            Block::tool_use("toolu_note", note, json!({"text": "remember"})),
        ]),
        Reply::text("done"),
    ])?;
    let output = support::against(&server, &ws)
        .env("HOME", home_dir.path())
        .env("CARAPACE_CONFIG_DIR", home_dir.path().join(".carapace"))
        .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
        .args(["--permission-mode", "bypassPermissions", "--plugin-dir"])
        .arg(guard_kit())
        .output()?;
    let run = support::Run::from_output(output)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let requests = server.requests();
    let sent = |i: usize| {
        requests
            .get(i)
            .map(|r| r.body["messages"].to_string())
            .unwrap_or_default()
    };
    assert!(
        sent(0).contains("guard-kit is active in this session"),
        "{}",
        sent(0)
    );
    assert!(ws.join("keep").is_dir(), "the guard held: {}", sent(1));
    assert!(
        sent(1).contains("recursive deletes are blocked"),
        "{}",
        sent(1)
    );
    assert!(sent(2).contains("noted (1): remember"), "{}", sent(2));
    assert!(sent(2).contains("guard-kit reminder"), "{}", sent(2));
    // What the SessionStart hook wrote to $CLAUDE_ENV_FILE, the commands
    // have.
    assert!(sent(2).contains("kit=yes path="), "{}", sent(2));
    assert!(
        sent(2).contains("/.guard-kit/bin:/usr/local/sbin"),
        "{}",
        sent(2)
    );
    Ok(())
}

#[test]
fn a_plugins_command_runs_its_lines_and_its_output_style_is_offered() -> TestResult {
    let (ws_dir, home_dir) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let ws = std::fs::canonicalize(ws_dir.path())?;
    let git = std::process::Command::new("git")
        .args(["init", "-q", "-b", "trunk"])
        .current_dir(&ws)
        .status()?;
    assert!(git.success());
    std::fs::write(ws.join("changed.txt"), "new\n")?;
    let server = ScriptedServer::start(vec![Reply::text("summarised")])?;
    // Default mode: the command's `!` lines only read, so they run.
    let output = support::against(&server, &ws)
        .env("HOME", home_dir.path())
        .env("CARAPACE_CONFIG_DIR", home_dir.path().join(".carapace"))
        .args([
            "-p",
            "/guard-kit:status",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .args([
            "--settings",
            r#"{"outputStyle": "terse-notes"}"#,
            "--plugin-dir",
        ])
        .arg(guard_kit())
        .output()?;
    let run = support::Run::from_output(output)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let request = &server.requests()[0].body;
    let messages = request["messages"].to_string();
    assert!(messages.contains("?? changed.txt"), "{messages}");
    assert!(messages.contains("trunk"), "{messages}");
    let system = support::system_text(&request["system"]);
    assert!(system.contains("starts with \"Note:\""), "{system}");
    Ok(())
}
