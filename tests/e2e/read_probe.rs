//! The seeds' Read probe, end to end: the `carapace` binary against the
//! scripted Messages server. Request 1 declares Read and carries only the
//! prompt; the host runs Read in the sandbox; request 2 pairs the tool_use
//! and its tool_result by id; the run ends `success`, exit 0.

mod support;

use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{Run, TestResult, last_line, lines, run};

const PROMPT: &str = "AGENT_LOOP_INITIAL_MARKER";
const TOOL_ID: &str = "toolu_agent_loop_probe";
const SESSION: &str = "0b6f5f8e-3c1a-4d7e-9a51-2f4c8d9e1a23";

#[test]
fn read_probe_pairs_the_tool_result_by_id_and_succeeds() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(workspace.path())?;
    let fixture = ws.join("probe-fixture.txt");
    std::fs::write(&fixture, "AGENT_LOOP_FILE_MARKER\n")?;
    std::fs::write(ws.join("sibling.txt"), "not for the model")?;
    let fixture = fixture.to_string_lossy().into_owned();

    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            TOOL_ID,
            "Read",
            json!({"file_path": fixture}),
        )]),
        Reply::text("TOOL_EXECUTION_OK"),
    ])?;
    let Run {
        status,
        stdout,
        stderr,
    } = run(
        &server,
        &ws,
        &[
            "--print",
            PROMPT,
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "claude-sonnet-4-5",
            "--tools",
            "Read",
            "--permission-mode",
            "bypassPermissions",
            "--dangerously-skip-permissions",
            "--session-id",
            SESSION,
        ],
    )?;
    assert_eq!(status, Some(0), "stderr: {stderr}\nstdout: {stdout}");

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "exactly two model requests");
    for request in &requests {
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(
            request.headers.get("x-api-key").map(String::as_str),
            Some("test-key")
        );
        assert_eq!(
            request.headers.get("anthropic-version").map(String::as_str),
            Some("2023-06-01")
        );
        assert_eq!(request.body["stream"], true);
        assert_eq!(request.body["model"], "claude-sonnet-4-5");
    }

    // Request 1: the Read tool with Claude Code's input schema, and only the
    // user's prompt.
    let first = &requests[0].body;
    let tools = first["tools"].as_array().cloned().unwrap_or_default();
    assert_eq!(tools.len(), 1, "only Read is offered: {tools:?}");
    assert_eq!(tools[0]["name"], "Read");
    assert!(
        tools[0]["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty())
    );
    assert_eq!(
        without_descriptions(&tools[0]["input_schema"]),
        read_schema()
    );
    // The context reminder first (today's date; no memory files here), as
    // Claude Code sends it, then the prompt.
    let reminder = format!(
        "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# currentDate\nToday's date is {}.\n\n      IMPORTANT: this context may or may not be relevant to your tasks. You should not respond to this context unless it is highly relevant to your task.\n</system-reminder>\n\n",
        carapace::agent::today()
    );
    assert_eq!(
        first["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": reminder},
            {"type": "text", "text": PROMPT, "cache_control": {"type": "ephemeral"}}
        ]}])
    );

    // Request 2: the assistant's tool_use and the user's tool_result, paired
    // by the same id, holding the file's numbered lines.
    let second = &requests[1].body;
    assert_eq!(
        second["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": reminder}, {"type": "text", "text": PROMPT}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": TOOL_ID, "name": "Read", "input": {"file_path": fixture}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": TOOL_ID,
                 "content": "1\tAGENT_LOOP_FILE_MARKER\n2\t",
                 "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
    assert_eq!(
        second["tools"], first["tools"],
        "the tools are the same in every request"
    );

    // stdout: init first, the tool_result line, and the result line last.
    let lines = lines(&stdout)?;
    assert_eq!(lines[0]["type"], "system");
    assert_eq!(lines[0]["subtype"], "init");
    assert_eq!(lines[0]["session_id"], SESSION);
    assert_eq!(lines[0]["tools"], json!(["Read"]));
    assert_eq!(lines[0]["permissionMode"], "bypassPermissions");
    let user_lines: Vec<&Value> = lines.iter().filter(|l| l["type"] == "user").collect();
    assert_eq!(user_lines.len(), 1);
    assert_eq!(
        user_lines[0]["message"]["content"][0]["tool_use_id"],
        TOOL_ID
    );
    let assistant_ids: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .map(|l| &l["message"]["id"])
        .collect();
    assert_eq!(assistant_ids, vec!["msg_scripted_1", "msg_scripted_2"]);

    let mut result = last_line(&stdout)?;
    // Sonnet 4.5 prices: 20 input tokens at $3/M and 10 output at $15/M.
    let cost = result["total_cost_usd"].as_f64().unwrap_or(-1.0);
    assert!((cost - 0.00021).abs() < 1e-12, "total_cost_usd {cost}");
    for volatile in ["duration_ms", "duration_api_ms", "uuid", "total_cost_usd"] {
        assert!(result.get(volatile).is_some(), "result has {volatile}");
        result.as_object_mut().map(|o| o.remove(volatile));
    }
    assert_eq!(
        result,
        json!({
            "type": "result",
            "subtype": "success",
            "is_error": false,
            "api_error_status": null,
            "num_turns": 2,
            "result": "TOOL_EXECUTION_OK",
            "stop_reason": "end_turn",
            "session_id": SESSION,
            "usage": {"input_tokens": 20, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 10},
            "permission_denials": [],
            "terminal_reason": "completed"
        })
    );
    Ok(())
}

#[test]
fn a_read_outside_the_working_directory_is_denied_in_default_mode() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let elsewhere = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(workspace.path())?;
    let secret = std::fs::canonicalize(elsewhere.path())?.join("secret.txt");
    std::fs::write(&secret, "SECRET_MARKER")?;
    let secret = secret.to_string_lossy().into_owned();
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Read",
            json!({"file_path": secret}),
        )]),
        Reply::text("could not read it"),
    ])?;
    let Run {
        status,
        stdout,
        stderr,
    } = run(
        &server,
        &ws,
        &[
            "-p",
            "read the secret",
            "--output-format",
            "stream-json",
            "--verbose",
        ],
    )?;
    assert_eq!(status, Some(0), "{stderr}");
    let requests = server.requests();
    let tool_result = &requests[1].body["messages"][2]["content"][0];
    assert_eq!(tool_result["tool_use_id"], "toolu_1");
    assert_eq!(tool_result["is_error"], true);
    let content = tool_result["content"].as_str().unwrap_or_default();
    assert!(
        content.contains("outside the working directory"),
        "{content}"
    );
    assert!(!requests[1].body.to_string().contains("SECRET_MARKER"));
    let result = last_line(&stdout)?;
    assert_eq!(
        result["permission_denials"],
        json!([{"tool_name": "Read", "tool_use_id": "toolu_1", "tool_input": {"file_path": secret}}])
    );
    Ok(())
}

#[test]
fn max_turns_one_runs_the_first_batch_and_sends_no_second_request() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(workspace.path())?;
    std::fs::write(ws.join("a.txt"), "alpha")?;
    let path = ws.join("a.txt").to_string_lossy().into_owned();
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Read",
            json!({"file_path": path}),
        )]),
        Reply::text("never sent"),
    ])?;
    let Run { status, stdout, .. } = run(
        &server,
        &ws,
        &[
            "-p",
            "read a",
            "--output-format",
            "stream-json",
            "--verbose",
            "--max-turns",
            "1",
        ],
    )?;
    assert_eq!(status, Some(1));
    assert_eq!(
        server.requests().len(),
        1,
        "no request after the first batch"
    );
    let lines = lines(&stdout)?;
    let tool_results: Vec<&Value> = lines.iter().filter(|l| l["type"] == "user").collect();
    assert_eq!(
        tool_results[0]["message"]["content"][0]["content"],
        "1\talpha"
    );
    let result = last_line(&stdout)?;
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["terminal_reason"], "max_turns");
    assert_eq!(
        result["errors"],
        json!(["Reached maximum number of turns (1)"])
    );
    Ok(())
}

#[test]
fn the_replay_demo_runs_without_a_key_or_network() -> TestResult {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = support::carapace()
        .current_dir(&repo)
        .args([
            "-p",
            "Summarise the demo notes",
            "--model",
            "replay:examples/demo/replay.json",
            "--output-format",
            "json",
        ])
        .output()?;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout)?;
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["num_turns"], 2);
    Ok(())
}

/// Under an address-space limit (`ulimit -v`, as some shared machines set)
/// the instance pool cannot reserve its terabytes of address space; the
/// run goes on with instances allocated one by one, and says so.
#[test]
fn a_run_under_an_address_space_limit_allocates_instances_on_demand() -> TestResult {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let template = support::carapace();
    let mut limited = std::process::Command::new("/bin/sh");
    limited
        .env_clear()
        .envs(template.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("RUST_LOG", "warn")
        .current_dir(&repo)
        // 16 GiB: room for one instance's 4 GiB reservation, not the pool's.
        .args(["-c", "ulimit -v 16777216 && exec \"$0\" \"$@\""])
        .arg(template.get_program())
        .args(["-p", "Summarise the demo notes"])
        .args(["--model", "replay:examples/demo/replay.json"])
        .args(["--output-format", "json"]);
    let output = limited.output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("allocating instances on demand"),
        "the pool was reserved after all, so this run proves nothing: {stderr}"
    );
    let result: Value = serde_json::from_slice(&output.stdout)?;
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["num_turns"], 2);
    Ok(())
}

/// Claude Code's Read input schema (descriptions aside).
fn read_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "file_path": {"type": "string"},
            "offset": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "exclusiveMinimum": 0}
        },
        "required": ["file_path"],
        "additionalProperties": false
    })
}

fn without_descriptions(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "description")
                .map(|(k, v)| (k.clone(), without_descriptions(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
fn the_model_reads_a_config_edits_the_port_and_runs_the_tests() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(workspace.path())?;
    let config = ws.join("config.toml");
    std::fs::write(&config, "[server]\nport = 8080\nhost = \"localhost\"\n")?;
    let path = config.to_string_lossy().into_owned();
    let test_command = "grep -q 'port = 9090' config.toml && echo TESTS PASSED";
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_read",
            "Read",
            json!({"file_path": path}),
        )]),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_edit",
            "Edit",
            json!({"file_path": path, "old_string": "port = 8080", "new_string": "port = 9090"}),
        )]),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_test",
            "Bash",
            json!({"command": test_command, "description": "run the tests"}),
        )]),
        Reply::text("The port is now 9090 and the tests pass."),
    ])?;
    let Run {
        status,
        stdout,
        stderr,
    } = run(
        &server,
        &ws,
        &[
            "-p",
            "Change the server port to 9090 and run the tests",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash(grep:*)",
            "Bash(echo:*)",
        ],
    )?;
    assert_eq!(status, Some(0), "stderr: {stderr}\nstdout: {stdout}");
    assert_eq!(
        std::fs::read_to_string(&config)?,
        "[server]\nport = 9090\nhost = \"localhost\"\n"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let result_of = |n: usize, id: &str| -> Value {
        let messages = requests[n].body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let last = messages.last().cloned().unwrap_or_default();
        let block = last["content"][0].clone();
        assert_eq!(block["tool_use_id"], id, "request {} pairs {id}", n + 1);
        block
    };
    assert!(
        result_of(1, "toolu_read")["content"]
            .as_str()
            .unwrap_or("")
            .contains("2\tport = 8080")
    );
    let edit = result_of(2, "toolu_edit");
    assert_eq!(edit["is_error"], Value::Null, "{edit}");
    assert!(
        edit["content"]
            .as_str()
            .unwrap_or("")
            .contains("has been updated")
    );
    let test = result_of(3, "toolu_test");
    assert_eq!(test["content"], "TESTS PASSED", "{test}");
    let result = last_line(&stdout)?;
    assert_eq!(result["result"], "The port is now 9090 and the tests pass.");
    assert_eq!(result["num_turns"], 4);
    Ok(())
}

/// The read probe with its component cache in `cache`. As the run a CI
/// image starts (`confined`), it runs as `nobody` when the test runs as
/// root, to whom no folder would be read-only.
fn probe_with_cache(
    cache: &std::path::Path,
    base: &std::path::Path,
    confined: bool,
) -> Result<Run, Box<dyn std::error::Error>> {
    use std::os::unix::process::CommandExt;
    let fixture = base.join("ws/probe-fixture.txt");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            TOOL_ID,
            "Read",
            json!({"file_path": fixture}),
        )]),
        Reply::text("TOOL_EXECUTION_OK"),
    ])?;
    // Another account cannot reach the build's binary when the clone is
    // in a private folder: it runs a copy under `base`.
    let as_other = confined && carapace_test_support::runs_as_root();
    let mut command = match as_other {
        true => support::against_at(
            &support::binary_for_other_accounts(&base.join("run"))?,
            &server,
            &base.join("ws"),
        ),
        false => support::against(&server, &base.join("ws")),
    };
    command
        .env(
            "HOME",
            base.join(if confined { "home" } else { "builder-home" }),
        )
        .env("CARAPACE_CACHE_DIR", cache)
        .args(["-p", PROMPT, "--output-format", "json", "--tools", "Read"])
        .args([
            "--permission-mode",
            "bypassPermissions",
            "--no-session-persistence",
        ]);
    if as_other {
        command.uid(65534).gid(65534);
    }
    let run = Run::from_output(command.output()?)?;
    if run.status == Some(0) && server.requests().len() != 2 {
        return Err(format!("{} requests, not 2", server.requests().len()).into());
    }
    Ok(run)
}

/// A layout the probe's user may use: `ws` (the fixture) and `home`, owned
/// by `nobody` when the test runs as root, under a folder anyone may enter.
fn probe_layout() -> Result<(tempfile::TempDir, std::path::PathBuf), Box<dyn std::error::Error>> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir()?;
    let base = std::fs::canonicalize(dir.path())?;
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755))?;
    std::fs::create_dir(base.join("builder-home"))?;
    for sub in ["ws", "home"] {
        std::fs::create_dir(base.join(sub))?;
        if carapace_test_support::runs_as_root() {
            std::os::unix::fs::chown(base.join(sub), Some(65534), Some(65534))?;
        }
    }
    std::fs::write(
        base.join("ws/probe-fixture.txt"),
        "AGENT_LOOP_FILE_MARKER\n",
    )?;
    Ok((dir, base))
}

fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A cache a CI image bakes in and the run may not write to is used, not
/// refused; an empty one it may not write to still works (the component is
/// compiled in memory).
#[test]
fn a_read_only_component_cache_is_used_not_refused() -> TestResult {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, base) = probe_layout()?;
    let baked = base.join("baked");
    std::fs::create_dir(&baked)?;
    // Baked by the image's builder (this user), read-only to the run.
    let warm = probe_with_cache(&baked, &base, false)?;
    assert_eq!(warm.status, Some(0), "{}", warm.stderr);
    let compiled_dir = baked.join("components");
    let baked_files = listing(&compiled_dir);
    assert!(
        baked_files.iter().any(|f| f.ends_with(".cwasm")),
        "{baked_files:?}"
    );
    for dir in [&compiled_dir, &baked] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555))?;
    }
    let used = probe_with_cache(&baked, &base, true)?;
    assert_eq!(used.status, Some(0), "{}", used.stderr);
    assert!(used.stdout.contains("TOOL_EXECUTION_OK"), "{}", used.stdout);
    // Used: loaded from the baked files, not compiled again beside them.
    assert!(
        !used.stderr.contains("compiling in memory") && !used.stderr.contains("discarding"),
        "the baked cache was not used: {}",
        used.stderr
    );
    assert_eq!(
        listing(&compiled_dir),
        baked_files,
        "the read-only cache was written"
    );

    let empty = base.join("empty");
    std::fs::create_dir(&empty)?;
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o555))?;
    let compiled = probe_with_cache(&empty, &base, true)?;
    assert_eq!(compiled.status, Some(0), "{}", compiled.stderr);
    // Control: this run had nothing to load, and says it compiled in memory.
    assert!(
        compiled.stderr.contains("compiling in memory"),
        "{}",
        compiled.stderr
    );
    assert!(listing(&empty).is_empty());
    Ok(())
}
