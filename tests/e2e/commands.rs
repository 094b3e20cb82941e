//! Custom `/commands` through the binary, against Claude Code's recordings
//! (`tests/claude-code/command-*.json`): the same command files, the same
//! prompt, the same texts sent — or, for an unknown command, the same
//! answer without any request.

use super::support;
use scripted_server::{Reply, ScriptedServer};
use serde_json::Value;
use support::TestResult;

#[test]
fn a_custom_command_is_expanded_as_claude_code_expands_it() -> TestResult {
    for name in [
        "command-greet",
        "command-plain",
        "command-user",
        "command-unknown",
    ] {
        let recorded = support::recording(name)?;
        let (_scratch, root) = support::lay_out(&recorded)?;
        let prompt = recorded["args"][1].as_str().ok_or("no prompt")?;
        let server = ScriptedServer::start(vec![Reply::text("done")])?;
        let out = support::against(&server, &root.join("ws"))
            .env("HOME", root.join("home"))
            .env("CARAPACE_CONFIG_DIR", root.join("home/.carapace"))
            .args([
                "-p",
                prompt,
                "--output-format",
                "stream-json",
                "--verbose",
                "--tools",
                "Read",
            ])
            .output()?;
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sent = server.requests();
        let want = recorded["requests"].as_array().ok_or("no requests")?;
        assert_eq!(sent.len(), want.len(), "{name}");
        if let (Some(ours), Some(theirs)) = (sent.first(), want.first()) {
            // Everything after the context reminder.
            let tail = |body: &Value| {
                body["messages"][0]["content"]
                    .as_array()
                    .map(|blocks| blocks[1..].to_vec())
                    .unwrap_or_default()
            };
            assert_eq!(tail(&ours.body), tail(theirs), "{name}");
        }
        let lines = support::lines(&String::from_utf8(out.stdout)?)?;
        let result = lines.last().ok_or("no result")?;
        let theirs = recorded["stdout"]
            .as_array()
            .and_then(|l| l.last())
            .ok_or("no result")?;
        for key in ["subtype", "is_error", "num_turns", "result"] {
            assert_eq!(result[key], theirs[key], "{name}: {key}");
        }
        if want.is_empty() {
            let said = lines
                .iter()
                .find(|l| l["type"] == "assistant")
                .ok_or("no answer")?;
            assert_eq!(said["message"]["model"], "<synthetic>");
            assert_eq!(
                said["message"]["content"],
                recorded["stdout"][0]["message"]["content"]
            );
        }
    }
    Ok(())
}
