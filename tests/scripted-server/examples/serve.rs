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

use scripted_server::{Reply, ScriptedServer};
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
    let replies = script
        .iter()
        .map(Reply::from_script)
        .collect::<Result<Vec<_>, _>>()?;
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
            // The last answer streamed to its end (or the client left it).
            let deadline = Instant::now() + Duration::from_secs(10);
            while server.finished_streams().len() < n && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
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
