//! Serves a script on loopback and prints every request it receives, so
//! another client (e.g. the reference Claude Code CLI) can be observed
//! against the same scripted model the tests use.
//!
//!     cargo run -p scripted-server --example serve -- SCRIPT.json [PORT]
//!
//! SCRIPT.json is a list of replies, each one of:
//!   {"blocks": [{"type": "text", "text": "…"} | {"type": "thinking", "thinking": "…"}
//!               | {"type": "tool_use", "id": "…", "name": "…", "input": {…}}],
//!    "stop_reason": "end_turn"}
//!   {"status": 529, "type": "overloaded_error", "message": "…", "retry_after": "1"}
//!   {"events": [{…SSE data…}, {"pause_ms": 100}, {"cut": true}]}
//! Each request is printed to stdout as one JSON line when the server stops
//! (after `--requests N` Messages requests, or `--idle-secs S` of silence, 60 by
//! default).

use scripted_server::{Block, Reply, ScriptedServer, Step};
use serde_json::Value;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let script_path = args
        .first()
        .ok_or("usage: serve SCRIPT.json [--requests N]")?;
    let idle = args
        .iter()
        .position(|a| a == "--idle-secs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .map_or(Duration::from_secs(60), Duration::from_secs);
    let wanted: Option<usize> = args
        .iter()
        .position(|a| a == "--requests")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok());
    let script: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(script_path)?)?;
    let replies = script.iter().map(reply).collect::<Result<Vec<_>, _>>()?;
    let server = ScriptedServer::start(replies)?;
    eprintln!("ANTHROPIC_BASE_URL={}", server.url());
    let mut last_change = Instant::now();
    let mut seen = 0;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let n = server.requests().len();
        if n != seen {
            seen = n;
            last_change = Instant::now();
        }
        if wanted.is_some_and(|w| n >= w) || last_change.elapsed() > idle {
            std::thread::sleep(Duration::from_millis(500));
            break;
        }
    }
    for request in server.all_requests() {
        println!(
            "{}",
            serde_json::json!({"path": request.path, "headers": request.headers, "body": request.body})
        );
    }
    Ok(())
}

fn reply(value: &Value) -> Result<Reply, String> {
    if let Some(status) = value.get("status").and_then(Value::as_u64) {
        let mut reply = Reply::status(
            status as u16,
            value["type"].as_str().unwrap_or("api_error"),
            value["message"].as_str().unwrap_or("scripted error"),
        );
        if let (Reply::Status { headers, .. }, Some(after)) =
            (&mut reply, value["retry_after"].as_str())
        {
            headers.push(("retry-after".into(), after.into()));
        }
        return Ok(reply);
    }
    if let Some(events) = value.get("events").and_then(Value::as_array) {
        let steps = events
            .iter()
            .map(|e| {
                if let Some(ms) = e.get("pause_ms").and_then(Value::as_u64) {
                    Step::Pause(Duration::from_millis(ms))
                } else if e.get("cut").is_some() {
                    Step::Cut
                } else {
                    Step::Event(e.clone())
                }
            })
            .collect();
        return Ok(Reply::Events(steps));
    }
    let blocks = value["blocks"]
        .as_array()
        .ok_or_else(|| format!("reply without blocks, status or events: {value}"))?
        .iter()
        .map(|b| match b["type"].as_str() {
            Some("text") => Ok(Block::text(b["text"].as_str().unwrap_or_default())),
            Some("thinking") => Ok(Block::Thinking(
                b["thinking"].as_str().unwrap_or_default().into(),
            )),
            Some("tool_use") => Ok(Block::tool_use(
                b["id"].as_str().unwrap_or("toolu_x"),
                b["name"].as_str().unwrap_or_default(),
                b["input"].clone(),
            )),
            Some("raw_tool_use") => Ok(Block::RawToolUse {
                id: b["id"].as_str().unwrap_or("toolu_x").into(),
                name: b["name"].as_str().unwrap_or_default().into(),
                json: b["json"].as_str().unwrap_or_default().into(),
            }),
            _ => Err(format!("unknown block {b}")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Reply::message(
        blocks,
        value["stop_reason"].as_str().unwrap_or("end_turn"),
    ))
}
