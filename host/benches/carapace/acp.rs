//! `carapace acp` serving many sessions in one process: N sessions
//! opened, then one prompt each at once (one Read, then an answer),
//! against the scripted server answering each request from its body.
//! Wall time, each turn's latency, the process's memory idle and at peak.

use super::{BenchResult, report};
use scripted_server::{Block, Reply, Responder, ScriptedServer};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(300);

pub fn acp_benches(cache: &Path, work: &Path) -> BenchResult {
    let cwd = std::fs::canonicalize(work)?.join("acp");
    std::fs::create_dir_all(&cwd)?;
    let file = cwd.join("notes.txt");
    std::fs::write(&file, "what every session reads\n")?;
    let responder: Responder = Arc::new(move |body: &Value| {
        let answered = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_array())
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
        match answered {
            true => Reply::text("It says what every session reads."),
            false => Reply::tool_uses(vec![Block::tool_use(
                "toolu_read",
                "Read",
                json!({"file_path": file}),
            )]),
        }
    });
    let server = ScriptedServer::start_responding(responder)?;
    for sessions in [1, 20, 1000] {
        let run = run(cache, &cwd, &server, sessions)?;
        let per_idle = (run.idle_kib - run.base_kib) as f64 / sessions as f64 / 1024.0;
        report(
            &format!("acp: {sessions} sessions opened at once"),
            &run.opened,
            &format!(
                "all open in {:.2?}; idle RSS {:.1} MiB ({per_idle:.3} MiB a session over the {:.1} MiB of no session)",
                run.open_wall,
                run.idle_kib as f64 / 1024.0,
                run.base_kib as f64 / 1024.0
            ),
        );
        report(
            &format!("acp: {sessions} first turns at once (one Read each)"),
            &run.first_turns,
            &format!("all done in {:.2?}", run.first_wall),
        );
        report(
            &format!("acp: {sessions} second turns at once"),
            &run.turns,
            &format!(
                "all done in {:.2?}; peak RSS over both {:.1} MiB",
                run.turn_wall,
                run.peak_kib as f64 / 1024.0
            ),
        );
    }
    Ok(())
}

struct Run {
    opened: Vec<Duration>,
    open_wall: Duration,
    /// Each session's first turn (the Read component loaded once for all).
    first_turns: Vec<Duration>,
    first_wall: Duration,
    /// Each session's second.
    turns: Vec<Duration>,
    turn_wall: Duration,
    base_kib: i64,
    idle_kib: i64,
    peak_kib: i64,
}

/// A JSON-RPC client on the agent's stdin/stdout.
struct Wire {
    stdin: std::process::ChildStdin,
    lines: Receiver<Value>,
    next: u64,
}

impl Wire {
    fn send(&mut self, method: &str, params: Value) -> Result<u64, Box<dyn std::error::Error>> {
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        writeln!(self.stdin, "{line}")?;
        Ok(self.next)
    }

    /// Waits for the answers to `ids`; when each came, and each answer.
    fn answers(
        &mut self,
        ids: &[u64],
    ) -> Result<HashMap<u64, (Instant, Value)>, Box<dyn std::error::Error>> {
        let mut got = HashMap::new();
        while got.len() < ids.len() {
            let line = self.lines.recv_timeout(WAIT)?;
            if let Some(id) = line["id"].as_u64()
                && line.get("method").is_none()
            {
                if line.get("error").is_some() {
                    return Err(format!("the agent refused: {line}").into());
                }
                got.insert(id, (Instant::now(), line));
            }
        }
        Ok(got)
    }
}

fn run(
    cache: &Path,
    cwd: &Path,
    server: &ScriptedServer,
    n: usize,
) -> Result<Run, Box<dyn std::error::Error>> {
    // The defaults: sessions sized from memory, turns beyond the running
    // limit waiting for a slot.
    let mut child = super::carapace_command(cache, cwd, server)
        .arg("acp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (send, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && send.send(value).is_err()
            {
                break;
            }
        }
    });
    let mut wire = Wire {
        stdin: child.stdin.take().ok_or("no stdin")?,
        lines,
        next: 0,
    };
    let id = wire.send("initialize", json!({"protocolVersion": 1}))?;
    wire.answers(&[id])?;
    let status = format!("/proc/{}/status", child.id());
    let base_kib = rss_kib(&status, "VmRSS:");

    let started = Instant::now();
    let ids: Vec<u64> = (0..n)
        .map(|_| wire.send("session/new", json!({"cwd": cwd, "mcpServers": []})))
        .collect::<Result<_, _>>()?;
    let answers = wire.answers(&ids)?;
    let open_wall = started.elapsed();
    let opened = ids.iter().map(|id| answers[id].0 - started).collect();
    let sessions: Vec<String> = ids
        .iter()
        .filter_map(|id| {
            answers[id].1["result"]["sessionId"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let idle_kib = rss_kib(&status, "VmRSS:");

    let (first_turns, first_wall) = turns(&mut wire, &sessions)?;
    let (turns, turn_wall) = turns(&mut wire, &sessions)?;
    let peak_kib = rss_kib(&status, "VmHWM:");
    drop(wire);
    child.wait()?;
    Ok(Run {
        opened,
        open_wall,
        first_turns,
        first_wall,
        turns,
        turn_wall,
        base_kib,
        idle_kib,
        peak_kib,
    })
}

/// One prompt in every session at once: when each answer came, and
/// when the last did.
fn turns(
    wire: &mut Wire,
    sessions: &[String],
) -> Result<(Vec<Duration>, Duration), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let prompts: Vec<u64> = sessions
        .iter()
        .map(|session| {
            let prompt = json!([{"type": "text", "text": "what do the notes say?"}]);
            wire.send(
                "session/prompt",
                json!({"sessionId": session, "prompt": prompt}),
            )
        })
        .collect::<Result<_, _>>()?;
    let answers = wire.answers(&prompts)?;
    let wall = started.elapsed();
    Ok((
        prompts.iter().map(|id| answers[id].0 - started).collect(),
        wall,
    ))
}

fn rss_kib(status_file: &str, field: &str) -> i64 {
    std::fs::read_to_string(status_file)
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
