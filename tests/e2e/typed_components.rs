//! Components in the ecosystem's style — their own typed WIT functions,
//! plain WASI, no carapace manifest — installed with a Wassette policy as
//! their ceiling and called through the loop: the schemas derived from
//! their types, a value out of range refused before the call, a path the
//! rules deny refused, a path outside the ceiling unreachable, a changed
//! ceiling asked about again.

#[path = "../examples/build.rs"]
mod builder;
#[path = "plugin_user.rs"]
mod plugin_user;
mod support;

use plugin_user::User;
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{Run, TestResult, text_of};

const READ_LINES: &str = "test_typed-probe_files_0_1_0_read-lines";
const COUNT: &str = "test_typed-probe_files_0_1_0_count";

fn probe() -> PathBuf {
    Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("typed_probe.wasm")
}

const WORKSPACE_READ: &str = "permissions:\n  storage:\n    allow:\n      - uri: \"fs://workspace/**\"\n        access: [\"read\"]\n";

/// The tool results of the second request, by id.
fn results_of(server: &ScriptedServer) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let requests = server.requests();
    let second = requests.get(1).ok_or("no second request")?;
    let messages = second.body["messages"].as_array().ok_or("no messages")?;
    Ok(messages
        .last()
        .and_then(|m| m["content"].as_array())
        .cloned()
        .ok_or("no tool results")?)
}

fn result<'a>(results: &'a [Value], id: &str) -> Result<&'a Value, String> {
    results
        .iter()
        .find(|r| r["tool_use_id"] == id)
        .ok_or(format!("no result for {id}: {results:?}"))
}

/// Appends a top-level custom section to a component (what `cargo
/// component` and `wasm-tools` do for `package-docs`).
fn with_custom_section(wasm: &[u8], name: &str, payload: &[u8]) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                break;
            }
        }
    }
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(payload);
    let mut out = wasm.to_vec();
    out.push(0);
    leb(body.len(), &mut out);
    out.extend(body);
    out
}

#[test]
fn typed_exports_become_tools_with_schemas_from_their_types_and_docs() -> TestResult {
    let user = User::new()?;
    let docs = json!({"worlds": {"typed-probe": {"func_exports": {"add": {"docs": "Adds a small signed number to a byte."}}}},
        "interfaces": {"files": {"funcs": {"read-lines": {"docs": "Reads lines of a text file."}}}}});
    let documented = user.config.path().join("typed-probe.wasm");
    let mut payload = vec![1u8];
    payload.extend(serde_json::to_vec(&docs)?);
    std::fs::write(
        &documented,
        with_custom_section(&std::fs::read(probe())?, "package-docs", &payload),
    )?;

    let added = user.add(&documented, Some(&user.policy(WORKSPACE_READ)?))?;
    assert_eq!(added.status, Some(0), "{}", added.stderr);
    assert!(
        added
            .stdout
            .contains("contract  none: the component's own typed functions"),
        "{}",
        added.stdout
    );
    assert!(
        added.stdout.contains("files: read {workspace}"),
        "{}",
        added.stdout
    );

    let inspected = user.run(&["plugin", "inspect", "typed-probe", "--json"])?;
    assert_eq!(inspected.status, Some(0), "{}", inspected.stderr);
    let inspected: Value = serde_json::from_str(&inspected.stdout)?;
    let tools = inspected["tools"].as_array().ok_or("no tools")?;
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["setting", "add", "next-char", READ_LINES, COUNT]);
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    let read_lines = tool(READ_LINES);
    assert_eq!(read_lines["description"], "Reads lines of a text file.");
    let schema = &read_lines["input_schema"];
    assert_eq!(schema["required"], json!(["request", "mode", "marks"]));
    // Options are not required; integers carry their ranges.
    assert_eq!(schema["properties"]["request"]["required"], json!(["path"]));
    assert_eq!(
        schema["properties"]["request"]["properties"]["count"]["anyOf"][1]["maximum"],
        255
    );
    assert_eq!(
        schema["properties"]["mode"]["enum"],
        json!(["keep", "upper", "lower"])
    );
    assert_eq!(
        schema["properties"]["marks"]["properties"]["ends"]["type"],
        "boolean"
    );
    let add = tool("add");
    assert_eq!(add["description"], "Adds a small signed number to a byte.");
    assert_eq!(add["input_schema"]["properties"]["a"]["minimum"], -128);
    assert_eq!(add["input_schema"]["properties"]["b"]["maximum"], 255);
    // Without docs, a description that says where the function is.
    assert!(
        tool(COUNT)["description"]
            .as_str()
            .is_some_and(|d| d.contains("`count`"))
    );
    let count = &tool(COUNT)["input_schema"]["properties"]["what"]["oneOf"];
    assert_eq!(count[2]["properties"]["tag"]["const"], "matches");
    Ok(())
}

#[test]
fn typed_calls_run_through_the_loop_within_the_policy_and_the_rules() -> TestResult {
    let user = User::new()?;
    let added = user.add(&probe(), Some(&user.policy(WORKSPACE_READ)?))?;
    assert_eq!(added.status, Some(0), "{}", added.stderr);
    let notes = user.file("notes.txt");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![
            Block::tool_use(
                "toolu_lines",
                READ_LINES,
                json!({
                "request": {"path": notes, "start": 2},
                "mode": "upper", "marks": {"numbers": true}}),
            ),
            Block::tool_use("toolu_add", "add", json!({"a": -5, "b": 200})),
            // 300 does not fit a u8: refused before the component runs.
            Block::tool_use("toolu_range", "add", json!({"a": 1, "b": 300})),
            Block::tool_use(
                "toolu_count",
                COUNT,
                json!({"path": notes, "what": {"tag": "matches", "val": "the"}}),
            ),
            Block::tool_use("toolu_char", "next-char", json!({"c": "a", "x": 3.0})),
            // Outside the ceiling: the component is given no such file.
            Block::tool_use(
                "toolu_outside",
                COUNT,
                json!({"path": "/etc/hostname", "what": {"tag": "bytes"}}),
            ),
        ]),
        Reply::text("done"),
    ])?;
    let run = user.session(&server, &[])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let results = results_of(&server)?;
    let lines = result(&results, "toolu_lines")?;
    assert_eq!(text_of(lines), r#"["2: THE HAT","3: THE END"]"#, "{lines}");
    assert_ne!(lines["is_error"], true);
    assert_eq!(text_of(result(&results, "toolu_add")?), "195");
    let range = result(&results, "toolu_range")?;
    assert_eq!(range["is_error"], true, "{range}");
    assert!(text_of(range).contains("300"), "{range}");
    assert_eq!(
        text_of(result(&results, "toolu_count")?),
        r#"["matches",3]"#
    );
    assert_eq!(text_of(result(&results, "toolu_char")?), r#"["b",1.5]"#);
    let outside = result(&results, "toolu_outside")?;
    assert_eq!(outside["is_error"], true, "{outside}");
    assert!(
        text_of(outside).contains("cannot read /etc/hostname"),
        "{outside}"
    );

    // A rule that denies a file inside the ceiling holds: the call that
    // would be given the tree holding it is refused, naming the rule.
    let secret = user.file("secret.txt");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_secret",
            READ_LINES,
            json!({
            "request": {"path": secret}, "mode": "keep", "marks": {}}),
        )]),
        Reply::text("done"),
    ])?;
    let run = user.session(&server, &["--disallowedTools", "Read(./secret.txt)"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let results = results_of(&server)?;
    let refused = result(&results, "toolu_secret")?;
    assert_eq!(refused["is_error"], true, "{refused}");
    assert!(text_of(refused).contains("Read(./secret.txt)"), "{refused}");
    assert!(!text_of(refused).contains("hunter2"), "{refused}");
    Ok(())
}

#[test]
fn without_a_policy_a_typed_component_reaches_no_file() -> TestResult {
    let user = User::new()?;
    let added = user.add(&probe(), None)?;
    assert_eq!(added.status, Some(0), "{}", added.stderr);
    assert!(
        added.stdout.contains("clocks and random only"),
        "{}",
        added.stdout
    );
    let notes = user.file("notes.txt").display().to_string();
    let input = json!({"path": notes, "what": {"tag": "lines"}}).to_string();
    let call = user.run(&[
        "tool",
        "call",
        "typed-probe",
        COUNT,
        "--input",
        &input,
        "--yes",
    ])?;
    assert!(
        call.stdout.contains("cannot read"),
        "{}\n{}",
        call.stdout,
        call.stderr
    );
    // The same call with the ceiling approved reads it.
    let added = user.add(&probe(), Some(&user.policy(WORKSPACE_READ)?))?;
    assert_eq!(added.status, Some(0), "{}", added.stderr);
    let call = user.run(&[
        "tool",
        "call",
        "typed-probe",
        COUNT,
        "--input",
        &input,
        "--yes",
    ])?;
    assert!(
        call.stdout.contains(r#"[\"lines\",3]"#),
        "{}\n{}",
        call.stdout,
        call.stderr
    );
    Ok(())
}

#[test]
fn another_policy_for_the_same_component_shows_the_change_and_asks_again() -> TestResult {
    let user = User::new()?;
    assert_eq!(
        user.add(&probe(), Some(&user.policy(WORKSPACE_READ)?))?
            .status,
        Some(0)
    );
    let wider = user.policy(&WORKSPACE_READ.replace("[\"read\"]", "[\"read\", \"write\"]"))?;
    let probe = probe().display().to_string();
    let asked = user.run(&["plugin", "add", &probe, "--policy", &wider])?;
    assert_ne!(
        asked.status,
        Some(0),
        "installed without approval: {}",
        asked.stdout
    );
    assert!(
        asked.stdout.contains("files: read and write {workspace}"),
        "{}",
        asked.stdout
    );
    assert!(
        asked.stdout.contains("its ceiling changed; it was:"),
        "{}",
        asked.stdout
    );
    assert!(asked.stderr.contains("needs approval"), "{}", asked.stderr);
    // Nothing changed: the old ceiling still stands.
    let inspected: Value = serde_json::from_str(
        &user
            .run(&["plugin", "inspect", "typed-probe", "--json"])?
            .stdout,
    )?;
    assert_eq!(inspected["ceiling"], json!(["files: read {workspace}"]));
    // A policy with a carapace manifest, and a policy carapace cannot
    // translate, are refused.
    let odd = user.policy("permissions:\n  ipc:\n    allow:\n      - name: x\n")?;
    let refused = user.run(&["plugin", "add", &probe, "--policy", &odd, "--yes"])?;
    assert_ne!(refused.status, Some(0));
    assert!(
        refused.stderr.contains("permissions.ipc"),
        "{}",
        refused.stderr
    );
    Ok(())
}

#[test]
fn an_import_carapace_does_not_provide_fails_the_install_naming_it() -> TestResult {
    let user = User::new()?;
    let component = Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("typed_unprovided.wasm");
    let refused = user.add(&component, None)?;
    assert_ne!(refused.status, Some(0), "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("imports what carapace does not provide"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("test:unprovided/vault@0.1.0"),
        "{}",
        refused.stderr
    );
    let list = user.run(&["plugin", "list", "--json"])?;
    assert_eq!(list.stdout.trim(), "[]");
    Ok(())
}

/// A loopback HTTP server answering every request with `body`.
fn http_server(body: &'static str) -> Result<u16, Box<dyn std::error::Error>> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(port)
}

#[test]
fn a_javascript_component_reaches_only_what_its_policy_allows_over_wasi_http() -> TestResult {
    let wasm = builder::build("typed", "javascript", "typed-fetch-javascript.wasm")?;
    let port = http_server("hello over wasi:http")?;
    let other = http_server("not granted")?;
    let user = User::new()?;
    let policy = user.policy(&format!(
        "permissions:\n  network:\n    allow:\n      - host: \"127.0.0.1:{port}\"\n"
    ))?;
    let added = user.add(&wasm, Some(&policy))?;
    assert_eq!(added.status, Some(0), "{}", added.stderr);
    assert!(
        added
            .stdout
            .contains(&format!("network: HTTP to 127.0.0.1:{port}")),
        "{}",
        added.stdout
    );
    let url = format!("http://127.0.0.1:{port}/page");
    let fetch = |url: &str| -> Result<Run, Box<dyn std::error::Error>> {
        let input = json!({"url": url}).to_string();
        user.run(&[
            "tool",
            "call",
            "typed-fetch-javascript",
            "fetch",
            "--input",
            &input,
            "--yes",
        ])
    };
    // Loopback is internal: refused by the gate, even though granted.
    let refused = fetch(&url)?;
    assert!(
        refused.stdout.contains("destination-IP-prohibited"),
        "{}\n{}",
        refused.stdout,
        refused.stderr
    );
    assert!(!refused.stdout.contains("hello over"), "{}", refused.stdout);

    // The user's own settings let this one internal host through.
    std::fs::write(
        user.config.path().join("settings.json"),
        json!({"sandbox": {"allowInternalAddresses": [format!("127.0.0.1:{port}")]}}).to_string(),
    )?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![
            Block::tool_use("toolu_page", "fetch", json!({"url": url})),
            // A host outside the policy: refused however the URL is spelt.
            Block::tool_use(
                "toolu_other",
                "fetch",
                json!({"url": format!("http://127.0.0.1:{other}/page")}),
            ),
            Block::tool_use(
                "toolu_alias",
                "fetch",
                json!({"url": format!("http://localhost:{port}/page")}),
            ),
        ]),
        Reply::text("done"),
    ])?;
    // HTTP asks in the default mode; a rule allows the tool (its ceiling
    // still bounds it).
    let run = user.session(&server, &["--allowedTools", "fetch"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let results = results_of(&server)?;
    let page = result(&results, "toolu_page")?;
    assert_eq!(text_of(page), "hello over wasi:http", "{page}");
    assert_ne!(page["is_error"], true);
    for id in ["toolu_other", "toolu_alias"] {
        let refused = result(&results, id)?;
        assert_eq!(refused["is_error"], true, "{refused}");
        assert!(
            !text_of(refused).contains("not granted") && !text_of(refused).contains("hello over"),
            "{refused}"
        );
    }
    Ok(())
}

#[test]
fn wasi_config_values_come_from_the_settings_for_that_plugin_only() -> TestResult {
    let user = User::new()?;
    assert_eq!(user.add(&probe(), None)?.status, Some(0));
    std::fs::write(
        user.config.path().join("settings.json"),
        json!({"pluginConfig": {
            "typed-probe": {"region": "eu-west"},
            "another-plugin": {"token": "not for typed-probe"},
        }})
        .to_string(),
    )?;
    let get = |key: &str| -> Result<String, Box<dyn std::error::Error>> {
        let input = json!({"key": key}).to_string();
        let run = user.run(&[
            "tool",
            "call",
            "typed-probe",
            "setting",
            "--input",
            &input,
            "--yes",
        ])?;
        let out: Value =
            serde_json::from_str(&run.stdout).map_err(|e| format!("{e}: {}", run.stderr))?;
        Ok(out["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    };
    assert_eq!(get("region")?, "eu-west");
    // Another plugin's values, and keys nobody set, are not there.
    assert_eq!(get("token")?, "null");
    assert_eq!(get("missing")?, "null");

    // The draft spelling Wassette's components import reads the same.
    let draft = Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("typed_config_draft.wasm");
    assert_eq!(user.add(&draft, None)?.status, Some(0));
    std::fs::write(
        user.config.path().join("settings.json"),
        json!({"pluginConfig": {
            "typed-config-draft": {"city": "Lyon", "units": "metric"},
            "typed-probe": {"region": "eu-west"},
        }})
        .to_string(),
    )?;
    let run = user.run(&["tool", "call", "typed-config-draft", "settings", "--yes"])?;
    let out: Value =
        serde_json::from_str(&run.stdout).map_err(|e| format!("{e}: {}", run.stderr))?;
    assert_eq!(
        out["result"]["content"][0]["text"], "city=Lyon\nunits=metric",
        "{out}"
    );
    Ok(())
}
