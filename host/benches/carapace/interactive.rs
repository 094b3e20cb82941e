//! The interactive screen: how long a typed key takes to show while an
//! answer streams at 200 tokens a second — in a fresh session, and in one
//! resumed after 100,000 tokens (a frame must not cost more as the
//! session grows). Measured end to end: the key written to a pseudo-
//! terminal, until the terminal emulator reading it shows the key.

use super::*;
use carapace_test_support::pty::{PtyScreen, PtySpec};
use scripted_server::Step;

/// Keys timed per session.
const KEYS: usize = 150;
/// Keys typed before the prompt is cleared (they fit one row).
const KEYS_PER_ROW: usize = 50;

pub fn interactive_benches(cache: &Path, work: &Path) -> BenchResult {
    let fresh = tempfile::tempdir_in(work)?;
    let samples = keys_while_streaming(cache, fresh.path(), None)?;
    report(
        "interactive: key → screen while 200 tokens/s stream (fresh session)",
        &samples,
        "a pseudo-terminal read by vt100; target p99 ≤ 16 ms",
    );
    let long = tempfile::tempdir_in(work)?;
    let id = long_session(cache, long.path())?;
    let samples = keys_while_streaming(cache, long.path(), Some(&id))?;
    report(
        "interactive: the same, resumed after 100,000 tokens",
        &samples,
        "must not grow with the session",
    );
    Ok(())
}

/// An answer streamed one word every 5 ms, with a paragraph break every
/// 40 words, for `words` words.
fn streaming_reply(words: usize) -> Reply {
    let mut steps = vec![
        Step::Event(
            json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        Step::Event(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    for i in 0..words {
        let text = if i % 40 == 39 { "word\n\n" } else { "word " };
        steps.push(Step::Event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})));
        steps.push(Step::Pause(Duration::from_millis(5)));
    }
    steps.extend([
        Step::Event(json!({"type": "content_block_stop", "index": 0})),
        Step::Event(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": words}})),
        Step::Event(json!({"type": "message_stop"})),
    ]);
    Reply::Events(steps)
}

/// A print-mode session whose prompt is 100,000 tokens; its id.
fn long_session(cache: &Path, cwd: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let server = ScriptedServer::start(vec![Reply::text("noted")])?;
    let prompt = "a long session's earlier words ".repeat(13_000);
    // On stdin: one argument cannot be 400 KB long.
    let mut child = session_command(cache, cwd, &server)
        .env("CARAPACE_CONFIG_DIR", cwd.join(".config"))
        .args(["-p", "--output-format", "json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin.write_all(prompt.as_bytes())?;
    }
    let output = child.wait_with_output()?;
    if !output.status.success() {
        return Err(format!(
            "the long session failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let result: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    Ok(result["session_id"]
        .as_str()
        .ok_or("no session id")?
        .to_string())
}

fn keys_while_streaming(
    cache: &Path,
    cwd: &Path,
    resume: Option<&str>,
) -> Result<Vec<Duration>, Box<dyn std::error::Error>> {
    let server = ScriptedServer::start(vec![streaming_reply(3000)])?;
    let mut args = vec!["--permission-mode", "bypassPermissions"];
    if let Some(id) = resume {
        args.extend(["--resume", id]);
    }
    let env = vec![
        ("HOME".to_string(), cwd.display().to_string()),
        ("CARAPACE_CACHE_DIR".into(), cache.display().to_string()),
        (
            "CARAPACE_CONFIG_DIR".into(),
            cwd.join(".config").display().to_string(),
        ),
        ("ANTHROPIC_BASE_URL".into(), server.url()),
        ("ANTHROPIC_API_KEY".into(), "bench".into()),
        ("TERM".into(), "xterm-256color".into()),
    ];
    let program = Path::new(env!("CARGO_BIN_EXE_carapace"));
    let mut screen = PtyScreen::open(PtySpec {
        program,
        args: &args,
        env,
        cwd,
        size: (40, 100),
        emulated_rows: 40,
    })?;
    let patience = Duration::from_secs(30);
    screen.wait_for("> ", patience)?;
    screen.keys("stream\r")?;
    screen.wait_for("word word word", patience)?;
    let mut samples = Vec::with_capacity(KEYS);
    for i in 0..KEYS {
        if i % KEYS_PER_ROW == 0 {
            screen.keys("\x15")?; // Ctrl-U: an empty prompt again
            wait_prompt(&screen, 0)?;
        }
        let started = Instant::now();
        screen.keys("a")?;
        wait_prompt(&screen, i % KEYS_PER_ROW + 1)?;
        samples.push(started.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    let streaming = !screen.contents().contains("$0.0") || server.remaining() == 0;
    screen.keys("\x15\x04")?;
    screen.wait_exit(patience)?;
    if !streaming {
        return Err("the answer was not streaming while keys were timed".into());
    }
    let sent = server
        .requests()
        .first()
        .map_or(0, |r| r.body.to_string().len());
    if resume.is_some() && sent < 390_000 {
        return Err(
            format!("the resumed session sent {sent} bytes, not its 100,000 tokens").into(),
        );
    }
    Ok(samples)
}

/// Waits until the prompt's row shows `typed` keys.
fn wait_prompt(screen: &PtyScreen, typed: usize) -> Result<(), Box<dyn std::error::Error>> {
    let want = format!("> {}", "a".repeat(typed));
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        let shown = screen.contents();
        if shown.lines().any(|row| row.trim_end() == want.trim_end()) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Err(format!(
        "the prompt never showed {typed} keys:\n{}",
        screen.contents()
    )
    .into())
}
