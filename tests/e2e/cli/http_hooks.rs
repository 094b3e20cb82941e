//! Claude Code's `http` hooks: the input POSTed to a URL on loopback that a
//! test runs, the answer read as a command hook's stdout — and the ways
//! around the confinement tried: URL spellings reaching an address inside
//! the machine, a redirect, header variables outside the allow-list. Each
//! refused attempt is shown to work when the settings admit it.

use super::*;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A one-thread HTTP server on loopback: records each request (head and
/// body) and answers every one with `answer`.
struct HookServer {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl HookServer {
    fn start(answer: String) -> Result<Self, Box<dyn std::error::Error>> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(match stream.try_clone() {
                    Ok(s) => s,
                    Err(_) => continue,
                });
                let mut head = String::new();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                if let Ok(mut all) = kept.lock() {
                    all.push(format!("{head}\r\n{}", String::from_utf8_lossy(&body)));
                }
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        Ok(Self { port, seen })
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn ok_json(body: &Value) -> String {
    let text = body.to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    )
}

const DENY: &str = "denied by the http hook";

fn deny() -> Value {
    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": DENY}})
}

/// A project whose PreToolUse `http` hook on Bash posts to `url`, with
/// `extra` settings beside it; runs `touch made` through it.
fn run_with(
    url: &str,
    hook: Value,
    extra: Value,
) -> Result<(support::Run, PathBuf, ScriptedServer, tempfile::TempDir), Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    let home = ws.join("home");
    std::fs::create_dir_all(ws.join(".claude"))?;
    std::fs::create_dir_all(&home)?;
    let mut handler = json!({"type": "http", "url": url});
    if let (Some(h), Some(more)) = (handler.as_object_mut(), hook.as_object()) {
        h.extend(more.clone());
    }
    let mut settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}});
    if let (Some(s), Some(more)) = (settings.as_object_mut(), extra.as_object()) {
        s.extend(more.clone());
    }
    std::fs::write(ws.join(".claude/settings.json"), settings.to_string())?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_touch",
            "Bash",
            json!({"command": "touch made"}),
        )]),
        Reply::text("done"),
    ])?;
    let output = support::against(&server, &ws)
        .env("HOME", &home)
        .env("CARAPACE_CONFIG_DIR", home.join(".carapace"))
        .env("HOOK_TOKEN", "token-from-the-environment")
        .env("OTHER_SECRET", "must-not-leave")
        .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
        .args([
            "--permission-mode",
            "bypassPermissions",
            "--trust-workspace",
        ])
        .output()?;
    let run = support::Run::from_output(output)?;
    Ok((run, ws, server, dir))
}

fn sent_back(server: &ScriptedServer) -> String {
    server
        .requests()
        .get(1)
        .map(|r| r.body["messages"].to_string())
        .unwrap_or_default()
}

#[test]
fn an_http_hook_answers_as_a_command_hook_would() -> TestResult {
    let hook = HookServer::start(ok_json(&deny()))?;
    let url = format!("http://127.0.0.1:{}/pre", hook.port);
    let (run, ws, server, _dir) = run_with(
        &url,
        json!({"headers": {"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "[$OTHER_SECRET]"},
               "allowedEnvVars": ["HOOK_TOKEN"]}),
        json!({"allowedHttpHookUrls": [format!("http://127.0.0.1:{}/*", hook.port)]}),
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(!ws.join("made").exists(), "the hook's deny held");
    assert!(sent_back(&server).contains(DENY), "{}", sent_back(&server));
    let requests = hook.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request = &requests[0];
    assert!(request.starts_with("POST /pre "), "{request}");
    assert!(
        request.contains("\"hook_event_name\":\"PreToolUse\""),
        "{request}"
    );
    assert!(request.contains("\"tool_name\":\"Bash\""));
    // A variable the hook lists is sent; one it does not list is empty.
    assert!(
        request
            .to_ascii_lowercase()
            .contains("authorization: bearer token-from-the-environment")
    );
    assert!(
        request.to_ascii_lowercase().contains("x-other: []"),
        "{request}"
    );
    assert!(!request.contains("must-not-leave"));
    Ok(())
}

/// Loopback reached under other spellings, without allowedHttpHookUrls
/// naming it: each refused by carapace (the guard cannot run, so the call
/// is refused), the server never reached. Control: listed, it answers.
#[test]
fn an_http_hook_reaches_no_address_inside_unless_listed() -> TestResult {
    let hook = HookServer::start(ok_json(&json!({})))?;
    let port = hook.port;
    for url in [
        format!("http://127.0.0.1:{port}/pre"),
        format!("http://localhost:{port}/pre"),
        format!("http://127.1:{port}/pre"),
        format!("http://2130706433:{port}/pre"),
        format!("http://0x7f.0.0.1:{port}/pre"),
        format!("http://[::ffff:127.0.0.1]:{port}/pre"),
        format!("http://example.com@127.0.0.1:{port}/pre"),
    ] {
        let (run, ws, server, _dir) = run_with(&url, json!({}), json!({}))?;
        assert_eq!(run.status, Some(0), "{url}: {}", run.stderr);
        assert!(
            !ws.join("made").exists(),
            "{url}: the call went on without its guard"
        );
        let told = sent_back(&server);
        assert!(told.contains("an address inside"), "{url}: {told}");
        assert!(hook.requests().is_empty(), "{url} reached the server");
    }
    // Listed, the same hook is asked — and allows.
    let url = format!("http://127.1:{port}/pre");
    let (run, ws, _server, _dir) = run_with(
        &url,
        json!({}),
        json!({"allowedHttpHookUrls": [url.clone()]}),
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(
        ws.join("made").exists(),
        "admitted, the hook allowed the call"
    );
    assert_eq!(hook.requests().len(), 1);
    Ok(())
}

#[test]
fn an_http_hook_follows_no_redirect_and_goes_nowhere_unlisted() -> TestResult {
    let target = HookServer::start(ok_json(&json!({})))?;
    let redirect = HookServer::start(format!(
        "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:{}/elsewhere\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        target.port
    ))?;
    let url = format!("http://127.0.0.1:{}/pre", redirect.port);
    let listed = json!({"allowedHttpHookUrls": [url.clone()]});
    let (run, _ws, _server, _dir) = run_with(&url, json!({}), listed)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert_eq!(redirect.requests().len(), 1);
    assert!(
        target.requests().is_empty(),
        "the redirect was not followed"
    );
    assert!(
        run.stderr.contains("redirects are not followed"),
        "{}",
        run.stderr
    );
    // A URL the list does not admit is never asked: the guard cannot run.
    let (run, ws, server, _dir) = run_with(
        &url,
        json!({}),
        json!({"allowedHttpHookUrls": ["https://hooks.example.com/*"]}),
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(!ws.join("made").exists());
    assert!(sent_back(&server).contains("not admitted by allowedHttpHookUrls"));
    assert_eq!(redirect.requests().len(), 1, "not asked again");
    Ok(())
}
