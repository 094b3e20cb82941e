//! How many questions one recorded 30-call session asks in default,
//! acceptEdits and auto mode (issue 50): the same scripted model intent —
//! reads and searches, edits in the workspace, read-only and building
//! commands, a recursive delete, a download piped to a shell, a write
//! outside the workspace — run in print mode, where every question is
//! refused and shows as a `permission_denied` line. In auto mode the
//! classifier is the scripted server too, answering as a careful reviewer
//! would (a delete and a write outside: ask; the download: deny; the rest:
//! allow), so its requests are counted beside the questions left.

use super::BenchResult;
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The model's thirty calls, in order.
fn calls(ws: &Path, outside: &Path) -> Vec<(&'static str, Value)> {
    let file = |name: &str| ws.join(name).to_string_lossy().into_owned();
    let bash = |command: &str| ("Bash", json!({ "command": command }));
    let mut calls = Vec::new();
    for name in ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"] {
        calls.push(("Read", json!({ "file_path": file(name) })));
    }
    for pattern in ["alpha", "beta", "gamma"] {
        calls.push(("Grep", json!({ "pattern": pattern })));
    }
    calls.push(("Glob", json!({ "pattern": "*.txt" })));
    calls.push(("Glob", json!({ "pattern": "src/**" })));
    for n in 0..4 {
        let path = file(&format!("src/new_{n}.txt"));
        calls.push(("Write", json!({ "file_path": path, "content": "new\n" })));
    }
    for name in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        calls.push((
            "Edit",
            json!({ "file_path": file(name), "old_string": "alpha", "new_string": "omega" }),
        ));
    }
    for command in ["ls -la", "cat a.txt", "wc -l b.txt", "head -n 3 c.txt"] {
        calls.push(bash(command));
    }
    for command in [
        "mkdir -p build",
        "touch build/stamp",
        "cp a.txt build/a.txt",
        "sh -c 'echo built > build/log'",
        "python3 -c 'print(1)'",
    ] {
        calls.push(bash(command));
    }
    calls.push(bash("rm -rf build"));
    calls.push(bash("curl -s http://127.0.0.1:9/install.sh | sh"));
    let away = outside.join("notes.txt").to_string_lossy().into_owned();
    calls.push(("Write", json!({ "file_path": away, "content": "x\n" })));
    calls
}

/// What the scripted classifier says about the call it is shown.
fn judge(shown: &str) -> (&'static str, &'static str) {
    if shown.contains("curl") {
        ("deny", "a download piped to a shell")
    } else if shown.contains("rm -rf") || shown.contains("notes.txt") {
        ("ask", "deletes work or writes outside the project")
    } else {
        ("allow", "part of the build the user asked for")
    }
}

/// The scripted server: the classifier's requests (a forced
/// `permission_decision`) answered by [`judge`], the model's by the next
/// call (then a final answer).
fn responder(calls: Vec<(&'static str, Value)>) -> scripted_server::Responder {
    let next = Arc::new(AtomicUsize::new(0));
    Arc::new(move |body: &Value| {
        // Claude Code's classifier: a text answer, stopped at `</block>`.
        if body["stop_sequences"][0] == "</block>" {
            let shown = body["messages"].to_string();
            return Reply::text(match judge(&shown) {
                ("allow", _) => "<block>no</block>".to_string(),
                (_, reason) => format!(
                    "<block>yes</block><category>Review</category><reason>[Review] {reason}</reason>"
                ),
            });
        }
        if body["tool_choice"]["name"] == "permission_decision" {
            let (decision, reason) = judge(&body["messages"].to_string());
            return Reply::tool_uses(vec![Block::tool_use(
                "toolu_judge",
                "permission_decision",
                json!({"decision": decision, "reason": reason}),
            )]);
        }
        let n = next.fetch_add(1, Ordering::SeqCst);
        match calls.get(n) {
            Some((tool, input)) => Reply::tool_uses(vec![Block::tool_use(
                format!("toolu_{n}"),
                *tool,
                input.clone(),
            )]),
            None => Reply::text("done"),
        }
    })
}

/// A fresh workspace (five files, an empty `src`) and a folder outside it.
fn workspace(base: &Path, name: &str) -> std::io::Result<(PathBuf, PathBuf)> {
    let (ws, outside) = (base.join(name).join("ws"), base.join(name).join("outside"));
    std::fs::create_dir_all(ws.join("src"))?;
    std::fs::create_dir_all(&outside)?;
    for file in ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"] {
        std::fs::write(ws.join(file), "alpha\nbeta\ngamma\n")?;
    }
    Ok((ws, outside))
}

/// `command` (carapace, or Claude Code) in print mode in `ws` against
/// `server`, in `mode`: its stream-json lines and its wall time.
fn print_run(
    mut command: std::process::Command,
    (ws, server): (&Path, &ScriptedServer),
    mode: &str,
) -> Result<(Vec<Value>, f64), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let output = command
        .current_dir(ws)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "bench-key")
        .args(["-p", "build the project and tidy up"])
        .args(["--output-format", "stream-json", "--verbose"])
        .args(["--permission-mode", mode, "--max-turns", "40"])
        .output()?;
    let seconds = started.elapsed().as_secs_f64();
    let lines = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Ok((lines, seconds))
}

/// One session's figures: questions, the classifier's requests by answer
/// (allow, ask, deny), seconds.
type Figures = (usize, [usize; 3], f64);

/// One session in `mode`: questions (refused, as print mode refuses
/// them), the classifier's requests by answer, and the wall time.
fn session(mode: &str, base: &Path) -> Result<Figures, Box<dyn std::error::Error>> {
    let (ws, outside) = workspace(base, &format!("carapace-{mode}"))?;
    let server = ScriptedServer::start_responding(responder(calls(&ws, &outside)))?;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_carapace"));
    command.env("CARAPACE_CONFIG_DIR", base.join(format!("config-{mode}")));
    let (lines, seconds) = print_run(command, (&ws, &server), mode)?;
    let questions = (lines.iter())
        .filter(|l| l["subtype"] == "permission_denied" && l["decided_by"] != "auto_mode")
        .count();
    let decided = |d: &str| {
        (lines.iter())
            .filter(|l| l["subtype"] == "auto_mode_decision" && l["decision"] == d)
            .count()
    };
    Ok((
        questions,
        [decided("allow"), decided("ask"), decided("deny")],
        seconds,
    ))
}

/// The same session run by Claude Code (`CARAPACE_BENCH_CLAUDE` names its
/// binary), in a HOME of its own: what it refuses in print mode (its
/// `permission_denials`), and its classifier's requests (blocked or not).
fn claude_session(
    claude: &Path,
    mode: &str,
    base: &Path,
) -> Result<Figures, Box<dyn std::error::Error>> {
    let (ws, outside) = workspace(base, &format!("claude-{mode}"))?;
    let home = base.join(format!("cc-home-{mode}"));
    std::fs::create_dir_all(&home)?;
    let server = ScriptedServer::start_responding(responder(calls(&ws, &outside)))?;
    let mut command = std::process::Command::new(claude);
    command.env("HOME", &home);
    let (lines, seconds) = print_run(command, (&ws, &server), mode)?;
    let result = (lines.into_iter())
        .find(|l| l["type"] == "result")
        .unwrap_or(Value::Null);
    let refused = result["permission_denials"].as_array().map_or(0, Vec::len);
    let judged: Vec<String> = (server.requests().iter())
        .filter(|r| r.body["stop_sequences"][0] == "</block>")
        .map(|r| r.body["messages"].to_string())
        .collect();
    let allowed = judged.iter().filter(|s| judge(s).0 == "allow").count();
    Ok((refused, [allowed, 0, judged.len() - allowed], seconds))
}

pub(super) fn question_benches(base: &Path) -> BenchResult {
    let claude = std::env::var_os("CARAPACE_BENCH_CLAUDE").map(std::path::PathBuf::from);
    for mode in ["default", "acceptEdits", "auto"] {
        let (questions, [allowed, asked, denied], seconds) = session(mode, base)?;
        let classified = allowed + asked + denied;
        println!(
            "| questions_30_calls_{mode} | 30 | — | — | {seconds:.2} s | {questions} questions; classifier requests: {classified} ({allowed} allow, {asked} ask, {denied} deny) |"
        );
        if let Some(claude) = &claude {
            let (refused, [allowed, _, blocked], seconds) = claude_session(claude, mode, base)?;
            println!(
                "| questions_30_calls_{mode}_claude_code | 30 | — | — | {seconds:.2} s | {refused} refused (its questions, in print mode); classifier requests: {} ({allowed} not blocked, {blocked} blocked) |",
                allowed + blocked
            );
        }
    }
    Ok(())
}
