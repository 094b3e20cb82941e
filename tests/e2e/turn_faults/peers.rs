//! Peers that misbehave in one turn: command hooks that flood stdout,
//! stop mid-line and hang; MCP servers that hang, stop mid-answer, send a
//! gigabyte on one line and a gigabyte of lines that are not JSON-RPC; an
//! installed plugin that spins, panics, builds a gigabyte and returns too
//! much. The turn ends in bounded time and memory, each failure is
//! said where it happened, every call is answered, and nothing a torn
//! answer held reaches the model.

use super::support::{self, TestResult, lines};
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const MODES: [&str; 4] = ["hang", "half", "flood", "spam"];

/// Peak resident memory the run may reach: the engine, one bridge call
/// per server and a message at the channel's cap, with room; far below a
/// gigabyte buffered.
const PEAK_LIMIT_KIB: u64 = 400 << 10;

struct Finished {
    status: Option<i32>,
    stdout: Vec<Value>,
    stderr: String,
    peak_kib: u64,
    took: Duration,
}

/// Runs `command` to its end (killed past `limit`), its output in files
/// (a flood must not fill a pipe nobody reads), sampling its peak RSS.
fn run_sampled(
    mut command: std::process::Command,
    dir: &Path,
    limit: Duration,
) -> Result<Finished, Box<dyn std::error::Error>> {
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let started = Instant::now();
    let mut child = command
        .stdout(std::fs::File::create(&out)?)
        .stderr(std::fs::File::create(&err)?)
        .stdin(Stdio::null())
        .spawn()?;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > limit {
            child.kill()?;
            return Err(format!("the run did not end within {limit:?}").into());
        }
        // VmHWM only grows: the last reading is the peak up to then.
        if let Some(kib) = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|s| vm_hwm_kib(&s))
        {
            peak_kib = peak_kib.max(kib);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Finished {
        status: status.code(),
        stdout: lines(&std::fs::read_to_string(&out)?)?,
        stderr: std::fs::read_to_string(&err)?,
        peak_kib,
        took: started.elapsed(),
    })
}

fn vm_hwm_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn servers(ws: &Path) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp/servers/misbehaving_server.py")
        .canonicalize()?;
    let servers: serde_json::Map<String, Value> = MODES
        .iter()
        .map(|mode| {
            let config = json!({"command": "python3", "args": [script, mode]});
            (mode.to_string(), config)
        })
        .collect();
    let path = ws.join("mcp.json");
    std::fs::write(&path, json!({"mcpServers": servers}).to_string())?;
    Ok(path)
}

/// Read's PreToolUse hook floods stdout, its PostToolUse hook stops in
/// the middle of a JSON answer, and the Stop hook hangs past its timeout.
fn hook_settings(ws: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let script = ws.join("hook-script.json");
    let torn = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
        "additionalContext": "TORN_CONTEXT_MUST_NOT_ARRIVE"}})
    .to_string();
    std::fs::write(
        &script,
        json!({
            "PreToolUse": {"flood": 1u64 << 30},
            "PostToolUse": {"stdout": &torn[..torn.len() - 8], "exit": 0},
            "Stop": {"sleep_ms": 60_000},
        })
        .to_string(),
    )?;
    let probe = Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("command-hook-probe.wasm");
    let hook = |matcher: &str, timeout: u64| {
        json!([{"matcher": matcher, "hooks": [{"type": "wasm-command", "path": probe,
            "timeout": timeout, "grants": {"read": [script]}}]}])
    };
    Ok(json!({"hooks": {
        "PreToolUse": hook("Read", 30),
        "PostToolUse": hook("Read", 30),
        "Stop": hook("", 1),
    }})
    .to_string())
}

fn first_response(ws: &Path) -> Reply {
    let mut calls = vec![Block::tool_use(
        "toolu_read",
        "Read",
        json!({"file_path": ws.join("a.txt")}),
    )];
    calls.extend(MODES.iter().map(|mode| {
        Block::tool_use(
            format!("toolu_{mode}"),
            format!("mcp__{mode}__go"),
            json!({}),
        )
    }));
    Reply::tool_uses(calls)
}

#[test]
fn hooks_and_mcp_servers_that_misbehave_end_the_turn_in_bounded_time_and_memory() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    let server = ScriptedServer::start(vec![first_response(&ws), Reply::text("done")])?;
    let mut command = support::against(&server, &ws);
    command
        .args(["-p", "go", "--output-format", "stream-json", "--verbose"])
        .arg("--include-hook-events")
        .arg("--mcp-config")
        .arg(servers(&ws)?)
        .args(["--settings", &hook_settings(&ws)?])
        .args([
            "--allowedTools",
            "Read,mcp__hang,mcp__half,mcp__flood,mcp__spam",
        ])
        .env("MCP_TOOL_TIMEOUT", "5000");
    let run = run_sampled(command, &ws, Duration::from_secs(180))?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let result = run.stdout.last().ok_or("no result line")?;
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["result"], "done");
    assert!(
        run.peak_kib < PEAK_LIMIT_KIB,
        "peak RSS {} MiB after {:?}",
        run.peak_kib >> 10,
        run.took
    );
    check_hooks(&run.stdout)?;
    check_results(&server)?;
    Ok(())
}

fn hook_response<'a>(stdout: &'a [Value], event: &str) -> Result<&'a Value, String> {
    stdout
        .iter()
        .find(|l| l["subtype"] == "hook_response" && l["hook_event"] == event)
        .ok_or_else(|| format!("no hook_response for {event}"))
}

fn check_hooks(stdout: &[Value]) -> TestResult {
    // The flood: an error of the hook, bounded in what is kept of it.
    let flood = hook_response(stdout, "PreToolUse")?;
    assert_eq!(flood["outcome"], "error", "{flood}");
    assert!(
        flood["stderr"]
            .as_str()
            .unwrap_or("")
            .contains("bytes to stdout"),
        "{flood}"
    );
    assert!(
        flood.to_string().len() < 64 << 10,
        "{} bytes",
        flood.to_string().len()
    );
    // Half a JSON answer with exit 0 is not an answer (as Claude Code reads
    // it): no error, and nothing of it is acted on.
    let torn = hook_response(stdout, "PostToolUse")?;
    assert_eq!(torn["outcome"], "success", "{torn}");
    let stop = hook_response(stdout, "Stop")?;
    assert_eq!(stop["outcome"], "error", "{stop}");
    assert!(
        stop["stderr"].as_str().unwrap_or("").contains("timed out"),
        "{stop}"
    );
    Ok(())
}

fn check_results(server: &ScriptedServer) -> TestResult {
    let results = support::second_request_results(server)?;
    // Concurrent (read-only) calls are answered as they finish.
    let mut ids: Vec<&str> = results
        .iter()
        .filter_map(|r| r["tool_use_id"].as_str())
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "toolu_flood",
            "toolu_half",
            "toolu_hang",
            "toolu_read",
            "toolu_spam"
        ],
        "every call answered once: {results:#?}"
    );
    let text = |r: &Value| support::text_of(r);
    let read = results.iter().find(|r| r["tool_use_id"] == "toolu_read");
    assert_eq!(
        read.map(text).as_deref(),
        Some("1\talpha\n2\t"),
        "the hooks' failures do not block"
    );
    let body = server.requests()[1].body.to_string();
    assert!(
        !body.contains("TORN_CONTEXT"),
        "a torn hook answer reached the model"
    );
    assert!(
        !body.contains("you will not see this"),
        "a torn MCP answer reached the model"
    );
    let said = |id: &str| {
        let result = results
            .iter()
            .find(|r| r["tool_use_id"] == id)
            .cloned()
            .unwrap_or(Value::Null);
        assert_eq!(result["is_error"], true, "{result}");
        text(&result)
    };
    assert!(
        said("toolu_hang").contains("5s deadline"),
        "{}",
        said("toolu_hang")
    );
    assert!(
        said("toolu_half").contains("not JSON"),
        "{}",
        said("toolu_half")
    );
    assert!(
        said("toolu_flood").contains("longer than 16777216 bytes"),
        "{}",
        said("toolu_flood")
    );
    assert!(
        said("toolu_spam").len() < 64 << 10,
        "{}",
        said("toolu_spam").len()
    );
    Ok(())
}

/// An installed tool plugin that spins, panics, builds a gigabyte and
/// returns 32 MiB, each call one of the turn's: each is that call's error,
/// named by the limit that stopped it, and the turn goes on.
#[test]
fn a_plugin_that_misbehaves_is_stopped_by_its_limits_and_the_turn_goes_on() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let (config, ws, shelf) = (root.join("config"), root.join("ws"), root.join("shelf"));
    for folder in [&config, &ws, &shelf] {
        std::fs::create_dir(folder)?;
    }
    let probe = shelf.join("escape-probe.wasm");
    std::fs::copy(
        Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("escape_probe.wasm"),
        &probe,
    )?;
    std::fs::write(
        probe.with_extension("toml"),
        "[plugin]\nname = \"escape-probe\"\nversion = \"0.1.0\"\ntools = [\"Probe\", \"Approver\"]\n\n\
         [limits]\ntimeout_secs = 2\nmemory_mib = 128\n",
    )?;
    let added = support::carapace()
        .current_dir(&ws)
        .env("CARAPACE_CONFIG_DIR", &config)
        .args(["plugin", "add"])
        .arg(&probe)
        .arg("--yes")
        .output()?;
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let attempt =
        |id: &str, attempt: Value| Block::tool_use(id, "Probe", json!({"attempts": [attempt]}));
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![
            attempt("toolu_spin", json!({"op": "spin"})),
            attempt("toolu_panic", json!({"op": "panic"})),
            attempt("toolu_bomb", json!({"op": "output", "bytes": 1u64 << 30})),
            attempt("toolu_big", json!({"op": "output", "bytes": 20u64 << 20})),
            attempt("toolu_small", json!({"op": "output", "bytes": 1000})),
        ]),
        Reply::text("done"),
    ])?;
    let mut command = support::against(&server, &ws);
    command
        .env("CARAPACE_CONFIG_DIR", &config)
        .args(["-p", "go", "--output-format", "stream-json", "--verbose"])
        .args(["--allowedTools", "Probe"]);
    let run = run_sampled(command, &root, Duration::from_secs(120))?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let result = run.stdout.last().ok_or("no result line")?;
    assert_eq!(result["result"], "done", "{result}");
    assert!(
        run.peak_kib < PEAK_LIMIT_KIB,
        "peak RSS {} MiB",
        run.peak_kib >> 10
    );
    let results = support::second_request_results(&server)?;
    let said = |id: &str| -> (bool, String) {
        let found = results.iter().find(|r| r["tool_use_id"] == id);
        let result = found.cloned().unwrap_or(Value::Null);
        (result["is_error"] == true, support::text_of(&result))
    };
    for (id, why) in [
        ("toolu_spin", "2s deadline"),
        ("toolu_panic", "crashed"),
        ("toolu_bomb", "memory cap"),
        ("toolu_big", "output cap"),
    ] {
        let (is_error, text) = said(id);
        assert!(is_error && text.contains(why), "{id}: {text}");
        assert!(text.len() < 64 << 10, "{id}: {} bytes", text.len());
    }
    // The control: the same plugin, within its limits, answers.
    let (is_error, text) = said("toolu_small");
    assert!(!is_error && text.contains(&"x".repeat(1000)), "{text}");
    Ok(())
}
