//! MCP servers nobody here wrote — `@modelcontextprotocol/server-everything`
//! from npm (the 2025 handshake) and a server built with the `mcp` Python
//! package (the 2026-07-28 revision) — configured as a user configures them,
//! started by carapace, spoken to through the sandboxed bridge, and called by
//! the model through the loop.
//!
//! Their toolchains (npm, Python's `mcp`) are installed by the README's test
//! command; a missing one fails the test, saying what to install.

mod common;
#[path = "../e2e/support.rs"]
mod support;

use common::{HttpServer, everything, notes, servers_dir, session, session_in};
use scripted_server::{Block, Reply};
use serde_json::{Value, json};
use std::path::Path;
use support::{TestResult, text_of};

#[test]
fn a_node_server_lists_and_calls_through_the_bridge_and_the_loop() -> TestResult {
    let everything = everything()?;
    let s = session(
        json!({"everything": everything}),
        vec![
            Reply::tool_uses(vec![
                Block::tool_use(
                    "toolu_echo",
                    "mcp__everything__echo",
                    json!({"message": "hi"}),
                ),
                Block::tool_use(
                    "toolu_sum",
                    "mcp__everything__get-sum",
                    json!({"a": 2, "b": 3}),
                ),
                Block::tool_use(
                    "toolu_weather",
                    "mcp__everything__get-structured-content",
                    json!({"location": "New York"}),
                ),
                Block::tool_use("toolu_image", "mcp__everything__get-tiny-image", json!({})),
                Block::tool_use("toolu_bad", "mcp__everything__echo", json!({"message": 5})),
            ]),
            Reply::text("done"),
        ],
        &["--allowedTools", "mcp__everything__*"],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    assert_eq!(s.server_status("everything")["status"], "connected");
    let tools = s.init()["tools"].as_array().cloned().unwrap_or_default();
    assert!(tools.contains(&json!("mcp__everything__echo")), "{tools:?}");
    assert!(tools.contains(&json!("Read")));
    // The model is offered the server's schema.
    let offered = s.server.requests()[0].body["tools"]
        .as_array()
        .and_then(|t| {
            t.iter()
                .find(|t| t["name"] == "mcp__everything__echo")
                .cloned()
        })
        .ok_or("echo not offered")?;
    assert_eq!(
        offered["input_schema"]["properties"]["message"]["type"],
        "string"
    );

    assert_eq!(text_of(&s.result(1, "toolu_echo")?), "Echo: hi");
    assert_eq!(
        text_of(&s.result(1, "toolu_sum")?),
        "The sum of 2 and 3 is 5."
    );
    let weather: Value = serde_json::from_str(&text_of(&s.result(1, "toolu_weather")?))?;
    assert!(weather["temperature"].is_number(), "{weather}");
    let image = s.result(1, "toolu_image")?;
    let blocks = image["content"].as_array().cloned().unwrap_or_default();
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "image" && b["source"]["media_type"] == "image/png"),
        "{image}"
    );
    // Bad input never reaches the server: the schema check refuses it.
    let bad = s.result(1, "toolu_bad")?;
    assert_eq!(bad["is_error"], true);
    assert!(text_of(&bad).contains("InputValidationError"), "{bad}");
    Ok(())
}

#[test]
fn mcp_calls_ask_unless_a_rule_allows_them_and_deny_rules_hide_them() -> TestResult {
    let everything = everything()?;
    let s = session(
        json!({"everything": everything}),
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_echo",
                "mcp__everything__echo",
                json!({"message": "hi"}),
            )]),
            Reply::text("done"),
        ],
        &["--disallowedTools", "mcp__everything__get-env"],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    // Print mode cannot ask: the call is denied, with why.
    let echo = s.result(1, "toolu_echo")?;
    assert_eq!(echo["is_error"], true);
    assert!(text_of(&echo).contains("needs approval"), "{echo}");
    // A bare deny removes the tool from what the model is offered.
    let tools = s.init()["tools"].as_array().cloned().unwrap_or_default();
    assert!(!tools.contains(&json!("mcp__everything__get-env")));
    assert!(tools.contains(&json!("mcp__everything__echo")));
    Ok(())
}

#[test]
fn a_python_server_on_the_current_revision_reports_errors_and_a_crash_mid_call() -> TestResult {
    let notes = notes()?;
    let s = session(
        json!({"notes": notes}),
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_add",
                "mcp__notes__add_note",
                json!({"text": "buy milk"}),
            )]),
            Reply::tool_uses(vec![
                Block::tool_use("toolu_count", "mcp__notes__count_notes", json!({})),
                Block::tool_use("toolu_empty", "mcp__notes__add_note", json!({"text": " "})),
            ]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_crash",
                "mcp__notes__crash",
                json!({}),
            )]),
            Reply::text("the server died"),
        ],
        &["--allowedTools", "mcp__notes"],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    assert_eq!(s.server_status("notes")["status"], "connected");
    assert_eq!(text_of(&s.result(1, "toolu_add")?), "noted (1 notes)");
    // Structured content (the tool returns a dict).
    let count: Value = serde_json::from_str(&text_of(&s.result(2, "toolu_count")?))?;
    assert_eq!(count, json!({"count": 1, "notes": ["buy milk"]}));
    // The tool raised: an error result with its message.
    let empty = s.result(2, "toolu_empty")?;
    assert_eq!(empty["is_error"], true);
    assert!(
        text_of(&empty).contains("a note cannot be empty"),
        "{empty}"
    );
    // The process died mid-call: an error result, the session goes on.
    let crash = s.result(3, "toolu_crash")?;
    assert_eq!(crash["is_error"], true);
    assert!(text_of(&crash).contains("is gone"), "{crash}");
    let result = s.out.last().ok_or("no result")?;
    assert_eq!(result["subtype"], "success");
    Ok(())
}

#[test]
fn a_server_that_cannot_start_is_reported_and_the_session_runs() -> TestResult {
    let s = session(
        json!({
            "missing": {"command": "/nonexistent/mcp-server"},
            "silent": {"command": "sh", "args": ["-c", "exit 0"]},
            "garbage": {"command": "sh", "args": ["-c", "echo not-json; sleep 5"]},
        }),
        vec![Reply::text("fine without them")],
        &[],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    for name in ["missing", "silent", "garbage"] {
        let status = s.server_status(name);
        assert_eq!(status["status"], "failed", "{name}: {status}");
    }
    assert!(
        s.server_status("missing")["error"]
            .as_str()
            .is_some_and(|e| e.contains("not found")),
        "{}",
        s.server_status("missing")
    );
    assert!(
        s.server_status("garbage")["error"]
            .as_str()
            .is_some_and(|e| e.contains("not JSON")),
        "{}",
        s.server_status("garbage")
    );
    assert!(s.stderr.contains("failed to start"), "{}", s.stderr);
    assert_eq!(s.out.last().ok_or("no result")?["subtype"], "success");
    Ok(())
}

/// The model unlocks the notes server's archive tool, then calls it.
fn unlock_then_archive() -> Vec<Reply> {
    vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_unlock",
            "mcp__notes__unlock_archive",
            json!({}),
        )]),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_archive",
            "mcp__notes__archive",
            json!({}),
        )]),
        Reply::text("archived"),
    ]
}

#[test]
fn a_tool_list_change_is_offered_from_the_next_turn() -> TestResult {
    let notes = notes()?;
    let s = session(
        json!({"notes": notes}),
        unlock_then_archive(),
        &["--allowedTools", "mcp__notes"],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    let offered = |n: usize| -> Vec<String> {
        s.server.requests()[n].body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(!offered(0).contains(&"mcp__notes__archive".to_string()));
    assert_eq!(
        text_of(&s.result(1, "toolu_unlock")?),
        "the archive tool is available"
    );
    assert!(
        offered(1).contains(&"mcp__notes__archive".to_string()),
        "{:?}",
        offered(1)
    );
    assert_eq!(text_of(&s.result(2, "toolu_archive")?), "archived");
    Ok(())
}

#[test]
fn mcp_calls_pass_the_same_hooks_and_project_servers_need_trust() -> TestResult {
    let everything = everything()?;
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    // A Claude Code-protocol hook that blocks (exit 2) what it matches.
    let script = ws.join("hook-script.json");
    std::fs::write(
        &script,
        json!({"PreToolUse": {"stderr": "echo is blocked by the MCP policy hook", "exit": 2}})
            .to_string(),
    )?;
    let probe = Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("command-hook-probe.wasm");
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "mcp__everything__echo", "hooks": [
        {"type": "wasm-command", "path": probe, "grants": {"read": [script]}}
    ]}]}});
    let s = session_in(
        &ws,
        json!({"everything": everything.clone()}),
        vec![
            Reply::tool_uses(vec![
                Block::tool_use(
                    "toolu_echo",
                    "mcp__everything__echo",
                    json!({"message": "hi"}),
                ),
                Block::tool_use(
                    "toolu_sum",
                    "mcp__everything__get-sum",
                    json!({"a": 1, "b": 1}),
                ),
            ]),
            Reply::text("done"),
        ],
        &[
            "--allowedTools",
            "mcp__everything__*",
            "--settings",
            &settings.to_string(),
        ],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    let echo = s.result(1, "toolu_echo")?;
    assert_eq!(echo["is_error"], true);
    assert!(
        text_of(&echo).contains("echo is blocked by the MCP policy hook"),
        "{echo}"
    );
    assert_eq!(
        text_of(&s.result(1, "toolu_sum")?),
        "The sum of 1 and 1 is 2."
    );

    // The same server in the project's .mcp.json: started only in a
    // trusted workspace, and never with --strict-mcp-config.
    let project = tempfile::tempdir()?;
    std::fs::write(
        project.path().join(".mcp.json"),
        json!({"mcpServers": {"project": everything}}).to_string(),
    )?;
    let run = |args: &[&str]| session_in(project.path(), json!({}), vec![Reply::text("hi")], args);
    let untrusted = run(&[])?;
    assert_eq!(untrusted.server_status("project"), Value::Null);
    assert!(
        untrusted.stderr.contains("trusted workspace"),
        "{}",
        untrusted.stderr
    );
    let trusted = run(&["--trust-workspace"])?;
    assert_eq!(trusted.server_status("project")["status"], "connected");
    let strict = run(&["--trust-workspace", "--strict-mcp-config"])?;
    assert_eq!(strict.server_status("project"), Value::Null);
    Ok(())
}

#[test]
fn a_streamable_http_server_is_reached_by_the_bridge_over_wasi_http() -> TestResult {
    let server = HttpServer::start("notes_server.py", &[], &[])?;
    let url = &server.url;
    let s = session(
        json!({"remote": {"type": "http", "url": url, "headers": {"X-Test": "1"}}}),
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_add",
                "mcp__remote__add_note",
                json!({"text": "over http"}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_count",
                "mcp__remote__count_notes",
                json!({}),
            )]),
            Reply::text("done"),
        ],
        &["--allowedTools", "mcp__remote"],
    );
    drop(server);
    let s = s?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    assert_eq!(s.server_status("remote")["status"], "connected");
    assert_eq!(text_of(&s.result(1, "toolu_add")?), "noted (1 notes)");
    let count: Value = serde_json::from_str(&text_of(&s.result(2, "toolu_count")?))?;
    assert_eq!(count, json!({"count": 1, "notes": ["over http"]}));
    Ok(())
}

#[test]
fn a_paged_tool_list_is_followed_to_its_end() -> TestResult {
    let server = json!({"command": carapace_test_support::deps::python(), "args": [servers_dir().join("paged_server.py")]});
    let s = session(
        json!({"paged": server}),
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_6",
                "mcp__paged__tool_6",
                json!({}),
            )]),
            Reply::text("done"),
        ],
        &["--allowedTools", "mcp__paged__*"],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    let tools: Vec<String> = s.init()["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(Value::as_str)
                .filter(|n| n.starts_with("mcp__paged__"))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let expected: Vec<String> = (0..7).map(|i| format!("mcp__paged__tool_{i}")).collect();
    assert_eq!(tools, expected);
    assert_eq!(text_of(&s.result(1, "toolu_6")?), "tool_6 ran");
    Ok(())
}

#[test]
fn tools_chooses_among_the_built_in_tools_and_mcp_tools_stay() -> TestResult {
    let notes = notes()?;
    let s = session(
        json!({"notes": notes}),
        vec![Reply::text("done")],
        &["--tools", "Read"],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    let offered: Vec<String> = s.server.requests()[0].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(offered.first().map(String::as_str), Some("Read"));
    assert!(
        !offered.iter().any(|t| t == "Bash" || t == "Write"),
        "{offered:?}"
    );
    assert!(
        offered.iter().any(|t| t.starts_with("mcp__notes__")),
        "{offered:?}"
    );
    // `""`: no built-in tool, the server's still offered; `default`: all.
    let none = session(
        json!({"notes": notes}),
        vec![Reply::text("done")],
        &["--tools", ""],
    )?;
    let offered: Vec<String> = none.server.requests()[0].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        offered.iter().all(|t| t.starts_with("mcp__notes__")) && !offered.is_empty(),
        "{offered:?}"
    );
    let all = session(
        json!({"notes": notes}),
        vec![Reply::text("done")],
        &["--tools", "default"],
    )?;
    let tools = all.init()["tools"].as_array().cloned().unwrap_or_default();
    assert!(
        tools.contains(&json!("Bash")) && tools.contains(&json!("Read")),
        "{tools:?}"
    );
    // A name outside the built-in set is refused, saying so.
    let unknown = session(
        json!({"notes": notes}),
        vec![],
        &["--tools", "mcp__notes__read"],
    )?;
    assert_eq!(unknown.status, Some(1));
    assert!(
        unknown.stderr.contains("chooses among the built-in tools"),
        "{}",
        unknown.stderr
    );
    Ok(())
}

/// A server that wants a login answers 401, here with a JSON body that is
/// no JSON-RPC message: the server is reported as wanting a login, not as
/// having sent a malformed message.
#[test]
fn a_401_is_reported_as_a_login_the_server_wants() -> TestResult {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut request = [0u8; 8192];
            let _ = stream.read(&mut request);
            let body = r#"{"error":"invalid_token","error_description":"sign in first"}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nwww-authenticate: Bearer\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let s = session(
        json!({"locked": {"type": "http", "url": url}}),
        vec![Reply::text("done")],
        &[],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    let status = s.server_status("locked");
    assert_eq!(status["status"], "failed");
    let error = status["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("the server answered HTTP 401: log in"),
        "{error}"
    );
    Ok(())
}

/// The same list change over Streamable HTTP (the current revision, where
/// the server tells it on a listening stream no bridge instance outlives):
/// the list is read again between turns, and the new tool is offered from
/// the next turn.
#[test]
fn a_tool_list_change_over_http_is_offered_from_the_next_turn() -> TestResult {
    let server = HttpServer::start("notes_server.py", &[], &[])?;
    let url = &server.url;
    let s = session(
        json!({"notes": {"type": "http", "url": url}}),
        unlock_then_archive(),
        &["--allowedTools", "mcp__notes"],
    );
    drop(server);
    let s = s?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    assert_eq!(text_of(&s.result(2, "toolu_archive")?), "archived");
    Ok(())
}
