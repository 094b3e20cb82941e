//! carapace as the TypeScript Agent SDK's `pathToClaudeCodeExecutable`:
//! `@anthropic-ai/claude-agent-sdk` (pinned in `tests/sdk/ts/package.json`,
//! installed by `tests/setup.sh`) drives the binary through
//! `tests/sdk/ts/driver.mjs`. That SDK passes in `initialize` what the
//! Python one passes as flags — the system prompt (`[""]` for none), the
//! appended text, its in-process MCP servers, its agents — and sends the
//! first prompt before `initialize` is answered (recorded against Claude
//! Code 2.1.197: its argv and stdin are in the test below's comments).

use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

type Failure = Box<dyn std::error::Error>;

/// The driver, beside the SDK `tests/setup.sh` installed from
/// `tests/sdk/ts/package-lock.json` (without the SDK's own copy of
/// Claude Code, an optional dependency).
fn driver() -> Result<PathBuf, Failure> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/sdk/ts/driver.mjs");
    Ok(carapace_test_support::deps::node_driver(
        "sdk-ts",
        "@anthropic-ai/claude-agent-sdk/sdk.mjs",
        &source,
    )?)
}

struct Drive {
    lines: Vec<Value>,
    server: ScriptedServer,
    stderr: String,
    _dir: tempfile::TempDir,
}

impl Drive {
    fn system(&self, n: usize) -> Value {
        self.server
            .requests()
            .get(n)
            .map(|r| r.body["system"].clone())
            .unwrap_or_default()
    }

    fn result(&self) -> Result<&Value, String> {
        self.lines
            .iter()
            .find(|l| l["type"] == "result")
            .ok_or_else(|| format!("no result: {:?}\n{}", self.lines, self.stderr))
    }
}

fn drive(scenario: &str, replies: Vec<Reply>) -> Result<Drive, Failure> {
    drive_in(scenario, |_| replies)
}

/// [`drive`], the replies written knowing the working directory.
fn drive_in(scenario: &str, replies: impl FnOnce(&Path) -> Vec<Reply>) -> Result<Drive, Failure> {
    let driver = driver()?;
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?.join("ws");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&ws)?;
    std::fs::create_dir_all(&home)?;
    let server = ScriptedServer::start(replies(&ws))?;
    let mut command = Command::new("node");
    command
        .current_dir(driver.parent().ok_or("the driver has a folder")?)
        .arg(&driver)
        .arg(scenario);
    let (lines, stderr) = super::run_driver(command, &ws, &home, &server)?;
    if let Some(error) = lines.iter().find(|l| l["kind"] == "error") {
        return Err(format!("{}\n{stderr}", error["error"]).into());
    }
    Ok(Drive {
        lines,
        server,
        stderr,
        _dir: dir,
    })
}

#[test]
fn no_system_prompt_option_sends_none() -> Result<(), Failure> {
    // The SDK's `initialize` carries `"systemPrompt": [""]`; Claude Code
    // then sends only its SDK identity line, carapace nothing of its own.
    let run = drive("default", vec![Reply::text("ok")])?;
    assert_eq!(run.result()?["result"], "ok");
    let system = super::support::system_text(&run.system(0));
    assert!(!system.contains("# How your tools run here"), "{system}");
    Ok(())
}

#[test]
fn the_preset_with_append_keeps_carapaces_prompt_and_adds_the_text() -> Result<(), Failure> {
    let run = drive("preset", vec![Reply::text("ok")])?;
    assert_eq!(run.result()?["result"], "ok");
    let system = super::support::system_text(&run.system(0));
    assert!(system.contains("# How your tools run here"), "{system}");
    assert!(
        system.trim_end().ends_with("APPENDED BY THE SDK"),
        "{system}"
    );
    Ok(())
}

#[test]
fn initialize_carries_the_prompt_the_sdk_tools_and_the_agents() -> Result<(), Failure> {
    let call = Block::tool_use("toolu_add", "mcp__calc__add", json!({"a": 2, "b": 3}));
    let run = drive(
        "custom",
        vec![Reply::tool_uses(vec![call]), Reply::text("five")],
    )?;
    assert_eq!(run.result()?["result"], "five", "{}", run.stderr);
    assert_eq!(super::support::system_text(&run.system(0)), "CUSTOM PROMPT");
    let requests = run.server.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(offered.contains(&"mcp__calc__add"), "{offered:?}");
    let answered = requests[1].body["messages"].to_string();
    assert!(
        answered.contains("\"tool_use_id\":\"toolu_add\""),
        "{answered}"
    );
    assert!(
        answered.contains("\"5\"") || answered.contains("\"text\":\"5\""),
        "{answered}"
    );
    let init = run
        .lines
        .iter()
        .find(|l| l["subtype"] == "init")
        .ok_or("no init line")?;
    let agents: Vec<&str> = init["agents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(agents.contains(&"reviewer"), "{agents:?}");
    Ok(())
}

#[test]
fn thinking_and_skills_change_between_turns_through_control_requests() -> Result<(), Failure> {
    let run = drive(
        "controls",
        vec![Reply::text("one done"), Reply::text("two done")],
    )?;
    let commands = run
        .lines
        .iter()
        .find(|l| l["kind"] == "commands")
        .ok_or("no commands line")?;
    let names: Vec<&str> = commands["commands"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(names.contains(&"first"), "{names:?}");
    let reloaded = run
        .lines
        .iter()
        .find(|l| l["kind"] == "reloaded")
        .ok_or_else(|| format!("no reload: {:?}\n{}", run.lines, run.stderr))?;
    assert!(reloaded.to_string().contains("\"second\""), "{reloaded}");
    let requests = run.server.requests();
    assert_eq!(requests.len(), 2, "{}", run.stderr);
    // set_max_thinking_tokens(0): thinking off from the first turn on.
    assert_eq!(requests[0].body["thinking"], json!({"type": "disabled"}));
    // The reloaded skills are listed to the model in the next request.
    let listing = |n: usize| requests[n].body["messages"][0]["content"][0]["text"].to_string();
    assert!(listing(0).contains("- first: The first skill") && !listing(0).contains("second"));
    assert!(
        listing(1).contains("- second: Added while running"),
        "{}",
        listing(1)
    );
    Ok(())
}

#[test]
fn context_usage_is_told_by_part() -> Result<(), Failure> {
    let run = drive(
        "controls",
        vec![Reply::text("one done"), Reply::text("two done")],
    )?;
    let usage = &run
        .lines
        .iter()
        .find(|l| l["kind"] == "usage")
        .ok_or_else(|| format!("no usage: {:?}\n{}", run.lines, run.stderr))?["usage"];
    let part = |name: &str| {
        usage["categories"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == name))
            .and_then(|c| c["tokens"].as_u64())
            .unwrap_or(0)
    };
    for name in ["System tools", "Memory files", "Skills", "Messages"] {
        assert!(part(name) > 0, "{name}: {usage}");
    }
    // The SDK asked for no system prompt (`[""]`).
    assert_eq!(part("System prompt"), 0, "{usage}");
    // 40 lines of 31 bytes: about 310 tokens.
    assert!((300..=320).contains(&part("Memory files")), "{usage}");
    let parts: u64 = [
        "System prompt",
        "System tools",
        "MCP tools",
        "Memory files",
        "Skills",
        "Messages",
    ]
    .iter()
    .map(|n| part(n))
    .sum();
    assert_eq!(usage["totalTokens"].as_u64(), Some(parts));
    assert_eq!(usage["maxTokens"], 200_000);
    assert_eq!(usage["model"], "claude-sonnet-4-5");
    let memory = usage["memoryFiles"][0]["path"].as_str().unwrap_or_default();
    assert!(memory.ends_with("CLAUDE.md") && usage["memoryFiles"][0]["type"] == "Project");
    Ok(())
}

#[test]
fn stop_task_stops_a_background_shell() -> Result<(), Failure> {
    let start = Block::tool_use(
        "toolu_bg",
        "Bash",
        json!({"command": "sleep 60", "run_in_background": true}),
    );
    let look = Block::tool_use("toolu_look", "BashOutput", json!({"bash_id": "bash_1"}));
    let run = drive(
        "stop",
        vec![
            Reply::tool_uses(vec![start]),
            Reply::text("started"),
            Reply::tool_uses(vec![look]),
            Reply::text("checked"),
        ],
    )?;
    let stopped = run
        .lines
        .iter()
        .find(|l| l["kind"] == "stopped")
        .ok_or_else(|| format!("not stopped: {:?}\n{}", run.lines, run.stderr))?;
    assert_eq!(stopped["shell"], "bash_1");
    let requests = run.server.requests();
    assert_eq!(requests.len(), 4, "{}", run.stderr);
    let looked = requests[3].body["messages"].to_string();
    assert!(looked.contains("killed"), "{looked}");
    Ok(())
}

#[test]
fn rewind_files_restores_what_each_message_changed() -> Result<(), Failure> {
    let mut ws = PathBuf::new();
    let run = drive_in("rewind", |dir| {
        ws = dir.to_path_buf();
        let file = |name: &str| dir.join(name).display().to_string();
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "r",
                "Read",
                json!({"file_path": file("notes.txt")}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "e",
                "Edit",
                json!({"file_path": file("notes.txt"), "old_string": "original", "new_string": "changed"}),
            )]),
            Reply::text("edited"),
            Reply::tool_uses(vec![Block::tool_use(
                "w",
                "Write",
                json!({"file_path": file("made.txt"), "content": "made\n"}),
            )]),
            Reply::text("written"),
        ]
    })?;
    let rewound = run
        .lines
        .iter()
        .find(|l| l["kind"] == "rewound")
        .ok_or_else(|| format!("no rewind: {:?}\n{}", run.lines, run.stderr))?;
    // Dry, to the second message: only what it wrote, nothing touched.
    let dry = &rewound["dry"];
    assert_eq!(dry["canRewind"], true, "{rewound}");
    assert_eq!(
        dry["filesChanged"].as_array().map(Vec::len),
        Some(1),
        "{rewound}"
    );
    // To the first: both files as they were before it.
    let real = &rewound["real"];
    assert_eq!(real["canRewind"], true, "{rewound}");
    assert_eq!(
        real["filesChanged"].as_array().map(Vec::len),
        Some(2),
        "{rewound}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("notes.txt"))?, "original\n");
    assert!(!ws.join("made.txt").exists());
    Ok(())
}

#[test]
fn mcp_toggle_stops_offering_a_servers_tools() -> Result<(), Failure> {
    let run = drive("toggle", vec![Reply::text("one"), Reply::text("two")])?;
    let toggled = run
        .lines
        .iter()
        .find(|l| l["kind"] == "toggled")
        .ok_or_else(|| format!("not toggled: {:?}\n{}", run.lines, run.stderr))?;
    assert!(toggled.to_string().contains("\"disabled\""), "{toggled}");
    let requests = run.server.requests();
    assert_eq!(requests.len(), 2, "{}", run.stderr);
    let offered = |n: usize| {
        requests[n].body["tools"]
            .to_string()
            .contains("mcp__calc__add")
    };
    assert!(offered(0), "the server's tool was offered before");
    assert!(!offered(1), "the turned-off server's tool is still offered");
    Ok(())
}

/// How to start the bridge tests' notes server from anywhere: the
/// interpreter itself, not a shim that needs the user's HOME.
fn notes_server() -> Result<Value, Failure> {
    let python = Command::new(carapace_test_support::deps::python())
        .args(["-c", "import sys; print(sys.executable)"])
        .output()?;
    let python = String::from_utf8(python.stdout)?.trim().to_string();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/servers/notes_server.py");
    Ok(json!({"type": "stdio", "command": python, "args": [script]}))
}

#[test]
fn mcp_servers_are_set_and_reconnected_and_settings_applied_while_running() -> Result<(), Failure> {
    let notes = notes_server()?;
    let run = drive_in("servers", |ws| {
        let _ = std::fs::write(ws.join("notes-server.json"), notes.to_string());
        vec![Reply::text("one"), Reply::text("two")]
    })?;
    let said = |kind: &str| -> Result<Value, Failure> {
        run.lines
            .iter()
            .find(|l| l["kind"] == kind)
            .map(|l| l["value"].clone())
            .ok_or_else(|| format!("no `{kind}`: {:?}\n{}", run.lines, run.stderr).into())
    };
    // As Claude Code 2.1.197 answers (recorded with this scenario).
    assert_eq!(
        said("set")?,
        json!({"added": ["calc", "notes"], "removed": [], "errors": {}})
    );
    let status = said("status")?;
    let notes_status = status
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "notes"))
        .ok_or_else(|| format!("notes not listed: {status}"))?;
    assert_eq!(notes_status["status"], "connected", "{status}");
    assert_eq!(notes_status["scope"], "dynamic", "{status}");
    assert_eq!(said("reconnect")?, Value::Null);
    assert!(
        said("reconnect-unknown-error")?
            .to_string()
            .contains("Server not found: nope")
    );
    assert_eq!(said("flags")?, Value::Null);
    assert!(run.stderr.contains("`notASetting`"), "{}", run.stderr);

    let requests = run.server.requests();
    assert_eq!(requests.len(), 2, "{}", run.stderr);
    let tools = |n: usize| requests[n].body["tools"].to_string();
    assert!(
        !tools(0).contains("mcp__notes__"),
        "offered before it was set"
    );
    for tool in ["mcp__notes__count_notes", "mcp__calc__add"] {
        assert!(tools(1).contains(tool), "{tool} not offered after the set");
    }
    assert_eq!(requests[1].body["model"], "claude-haiku-4-5");
    assert_eq!(requests[0].body["model"], "claude-sonnet-4-5");
    assert!(
        requests[1]
            .body
            .get("thinking")
            .is_none_or(|t| t["type"] == "disabled")
    );

    // A set replaces what the SDK set before; a server that cannot start
    // is added, failed, with its error.
    let broken = said("set-broken")?;
    assert_eq!(broken["added"], json!(["broken"]), "{broken}");
    assert_eq!(broken["removed"], json!(["calc", "notes"]), "{broken}");
    assert!(broken["errors"]["broken"].is_string(), "{broken}");
    let after = said("status-after")?;
    assert_eq!(after.as_array().map(Vec::len), Some(1), "{after}");
    assert_eq!(after[0]["status"], "failed", "{after}");
    Ok(())
}

#[test]
fn an_agent_defined_in_initialize_runs_the_main_thread() -> Result<(), Failure> {
    // As Claude Code 2.1.197 (checked with this scenario): `--agent
    // reviewer` arrives before `initialize` defines reviewer; the requests
    // then carry its prompt and only its tools, on the SDK's model.
    let run = drive("agent", vec![Reply::text("one")])?;
    let requests = run.server.requests();
    assert_eq!(requests.len(), 1, "{}", run.stderr);
    let body = &requests[0].body;
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(tools, ["Read"], "{}", run.stderr);
    assert!(
        body["system"].to_string().contains("You review."),
        "{}",
        body["system"]
    );
    assert_eq!(body["model"], "claude-sonnet-4-5");
    let init = run
        .lines
        .iter()
        .find(|l| l["subtype"] == "init")
        .ok_or("no init line")?;
    assert_eq!(init["tools"], json!(["Read"]), "{init}");
    assert!(init["agents"].to_string().contains("reviewer"), "{init}");
    Ok(())
}

#[test]
fn permission_rules_applied_while_running_hold_from_the_next_call() -> Result<(), Failure> {
    // Each turn reads the file with Read and with `cat`; between the turns
    // the SDK applies `Read(./secret.txt)` as a deny rule.
    let calls = |ws: &Path, n: u32| {
        let secret = ws.join("secret.txt");
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                format!("toolu_read_{n}"),
                "Read",
                json!({"file_path": secret}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                format!("toolu_cat_{n}"),
                "Bash",
                json!({"command": format!("cat {}", secret.display())}),
            )]),
        ]
    };
    let run = drive_in("rules", |ws| {
        let _ = std::fs::write(ws.join("secret.txt"), "SECRET-4711\n");
        let mut replies = calls(ws, 1);
        replies.push(Reply::text("one"));
        replies.extend(calls(ws, 2));
        replies.push(Reply::text("two"));
        replies
    })?;
    assert!(
        run.lines.iter().any(|l| l["kind"] == "applied"),
        "{:?}\n{}",
        run.lines,
        run.stderr
    );
    let requests = run.server.requests();
    assert_eq!(requests.len(), 6, "{}", run.stderr);
    // Each call's result, from the request after it.
    let result = |n: usize| {
        requests[n].body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m.to_string())
            .unwrap_or_default()
    };
    // Claude Code 2.1.197, driven the same way: the secret shows before
    // the rule and never after it, and Read is refused as an error.
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/claude-code/apply-flag-settings-deny.json"),
    )?)?;
    let recorded = recorded["results"]
        .as_array()
        .ok_or("no recorded results")?;
    for (n, recorded) in [1, 2, 4, 5].into_iter().zip(recorded) {
        let showed = recorded["content"]
            .as_str()
            .unwrap_or_default()
            .contains("SECRET-4711");
        assert_eq!(
            result(n).contains("SECRET-4711"),
            showed,
            "call {}: carapace {} / Claude Code {recorded}",
            recorded["tool_use_id"],
            result(n)
        );
    }
    assert!(result(4).contains("Read(./secret.txt)"), "{}", result(4));
    assert!(result(4).contains("\"is_error\":true"), "{}", result(4));
    // Claude Code refuses the `cat`; carapace runs it in the command
    // sandbox, which hides what the read deny rules cover (the file it
    // sees is an empty stand-in), as for rules the session started with.
    assert!(result(5).contains("(no output)"), "{}", result(5));
    Ok(())
}

/// An MCP server's question reaches the SDK as Claude Code puts it (an
/// `elicitation` control request, here answered by `onElicitation`), and
/// its answer reaches the server — with no permission callback set.
#[test]
fn an_mcp_servers_question_is_answered_by_the_sdks_on_elicitation() -> Result<(), Failure> {
    let mut library = notes_server()?;
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/servers/library_server.py");
    library["args"] = json!([script, "--legacy"]);
    let run = drive_in("elicit", |ws| {
        let _ = std::fs::write(ws.join("library-server.json"), library.to_string());
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_shelve",
                "mcp__library__shelve",
                json!({"title": "Dune"}),
            )]),
            Reply::text("shelved"),
        ]
    })?;
    let asked = run
        .lines
        .iter()
        .find(|l| l["kind"] == "elicited")
        .ok_or_else(|| format!("the SDK was not asked: {}", run.stderr))?;
    assert_eq!(asked["request"]["serverName"], "library");
    assert_eq!(asked["request"]["message"], "Which shelf for Dune?");
    assert_eq!(asked["request"]["mode"], "form");
    let requests = run.server.requests();
    let sent = requests.last().ok_or("no request")?.body["messages"].to_string();
    assert!(sent.contains("Dune shelved on SCI"), "{sent}");
    Ok(())
}
