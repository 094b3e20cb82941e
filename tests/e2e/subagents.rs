//! Subagents through the binary: the Agent tool starts a child loop with
//! its own system prompt, history and tools (never more than its
//! parent's); its final answer is the Agent call's result; its lines carry
//! the call's id.

mod support;

use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{TestResult, lines};

fn agent_call(prompt: &str) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        "toolu_agent",
        "Agent",
        json!({"description": "look around", "prompt": prompt}),
    )])
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
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
    assert_eq!(
        child["messages"],
        json!([{"role": "user", "content": [
        {"type": "text", "text": "FIND THE PORT", "cache_control": {"type": "ephemeral"}}]}])
    );
    // Its answer is the call's result.
    let last = requests[2].body["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or_default();
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_agent");
    assert_eq!(last["content"][0]["content"], "CHILD REPORT: port 8080");
    // Its lines name the parent's call.
    let all = lines(&run.stdout)?;
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
fn an_unknown_agent_type_and_background_runs_are_refused() -> TestResult {
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![
            Block::tool_use(
                "toolu_type",
                "Agent",
                json!({"description": "d", "prompt": "p", "subagent_type": "wizard"}),
            ),
            Block::tool_use(
                "toolu_bg",
                "Agent",
                json!({"description": "d", "prompt": "p", "run_in_background": true}),
            ),
        ]),
        Reply::text("ok"),
    ])?;
    let run = support::run(&server, ws.path(), &["-p", "delegate"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "no child request");
    let results = requests[1].body["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or_default();
    let text = results.to_string();
    assert!(text.contains("no agent type `wizard`"), "{text}");
    assert!(
        text.contains("does not run agents in the background yet"),
        "{text}"
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
