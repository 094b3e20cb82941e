//! Subagents through the binary: the Agent tool starts a child loop with
//! its own system prompt, history and tools (never more than its
//! parent's); its final answer is the Agent call's result; its lines carry
//! the call's id.

mod support;

use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{TestResult, lines, tool_names};

fn agent_call(prompt: &str) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        "toolu_agent",
        "Agent",
        json!({"description": "look around", "prompt": prompt}),
    )])
}

fn system(body: &Value) -> String {
    body["system"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

#[test]
fn a_foreground_child_answers_the_agent_call() -> TestResult {
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![
        agent_call("FIND THE PORT"),
        Reply::text("CHILD REPORT: port 8080"),
        Reply::text("The child says 8080."),
    ])?;
    let run = support::run(
        &server,
        ws.path(),
        &[
            "-p",
            "delegate",
            "--output-format",
            "stream-json",
            "--verbose",
        ],
    )?;
    assert_eq!(run.status, Some(0), "{}\n{}", run.stdout, run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let parent = &requests[0].body;
    let child = &requests[1].body;
    assert!(tool_names(parent).contains(&"Agent".to_string()));
    // Its own prompt, history and tools: the parent's, without Agent.
    assert!(
        system(child).starts_with("You are a subagent"),
        "{}",
        system(child)
    );
    assert!(!tool_names(child).contains(&"Agent".to_string()));
    assert!(tool_names(child).contains(&"Read".to_string()));
    // The context reminder (memory, date) first, as a Claude Code child
    // gets it, then its task.
    let opening = child["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(opening.starts_with(support::CONTEXT_REMINDER), "{opening}");
    assert_eq!(
        child["messages"][0]["content"][1],
        json!({"type": "text", "text": "FIND THE PORT", "cache_control": {"type": "ephemeral"}})
    );
    assert_eq!(child["messages"].as_array().map(Vec::len), Some(1));
    // Its answer is the call's result.
    let last = requests[2].body["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or_default();
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_agent");
    assert_eq!(last["content"][0]["content"], "CHILD REPORT: port 8080");
    // Its lines name the parent's call; init lists the agent types.
    let all = lines(&run.stdout)?;
    assert_eq!(all[0]["agents"], json!(["general-purpose"]));
    let child_line = all
        .iter()
        .find(|l| {
            l["type"] == "assistant"
                && l["message"]["content"][0]["text"] == "CHILD REPORT: port 8080"
        })
        .ok_or("no child line")?;
    assert_eq!(child_line["parent_tool_use_id"], "toolu_agent");
    let result = all.last().ok_or("no result")?;
    assert_eq!(result["result"], "The child says 8080.");
    Ok(())
}

#[test]
fn a_child_never_has_a_tool_its_parent_lacks() -> TestResult {
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![
        agent_call("run a command"),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_bash",
            "Bash",
            json!({"command": "echo escaped > escaped.txt"}),
        )]),
        Reply::text("I could not run it"),
        Reply::text("done"),
    ])?;
    let run = support::run(
        &server,
        ws.path(),
        &[
            "-p",
            "delegate",
            "--tools",
            "Read,Agent",
            "--permission-mode",
            "bypassPermissions",
        ],
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(tool_names(&requests[1].body), ["Read"]);
    let refused = requests[2].body["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or_default();
    assert_eq!(refused["content"][0]["tool_use_id"], "toolu_bash");
    assert_eq!(refused["content"][0]["is_error"], true);
    assert!(
        refused["content"][0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("not one of this agent's tools")),
        "{refused}"
    );
    assert!(!ws.path().join("escaped.txt").exists());
    Ok(())
}

#[test]
fn an_unknown_agent_type_is_refused() -> TestResult {
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_type",
            "Agent",
            json!({"description": "d", "prompt": "p", "subagent_type": "wizard"}),
        )]),
        Reply::text("ok"),
    ])?;
    let run = support::run(&server, ws.path(), &["-p", "delegate"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "no child request");
    let text = requests[1].body["messages"].to_string();
    assert!(text.contains("no agent type `wizard`"), "{text}");
    Ok(())
}

/// The seeds' three-request probe: a background launch is answered at
/// once, the parent goes on (its second request), the child runs its own
/// request meanwhile, and its report reaches the parent as a task
/// notification — the parent's third request.
#[test]
fn a_background_child_reports_through_a_task_notification() -> TestResult {
    let ws = tempfile::tempdir()?;
    const CHILD: &str = "SUBAGENT_CHILD_RESULT_MARKER";
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_bg",
            "Agent",
            json!({"description": "probe", "prompt": "CHILD TASK", "run_in_background": true}),
        )]),
        // The child's request and the parent's second one race: both get
        // the same text, and the bodies say which was which.
        Reply::text(CHILD),
        Reply::text(CHILD),
        Reply::text("SUBAGENT_PARENT_OK"),
    ])?;
    let config = ws.path().join("config");
    let output = support::against(&server, ws.path())
        .env("CARAPACE_CONFIG_DIR", &config)
        .args([
            "-p",
            "delegate in the background",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .output()?;
    let stdout = String::from_utf8(output.stdout)?;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{stdout}");
    let (child, parent): (Vec<&Value>, Vec<&Value>) = requests[1..3]
        .iter()
        .map(|r| &r.body)
        .partition(|body| system(body).starts_with("You are a subagent"));
    assert_eq!((child.len(), parent.len()), (1, 1));
    // After the context reminder a child gets too (memory, date), as in
    // Claude Code.
    assert_eq!(child[0]["messages"][0]["content"][1]["text"], "CHILD TASK");
    let ack = parent[0]["messages"].to_string();
    assert!(
        ack.contains("Started agent") && ack.contains("in the background"),
        "{ack}"
    );
    let last = requests[3].body["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or_default()
        .to_string();
    assert!(
        last.contains("<task-notification>") && last.contains(CHILD),
        "{last}"
    );
    assert!(last.contains("<status>completed</status>"), "{last}");
    let all = lines(&stdout)?;
    assert!(
        all.iter()
            .any(|l| l["subtype"] == "task_started" && l["tool_use_id"] == "toolu_bg")
    );
    let notification = all
        .iter()
        .find(|l| l["subtype"] == "task_notification")
        .ok_or("no task_notification")?;
    assert_eq!(notification["status"], "completed");
    let kept = std::fs::read_to_string(notification["output_file"].as_str().unwrap_or_default())?;
    assert_eq!(kept, CHILD);
    assert_eq!(
        all.last().ok_or("no result")?["result"],
        "SUBAGENT_PARENT_OK"
    );
    Ok(())
}

/// Two children started in one response run at once: the first child's
/// answer is held open until the second child's first request has reached
/// the server, which can only happen if they overlap.
#[test]
fn two_children_run_at_once() -> TestResult {
    use scripted_server::Step;
    use std::sync::{Arc, OnceLock};
    use std::time::Duration;
    let ws = tempfile::tempdir()?;
    let server_cell: Arc<OnceLock<Arc<ScriptedServer>>> = Arc::new(OnceLock::new());
    let seen = server_cell.clone();
    let held = Reply::text("first child done").after_block(
        0,
        Step::WaitUntil {
            gate: Arc::new(move || seen.get().is_some_and(|s| s.requests().len() >= 3)),
            timeout: Duration::from_secs(20),
            label: "the other child has started".into(),
        },
    );
    let server = Arc::new(ScriptedServer::start(vec![
        Reply::tool_uses(vec![
            Block::tool_use(
                "toolu_a",
                "Agent",
                json!({"description": "a", "prompt": "task A"}),
            ),
            Block::tool_use(
                "toolu_b",
                "Agent",
                json!({"description": "b", "prompt": "task B"}),
            ),
        ]),
        held,
        Reply::text("second child done"),
        Reply::text("both done"),
    ])?);
    let _ = server_cell.set(server.clone());
    let run = support::run(&server, ws.path(), &["-p", "delegate twice"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert_eq!(
        server.gates(),
        vec![("the other child has started".to_string(), true)]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let results = requests[3].body["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or_default()
        .to_string();
    assert!(
        results.contains("first child done") && results.contains("second child done"),
        "{results}"
    );
    Ok(())
}

#[test]
fn defined_agents_narrow_the_tools_and_set_the_prompt() -> TestResult {
    let ws = tempfile::tempdir()?;
    let agents_dir = ws.path().join(".carapace").join("agents");
    std::fs::create_dir_all(&agents_dir)?;
    std::fs::write(
        agents_dir.join("greeter.md"),
        "---\nname: greeter\ndescription: says hello\ntools: Read\n---\nGREETER PROMPT\n",
    )?;
    let flag = json!({"lister": {"description": "lists files", "prompt": "LISTER PROMPT", "tools": ["Glob", "Bash"]}}).to_string();
    let call = |agent: &str| {
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_typed",
            "Agent",
            json!({"description": "d", "prompt": "go", "subagent_type": agent}),
        )])
    };
    let server = ScriptedServer::start(vec![
        call("lister"),
        Reply::text("listed"),
        Reply::text("done"),
        call("greeter"),
        Reply::text("done"),
    ])?;
    let run = support::run(
        &server,
        ws.path(),
        &[
            "-p",
            "use the lister",
            "--agents",
            &flag,
            "--tools",
            "Read,Glob,Agent",
            // A settings file's `agents` too (the user's, by --settings).
            "--settings",
            &json!({"agents": {"summer": {"description": "sums numbers", "prompt": "SUM"}}})
                .to_string(),
        ],
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let requests = server.requests();
    let agent_tool = requests[0].body["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "Agent").cloned())
        .unwrap_or_default();
    assert!(
        agent_tool["description"].as_str().is_some_and(
            |d| d.contains("- lister: lists files") && d.contains("- summer: sums numbers")
        ),
        "{agent_tool}"
    );
    let child = &requests[1].body;
    assert!(
        system(child).starts_with("LISTER PROMPT"),
        "{}",
        system(child)
    );
    // Bash is the definition's but not the parent's: the child lacks it.
    assert_eq!(tool_names(child), ["Glob"]);
    // An untrusted workspace's agent files do not load.
    let untrusted = support::run(&server, ws.path(), &["-p", "use the greeter"])?;
    assert_eq!(untrusted.status, Some(0), "{}", untrusted.stderr);
    assert!(
        untrusted.stderr.contains("agent definitions"),
        "{}",
        untrusted.stderr
    );
    let refused = server.requests()[4].body["messages"].to_string();
    assert!(refused.contains("no agent type `greeter`"), "{refused}");
    Ok(())
}

#[test]
fn a_childs_transcript_is_kept_beside_its_parents() -> TestResult {
    let ws = tempfile::tempdir()?;
    let config = ws.path().join("config");
    let server = ScriptedServer::start(vec![
        agent_call("CHILD TASK TO KEEP"),
        Reply::text("CHILD ANSWER TO KEEP"),
        Reply::text("done"),
    ])?;
    let output = support::against(&server, ws.path())
        .env("CARAPACE_CONFIG_DIR", &config)
        .args([
            "-p",
            "delegate",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .output()?;
    assert_eq!(output.status.code(), Some(0));
    let session = lines(&String::from_utf8(output.stdout)?)?
        .last()
        .and_then(|l| l["session_id"].as_str().map(str::to_string))
        .ok_or("no session id")?;
    let project = std::fs::read_dir(config.join("projects"))?
        .flatten()
        .next()
        .ok_or("no project folder")?
        .path();
    assert!(project.join(format!("{session}.jsonl")).is_file());
    let children: Vec<_> = std::fs::read_dir(project.join(&session).join("subagents"))?
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(children.len(), 1, "{children:?}");
    let kept = std::fs::read_to_string(&children[0])?;
    assert!(kept.contains("CHILD TASK TO KEEP") && kept.contains("CHILD ANSWER TO KEEP"));
    Ok(())
}

#[test]
fn subagent_stop_hooks_see_the_child_end_and_are_capped() -> TestResult {
    let ws = tempfile::tempdir()?;
    let script = ws.path().join("hook-script.json");
    std::fs::write(
        &script,
        json!({"SubagentStop": {"stderr": "KEEP GOING, CHILD", "exit": 2}}).to_string(),
    )?;
    let probe =
        std::path::Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("command-hook-probe.wasm");
    let settings = json!({"hooks": {"SubagentStop": [{"matcher": "", "hooks": [{
        "type": "wasm-command", "path": probe, "grants": {"read": [script]}}]}]}})
    .to_string();
    let server = ScriptedServer::start(vec![
        agent_call("work"),
        Reply::text("first try"),
        Reply::text("second try"),
        Reply::text("parent done"),
    ])?;
    let output = support::against(&server, ws.path())
        .env("CARAPACE_STOP_HOOK_BLOCK_CAP", "1")
        .args(["-p", "delegate", "--settings", &settings])
        .output()?;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // The child was sent back once with the hook's feedback, then capped.
    assert!(system(&requests[2].body).starts_with("You are a subagent"));
    assert!(
        requests[2].body["messages"]
            .to_string()
            .contains("KEEP GOING, CHILD")
    );
    // The parent's own end ran no SubagentStop hook (and no Stop hook is set).
    assert!(!system(&requests[3].body).starts_with("You are a subagent"));
    assert!(
        requests[3].body["messages"]
            .to_string()
            .contains("toolu_agent")
    );
    Ok(())
}

#[test]
fn ending_the_parent_ends_its_children() -> TestResult {
    let ws = tempfile::tempdir()?;
    let marker = ws.path().join("child-finished");
    let began = ws.path().join("child-began");
    let server = ScriptedServer::start(vec![
        agent_call("run the slow command"),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_slow",
            "Bash",
            json!({"command": format!("touch {}; sleep 3; touch {}", began.display(), marker.display())}),
        )]),
        Reply::text("never"),
        Reply::text("never"),
    ])?;
    let mut child = support::against(&server, ws.path())
        .args(["-p", "delegate", "--permission-mode", "bypassPermissions"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while server.requests().len() < 2 {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            return Err("the child never made its request".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The child's command is running (not merely asked for).
    while !began.exists() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            return Err("the child's command never started".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    let status = child.wait()?;
    assert_eq!(status.code(), Some(1), "an aborted run is an error");
    // Ended without waiting for the child's command to finish...
    assert!(
        !marker.exists(),
        "the parent waited for the child's command"
    );
    // ...and the command ended with it: once nothing that could write the
    // marker runs, it was never written.
    let needle = marker.to_string_lossy();
    carapace_test_support::processes::wait_until_none_mention(
        &needle,
        std::time::Duration::from_secs(30),
    )?;
    assert!(!marker.exists(), "the child's command was ended with it");
    assert_eq!(server.requests().len(), 2, "no request after the abort");
    Ok(())
}

#[test]
fn hooks_are_told_which_agent_a_call_comes_from() -> TestResult {
    let ws = tempfile::tempdir()?;
    let script = ws.path().join("hook-script.json");
    std::fs::write(&script, json!({"PreToolUse": {"echo": true}}).to_string())?;
    std::fs::write(ws.path().join("notes.txt"), "hello\n")?;
    let probe =
        std::path::Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("command-hook-probe.wasm");
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{
        "type": "wasm-command", "path": probe, "grants": {"read": [script]}}]}]}})
    .to_string();
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_parent_read",
            "Read",
            json!({"file_path": ws.path().join("notes.txt")}),
        )]),
        agent_call("read it too"),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_child_read",
            "Read",
            json!({"file_path": ws.path().join("notes.txt")}),
        )]),
        Reply::text("child read it"),
        Reply::text("done"),
    ])?;
    let run = support::run(
        &server,
        ws.path(),
        &[
            "-p",
            "read, then delegate",
            "--settings",
            &settings,
            "--include-hook-events",
            "--output-format",
            "stream-json",
            "--verbose",
        ],
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let told: Vec<Value> = lines(&run.stdout)?
        .into_iter()
        .filter(|l| l["subtype"] == "hook_response")
        .filter_map(|l| serde_json::from_str(l["stderr"].as_str().unwrap_or_default()).ok())
        .collect();
    let parent = told
        .iter()
        .find(|t| t["tool_use_id"] == "toolu_parent_read")
        .ok_or("no hook input for the parent's call")?;
    assert!(parent.get("agent_id").is_none(), "{parent}");
    let child = told
        .iter()
        .find(|t| t["tool_use_id"] == "toolu_child_read")
        .ok_or("no hook input for the child's call")?;
    assert_eq!(child["agent_type"], "general-purpose");
    assert!(
        child["agent_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("agent-")),
        "{child}"
    );
    Ok(())
}

#[test]
fn a_child_cannot_end_its_parents_plan_mode() -> TestResult {
    let ws = tempfile::tempdir()?;
    let target = std::fs::canonicalize(ws.path())?.join("planned.txt");
    let server = ScriptedServer::start(vec![
        agent_call("leave plan mode"),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_exit",
            "ExitPlanMode",
            json!({"plan": "write it"}),
        )]),
        Reply::text("I could not"),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_write",
            "Write",
            json!({"file_path": target.display().to_string(), "content": "x"}),
        )]),
        Reply::text("done"),
    ])?;
    let run = support::run(
        &server,
        ws.path(),
        &[
            "-p",
            "delegate",
            "--permission-mode",
            "plan",
            "--allowedTools",
            "ExitPlanMode",
            "Write",
        ],
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    assert!(tool_names(&requests[0].body).contains(&"ExitPlanMode".to_string()));
    assert!(!tool_names(&requests[1].body).contains(&"ExitPlanMode".to_string()));
    let refused = requests[2].body["messages"].to_string();
    assert!(
        refused.contains("not one of this agent's tools"),
        "{refused}"
    );
    // Still in plan mode: the parent's write is refused.
    assert!(!target.exists());
    Ok(())
}

/// `--settings` seating the middleware probe with `options`.
fn middleware_settings(dir: &std::path::Path, options: Value) -> Result<String, std::io::Error> {
    let probe =
        std::path::Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("middleware_probe.wasm");
    let file = dir.join("middleware-settings.json");
    let settings = json!({"hooks": {"Middleware": [{"path": probe, "options": options}]}});
    std::fs::write(&file, settings.to_string())?;
    Ok(file.display().to_string())
}

#[test]
fn a_middleware_hook_rewrites_a_spawns_prompt_or_refuses_it() -> TestResult {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    // Rewritten: the child is started with the hook's prompt.
    let settings = middleware_settings(
        home.path(),
        json!({"role": "spawn", "agent": "Explore", "prefix": "Stay read-only. "}),
    )?;
    let server = ScriptedServer::start(vec![
        agent_call("FIND THE PORT"),
        Reply::text("CHILD REPORT: port 8080"),
        Reply::text("done"),
    ])?;
    let args = ["-p", "delegate", "--settings", settings.as_str()];
    let run = support::run(&server, ws.path(), &args)?;
    assert_eq!(run.status, Some(0), "{}\n{}", run.stdout, run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[1].body["messages"][0]["content"][1]["text"],
        "Stay read-only. FIND THE PORT"
    );
    // Refused: no child runs, and the Agent call's result says why.
    let settings = middleware_settings(
        home.path(),
        json!({"role": "spawn", "agent": "general-purpose"}),
    )?;
    let server = ScriptedServer::start(vec![agent_call("FIND THE PORT"), Reply::text("done")])?;
    let args = ["-p", "delegate", "--settings", settings.as_str()];
    let run = support::run(&server, ws.path(), &args)?;
    assert_eq!(run.status, Some(0), "{}\n{}", run.stdout, run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "no child request");
    let last = requests[1].body["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or_default();
    assert_eq!(last["content"][0]["is_error"], true);
    assert!(
        last["content"][0]["content"]
            .to_string()
            .contains("the general-purpose agent is not allowed here"),
        "{last}"
    );
    Ok(())
}
