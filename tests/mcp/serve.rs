//! `carapace mcp serve` driven by a real MCP client (the `mcp` Python
//! package): the tools are listed, a call inside the policy's grant runs in
//! its sandbox, and calls outside it are refused without running.

#[path = "../e2e/support.rs"]
mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use support::TestResult;

fn client_available() -> Result<bool, Box<dyn std::error::Error>> {
    let found = Command::new(carapace_test_support::deps::python())
        .args(["-c", "import mcp.client.stdio"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if found {
        return Ok(true);
    }
    Err("the `mcp` Python package is required: tests/setup.sh installs it in its virtual environment (the README's test command runs it)".into())
}

/// Runs the client against `carapace mcp serve ARGS` in `ws`.
fn drive(ws: &Path, calls: Value, args: &[&str]) -> Result<Value, Box<dyn std::error::Error>> {
    drive_at(ws, calls, args, None)
}

/// [`drive`] with the client's `mode` (a pinned revision, or `legacy`).
fn drive_in(ws: &Path, calls: Value, mode: &str) -> Result<Value, Box<dyn std::error::Error>> {
    drive_with(ws, calls, &[], (None, mode))
}

/// [`drive`], over Streamable HTTP at `url` when given.
fn drive_at(
    ws: &Path,
    calls: Value,
    args: &[&str],
    url: Option<&str>,
) -> Result<Value, Box<dyn std::error::Error>> {
    drive_with(ws, calls, args, (url, "auto"))
}

fn drive_with(
    ws: &Path,
    calls: Value,
    args: &[&str],
    (url, mode): (Option<&str>, &str),
) -> Result<Value, Box<dyn std::error::Error>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join("mcp")
        .join("clients")
        .join("call_carapace.py");
    let output = support::carapace()
        .get_envs()
        .fold(
            &mut Command::new(carapace_test_support::deps::python()),
            |c, (k, v)| match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            },
        )
        .env("CARAPACE_CONFIG_DIR", ws.join(".config"))
        .env("CARAPACE_MCP_URL", url.unwrap_or(""))
        .env("CARAPACE_MCP_MODE", mode)
        .current_dir(ws)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_carapace"))
        .arg(ws)
        .arg(calls.to_string())
        .args(args)
        .output()?;
    if !output.status.success() {
        return Err(format!(
            "the MCP client failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(serde_json::from_slice(&output.stdout)?)
}

#[test]
fn an_mcp_client_gets_sandboxed_tools_and_calls_outside_the_grant_are_refused() -> TestResult {
    if !client_available()? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?.join("ws");
    std::fs::create_dir(&ws)?;
    std::fs::write(ws.join("inside.txt"), "hello from the workspace\n")?;
    let outside = dir.path().join("secret.txt");
    std::fs::write(&outside, "the secret\n")?;
    let report = drive(
        &ws,
        json!([
            ["Read", {"file_path": ws.join("inside.txt")}],
            ["Read", {"file_path": outside}],
            ["Write", {"file_path": ws.join("new.txt"), "content": "x"}],
            ["Write", {"file_path": ws.join("allowed.txt"), "content": "granted"}],
            ["Read", {"file_path": "relative.txt"}],
        ]),
        &["--allowedTools", "Write(allowed.txt)"],
    )?;
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for tool in ["Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch"] {
        assert!(tools.contains(&tool), "{tools:?}");
    }
    let results = report["results"].as_array().cloned().unwrap_or_default();
    let result = |i: usize| results.get(i).cloned().unwrap_or(Value::Null);
    assert_eq!(result(0)["text"], "1\thello from the workspace\n2\t");
    assert_eq!(result(0)["is_error"], false);
    // Outside the working directory: refused, and nothing of it shown.
    assert_eq!(result(1)["is_error"], true);
    let refused = result(1)["text"].as_str().unwrap_or_default().to_string();
    assert!(
        refused.contains("outside the working directory"),
        "{refused}"
    );
    assert!(!refused.contains("the secret"), "{refused}");
    // A write the policy would ask about: refused, nothing written.
    assert_eq!(result(2)["is_error"], true);
    assert!(!ws.join("new.txt").exists());
    // A write a rule allows: granted that one file, and done.
    assert_eq!(result(3)["is_error"], false, "{}", result(3));
    assert_eq!(std::fs::read_to_string(ws.join("allowed.txt"))?, "granted");
    // Bad input is the tool's error, not the server's.
    assert_eq!(result(4)["is_error"], true);
    Ok(())
}

#[test]
fn over_http_the_same_tools_are_served_on_loopback_only_and_not_to_web_pages() -> TestResult {
    if !client_available()? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    std::fs::write(ws.join("inside.txt"), "over http\n")?;
    // Not loopback: refused before anything is served.
    let open = support::carapace()
        .current_dir(&ws)
        .args(["mcp", "serve", "--http", "0.0.0.0:0"])
        .output()?;
    assert_eq!(open.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&open.stderr).contains("not a loopback address"));

    let port = support::free_port()?;
    let mut server = support::carapace()
        .current_dir(&ws)
        .env("CARAPACE_CONFIG_DIR", ws.join(".config"))
        .args(["mcp", "serve", "--http", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    support::wait_for_port(&mut server, port)?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let outcome = (|| -> Result<(), Box<dyn std::error::Error>> {
        let report = drive_at(
            &ws,
            json!([
                ["Read", {"file_path": ws.join("inside.txt")}],
                ["Read", {"file_path": "/etc/passwd"}],
            ]),
            &[],
            Some(&url),
        )?;
        assert_eq!(report["results"][0]["text"], "1\tover http\n2\t");
        assert_eq!(report["results"][1]["is_error"], true);
        assert!(
            !report["results"][1]["text"]
                .as_str()
                .unwrap_or("")
                .contains("root:")
        );
        // A web page's request (a foreign Origin) is refused.
        let from_page = raw_http::post_from_a_web_page(&url)?;
        assert_eq!(from_page, 403);
        Ok(())
    })();
    let _ = server.kill();
    let _ = server.wait();
    outcome
}

mod raw_http {
    //! One raw POST with a foreign Origin, without an HTTP client crate.
    use std::io::{Read, Write};

    pub fn post_from_a_web_page(url: &str) -> Result<u16, Box<dyn std::error::Error>> {
        let rest = url.strip_prefix("http://").ok_or("not http")?;
        let (authority, path) = rest.split_at(rest.find('/').ok_or("no path")?);
        let mut stream = std::net::TcpStream::connect(authority)?;
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nOrigin: http://evil.example\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let status = response
            .split_whitespace()
            .nth(1)
            .ok_or("no status")?
            .parse()?;
        Ok(status)
    }
}

#[test]
fn a_typed_component_is_served_with_its_derived_tools() -> TestResult {
    if !client_available()? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?.join("ws");
    std::fs::create_dir(&ws)?;
    std::fs::write(ws.join("notes.txt"), "a\nb\nc\n")?;
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "permissions:\n  storage:\n    allow:\n      - uri: \"fs://workspace/**\"\n        access: [\"read\"]\n",
    )?;
    let probe = Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("typed_probe.wasm");
    let added = support::carapace()
        .env("CARAPACE_CONFIG_DIR", ws.join(".config"))
        .current_dir(&ws)
        .args([
            "plugin",
            "add",
            &probe.display().to_string(),
            "--yes",
            "--policy",
        ])
        .arg(&policy)
        .output()?;
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let count = "test_typed-probe_files_0_1_0_count";
    let report = drive(
        &ws,
        json!([
            ["add", {"a": -5, "b": 200}],
            [count, {"path": ws.join("notes.txt"), "what": {"tag": "lines"}}],
            ["add", {"a": 1, "b": 256}],
        ]),
        &[],
    )?;
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        tools.contains(&"add") && tools.contains(&count),
        "{tools:?}"
    );
    let results = report["results"].as_array().cloned().unwrap_or_default();
    let result = |i: usize| results.get(i).cloned().unwrap_or(Value::Null);
    assert_eq!(result(0)["text"], "195", "{}", result(0));
    assert_eq!(result(1)["text"], r#"["lines",3]"#, "{}", result(1));
    // Out of a u8's range: refused before the component runs.
    assert_eq!(result(2)["is_error"], true, "{}", result(2));
    Ok(())
}

/// Each revision a client asks for is answered in kind: the Python client
/// pinned to 2026-07-28 (no handshake), the same client on the handshake,
/// and a 2024-11-05 client, which is answered with 2024-11-05.
#[test]
fn each_protocol_revision_is_answered_in_kind() -> TestResult {
    if !client_available()? {
        return Err("the `mcp` Python package is required (tests/setup.sh installs it)".into());
    }
    let ws = tempfile::tempdir()?;
    std::fs::write(ws.path().join("notes.txt"), "hello")?;
    let calls = json!([["Read", {"file_path": ws.path().join("notes.txt")}]]);
    for (mode, version) in [
        ("2026-07-28", "2026-07-28"),
        ("legacy", "2025-11-25"),
        ("auto", "2026-07-28"),
    ] {
        let answer = drive_in(ws.path(), calls.clone(), mode)?;
        assert_eq!(answer["protocol_version"], version, "{mode}: {answer}");
        assert!(
            answer["results"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .contains("hello"),
            "{mode}: {answer}"
        );
    }
    // A 2024-11-05 client, and a revision nobody speaks, line by line.
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2031-01-01"}}}),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut child = support::carapace()
        .env("CARAPACE_CONFIG_DIR", ws.path().join(".config"))
        .current_dir(ws.path())
        .args(["mcp", "serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        stdin.write_all(input.as_bytes())?;
    }
    let output = child.wait_with_output()?;
    let replies: Vec<Value> = String::from_utf8(output.stdout)?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let reply = |id: i64| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(reply(1)["result"]["protocolVersion"], "2024-11-05");
    let listed = reply(2)["result"].clone();
    assert_eq!(
        (
            &listed["resultType"],
            &listed["cacheScope"],
            &listed["ttlMs"]
        ),
        (&json!("complete"), &json!("private"), &json!(0))
    );
    assert_eq!(
        listed["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "carapace"
    );
    assert_eq!(reply(3)["error"]["code"], -32022);
    assert_eq!(reply(3)["error"]["data"]["requested"], "2031-01-01");
    Ok(())
}

/// The TypeScript SDK's client (the 2025 handshake) gets the same tools
/// and the same answers.
#[test]
fn a_typescript_sdk_client_gets_the_tools_and_their_answers() -> TestResult {
    let sdk = carapace_test_support::deps::node_package(
        "mcp-servers",
        "@modelcontextprotocol/sdk/package.json",
    )?
    .join("node_modules")
    .join("@modelcontextprotocol")
    .join("sdk");
    let ws = tempfile::tempdir()?;
    std::fs::write(ws.path().join("notes.txt"), "hello from ts")?;
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/clients/call_carapace.mjs");
    let calls = json!([["Read", {"file_path": ws.path().join("notes.txt")}]]);
    let output = Command::new("node")
        .arg(script)
        .arg(&sdk)
        .arg(env!("CARGO_BIN_EXE_carapace"))
        .arg(ws.path())
        .arg(calls.to_string())
        .env("CARAPACE_CONFIG_DIR", ws.path().join(".config"))
        .output()?;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_slice(&output.stdout)?;
    assert_eq!(answer["server"]["name"], "carapace");
    assert!(
        answer["tools"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("Read"))),
        "{answer}"
    );
    assert!(
        answer["results"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("hello from ts"),
        "{answer}"
    );
    Ok(())
}
