//! The first-party tools Claude Code offers in print mode: NotebookEdit, TodoWrite, ExitPlanMode, background shells.

use super::*;

/// The tool_result blocks of the last request, by tool_use_id.
pub(super) fn results_of(request: &Value) -> Vec<(String, bool, String)> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                b["is_error"] == true,
                support::text_of(b),
            )
        })
        .collect()
}

/// The result with this tool_use_id among [`results_of`]'s (empty if none).
fn by_id(results: &[(String, bool, String)], id: &str) -> (String, bool, String) {
    results
        .iter()
        .find(|r| r.0 == id)
        .cloned()
        .unwrap_or_default()
}

#[test]
fn notebook_edit_changes_cells_under_the_edit_rules() -> TestResult {
    let ws = tempfile::tempdir()?;
    let ws_path = std::fs::canonicalize(ws.path())?;
    let notebook = ws_path.join("analysis.ipynb");
    let original = json!({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "load", "metadata": {}, "source": "x = 1",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "1"}], "execution_count": 3},
        {"cell_type": "markdown", "id": "notes", "metadata": {}, "source": "old notes"}
    ]});
    std::fs::write(&notebook, original.to_string())?;
    let path = notebook.display().to_string();
    let edit = |id: &str, input: Value| Block::tool_use(id, "NotebookEdit", input);
    let script = || {
        vec![
            // Before reading: refused.
            Reply::tool_uses(vec![edit(
                "early",
                json!({"notebook_path": path, "cell_id": "load", "new_source": "x = 0"}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "read",
                "Read",
                json!({"file_path": path}),
            )]),
            Reply::tool_uses(vec![
                edit(
                    "replace",
                    json!({"notebook_path": path, "cell_id": "load", "new_source": "x = 2"}),
                ),
                edit(
                    "insert",
                    json!({"notebook_path": path, "cell_id": "load", "edit_mode": "insert", "cell_type": "markdown", "new_source": "# Step"}),
                ),
                edit(
                    "delete",
                    json!({"notebook_path": path, "cell_id": "cell-2", "edit_mode": "delete", "new_source": ""}),
                ),
                edit(
                    "missing",
                    json!({"notebook_path": path, "cell_id": "nope", "new_source": "?"}),
                ),
            ]),
            Reply::text("done"),
        ]
    };
    // Default mode: an edit needs approval, which print mode cannot give.
    let server = ScriptedServer::start(script())?;
    let out = run(&server, &ws_path, &stream_json(&[]))?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let denials = &last_line(&out.stdout)?["permission_denials"];
    assert_eq!(denials.as_array().map(Vec::len), Some(5), "{denials}");
    assert_eq!(std::fs::read_to_string(&notebook)?, original.to_string());

    let server = ScriptedServer::start(script())?;
    let out = run(
        &server,
        &ws_path,
        &stream_json(&["--permission-mode", "acceptEdits"]),
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let results = results_of(&server.requests()[3].body);
    let by_id = |id: &str| by_id(&results, id);
    assert!(
        by_id("early").1 && by_id("early").2.contains("Read it first"),
        "{:?}",
        by_id("early")
    );
    assert!(
        !by_id("replace").1 && !by_id("insert").1 && !by_id("delete").1,
        "{results:?}"
    );
    assert!(by_id("missing").1 && by_id("missing").2.contains("No cell `nope`"));
    let edited: Value = serde_json::from_str(&std::fs::read_to_string(&notebook)?)?;
    let cells = edited["cells"].as_array().ok_or("no cells")?;
    assert_eq!(cells.len(), 2, "{edited}");
    assert_eq!(
        (cells[0]["id"].as_str(), cells[0]["source"].as_str()),
        (Some("load"), Some("x = 2"))
    );
    assert_eq!(
        cells[0]["outputs"],
        json!([]),
        "a replaced code cell loses its outputs"
    );
    assert_eq!(
        (cells[1]["cell_type"].as_str(), cells[1]["source"].as_str()),
        (Some("markdown"), Some("# Step"))
    );

    // A deny rule for Edit covers NotebookEdit, as in Claude Code.
    let server = ScriptedServer::start(script())?;
    let out = run(
        &server,
        &ws_path,
        &stream_json(&[
            "--permission-mode",
            "acceptEdits",
            "--disallowedTools",
            "Edit(*.ipynb)",
        ]),
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let results = results_of(&server.requests()[3].body);
    assert!(
        results.iter().filter(|r| r.0 != "read").all(|r| r.1),
        "{results:?}"
    );
    Ok(())
}

#[test]
fn todo_write_keeps_the_list_in_the_conversation() -> TestResult {
    let ws = tempfile::tempdir()?;
    let todos = json!([
        {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"},
        {"content": "Fix the bug", "status": "pending", "activeForm": "Fixing the bug"}
    ]);
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![
            Block::tool_use("todo", "TodoWrite", json!({"todos": todos})),
            Block::tool_use(
                "bad",
                "TodoWrite",
                json!({"todos": [{"content": "", "status": "doing", "activeForm": "x"}]}),
            ),
        ]),
        Reply::text("planned"),
    ])?;
    // No rule and the default mode: the list needs no permission.
    let out = run(&server, ws.path(), &stream_json(&[]))?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let results = results_of(&server.requests()[1].body);
    let by_id = |id: &str| by_id(&results, id);
    assert!(
        !by_id("todo").1 && by_id("todo").2.contains("2 items"),
        "{results:?}"
    );
    assert!(
        by_id("bad").1 && by_id("bad").2.contains("InputValidationError"),
        "{results:?}"
    );
    let shown = lines(&out.stdout)?
        .into_iter()
        .find(|l| l["type"] == "user" && l["message"]["content"][0]["tool_use_id"] == "todo")
        .ok_or("no result line")?;
    assert_eq!(shown["tool_use_result"]["newTodos"], todos);
    assert_eq!(last_line(&out.stdout)?["permission_denials"], json!([]));
    Ok(())
}

#[test]
fn plan_mode_ends_only_through_an_approved_exit_plan_mode() -> TestResult {
    let ws = tempfile::tempdir()?;
    let ws_path = std::fs::canonicalize(ws.path())?;
    let target = ws_path.join("planned.txt");
    let write = |id: &str| {
        Block::tool_use(
            id,
            "Write",
            json!({"file_path": target.display().to_string(), "content": "done"}),
        )
    };
    let script = || {
        vec![
            Reply::tool_uses(vec![write("before")]),
            Reply::tool_uses(vec![Block::tool_use(
                "exit",
                "ExitPlanMode",
                json!({"plan": "1. Write planned.txt"}),
            )]),
            Reply::tool_uses(vec![write("after")]),
            Reply::text("finished"),
        ]
    };
    // No rule allows the exit: print mode cannot ask, so it is refused and
    // the session stays read-only.
    let server = ScriptedServer::start(script())?;
    let out = run(
        &server,
        &ws_path,
        &stream_json(&["--permission-mode", "plan", "--allowedTools", "Write"]),
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let results = results_of(&server.requests()[3].body);
    assert!(results.iter().all(|r| r.1), "{results:?}");
    assert!(!target.exists());
    let result = last_line(&out.stdout)?;
    let denied: Vec<&str> = result["permission_denials"]
        .as_array()
        .map(|d| d.iter().filter_map(|d| d["tool_name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(denied, ["Write", "ExitPlanMode", "Write"]);

    // Allowed: the plan is approved, the mode leaves plan, the write runs.
    let server = ScriptedServer::start(script())?;
    let out = run(
        &server,
        &ws_path,
        &stream_json(&[
            "--permission-mode",
            "plan",
            "--allowedTools",
            "Write",
            "ExitPlanMode",
        ]),
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    // As Claude Code prints it: the new mode, then the call's result.
    let printed = lines(&out.stdout)?;
    let status = printed
        .iter()
        .position(|l| l["subtype"] == "status" && l["permissionMode"] == "default")
        .ok_or("no status line")?;
    let exit_result = printed
        .iter()
        .position(|l| l["type"] == "user" && l["message"]["content"][0]["tool_use_id"] == "exit")
        .ok_or("no result line")?;
    assert!(status < exit_result, "{printed:?}");
    let results = results_of(&server.requests()[3].body);
    let by_id = |id: &str| by_id(&results, id);
    assert!(by_id("before").1, "{results:?}");
    assert!(
        !by_id("exit").1 && by_id("exit").2.contains("approved"),
        "{results:?}"
    );
    assert!(!by_id("after").1, "{results:?}");
    assert_eq!(std::fs::read_to_string(&target)?, "done");

    // Outside plan mode there is nothing to exit.
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use("exit", "ExitPlanMode", json!({}))]),
        Reply::text("ok"),
    ])?;
    let out = run(
        &server,
        &ws_path,
        &stream_json(&["--allowedTools", "ExitPlanMode"]),
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let results = results_of(&server.requests()[1].body);
    assert!(
        results[0].1 && results[0].2.contains("not in plan mode"),
        "{results:?}"
    );
    Ok(())
}

#[test]
fn background_shells_run_sandboxed_are_read_killed_and_end_with_the_session() -> TestResult {
    let ws = tempfile::tempdir()?;
    let ws_path = std::fs::canonicalize(ws.path())?;
    let outside = tempfile::tempdir()?;
    let escaped = outside.path().join("escaped.txt");
    let marker = ws_path.join("outlived.txt");
    // Unique words so that a leftover process can be found by name.
    let tag = format!("carapace-bg-{}", std::process::id());
    let bash = |id: &str, command: String, background: bool| {
        Block::tool_use(
            id,
            "Bash",
            json!({"command": command, "run_in_background": background}),
        )
    };
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![
            bash("ticker", format!("echo started; sleep 30 # {tag}"), true),
            bash("escape", format!("echo x > {}", escaped.display()), true),
            bash(
                "flood",
                "head -c 3000000 /dev/zero | tr '\\0' a".into(),
                true,
            ),
            bash(
                "lingering",
                format!("sleep 60 && touch {} # {tag}", marker.display()),
                true,
            ),
        ]),
        // Give them a moment (a foreground command), then read them.
        Reply::tool_uses(vec![bash("wait", "sleep 1".into(), false)]),
        Reply::tool_uses(vec![
            Block::tool_use("read1", "BashOutput", json!({"bash_id": "bash_1"})),
            Block::tool_use("read2", "BashOutput", json!({"bash_id": "bash_2"})),
            Block::tool_use("read3", "BashOutput", json!({"bash_id": "bash_3"})),
            Block::tool_use("unknown", "BashOutput", json!({"bash_id": "bash_99"})),
        ]),
        Reply::tool_uses(vec![Block::tool_use(
            "kill",
            "KillShell",
            json!({"shell_id": "bash_1"}),
        )]),
        Reply::tool_uses(vec![Block::tool_use(
            "after",
            "BashOutput",
            json!({"bash_id": "bash_1"}),
        )]),
        Reply::text("done"),
    ])?;
    let out = run(&server, &ws_path, &stream_json(&["--allowedTools", "Bash"]))?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let requests = server.requests();
    let results = results_of(&requests[5].body);
    let by_id = |id: &str| by_id(&results, id);
    assert!(by_id("ticker").2.contains("bash_1"), "{results:?}");
    let read1 = by_id("read1").2;
    assert!(
        read1.contains("<status>running</status>") && read1.contains("started"),
        "{read1}"
    );
    // Writing outside the workspace fails inside the sandbox.
    let read2 = by_id("read2").2;
    assert!(read2.contains("<status>failed</status>"), "{read2}");
    assert!(
        !escaped.exists(),
        "a background command wrote outside the workspace"
    );
    // Output is bounded: 3 MB written, at most 1 MiB kept, the rest counted.
    let read3 = by_id("read3").2;
    assert!(
        read3.contains("bytes of output were dropped"),
        "{}",
        &read3[..200.min(read3.len())]
    );
    assert!(read3.len() < 100_000, "{} characters shown", read3.len());
    assert!(by_id("unknown").1 && by_id("unknown").2.contains("No background shell `bash_99`"));
    assert!(by_id("kill").2.contains("was stopped"), "{results:?}");
    assert!(
        by_id("after").2.contains("<status>killed</status>"),
        "{results:?}"
    );
    // The lingering one ended with the session: nothing of it is left.
    let left = std::process::Command::new("pgrep")
        .args(["-f", &tag])
        .output()?;
    assert!(
        left.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&left.stdout)
    );
    assert!(!marker.exists());

    // Without an allow rule, starting one is asked for — and refused in
    // print mode — like any command.
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![bash("bg", "printf hi".into(), true)]),
        Reply::text("done"),
    ])?;
    let out = run(&server, &ws_path, &stream_json(&[]))?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let denied = &last_line(&out.stdout)?["permission_denials"];
    assert_eq!(denied[0]["tool_name"], "Bash", "{denied}");
    Ok(())
}
