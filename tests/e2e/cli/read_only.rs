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
    refused_in(&std::fs::canonicalize(ws.path())?, lines, args)
}

/// [`refused`], in the workspace `ws_path`.
fn refused_in(
    ws_path: &std::path::Path,
    lines: &[String],
    args: &[&str],
) -> Result<BTreeSet<String>, Box<dyn std::error::Error>> {
    let blocks = lines
        .iter()
        .enumerate()
        .map(|(i, line)| Block::tool_use(format!("toolu_{i}"), "Bash", json!({"command": line})))
        .collect();
    let server = ScriptedServer::start(vec![Reply::tool_uses(blocks), Reply::text("done")])?;
    let run = support::run(
        &server,
        ws_path,
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

/// Lines Claude Code 2.1.332's acceptEdits runs that carapace still asks
/// about, and why: an option outside each program's short list (`-m`
/// sets a mode, `-t` names the target elsewhere), and a write into
/// `.git` — protected in every mode here, where Claude Code lets
/// acceptEdits plant a git hook.
const STRICTER_THAN_CLAUDE_CODE: &[&str] = &[
    "mkdir -m 700 private",
    "cp -t out a.txt",
    "touch .git/hooks/pre-commit",
];

#[test]
fn accept_edits_runs_the_file_commands_claude_code_runs() -> TestResult {
    let recorded = support::recording("accept-edits-commands")?;
    let (ran, asked) = (lines_of(&recorded, "ran"), lines_of(&recorded, "asked"));
    assert!(ran.len() > 8 && asked.len() > 8, "{recorded}");
    let all: Vec<String> = ran.iter().chain(&asked).cloned().collect();
    let denied = refused(&all, &["--permission-mode", "acceptEdits"])?;
    for line in &ran {
        let stricter = STRICTER_THAN_CLAUDE_CODE.contains(&line.as_str());
        assert_eq!(
            denied.contains(line),
            stricter,
            "`{line}`: Claude Code runs it in acceptEdits (stricter here: {stricter})"
        );
    }
    for line in &asked {
        assert!(
            denied.contains(line),
            "Claude Code asks for `{line}` in acceptEdits; carapace ran it"
        );
    }
    // The control: default mode asks for every one of them.
    let in_default = refused(&ran, &[])?;
    assert_eq!(in_default.len(), ran.len(), "{in_default:?}");
    Ok(())
}

#[test]
fn accept_edits_file_commands_meet_deny_rules_and_links_first() -> TestResult {
    let ws = workspace()?;
    let ws_path = std::fs::canonicalize(ws.path())?;
    let outside = tempfile::tempdir()?;
    std::os::unix::fs::symlink(outside.path(), ws_path.join("escape"))?;
    let lines: Vec<String> = [
        "touch escape/planted.txt",
        "cp a.txt escape/",
        "rm -rf src",
        "mkdir fine",
    ]
    .map(String::from)
    .to_vec();
    let denied = refused_in(
        &ws_path,
        &lines,
        &[
            "--permission-mode",
            "acceptEdits",
            "--disallowedTools",
            "Edit(./src/**)",
        ],
    )?;
    // A link out of the workspace is followed; a deny rule on the tree
    // holds; the plain line runs.
    assert_eq!(denied, lines[..3].iter().cloned().collect(), "{denied:?}");
    assert!(!outside.path().join("planted.txt").exists());
    assert!(ws_path.join("src/m.rs").exists());
    assert!(ws_path.join("fine").is_dir());
    Ok(())
}
