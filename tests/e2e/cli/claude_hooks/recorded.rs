//! Hook events against Claude Code 2.1.332's recordings: what each event
//! is told and when, and what its answer does.

use super::*;
use std::path::{Path, PathBuf};

/// A setup with no hooks yet and a `logs/` folder for [`dump_to`] hooks.
fn logged() -> Result<(Setup, PathBuf), Box<dyn std::error::Error>> {
    let setup = Setup::new(json!({}))?;
    let logs = setup.ws.join("logs");
    std::fs::create_dir(&logs)?;
    Ok((setup, logs))
}

/// The recording's replies, with its `{ws}` made `ws`.
fn replies(recorded: &Value, ws: &Path) -> Result<Vec<Reply>, Box<dyn std::error::Error>> {
    let script = recorded["script"]
        .to_string()
        .replace("{ws}", &ws.display().to_string());
    Ok(serde_json::from_str::<Vec<Value>>(&script)?
        .iter()
        .map(Reply::from_script)
        .collect::<Result<Vec<_>, _>>()?)
}

/// Every event Claude Code 2.1.332 fires in print mode for a subagent, a
/// Read, a Write refused in dontAsk and a failed Read (recorded in
/// `tests/claude-code/hook-events-all.json`, each event's stdin dumped by a
/// `command` hook) fires here too, with the same fields, in the same order
/// of first appearance. Claude Code's background-subagent notification (a
/// second UserPromptSubmit) has no counterpart: carapace's subagents
/// answer in their call. For the same reason SubagentStop comes before the Agent call's
/// PostToolUse here (a foreground child ends inside its call), after it in
/// Claude Code (whose child ran on in the background); its place is not
/// compared, its fields are.
#[test]
fn every_event_claude_code_fires_in_print_mode_fires_with_its_fields() -> TestResult {
    let recorded = support::recording("hook-events-all")?;
    let events: Vec<String> = recorded["settings"]["hooks"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    let (setup, logs) = logged()?;
    let dump = dump_to(&logs);
    let hooks: serde_json::Map<String, Value> = events
        .iter()
        .map(|e| {
            (
                e.clone(),
                json!([{"matcher": "*", "hooks": [dump.clone()]}]),
            )
        })
        .collect();
    setup.set_hooks(&hooks)?;
    std::fs::write(setup.ws.join("CLAUDE.md"), "Project notes.\n")?;
    std::fs::write(setup.ws.join("notes.txt"), "hello file\n")?;
    let replies = replies(&recorded, &setup.ws)?;
    let server = ScriptedServer::start(replies)?;
    let output = support::against(&server, &setup.ws)
        .env("HOME", &setup.home)
        .env("CARAPACE_CONFIG_DIR", setup.home.join(".carapace"))
        .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
        .args(["--permission-mode", "dontAsk", "--trust-workspace"])
        .output()?;
    let run = support::Run::from_output(output)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let ours: Vec<Value> = dumped(&logs)?;
    let theirs: Vec<Value> = recorded["hook_inputs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let without_counterpart: [&str; 0] = [];
    let order = |all: &[Value]| {
        let mut seen: Vec<String> = Vec::new();
        for v in all {
            let name = v["hook_event_name"].as_str().unwrap_or("").to_string();
            let placed_elsewhere = name == "SubagentStop";
            if !seen.contains(&name)
                && !without_counterpart.contains(&name.as_str())
                && !placed_elsewhere
            {
                seen.push(name);
            }
        }
        seen
    };
    assert_eq!(
        order(&ours),
        order(&theirs),
        "the events, in order of first firing"
    );
    let keys = |v: &Value| {
        let mut k: Vec<String> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        k.sort();
        k
    };
    for name in order(&theirs)
        .into_iter()
        .chain(["SubagentStop".to_string()])
    {
        let first = |all: &[Value]| {
            all.iter()
                .find(|v| v["hook_event_name"] == name.as_str())
                .map(keys)
        };
        assert_eq!(first(&ours), first(&theirs), "{name}: the fields");
    }
    Ok(())
}

/// A prompt naming a custom command tells UserPromptSubmit, then
/// UserPromptExpansion (with the command's name, arguments and source),
/// then the command starts — as Claude Code 2.1.332 does
/// (`tests/claude-code/hook-prompt-expansion.json`); an expansion hook's
/// block stops the command before it starts: no request is made.
#[test]
fn a_custom_command_tells_user_prompt_expansion_as_in_claude_code() -> TestResult {
    let recorded = support::recording("hook-prompt-expansion")?;
    let (setup, logs) = logged()?;
    let hooks = json!({
        "UserPromptSubmit": [{"hooks": [dump_to(&logs)]}],
        "UserPromptExpansion": [{"matcher": "greet", "hooks": [dump_to(&logs)]}],
    });
    setup.set_hooks(&hooks)?;
    std::fs::create_dir_all(setup.ws.join(".claude/commands"))?;
    std::fs::write(
        setup.ws.join(".claude/commands/greet.md"),
        "Say hello to $ARGUMENTS.\n",
    )?;
    let server = ScriptedServer::start(vec![Reply::text("hi")])?;
    let run = |server: &ScriptedServer| {
        support::against(server, &setup.ws)
            .env("HOME", &setup.home)
            .env("CARAPACE_CONFIG_DIR", setup.home.join(".carapace"))
            .args([
                "-p",
                "/greet Alice",
                "--output-format",
                "stream-json",
                "--verbose",
            ])
            .arg("--trust-workspace")
            .output()
    };
    let out = support::Run::from_output(run(&server)?)?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let ws = setup.ws.display().to_string();
    let ours: Vec<Value> = std::fs::read_to_string(logs.join("hooks.jsonl"))?
        .replace(&ws, "{ws}")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let theirs = recorded["hook_inputs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names = |all: &[Value]| -> Vec<Value> {
        all.iter().map(|v| v["hook_event_name"].clone()).collect()
    };
    assert_eq!(names(&ours), names(&theirs));
    for field in [
        "expansion_type",
        "command_name",
        "command_args",
        "command_source",
        "prompt",
    ] {
        assert_eq!(ours[1][field], theirs[1][field], "{field}");
    }
    let keys = |v: &Value| {
        let mut k: Vec<String> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        k.sort();
        k
    };
    assert_eq!(keys(&ours[1]), keys(&theirs[1]));
    assert!(
        server.requests()[0]
            .body
            .to_string()
            .contains("Say hello to Alice."),
        "the command was expanded"
    );
    // A blocking expansion hook: the command never starts.
    let hooks = json!({"UserPromptExpansion": [{"hooks": [{"type": "command",
        "command": "echo 'no greetings today' >&2; exit 2"}]}]});
    setup.set_hooks(&hooks)?;
    let server = ScriptedServer::start(vec![Reply::text("hi")])?;
    let out = support::Run::from_output(run(&server)?)?;
    assert!(server.requests().is_empty(), "{}", out.stdout);
    assert!(out.stdout.contains("no greetings today"), "{}", out.stdout);
    Ok(())
}

/// `--init` and `--maintenance` tell Setup hooks (with the trigger) before
/// SessionStart, and the run goes on; `--init-only` tells Setup and
/// SessionStart and stops, with no request — each as Claude Code 2.1.332
/// (`tests/claude-code/hook-setup-*.json`).
#[test]
fn setup_hooks_run_for_init_and_maintenance_as_in_claude_code() -> TestResult {
    for (flag, name) in [
        ("--init", "hook-setup-init"),
        ("--maintenance", "hook-setup-maintenance"),
        ("--init-only", "hook-setup-init-only"),
    ] {
        let recorded = support::recording(name)?;
        let (setup, logs) = logged()?;
        let dump = dump_to(&logs);
        let hooks: serde_json::Map<String, Value> = ["Setup", "SessionStart", "UserPromptSubmit"]
            .iter()
            .map(|e| {
                (
                    e.to_string(),
                    json!([{"matcher": "*", "hooks": [dump.clone()]}]),
                )
            })
            .collect();
        setup.set_hooks(&hooks)?;
        let server = ScriptedServer::start(vec![Reply::text("hi")])?;
        let output = support::against(&server, &setup.ws)
            .env("HOME", &setup.home)
            .env("CARAPACE_CONFIG_DIR", setup.home.join(".carapace"))
            .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
            .args([flag, "--trust-workspace"])
            .output()?;
        let run = support::Run::from_output(output)?;
        assert_eq!(run.status, Some(0), "{flag}: {}", run.stderr);
        let ours: Vec<Value> = dumped(&logs)?;
        let theirs = recorded["hook_inputs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let summary = |all: &[Value]| -> Vec<(Value, Value, Vec<String>)> {
            all.iter()
                .map(|v| {
                    let mut keys: Vec<String> = v
                        .as_object()
                        .map(|o| o.keys().cloned().collect())
                        .unwrap_or_default();
                    keys.sort();
                    (v["hook_event_name"].clone(), v["trigger"].clone(), keys)
                })
                .collect()
        };
        assert_eq!(summary(&ours), summary(&theirs), "{flag}");
        if flag == "--init-only" {
            // Nothing printed but what Claude Code prints: no lines.
            let printed = run
                .stdout
                .lines()
                .filter(|l| !l.contains("\"init\""))
                .count();
            assert_eq!(printed, 0, "{}", run.stdout);
        }
        assert_eq!(
            server.requests().len(),
            recorded["requests"].as_array().map_or(0, Vec::len),
            "{flag}"
        );
    }
    Ok(())
}

/// A PostToolUse command hook's exit 2 reaches the model inside the call's
/// result, in Claude Code 2.1.332's words (`hook-post-exit2.json`); an
/// `asyncRewake` hook's exit 2 too (`hook-async-rewake.json`: print mode
/// waits for it), and its exit 0 adds nothing (`hook-async-rewake-pass`).
#[test]
fn a_post_tool_use_hooks_objection_goes_with_the_result_as_in_claude_code() -> TestResult {
    for name in [
        "hook-post-exit2",
        "hook-async-rewake",
        "hook-async-rewake-pass",
    ] {
        let recorded = support::recording(name)?;
        let setup = Setup::new(recorded["settings"]["hooks"].clone())?;
        std::fs::write(setup.ws.join("notes.txt"), "hello file\n")?;
        let replies = replies(&recorded, &setup.ws)?;
        let server = ScriptedServer::start(replies)?;
        let run = setup.run(&server)?;
        assert_eq!(run.status, Some(0), "{name}: {}", run.stderr);
        let theirs = recorded["requests"][1][1]["content"][0]["content"]
            .as_str()
            .and_then(|t| t.split("\n\n<system-reminder>\n<total_tokens>").next())
            .ok_or("no recorded result")?;
        let ours = server
            .requests()
            .get(1)
            .map(|r| r.body["messages"][2]["content"][0]["content"].clone())
            .ok_or("no second request")?;
        // (Claude Code trims the result's end where it adds its own
        // reminder of the tokens left.)
        assert_eq!(
            ours.as_str().map(str::trim_end),
            Some(theirs.trim_end()),
            "{name}"
        );
        assert_eq!(
            server.requests().len(),
            recorded["requests"].as_array().map_or(0, Vec::len),
            "{name}"
        );
    }
    Ok(())
}

/// A `command` hook that appends its stdin to `logs/hooks.jsonl` (the
/// folder it is granted).
fn dump_to(logs: &Path) -> Value {
    json!({"type": "command",
        "command": "(cat; echo) >> \"$CLAUDE_PROJECT_DIR/logs/hooks.jsonl\"",
        "grants": {"write": [logs.display().to_string()]}})
}

/// What the [`dump_to`] hooks were given, in order.
fn dumped(logs: &Path) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    Ok(std::fs::read_to_string(logs.join("hooks.jsonl"))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?)
}

/// Each text block the user is shown tells MessageDisplay (the same
/// `turn_id` for the prompt's run, a `message_id` each, the block whole as
/// `delta`), a child's text none, as Claude Code 2.1.332
/// (`hook-message-display.json`).
#[test]
fn each_shown_text_block_tells_message_display_as_in_claude_code() -> TestResult {
    let recorded = support::recording("hook-message-display")?;
    let (setup, logs) = logged()?;
    let hooks = json!({
        "MessageDisplay": [{"hooks": [dump_to(&logs)]}],
        "Stop": [{"hooks": [dump_to(&logs)]}],
    });
    setup.set_hooks(&hooks)?;
    std::fs::write(setup.ws.join("notes.txt"), "hello file\n")?;
    let replies = replies(&recorded, &setup.ws)?;
    let server = ScriptedServer::start(replies)?;
    let run = setup.run(&server)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let ours = dumped(&logs)?;
    let theirs = recorded["hook_inputs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let told = |all: &[Value]| -> Vec<(Value, Value, Value, Value)> {
        all.iter()
            .map(|v| {
                (
                    v["hook_event_name"].clone(),
                    v["delta"].clone(),
                    v["index"].clone(),
                    v["final"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(told(&ours), told(&theirs));
    let keys = |v: &Value| {
        let mut k: Vec<String> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        k.sort();
        k
    };
    assert_eq!(keys(&ours[0]), keys(&theirs[0]));
    let turns: Vec<&Value> = ours[..3].iter().map(|v| &v["turn_id"]).collect();
    assert!(turns.iter().all(|t| *t == turns[0]), "one turn: {turns:?}");
    let ids: std::collections::HashSet<String> = ours[..3]
        .iter()
        .map(|v| v["message_id"].to_string())
        .collect();
    assert_eq!(ids.len(), 3, "a message id each");
    Ok(())
}

/// A command's `` !`command` `` span tells PreSkillShellCommand (the call,
/// the command's name and source, who invoked it); a hook's exit 2 leaves
/// the span unrun, says so in its place and tells the user, and the turn
/// goes on — as Claude Code 2.1.332 (`hook-skill-shell*.json`).
#[test]
fn a_commands_shell_span_tells_pre_skill_shell_command_as_in_claude_code() -> TestResult {
    for name in ["hook-skill-shell", "hook-skill-shell-block"] {
        let recorded = support::recording(name)?;
        let (setup, logs) = logged()?;
        let answer = match name {
            "hook-skill-shell" => dump_to(&logs),
            _ => json!({"type": "command", "command": "echo 'no shell in skills' >&2; exit 2"}),
        };
        std::fs::write(
            setup.ws.join(".claude/settings.json"),
            json!({"hooks": {"PreSkillShellCommand": [{"hooks": [answer]}]}}).to_string(),
        )?;
        std::fs::create_dir_all(setup.ws.join(".claude/commands"))?;
        std::fs::write(
            setup.ws.join(".claude/commands/today.md"),
            "---\nallowed-tools: Bash(echo:*)\n---\nToday: !`echo sunny`\n",
        )?;
        let server = ScriptedServer::start(vec![Reply::text("hi")])?;
        let output = support::against(&server, &setup.ws)
            .env("HOME", &setup.home)
            .env("CARAPACE_CONFIG_DIR", setup.home.join(".carapace"))
            .args([
                "-p",
                "/today",
                "--output-format",
                "stream-json",
                "--verbose",
            ])
            .arg("--trust-workspace")
            .output()?;
        let run = support::Run::from_output(output)?;
        assert_eq!(run.status, Some(0), "{name}: {}", run.stderr);
        let sent = server.requests()[0].body["messages"][0]["content"].clone();
        let theirs = recorded["first_message"]["content"].clone();
        let last_text = |blocks: &Value| {
            blocks
                .as_array()
                .and_then(|b| b.last())
                .map(|b| b["text"].clone())
                .unwrap_or_default()
        };
        assert_eq!(last_text(&sent), last_text(&theirs), "{name}");
        if name == "hook-skill-shell" {
            let ours = dumped(&logs)?;
            let theirs = &recorded["hook_inputs"][0];
            let keys = |v: &Value| {
                let mut k: Vec<String> = v
                    .as_object()
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default();
                k.sort();
                k
            };
            assert_eq!(keys(&ours[0]), keys(theirs));
            for field in [
                "tool_name",
                "tool_input",
                "command_name",
                "command_source",
                "invoked_by",
            ] {
                assert_eq!(ours[0][field], theirs[field], "{field}");
            }
            assert!(
                ours[0]["tool_use_id"]
                    .as_str()
                    .is_some_and(|id| id.ends_with(":inner:preamble-0"))
            );
        } else {
            let told = lines(&run.stdout)?
                .into_iter()
                .find(|l| l["subtype"] == "informational")
                .ok_or("no informational line")?;
            let recorded_line = recorded["stdout"]
                .as_array()
                .and_then(|l| l.iter().find(|l| l["subtype"] == "informational"))
                .cloned()
                .unwrap_or_default();
            assert_eq!(told["content"], recorded_line["content"]);
            assert_eq!(told["level"], recorded_line["level"]);
        }
    }
    Ok(())
}

/// The SDK's `set_model` tells PreModelSwitch and, once switched,
/// PostModelSwitch (`from_model`, `to_model`, `requested_model`, `source:
/// sdk`, the history's size and cache warmth); a PreModelSwitch exit 2
/// refuses the switch — an error answer with `error_code:
/// blocked_by_hook` and the model kept, no PostModelSwitch — as Claude
/// Code 2.1.332 (`hook-model-switch*.json`).
#[test]
fn set_model_tells_model_switch_hooks_as_in_claude_code() -> TestResult {
    use std::io::Write;
    for name in ["hook-model-switch", "hook-model-switch-block"] {
        let recorded = support::recording(name)?;
        let (setup, logs) = logged()?;
        let pre = match name {
            "hook-model-switch" => dump_to(&logs),
            _ => json!({"type": "command",
                "command": "cat > /dev/null; echo 'stay on sonnet' >&2; exit 2"}),
        };
        let hooks = json!({
            "PreModelSwitch": [{"hooks": [pre]}],
            "PostModelSwitch": [{"hooks": [dump_to(&logs)]}],
        });
        setup.set_hooks(&hooks)?;
        let server = ScriptedServer::start(vec![Reply::text("hi"), Reply::text("hi again")])?;
        let mut child = support::against(&server, &setup.ws)
            .env("HOME", &setup.home)
            .env("CARAPACE_CONFIG_DIR", setup.home.join(".carapace"))
            .args([
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
            ])
            .args([
                "--verbose",
                "--model",
                "claude-sonnet-4-5",
                "--trust-workspace",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let mut stdout = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let user =
            |text: &str| json!({"type": "user", "message": {"role": "user", "content": text}});
        let initialize = json!({"type": "control_request", "request_id": "r1",
            "request": {"subtype": "initialize"}});
        writeln!(stdin, "{initialize}\n{}", user("hello"))?;
        // As Claude Code was recorded: the switch after the first turn.
        let mut line = String::new();
        loop {
            line.clear();
            if std::io::BufRead::read_line(&mut stdout, &mut line)? == 0 {
                return Err(format!("{name}: the session ended before its first result").into());
            }
            if serde_json::from_str::<Value>(&line)?["type"] == "result" {
                break;
            }
        }
        let switch = json!({"type": "control_request", "request_id": "r2",
            "request": {"subtype": "set_model", "model": "claude-opus-4-1"}});
        writeln!(stdin, "{switch}\n{}", user("again"))?;
        drop(stdin);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest)?;
        let status = child.wait()?;
        assert!(status.success(), "{name}: {status}");
        let answer = lines(&rest)?
            .into_iter()
            .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == "r2")
            .ok_or("no answer to set_model")?;
        let theirs = &recorded["control_responses"][0]["response"];
        assert_eq!(answer["response"]["subtype"], theirs["subtype"], "{name}");
        let models: Vec<Value> = server
            .requests()
            .iter()
            .map(|r| r.body["model"].clone())
            .collect();
        if name == "hook-model-switch" {
            let told = dumped(&logs)?;
            let names: Vec<&Value> = told.iter().map(|v| &v["hook_event_name"]).collect();
            assert_eq!(names, ["PreModelSwitch", "PostModelSwitch"]);
            let keys = |v: &Value| {
                let mut k: Vec<String> = v
                    .as_object()
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default();
                k.sort();
                k
            };
            assert_eq!(keys(&told[0]), keys(&recorded["hook_inputs"][0]));
            for field in ["from_model", "requested_model", "source", "cache_ttl"] {
                assert_eq!(told[0][field], recorded["hook_inputs"][0][field], "{field}");
            }
            assert_eq!(models.last(), Some(&told[0]["to_model"]), "{models:?}");
        } else {
            for field in ["error", "error_code", "model"] {
                assert_eq!(answer["response"][field], theirs[field], "{field}");
            }
            assert!(!logs.join("hooks.jsonl").exists(), "no PostModelSwitch");
            assert_eq!(models.last(), Some(&json!("claude-sonnet-4-5")));
        }
    }
    Ok(())
}

/// An MCP tool's hooks are told which server it comes from and how it was
/// configured (`--mcp-config`: `dynamic`), and PostToolUse its response,
/// as Claude Code 2.1.332 (`hook-mcp-tool.json`).
#[test]
fn an_mcp_tools_hooks_are_told_its_server_as_in_claude_code() -> TestResult {
    let recorded = support::recording("hook-mcp-tool")?;
    let (setup, logs) = logged()?;
    let hooks = json!({
        "PreToolUse": [{"matcher": "*", "hooks": [dump_to(&logs)]}],
        "PostToolUse": [{"matcher": "*", "hooks": [dump_to(&logs)]}],
    });
    setup.set_hooks(&hooks)?;
    let notes = format!(
        "{}/../tests/mcp/servers/notes_server.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let mcp = json!({"mcpServers": {"notes": {
        "command": carapace_test_support::deps::python(), "args": [notes]}}});
    let replies = replies(&recorded, &setup.ws)?;
    let server = ScriptedServer::start(replies)?;
    let output = setup
        .command(&server)
        .args([
            "--allowedTools",
            "mcp__notes__add_note",
            "--trust-workspace",
        ])
        .arg("--mcp-config")
        .arg(mcp.to_string())
        .output()?;
    let run = support::Run::from_output(output)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let ours = dumped(&logs)?;
    let theirs = recorded["hook_inputs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(ours.len(), theirs.len(), "{ours:?}");
    for (ours, theirs) in ours.iter().zip(&theirs) {
        assert_eq!(ours["mcp_server"], theirs["mcp_server"], "{ours}");
        assert_eq!(ours["tool_response"], theirs["tool_response"], "{ours}");
        assert_eq!(ours["hook_event_name"], theirs["hook_event_name"]);
    }
    Ok(())
}
