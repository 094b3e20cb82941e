//! Memory files through the binary, against Claude Code's recordings
//! (`tests/claude-code/memory-files*.json`): the same files, the same
//! script, the same context in the first user message and beside the
//! Reads that Claude Code attached a folder's memory or a scoped rule to.

use super::support;
use scripted_server::{Reply, ScriptedServer};
use serde_json::Value;
use support::TestResult;

#[test]
fn memory_reaches_the_model_as_claude_code_sends_it() -> TestResult {
    for (name, flags) in [
        ("memory-files", vec![]),
        ("memory-files-bare", vec!["--bare"]),
        ("memory-files-user-only", vec!["--setting-sources", "user"]),
    ] {
        let recorded = support::recording(name)?;
        let (_scratch, root) = support::lay_out(&recorded)?;
        let ws = root.join("ws");
        let fill = |text: &str| {
            text.replace("{ws}", &ws.display().to_string())
                .replace("{home}", &root.join("home").display().to_string())
                .replace("{scratch}", &root.display().to_string())
        };
        let script = fill(&recorded["script"].to_string());
        let replies = serde_json::from_str::<Vec<Value>>(&script)?
            .iter()
            .map(Reply::from_script)
            .collect::<Result<Vec<_>, _>>()?;
        let server = ScriptedServer::start(replies)?;
        let mut args = vec![
            "-p",
            "hello",
            "--tools",
            "Read",
            "--permission-mode",
            "bypassPermissions",
        ];
        args.extend(flags);
        let out = support::against(&server, &ws)
            .env("HOME", root.join("home"))
            .env("CARAPACE_CONFIG_DIR", root.join("home/.carapace"))
            .args(&args)
            .output()?;
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sent = server.requests();
        let want = &recorded["requests"];
        assert_eq!(sent.len(), want.as_array().map_or(0, Vec::len), "{name}");
        // The context block, byte for byte, but for the date.
        let first = |body: &Value| {
            body["messages"][0]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let today = carapace::agent::today();
        let expected = fill(&first(&want[0]));
        let expected = match expected.find("Today's date is ") {
            Some(at) => format!("{}{today}{}", &expected[..at + 16], &expected[at + 26..]),
            None => expected,
        };
        for (n, request) in sent.iter().enumerate() {
            assert_eq!(first(&request.body), expected, "{name}: request {n}");
        }
        // What joined beside each Read.
        for n in 1..sent.len() {
            let attached = |body: &Value| {
                let last = body["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .cloned()
                    .unwrap_or_default();
                let result = last["content"][0]["content"].to_string();
                result
                    .split_once("<system-reminder>")
                    .map(|(_, r)| r.to_string())
                    .unwrap_or_default()
            };
            assert_eq!(
                attached(&sent[n].body),
                fill(&attached(&want[n])),
                "{name}: request {n}"
            );
        }
    }
    Ok(())
}
