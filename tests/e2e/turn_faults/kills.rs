//! `kill -9` at each stage of a turn, then `--resume`: the resumed request
//! carries every message the killed run had finished, each call paired
//! (a call cut off gets an interrupted result), and nothing of a response
//! that was still streaming.

use super::support::{self, TestResult, lines};
use scripted_server::{Block, Reply, ScriptedServer, Step};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Where in the turn the run is killed. The turn: a response with a text
/// and a Read, one with a Bash call that takes two seconds, a final answer.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    /// The first response is streaming (its text has come, its call not).
    FirstResponseStreaming,
    /// The second request was sent, with the Read's result; its response
    /// is streaming.
    SecondResponseStreaming,
    /// The Bash call is running.
    ToolRunning,
    /// The Bash call's result was sent; the final answer is streaming.
    FinalAnswerStreaming,
}

const STAGES: [Stage; 4] = [
    Stage::FirstResponseStreaming,
    Stage::SecondResponseStreaming,
    Stage::ToolRunning,
    Stage::FinalAnswerStreaming,
];

impl Stage {
    /// Which response (0, 1, 2) is held mid-stream at this stage.
    fn held_response(self) -> Option<usize> {
        match self {
            Stage::FirstResponseStreaming => Some(0),
            Stage::SecondResponseStreaming => Some(1),
            Stage::ToolRunning => None,
            Stage::FinalAnswerStreaming => Some(2),
        }
    }

    /// The roles of the resumed request's messages: what was finished.
    fn resumed_roles(self) -> &'static [&'static str] {
        match self {
            Stage::FirstResponseStreaming => &["user", "user"],
            Stage::SecondResponseStreaming => &["user", "assistant", "user", "user"],
            Stage::ToolRunning | Stage::FinalAnswerStreaming => {
                &["user", "assistant", "user", "assistant", "user", "user"]
            }
        }
    }
}

/// A response whose stream, when `held`, stops for good after its first
/// block, noting in `reached` that it got there.
fn response(blocks: Vec<Block>, stop: &str, held: bool, reached: &Arc<AtomicBool>) -> Reply {
    let reached = reached.clone();
    let reply = Reply::message(blocks, stop);
    reply.after_block(
        0,
        Step::WaitUntil {
            gate: Arc::new(move || {
                if held {
                    reached.store(true, Ordering::SeqCst);
                }
                !held
            }),
            timeout: Duration::from_secs(120),
            label: "held".into(),
        },
    )
}

fn script(stage: Stage, ws: &Path, reached: &Arc<AtomicBool>) -> Vec<Reply> {
    let notes = ws.join("notes.txt").display().to_string();
    let started = ws.join("started").display().to_string();
    let held = |n| stage.held_response() == Some(n);
    vec![
        response(
            vec![
                Block::text("Reading first."),
                Block::tool_use("toolu_read", "Read", json!({"file_path": notes})),
            ],
            "tool_use",
            held(0),
            reached,
        ),
        response(
            vec![
                Block::text("Now the command."),
                Block::tool_use(
                    "toolu_bash",
                    "Bash",
                    json!({"command": format!("echo up > '{started}' && sleep 2 && echo finished")}),
                ),
            ],
            "tool_use",
            held(1),
            reached,
        ),
        response(vec![Block::text("All done.")], "end_turn", held(2), reached),
    ]
}

/// Runs the turn until `stage`, kills it, and returns what it had printed
/// and its session's id.
fn kill_at(
    stage: Stage,
    ws: &Path,
    config: &Path,
) -> Result<(Vec<Value>, String), Box<dyn std::error::Error + Send + Sync>> {
    let reached = Arc::new(AtomicBool::new(false));
    let server = ScriptedServer::start(script(stage, ws, &reached))?;
    let mut child = support::against(&server, ws)
        .env("CARAPACE_CONFIG_DIR", config)
        .args([
            "-p",
            "do the work",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .args(["--permission-mode", "bypassPermissions"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(90);
    let there = || match stage {
        Stage::ToolRunning => ws.join("started").exists(),
        _ => reached.load(Ordering::SeqCst),
    };
    while !there() {
        if Instant::now() > deadline || child.try_wait()?.is_some() {
            let _ = child.kill();
            return Err(format!("{stage:?} was never reached").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill()?; // SIGKILL
    let output = child.wait_with_output()?;
    let printed = lines(&String::from_utf8(output.stdout)?)?;
    let id = printed
        .first()
        .and_then(|line| line["session_id"].as_str())
        .ok_or("no session id printed")?
        .to_string();
    Ok((printed, id))
}

/// Kills at `stage`, resumes, and checks what the resumed request carried.
fn kill_and_resume(stage: Stage) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("ws");
    let config: PathBuf = dir.path().join("config");
    std::fs::create_dir_all(&ws)?;
    std::fs::write(ws.join("notes.txt"), "the port is 8080\n")?;
    let (printed, id) = kill_at(stage, &ws, &config)?;

    let server = ScriptedServer::start(vec![Reply::text("picked up")])?;
    let output = support::against(&server, &ws)
        .env("CARAPACE_CONFIG_DIR", &config)
        .args(["-p", "go on", "--resume", &id, "--output-format", "json"])
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() != Some(0) {
        return Err(format!("{stage:?}: resume failed: {stderr}").into());
    }
    assert_eq!(
        stderr.contains("marked interrupted"),
        stage == Stage::ToolRunning,
        "{stage:?}: {stderr}"
    );
    let requests = server.requests();
    let body = &requests.first().ok_or("no request")?.body;
    let sent = body["messages"].as_array().ok_or("no messages")?;
    let roles: Vec<&str> = sent.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, stage.resumed_roles(), "{stage:?}: {sent:?}");
    assert_eq!(support::text_of(&sent[0]), "do the work", "{stage:?}");
    assert_eq!(
        support::text_of(&sent[sent.len() - 1]),
        "go on",
        "{stage:?}"
    );
    every_call_paired(sent).map_err(|e| format!("{stage:?}: {e}"))?;
    nothing_claimed_lost(&printed, sent).map_err(|e| format!("{stage:?}: {e}"))?;
    let bash_result = sent
        .iter()
        .flat_map(blocks)
        .find(|b| b["tool_use_id"] == "toolu_bash");
    if let Some(result) = bash_result {
        // Cut off while running: said so, as an error; finished: its output.
        let interrupted = stage == Stage::ToolRunning;
        assert_eq!(result["is_error"] == json!(true), interrupted, "{result}");
    }
    Ok(())
}

fn blocks(message: &Value) -> impl Iterator<Item = &Value> {
    message["content"].as_array().into_iter().flatten()
}

/// Each tool_use is answered in the next message, once.
fn every_call_paired(sent: &[Value]) -> Result<(), String> {
    for (i, message) in sent.iter().enumerate() {
        for call in blocks(message).filter(|b| b["type"] == "tool_use") {
            let answers = sent
                .get(i + 1)
                .into_iter()
                .flat_map(blocks)
                .filter(|b| b["type"] == "tool_result" && b["tool_use_id"] == call["id"])
                .count();
            if answers != 1 {
                return Err(format!("{} answered {answers} times: {sent:?}", call["id"]));
            }
        }
    }
    Ok(())
}

/// Every tool result the killed run printed as sent, and every call of a
/// response that had finished, is in the resumed request.
fn nothing_claimed_lost(printed: &[Value], sent: &[Value]) -> Result<(), String> {
    let sent_blocks: Vec<&Value> = sent.iter().flat_map(blocks).collect();
    for line in printed.iter().filter(|l| l["type"] == "user") {
        for result in blocks(&line["message"]).filter(|b| b["type"] == "tool_result") {
            let id = &result["tool_use_id"];
            let kept = sent_blocks
                .iter()
                .any(|b| b["type"] == "tool_result" && &b["tool_use_id"] == id);
            let called = sent_blocks
                .iter()
                .any(|b| b["type"] == "tool_use" && &b["id"] == id);
            if !(kept && called) {
                return Err(format!("the printed result of {id} was lost"));
            }
        }
    }
    Ok(())
}

#[test]
fn a_run_killed_at_each_stage_of_a_turn_resumes_with_every_call_paired() -> TestResult {
    let runs: Vec<_> = STAGES
        .into_iter()
        .map(|stage| (stage, std::thread::spawn(move || kill_and_resume(stage))))
        .collect();
    for (stage, run) in runs {
        run.join()
            .map_err(|_| format!("{stage:?}: panicked"))?
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}
