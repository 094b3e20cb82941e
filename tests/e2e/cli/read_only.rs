//! Default mode runs a command line that only reads without asking, as
//! Claude Code does: the lines Claude Code 2.1.332 ran unasked and the ones
//! it asked about (tests/claude-code/read-only-commands.json), replayed in
//! one turn through carapace in print mode, where what would be asked is
//! refused. Deny and ask rules still come first.

use super::*;
use std::collections::BTreeSet;

/// A fresh git repository with a.txt and src/m.rs, as recorded.
fn workspace() -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let ws = tempfile::tempdir()?;
    std::fs::create_dir(ws.path().join("src"))?;
    std::fs::write(ws.path().join("a.txt"), "alpha\n")?;
    std::fs::write(ws.path().join("src/m.rs"), "fn main() {}\n")?;
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(ws.path())
        .status()?;
    assert!(status.success());
    Ok(ws)
}

/// The lines refused (asked about, in print mode) when `lines` run in one
/// turn with `args`.
fn refused(
    lines: &[String],
    args: &[&str],
) -> Result<BTreeSet<String>, Box<dyn std::error::Error>> {
    let ws = workspace()?;
    let ws_path = std::fs::canonicalize(ws.path())?;
    let blocks = lines
        .iter()
        .enumerate()
        .map(|(i, line)| Block::tool_use(format!("toolu_{i}"), "Bash", json!({"command": line})))
        .collect();
    let server = ScriptedServer::start(vec![Reply::tool_uses(blocks), Reply::text("done")])?;
    let run = support::run(
        &server,
        &ws_path,
        &[
            &["-p", "hello", "--output-format", "stream-json", "--verbose"],
            args,
        ]
        .concat(),
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let result = last_line(&run.stdout)?;
    let denied: BTreeSet<String> = result["permission_denials"]
        .as_array()
        .ok_or("no permission_denials")?
        .iter()
        .filter_map(|d| d["tool_use_id"].as_str())
        .filter_map(|id| id.strip_prefix("toolu_")?.parse::<usize>().ok())
        .filter_map(|i| lines.get(i).cloned())
        .collect();
    Ok(denied)
}

fn lines_of(recorded: &Value, key: &str) -> Vec<String> {
    recorded[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect()
}

#[test]
fn read_only_lines_run_unasked_as_claude_code_runs_them() -> TestResult {
    let recorded = support::recording("read-only-commands")?;
    let (ran, asked) = (lines_of(&recorded, "ran"), lines_of(&recorded, "asked"));
    assert!(ran.len() > 20 && asked.len() > 10, "{recorded}");
    let all: Vec<String> = ran.iter().chain(&asked).cloned().collect();
    let denied = refused(&all, &[])?;
    for line in &ran {
        assert!(
            !denied.contains(line),
            "Claude Code runs `{line}` unasked; carapace asked"
        );
    }
    for line in &asked {
        assert!(
            denied.contains(line),
            "Claude Code asks for `{line}`; carapace ran it"
        );
    }
    Ok(())
}

#[test]
fn deny_and_ask_rules_still_come_first() -> TestResult {
    let lines: Vec<String> = ["git status", "cat a.txt", "ls src"]
        .map(String::from)
        .to_vec();
    let denied = refused(
        &lines,
        &["--disallowedTools", "Bash(git status:*)", "Read(./a.txt)"],
    )?;
    assert!(denied.contains("git status"), "{denied:?}");
    assert!(
        denied.contains("cat a.txt"),
        "a read deny rule stops the auto-allow: {denied:?}"
    );
    assert!(!denied.contains("ls src"), "{denied:?}");
    Ok(())
}
