//! carapace as the Claude Agent SDK's `cli_path`: the PyPI SDK (pinned in
//! `tests/sdk/requirements.txt`, installed by the README's test command)
//! drives the binary against the scripted server through
//! `tests/sdk/driver.py`; each test checks what the SDK yielded and what
//! was sent to the model. Without the SDK installed a test fails, saying
//! what to install.

mod grants;
#[path = "../e2e/support.rs"]
mod support;
mod ts;

use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{TestResult, text_of};

/// Whether the SDK can be imported; an error when CI requires it.
fn sdk_installed() -> Result<bool, String> {
    let found = Command::new(carapace_test_support::deps::python())
        .args(["-c", "import claude_agent_sdk"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        return Err("the `claude-agent-sdk` Python package is required: tests/setup.sh installs it in its virtual environment (the README's test command runs it)".into());
    }
    Ok(found)
}

/// One scenario's run: what the SDK yielded, and the server.
struct Drive {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    lines: Vec<Value>,
    server: ScriptedServer,
    stderr: String,
}

impl Drive {
    fn of(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["kind"] == kind).collect()
    }

    fn results(&self) -> Vec<&Value> {
        self.of("ResultMessage")
    }

    fn request(&self, n: usize) -> Result<Value, String> {
        self.server
            .requests()
            .get(n)
            .map(|r| r.body.clone())
            .ok_or_else(|| format!("no request {n}; lines: {:?}\n{}", self.lines, self.stderr))
    }

    fn error(&self) -> Option<String> {
        self.of("error")
            .first()
            .and_then(|e| e["error"].as_str())
            .map(str::to_string)
    }

    fn ok(&self) -> Result<(), String> {
        match self.error() {
            Some(error) => Err(format!("{error}\n{}", self.stderr)),
            None => Ok(()),
        }
    }
}

fn drive(
    scenario: &str,
    replies: impl FnOnce(&Path) -> Vec<Reply>,
) -> Result<Drive, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("ws");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&ws)?;
    std::fs::create_dir_all(&home)?;
    std::fs::write(ws.join("notes.txt"), "the port is 8080\n")?;
    let server = ScriptedServer::start(replies(&ws))?;
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/sdk/driver.py");
    let mut command = Command::new(carapace_test_support::deps::python());
    command.arg(driver).arg(scenario);
    let (lines, stderr) = run_driver(command, &ws, &home, &server)?;
    Ok(Drive {
        _dir: dir,
        ws,
        lines,
        server,
        stderr,
    })
}

/// Runs an SDK driver (`command`, its program and arguments set) against
/// `server` in a clean environment; returns the JSON lines it printed and
/// its stderr.
fn run_driver(
    mut command: Command,
    ws: &Path,
    home: &Path,
    server: &ScriptedServer,
) -> Result<(Vec<Value>, String), Box<dyn std::error::Error>> {
    command.env_clear();
    let output = command
        .env("PATH", carapace_test_support::deps::path_with_deps())
        .env("CARAPACE_BIN", env!("CARGO_BIN_EXE_carapace"))
        .env("WS", ws)
        .env("HOME", home)
        .env("CARAPACE_CONFIG_DIR", home.join(".carapace"))
        .env("CARAPACE_CACHE_DIR", carapace_test_support::cache_root())
        .env("ANTHROPIC_BASE_URL", server.url())
        .output()?;
    let stdout = String::from_utf8(output.stdout)?;
    let lines = stdout
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<Vec<Value>, _>>()
        .map_err(|e| format!("the driver printed something else ({e}):\n{stdout}"))?;
    Ok((lines, String::from_utf8_lossy(&output.stderr).into_owned()))
}

fn read_call(ws: &Path) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        "toolu_1",
        "Read",
        json!({"file_path": ws.join("notes.txt")}),
    )])
}

#[test]
fn a_query_with_a_read() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("query_read", |ws| {
        vec![read_call(ws), Reply::text("The port is 8080.")]
    })?;
    run.ok()?;
    assert_eq!(
        run.of("SystemMessage")[0]["subtype"],
        "init",
        "{:?}",
        run.lines
    );
    let answered = run
        .of("UserMessage")
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .any(|b| b["tool_use_id"] == "toolu_1");
    assert!(answered, "{:?}", run.lines);
    let result = run.results()[0];
    assert_eq!(
        (
            result["subtype"].as_str(),
            result["result"].as_str(),
            result["is_error"].as_bool()
        ),
        (Some("success"), Some("The port is 8080."), Some(false))
    );
    assert!(run.request(1)?.to_string().contains("the port is 8080"));
    Ok(())
}

#[test]
fn a_client_keeps_the_history_across_turns() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("two_turns", |_| {
        vec![Reply::text("one"), Reply::text("two")]
    })?;
    run.ok()?;
    assert_eq!(run.results().len(), 2);
    let sent: Vec<String> = run.request(1)?["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(text_of)
        .collect();
    assert_eq!(sent, ["FIRST", "one", "SECOND"]);
    Ok(())
}

#[test]
fn permission_mode_and_model_change_mid_session() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("mode_and_model", |_| vec![Reply::text("done")])?;
    run.ok()?;
    assert_eq!(run.request(0)?["model"], "claude-opus-4-1");
    let status = run
        .of("SystemMessage")
        .into_iter()
        .find(|m| m["subtype"] == "status")
        .ok_or("no status line")?;
    assert_eq!(status["data"]["permissionMode"], "acceptEdits");
    let note = run.of("note");
    assert_eq!(note[0]["mcp_status"], json!({"mcpServers": []}));
    Ok(())
}

#[test]
fn max_turns_ends_the_query() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("max_turns", |ws| vec![read_call(ws), Reply::text("never")])?;
    run.ok()?;
    assert_eq!(run.server.requests().len(), 1);
    assert_eq!(run.results()[0]["subtype"], "error_max_turns");
    let raised = run.of("note")[0]["raised"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        raised.starts_with("ResultError") && raised.contains("maximum number of turns (1)"),
        "{raised}"
    );
    Ok(())
}

#[test]
fn system_prompt_options() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("system_prompts", |_| {
        vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]
    })?;
    run.ok()?;
    let system = |n: usize| -> Result<String, String> {
        Ok(run.request(n)?["system"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .collect::<String>())
    };
    assert_eq!(system(0)?, "CUSTOM PROMPT");
    // No system_prompt: the SDK asks for none, and none is sent.
    assert_eq!(system(1)?, "");
    assert!(run.request(1)?.get("system").is_none());
    let preset = system(2)?;
    assert!(
        preset.contains("carapace") && preset.ends_with("APPENDED TEXT"),
        "{preset}"
    );
    Ok(())
}

#[test]
fn partial_messages_stream_the_events() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("partial_messages", |_| vec![Reply::text("streamed answer")])?;
    run.ok()?;
    let events: Vec<String> = run
        .of("StreamEvent")
        .iter()
        .filter_map(|e| e["event"]["type"].as_str().map(str::to_string))
        .collect();
    assert_eq!(events.first().map(String::as_str), Some("message_start"));
    assert!(events.iter().any(|e| e == "content_block_delta"));
    assert_eq!(events.last().map(String::as_str), Some("message_stop"));
    let delta = run
        .of("StreamEvent")
        .into_iter()
        .find(|e| e["event"]["type"] == "content_block_delta")
        .ok_or("no delta")?;
    assert_eq!(delta["event"]["delta"]["text"], "streamed answer");
    assert_eq!(run.results()[0]["result"], "streamed answer");
    Ok(())
}

#[test]
fn an_interrupt_ends_the_turn_and_the_session_goes_on() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("interrupt", |_| {
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_long",
                "Bash",
                // `started` tells the driver the command runs.
                json!({"command": "touch started && sleep 30"}),
            )]),
            Reply::text("still here"),
        ]
    })?;
    run.ok()?;
    let results = run.results();
    assert_eq!(results.len(), 2, "{:?}", run.lines);
    assert_eq!(results[0]["subtype"], "error_during_execution");
    assert_eq!(results[1]["subtype"], "success");
    assert_eq!(results[1]["result"], "still here");
    // The interrupted call is paired in the history the next turn sends.
    let sent = run.request(1)?;
    let paired = sent["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .any(|b| b["tool_use_id"] == "toolu_long" && b["type"] == "tool_result");
    assert!(paired, "{sent}");
    Ok(())
}

#[test]
fn a_pre_tool_use_callback_denies_bash() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("hook_callbacks", |_| {
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_ls",
                "Bash",
                json!({"command": "ls"}),
            )]),
            Reply::text("denied, then"),
        ]
    })?;
    run.ok()?;
    let sent = run.request(1)?;
    let result = sent["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["tool_use_id"] == "toolu_ls" && b["type"] == "tool_result")
        .ok_or_else(|| format!("no result for the call: {sent}"))?;
    assert_eq!(result["is_error"], true);
    assert!(
        result.to_string().contains("no shell from the SDK hook"),
        "{result}"
    );
    assert_eq!(run.results()[0]["result"], "denied, then");
    Ok(())
}

fn bash(id: &str, command: &str) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        id,
        "Bash",
        json!({"command": command}),
    )])
}

/// The tool_result of call `id` in request `n`.
fn result_of(run: &Drive, n: usize, id: &str) -> Result<Value, String> {
    let sent = run.request(n)?;
    sent["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["tool_use_id"] == id && b["type"] == "tool_result")
        .ok_or_else(|| format!("no result for {id}: {sent}"))
}

fn content(result: &Value) -> String {
    match &result["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[test]
fn can_use_tool_denies_with_a_message() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("permission_deny", |_| {
        vec![
            bash("toolu_1", "touch asked.txt"),
            Reply::text("ok, not then"),
        ]
    })?;
    run.ok()?;
    let asked = run.of("note");
    assert_eq!(
        (asked[0]["asked"].as_str(), asked[0]["tool_use_id"].as_str()),
        (Some("Bash"), Some("toolu_1"))
    );
    let result = result_of(&run, 1, "toolu_1")?;
    assert_eq!(result["is_error"], true);
    assert!(content(&result).contains("not that command"), "{result}");
    Ok(())
}

#[test]
fn can_use_tool_allows_with_an_updated_input() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("permission_updated_input", |_| {
        vec![bash("toolu_1", "printf original"), Reply::text("done")]
    })?;
    run.ok()?;
    let result = result_of(&run, 1, "toolu_1")?;
    assert!(content(&result).contains("rewritten"), "{result}");
    assert!(!content(&result).contains("original"), "{result}");
    // Asked once: the rewritten input answers the same question.
    assert_eq!(run.of("note").len(), 1, "{:?}", run.lines);
    Ok(())
}

#[test]
fn can_use_tool_deny_with_interrupt_ends_the_turn() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("permission_interrupt", |_| {
        vec![
            bash("toolu_1", "touch asked.txt"),
            Reply::text("after the interrupt"),
        ]
    })?;
    run.ok()?;
    let results = run.results();
    assert_eq!(results.len(), 2, "{:?}", run.lines);
    assert_eq!(results[0]["subtype"], "error_during_execution");
    assert_eq!(results[1]["result"], "after the interrupt");
    // No second request for the interrupted turn: the next one is the
    // next prompt's, with the refusal paired.
    assert_eq!(run.server.requests().len(), 2);
    let result = result_of(&run, 1, "toolu_1")?;
    assert!(content(&result).contains("stop everything"), "{result}");
    Ok(())
}

#[test]
fn can_use_tool_permission_updates_answer_later_questions() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("permission_rules", |_| {
        vec![
            bash("toolu_1", "printf first"),
            bash("toolu_2", "printf second"),
            Reply::text("both ran"),
        ]
    })?;
    run.ok()?;
    assert_eq!(run.of("note").len(), 1, "asked once: {:?}", run.lines);
    assert!(content(&result_of(&run, 2, "toolu_2")?).contains("second"));
    assert_eq!(run.results()[0]["result"], "both ran");
    Ok(())
}

/// Escape attempt: a `setMode` to bypassPermissions in the callback's
/// `updatedPermissions` — a second door beside `set_permission_mode`, which
/// refuses it — used to switch silently. The same gate now refuses it: the
/// next command is asked again. The control, in a session started with
/// `--allow-dangerously-skip-permissions`, switches, says so in a status
/// line, and the next command runs unasked.
#[test]
fn can_use_tool_cannot_switch_to_bypass_through_updated_permissions() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    for (scenario, asked, switched) in [
        ("permission_set_bypass_refused", 2, false),
        ("permission_set_bypass_allowed", 1, true),
    ] {
        let run = drive(scenario, |_| {
            vec![
                bash("toolu_1", "printf first"),
                bash("toolu_2", "printf second"),
                Reply::text("done"),
            ]
        })?;
        run.ok()?;
        assert_eq!(run.of("note").len(), asked, "{scenario}: {:?}", run.lines);
        let status = run.lines.iter().any(|l| {
            l["kind"] == "SystemMessage" && l["data"]["permissionMode"] == "bypassPermissions"
        });
        assert_eq!(status, switched, "{scenario}: {:?}", run.lines);
        if !switched {
            assert!(
                run.stderr.contains("cannot switch to bypassPermissions"),
                "{}",
                run.stderr
            );
        }
        assert!(
            content(&result_of(&run, 2, "toolu_2")?).contains("second"),
            "{scenario}"
        );
    }
    Ok(())
}

/// A command's connection to a host no list names is asked about through
/// `can_use_tool`, as Claude Code asks it (`SandboxNetworkAccess`, the
/// host), and reaches the host only when the answer is allow; the refused
/// side shows the connection really was attempted (the command says why).
#[test]
fn an_unlisted_host_is_asked_about_through_can_use_tool() -> TestResult {
    sdk_installed()?;
    for (scenario, allowed) in [("network_ask_allowed", true), ("network_ask_denied", false)] {
        let pong = carapace_test_support::pong::Pong::start()?;
        let port = pong.port;
        let fetch = format!(
            "python3 -c \"import urllib.request as u; print('got', u.urlopen('http://localhost:{port}/', timeout=20).read().decode())\" 2>&1; echo tried"
        );
        let run = drive(scenario, |_| {
            vec![bash("toolu_1", &fetch), Reply::text("done")]
        })?;
        run.ok()?;
        let notes = run.of("note");
        assert_eq!(
            notes.len(),
            1,
            "{scenario}: {:?}\n{}",
            run.lines,
            run.stderr
        );
        assert_eq!(notes[0]["asked"], "SandboxNetworkAccess");
        assert_eq!(notes[0]["input"], json!({"host": "localhost"}));
        let said = content(&result_of(&run, 1, "toolu_1")?);
        assert!(said.contains("tried"), "{scenario}: {said}");
        assert_eq!(said.contains("got pong"), allowed, "{scenario}: {said}");
        assert_eq!(pong.served() > 0, allowed, "{scenario}: {said}");
    }
    Ok(())
}

/// Escape attempt: the callback cannot answer what the policy does not ask
/// (a deny rule), nor turn an approved call into a denied one.
#[test]
fn can_use_tool_never_widens_a_deny_rule() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("permission_never_widens", |_| {
        vec![
            bash("toolu_rm", "rm notes.txt"),
            bash("toolu_echo", "printf hi"),
            Reply::text("done"),
        ]
    })?;
    run.ok()?;
    let asked: Vec<&str> = run
        .of("note")
        .iter()
        .filter_map(|n| n["tool_use_id"].as_str())
        .collect();
    assert_eq!(asked, ["toolu_echo"], "a denied call is never asked about");
    for id in ["toolu_rm", "toolu_echo"] {
        let result = result_of(&run, 2, id)?;
        assert_eq!(result["is_error"], true, "{result}");
    }
    assert!(
        content(&result_of(&run, 2, "toolu_echo")?).contains("rm"),
        "the rewritten call was refused by the deny rule"
    );
    assert!(run.ws.join("notes.txt").exists(), "nothing was removed");
    Ok(())
}

#[test]
fn an_in_process_sdk_mcp_server_serves_its_tools() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("sdk_mcp", |_| {
        vec![
            Reply::tool_uses(vec![
                Block::tool_use("toolu_add", "mcp__calc__add", json!({"a": 2, "b": 3})),
                Block::tool_use(
                    "toolu_fail",
                    "mcp__calc__fail",
                    json!({"why": "on purpose"}),
                ),
            ]),
            Reply::text("5, and a failure"),
        ]
    })?;
    run.ok()?;
    let first = run.request(0)?;
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"mcp__calc__add") && offered.contains(&"mcp__calc__fail"),
        "{offered:?}"
    );
    let added = result_of(&run, 1, "toolu_add")?;
    assert!(content(&added).contains("sum=5"), "{added}");
    assert_ne!(added["is_error"], true);
    let failed = result_of(&run, 1, "toolu_fail")?;
    assert_eq!(failed["is_error"], true, "{failed}");
    assert!(content(&failed).contains("failed: on purpose"), "{failed}");
    let init = run
        .of("SystemMessage")
        .into_iter()
        .find(|m| m["subtype"] == "init")
        .ok_or("no init")?;
    assert_eq!(
        init["data"]["mcp_servers"],
        json!([{"name": "calc", "status": "connected"}])
    );
    Ok(())
}

#[test]
fn resume_and_fork_through_the_sdk() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("resume", |_| {
        vec![Reply::text("one"), Reply::text("two"), Reply::text("three")]
    })?;
    run.ok()?;
    let results = run.results();
    assert_eq!(results.len(), 3);
    let texts = |n: usize| -> Result<Vec<String>, String> {
        Ok(run.request(n)?["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(text_of)
            .collect())
    };
    assert_eq!(texts(1)?, ["FIRST", "one", "SECOND"]);
    assert_eq!(texts(2)?, ["FIRST", "one", "SECOND", "two", "THIRD"]);
    assert_eq!(results[1]["session_id"], results[0]["session_id"]);
    assert_ne!(results[2]["session_id"], results[0]["session_id"]);
    Ok(())
}

#[test]
fn agents_defined_through_the_sdk_are_offered_and_run() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("agents", |_| {
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_review",
                "Agent",
                json!({"description": "review", "prompt": "review notes.txt", "subagent_type": "reviewer"}),
            )]),
            Reply::text("REVIEWED"),
            Reply::text("the reviewer says fine"),
        ]
    })?;
    run.ok()?;
    let agent_tool = run.request(0)?["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "Agent").cloned())
        .unwrap_or_default();
    assert!(
        agent_tool["description"]
            .as_str()
            .is_some_and(|d| d.contains("- reviewer: reviews code")),
        "{agent_tool}"
    );
    let child = run.request(1)?;
    let system: String = child["system"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert!(system.starts_with("REVIEWER PROMPT"), "{system}");
    let tools: Vec<&str> = child["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(tools, ["Read"]);
    assert_eq!(content(&result_of(&run, 2, "toolu_review")?), "REVIEWED");
    // The child's lines reach the SDK tagged with the Agent call.
    let tagged = run
        .of("AssistantMessage")
        .iter()
        .any(|m| m["parent_tool_use_id"] == "toolu_review");
    assert!(tagged, "{:?}", run.lines);
    Ok(())
}

#[test]
fn can_use_tool_approves_the_plan_and_plan_mode_ends() -> TestResult {
    if !sdk_installed()? {
        return Ok(());
    }
    let run = drive("plan_exit", |ws| {
        let target = ws.join("planned.txt").display().to_string();
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_plan",
                "ExitPlanMode",
                json!({"plan": "1. write planned.txt"}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_write",
                "Write",
                json!({"file_path": target, "content": "done"}),
            )]),
            Reply::text("finished"),
        ]
    })?;
    run.ok()?;
    let asked: Vec<&str> = run
        .of("note")
        .iter()
        .filter_map(|n| n["asked"].as_str())
        .collect();
    assert_eq!(asked, ["ExitPlanMode", "Write"], "{:?}", run.lines);
    // The SDK hears of the new mode, as Claude Code tells it.
    assert!(
        run.of("SystemMessage")
            .iter()
            .any(|m| m["subtype"] == "status" && m["data"]["permissionMode"] == "default"),
        "{:?}",
        run.lines
    );
    let approved = result_of(&run, 1, "toolu_plan")?;
    assert!(content(&approved).contains("approved"), "{approved}");
    assert_eq!(std::fs::read_to_string(run.ws.join("planned.txt"))?, "done");
    Ok(())
}

/// Code mode turned on by the SDK (`extra_args={"code-mode": None}`): the
/// script's Read runs as its own call (allowed by the SDK's
/// `allowed_tools`), and the SDK yields it as a sub-call of the Script
/// call.
#[test]
fn the_sdk_turns_code_mode_on_and_sees_a_scripts_calls() -> TestResult {
    sdk_installed()?;
    let run = drive("code_mode", |ws| {
        let code = format!(
            "return await tools.Read({{file_path: {:?}}});",
            ws.join("notes.txt").display().to_string()
        );
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_script",
                "Script",
                json!({"code": code}),
            )]),
            Reply::text("the port is 8080"),
        ]
    })?;
    run.ok()?;
    let result = content(&result_of(&run, 1, "toolu_script")?);
    assert!(result.contains("the port is 8080"), "{result}");
    let nested = run
        .of("AssistantMessage")
        .into_iter()
        .filter(|m| m["parent_tool_use_id"] == "toolu_script")
        .count();
    assert_eq!(nested, 1, "{:?}", run.lines);
    Ok(())
}

/// The SDK's interrupt stops a script and the command it runs, as it
/// stops any call; the next turn goes on.
#[test]
fn an_interrupt_stops_a_script_and_its_command() -> TestResult {
    sdk_installed()?;
    let code = "await tools.Bash({command: \"touch started && sleep 29.25 && touch finished\"});\nreturn \"not reached\";";
    let run = drive("interrupt_script", |_| {
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_script",
                "Script",
                json!({"code": code}),
            )]),
            Reply::text("still here"),
        ]
    })?;
    run.ok()?;
    let results = run.results();
    assert_eq!(results.len(), 2, "{:?}", run.lines);
    assert_eq!(results[0]["subtype"], "error_during_execution");
    assert_eq!(results[1]["result"], "still here");
    assert!(!run.ws.join("finished").exists());
    let stopped = content(&result_of(&run, 1, "toolu_script")?);
    assert!(
        stopped.contains("The user interrupted this tool call"),
        "{stopped}"
    );
    support::wait_for("the script's command to be stopped", || {
        !support::running("sleep 29.25")
    })?;
    Ok(())
}
