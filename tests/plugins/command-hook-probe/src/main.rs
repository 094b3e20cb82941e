//! A Claude Code–protocol hook for the hook tests: reads the hook JSON on
//! stdin, answers from `<cwd>/hook-script.json` (keyed by event name) the
//! way a Claude Code command hook would:
//!
//! ```json
//! {"PreToolUse": {"stdout": {"hookSpecificOutput": {…}}, "stderr": "why", "exit": 2}}
//! ```
//!
//! `"echo": true` writes the stdin JSON back on stderr with exit 1 (so a
//! test can see exactly what the hook was given, in the hook_response line);
//! `"where": true` does the same with where it was started: the initial
//! working directory WASI reports, `PWD`, `CLAUDE_PROJECT_DIR`, the libc's
//! current directory, and
//! whether `hook-script.json` opens by that relative name once it changes
//! to the initial directory. `"flood": N` prints N bytes to stdout.

use serde_json::Value;
use std::io::{Read, Write};

fn main() {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("cannot read stdin: {e}");
        std::process::exit(1);
    }
    let event: Value = match serde_json::from_str(&input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("stdin is not JSON: {e}");
            std::process::exit(1);
        }
    };
    let cwd = event["cwd"].as_str().unwrap_or("");
    let script_path = format!("{cwd}/hook-script.json");
    let script: Value =
        match std::fs::read_to_string(&script_path).map(|t| serde_json::from_str(&t)) {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                eprintln!("{script_path}: {e}");
                std::process::exit(1);
            }
            Err(e) => {
                eprintln!("cannot read {script_path}: {e}");
                std::process::exit(1);
            }
        };
    let name = event["hook_event_name"].as_str().unwrap_or("");
    let step = &script[name];
    if step["echo"] == true {
        eprint!("{input}");
        let _ = std::io::stderr().flush();
        wasip2::cli::exit::exit_with_code(1);
    }
    if step["where"] == true {
        let current = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let initial = wasip2::cli::environment::initial_cwd();
        let relative = initial
            .as_ref()
            .is_some_and(|dir| std::env::set_current_dir(dir).is_ok())
            && std::fs::read_to_string("hook-script.json").is_ok();
        eprint!(
            "{}",
            serde_json::json!({"initial_cwd": initial, "pwd": std::env::var("PWD").ok(),
                               "project_dir": std::env::var("CLAUDE_PROJECT_DIR").ok(),
                               "libc_cwd": current, "relative_read": relative})
        );
        let _ = std::io::stderr().flush();
        wasip2::cli::exit::exit_with_code(1);
    }
    if let Some(bytes) = step["flood"].as_u64() {
        // As a careless hook floods: `print!`, which panics once the
        // host stops taking what it writes.
        let chunk = "x".repeat(64 << 10);
        for _ in 0..bytes.div_ceil(64 << 10) {
            print!("{chunk}");
        }
        return;
    }
    if let Some(ms) = step["sleep_ms"].as_u64() {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    if step["unless_active"] == true && event["stop_hook_active"] == true {
        return;
    }
    match &step["stdout"] {
        Value::Null => {}
        Value::String(text) => print!("{text}"),
        other => print!("{other}"),
    }
    let _ = std::io::stdout().flush();
    if let Some(text) = step["stderr"].as_str() {
        eprint!("{text}");
    }
    if let Some(code) = step["exit"].as_u64() {
        let _ = std::io::stderr().flush();
        wasip2::cli::exit::exit_with_code(u8::try_from(code).unwrap_or(1));
    }
}
