//! `carapace acp` as an editor meets it: JSON-RPC lines on stdin/stdout,
//! played here by a small client of the test's own against the scripted
//! Messages API.

#[path = "acp/editor.rs"]
mod editor;
#[path = "acp/grants.rs"]
mod grants;
mod support;

use editor::{Answer, Editor, Error, WAIT, message_text};
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::TestResult;

#[test]
fn an_editor_prompts_sees_the_turn_and_is_asked_before_a_write() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    let target = cwd.join("notes.txt");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_write",
            "Write",
            json!({"file_path": target, "content": "hello from the editor\n"}),
        )]),
        Reply::text("Written."),
    ])?;
    let mut editor = Editor::start(&server, &cwd, &[], &[])?;
    let init = editor.initialize()?;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    assert_eq!(init["result"]["agentInfo"]["name"], "carapace", "{init}");
    assert_eq!(
        init["result"]["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
        true
    );
    let answer = editor.call("session/new", json!({"cwd": cwd, "mcpServers": []}))?;
    let session = answer["result"]["sessionId"]
        .as_str()
        .ok_or("no id")?
        .to_string();
    let modes: Vec<&str> = answer["result"]["modes"]["availableModes"]
        .as_array()
        .ok_or("no modes")?
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(
        modes,
        ["default", "acceptEdits", "plan", "dontAsk", "auto"],
        "{answer}"
    );
    assert_eq!(answer["result"]["modes"]["currentModeId"], "default");
    wait_for_update(&mut editor, "available_commands_update")?;
    let commands = &editor.updates("available_commands_update")[0]["availableCommands"];
    assert_eq!(commands[0]["name"], "compact", "{commands}");

    let done = editor.prompt(&session, "write the notes")?;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(std::fs::read_to_string(&target)?, "hello from the editor\n");
    let asked: Vec<&Value> = editor
        .seen
        .iter()
        .filter(|l| l["method"] == "session/request_permission")
        .collect();
    assert_eq!(asked.len(), 1, "{:?}", editor.seen);
    let options: Vec<&str> = asked[0]["params"]["options"]
        .as_array()
        .ok_or("no options")?
        .iter()
        .filter_map(|o| o["kind"].as_str())
        .collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
    assert_eq!(asked[0]["params"]["toolCall"]["toolCallId"], "toolu_write");
    let call = &editor.updates("tool_call")[0];
    assert_eq!(call["toolCallId"], "toolu_write");
    assert_eq!(call["kind"], "edit");
    assert_eq!(call["title"], format!("Write {}", target.display()));
    assert_eq!(call["locations"][0]["path"], json!(target));
    assert_eq!(call["rawInput"]["content"], "hello from the editor\n");
    let outcome = &editor.updates("tool_call_update")[0];
    assert_eq!(outcome["status"], "completed", "{outcome}");
    assert_eq!(outcome["content"][0]["type"], "diff");
    assert_eq!(outcome["content"][0]["newText"], "hello from the editor\n");
    assert_eq!(message_text(&editor), "Written.");
    // What the model was sent: the prompt, then the write's result.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(editor.close()?, Some(0));
    Ok(())
}

#[test]
fn a_rejected_call_is_refused_and_an_unanswered_one_too() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    let write = |id: &str, name: &str| {
        Reply::tool_uses(vec![Block::tool_use(
            id,
            "Write",
            json!({"file_path": cwd.join(name), "content": "x"}),
        )])
    };
    let server = ScriptedServer::start(vec![
        write("toolu_a", "a.txt"),
        Reply::text("Understood."),
        write("toolu_b", "b.txt"),
        Reply::text("Nobody answered."),
    ])?;
    let mut editor = Editor::start(&server, &cwd, &[], &["--permission-timeout", "1"])?;
    editor.initialize()?;
    let session = editor.new_session(&cwd)?;
    editor.answer = Answer::Option("reject_once");
    let done = editor.prompt(&session, "write a")?;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(!cwd.join("a.txt").exists(), "a refused write happened");
    let failed = &editor.updates("tool_call_update")[0];
    assert_eq!(failed["status"], "failed", "{failed}");
    // Unanswered past --permission-timeout: refused, and the turn goes on
    // to the model's next answer (a turn waiting on the question forever
    // would leave `prompt` without a response).
    editor.answer = Answer::Never;
    let done = editor.prompt(&session, "write b")?;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(!cwd.join("b.txt").exists(), "an unanswered write happened");
    let updates = editor.updates("tool_call_update");
    let last = updates.last().ok_or("no update")?;
    assert_eq!(last["status"], "failed", "{last}");
    // The model was told the call was refused.
    let sent = &server.requests()[3].body["messages"];
    let result = sent
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_b")
        .ok_or_else(|| format!("no result for toolu_b: {sent}"))?;
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(editor.close()?, Some(0));
    Ok(())
}

/// A reply whose stream stops for `pause` after its first text block.
fn slow_text(text: &str, pause: Duration) -> Reply {
    Reply::text(text).after_block(0, scripted_server::Step::Pause(pause))
}

/// Reads until an update of `kind` arrives.
fn wait_for_update(editor: &mut Editor, kind: &str) -> Result<(), Error> {
    let deadline = Instant::now() + WAIT;
    while editor.updates(kind).is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = editor.lines.recv_timeout(left)?;
        editor.seen.push(line);
    }
    Ok(())
}

#[test]
fn cancel_ends_the_turn_a_second_prompt_is_refused_and_another_sessions_waits() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    let server = ScriptedServer::start(vec![
        slow_text("Thinking it over", Duration::from_secs(30)),
        Reply::text("Back again."),
        Reply::text("One."),
        Reply::text("Two."),
    ])?;
    let mut editor = Editor::start(&server, &cwd, &[], &["--max-running", "1"])?;
    editor.initialize()?;
    let session = editor.new_session(&cwd)?;
    let other = editor.new_session(&cwd)?;
    let running = editor.send(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    )?;
    wait_for_update(&mut editor, "agent_message_chunk")?;
    let refused = editor.prompt(&session, "and this too")?;
    assert!(
        refused["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("already running")),
        "{refused}"
    );
    // One turn at a time in this process: another session's prompt waits
    // for the slot, and a cancel while it waits ends it unrun.
    let waiting = editor.send(
        "session/prompt",
        json!({"sessionId": other, "prompt": [{"type": "text", "text": "me too"}]}),
    )?;
    editor.notify("session/cancel", json!({"sessionId": other}))?;
    let unrun = editor.response(waiting)?;
    assert_eq!(unrun["result"]["stopReason"], "cancelled", "{unrun}");
    assert_eq!(
        server.requests().len(),
        1,
        "the waiting prompt reached the model"
    );
    editor.notify("session/cancel", json!({"sessionId": session}))?;
    let ended = editor.response(running)?;
    assert_eq!(ended["result"]["stopReason"], "cancelled", "{ended}");
    // Ended while the model's stream was still paused, not after it.
    assert!(
        !server.finished_streams().contains(&1),
        "the cancel waited for the stream"
    );
    // The session goes on.
    let next = editor.prompt(&session, "again")?;
    assert_eq!(next["result"]["stopReason"], "end_turn", "{next}");
    assert!(message_text(&editor).ends_with("Back again."));
    // A prompt that waits for the slot runs once it frees.
    let slow = editor.send(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "one"}]}),
    )?;
    let queued = editor.send(
        "session/prompt",
        json!({"sessionId": other, "prompt": [{"type": "text", "text": "two"}]}),
    )?;
    for id in [slow, queued] {
        let answer = editor.response(id)?;
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    }
    assert_eq!(editor.close()?, Some(0));
    Ok(())
}

#[test]
fn sessions_keep_their_own_mode_and_the_caps_refuse_with_words() -> TestResult {
    let one = tempfile::tempdir()?;
    let two = tempfile::tempdir()?;
    let (one, two) = (one.path().canonicalize()?, two.path().canonicalize()?);
    let write = |dir: &std::path::Path| {
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_w",
            "Write",
            json!({"file_path": dir.join("f.txt"), "content": "x"}),
        )])
    };
    let server = ScriptedServer::start(vec![
        write(&one),
        Reply::text("one done"),
        write(&two),
        Reply::text("two done"),
    ])?;
    let mut editor = Editor::start(&server, &one, &[], &["--max-sessions", "2"])?;
    editor.initialize()?;
    let first = editor.new_session(&one)?;
    let second = editor.new_session(&two)?;
    assert_ne!(first, second);
    let third = editor.call("session/new", json!({"cwd": one, "mcpServers": []}))?;
    assert!(
        third["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("--max-sessions")),
        "{third}"
    );
    let changed = editor.call(
        "session/set_mode",
        json!({"sessionId": first, "modeId": "acceptEdits"}),
    )?;
    assert!(changed.get("result").is_some(), "{changed}");
    assert_eq!(
        editor.updates("current_mode_update")[0]["currentModeId"],
        "acceptEdits"
    );
    // acceptEdits in the first: its write is not asked about.
    editor.prompt(&first, "write")?;
    let asked = |editor: &Editor| {
        editor
            .seen
            .iter()
            .filter(|l| l["method"] == "session/request_permission")
            .count()
    };
    assert_eq!(asked(&editor), 0);
    assert!(one.join("f.txt").exists());
    // The second is still in the default mode: asked.
    editor.prompt(&second, "write")?;
    assert_eq!(asked(&editor), 1);
    assert!(two.join("f.txt").exists());
    // Closing one frees its place under the cap; it is gone.
    let closed = editor.call("session/close", json!({"sessionId": second}))?;
    assert!(closed.get("result").is_some(), "{closed}");
    let gone = editor.prompt(&second, "hello?")?;
    assert!(gone.get("error").is_some(), "{gone}");
    editor.new_session(&two)?;
    assert_eq!(editor.close()?, Some(0));
    Ok(())
}

#[test]
fn bad_input_gets_json_rpc_errors_and_closing_stdin_mid_turn_ends_cleanly() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    let server = ScriptedServer::start(vec![slow_text("Working", Duration::from_secs(30))])?;
    let mut editor = Editor::start(&server, &cwd, &[], &[])?;
    editor.initialize()?;
    editor.write("{this is not json")?;
    let parse_error = editor.lines.recv_timeout(WAIT)?;
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    let unknown = editor.call("session/fly", json!({}))?;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let nobody = editor.prompt("no-such-session", "hello")?;
    assert!(
        nobody["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("no session")),
        "{nobody}"
    );
    // What is not there is "not found", not the client's mistake.
    assert_eq!(nobody["error"]["code"], -32002, "{nobody}");
    let missing = editor.call(
        "session/load",
        json!({"sessionId": "no-such-session", "cwd": cwd, "mcpServers": []}),
    )?;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let empty = editor.call(
        "session/new",
        json!({"cwd": "relative/path", "mcpServers": []}),
    )?;
    assert_eq!(empty["error"]["code"], -32602, "{empty}");
    let session = editor.new_session(&cwd)?;
    editor.send(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    )?;
    wait_for_update(&mut editor, "agent_message_chunk")?;
    assert_eq!(editor.close()?, Some(0));
    assert!(
        !server.finished_streams().contains(&1),
        "the end waited for the stream"
    );
    // The prompt reached the transcript before the end.
    let transcripts = support::carapace_home().join(".carapace/projects");
    let found = walk(&transcripts)
        .into_iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n == format!("{session}.jsonl").as_str())
        })
        .ok_or("no transcript")?;
    let text = std::fs::read_to_string(found)?;
    assert!(text.contains("\"go\""), "{text}");
    for line in text.lines() {
        serde_json::from_str::<Value>(line)?;
    }
    Ok(())
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        match path.is_dir() {
            true => found.extend(walk(&path)),
            false => found.push(path),
        }
    }
    found
}

#[test]
fn a_loaded_session_replays_its_history_and_goes_on_from_it() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    std::fs::write(cwd.join("hello.txt"), "hi there\n")?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_read",
            "Read",
            json!({"file_path": cwd.join("hello.txt")}),
        )]),
        Reply::text("It says hi."),
        Reply::text("Still here."),
    ])?;
    let mut first = Editor::start(&server, &cwd, &[], &[])?;
    let init = first.initialize()?;
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
    let session = first.new_session(&cwd)?;
    first.prompt(&session, "read hello.txt")?;
    assert_eq!(first.close()?, Some(0));

    let mut second = Editor::start(&server, &cwd, &[], &[])?;
    second.initialize()?;
    let loaded = second.call(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    )?;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let said: Vec<String> = second
        .updates("user_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(said, ["read hello.txt"]);
    assert_eq!(second.updates("tool_call")[0]["toolCallId"], "toolu_read");
    let result = &second.updates("tool_call_update")[0];
    assert_eq!(result["status"], "completed");
    assert!(
        result["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("hi there")),
        "{result}"
    );
    assert_eq!(message_text(&second), "It says hi.");
    // Loading it twice on one connection is refused.
    let again = second.call(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    )?;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    // The next prompt goes on from the history.
    let next = second.prompt(&session, "anything else?")?;
    assert_eq!(next["result"]["stopReason"], "end_turn", "{next}");
    let sent = server.requests().last().ok_or("no request")?.body.clone();
    let messages = sent["messages"].as_array().ok_or("no messages")?;
    assert_eq!(messages.len(), 5, "{sent}");
    assert_eq!(second.close()?, Some(0));
    Ok(())
}

#[test]
fn a_model_error_ends_that_turn_only() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    let server = ScriptedServer::start(vec![
        Reply::status(
            400,
            "invalid_request_error",
            "the scripted request was refused",
        ),
        Reply::text("The other one is fine."),
        Reply::text("And this one recovered."),
    ])?;
    let mut editor = Editor::start(&server, &cwd, &[], &[])?;
    editor.initialize()?;
    let failing = editor.new_session(&cwd)?;
    let other = editor.new_session(&cwd)?;
    let failed = editor.prompt(&failing, "hello")?;
    assert!(
        failed["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("the scripted request was refused")),
        "{failed}"
    );
    let fine = editor.prompt(&other, "hello")?;
    assert_eq!(fine["result"]["stopReason"], "end_turn", "{fine}");
    let again = editor.prompt(&failing, "hello again")?;
    assert_eq!(again["result"]["stopReason"], "end_turn", "{again}");
    assert!(message_text(&editor).ends_with("And this one recovered."));
    assert_eq!(editor.close()?, Some(0));
    Ok(())
}

#[test]
fn session_flags_after_the_double_dash_shape_every_session() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    let server = ScriptedServer::start(vec![])?;
    let mut editor = Editor::start(&server, &cwd, &["--permission-mode", "acceptEdits"], &[])?;
    editor.initialize()?;
    let answer = editor.call("session/new", json!({"cwd": cwd, "mcpServers": []}))?;
    assert_eq!(
        answer["result"]["modes"]["currentModeId"], "acceptEdits",
        "{answer}"
    );
    assert_eq!(editor.close()?, Some(0));
    // Before `acp`, a flag would make `acp` a prompt: refused with words.
    let refused = support::run(&server, &cwd, &["--model", "x", "acp"])?;
    assert_ne!(refused.status, Some(0));
    assert!(refused.stderr.contains("acp --"), "{}", refused.stderr);
    assert!(server.requests().is_empty(), "`acp` was taken as a prompt");
    let refused = support::run(&server, &cwd, &["acp", "--", "a prompt"])?;
    assert_ne!(refused.status, Some(0));
    assert!(
        refused.stderr.contains("session flags only"),
        "{}",
        refused.stderr
    );
    Ok(())
}

#[test]
fn the_model_and_the_mode_are_config_options_a_client_changes() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    let server = ScriptedServer::start(vec![Reply::text("first"), Reply::text("second")])?;
    let flags = [
        "--model",
        "claude-sonnet-4-5",
        "--fallback-model",
        "claude-test-fallback",
    ];
    let mut editor = Editor::start(&server, &cwd, &flags, &[])?;
    editor.initialize()?;
    let answer = editor.call("session/new", json!({"cwd": cwd, "mcpServers": []}))?;
    let session = answer["result"]["sessionId"]
        .as_str()
        .ok_or("no id")?
        .to_string();
    let options = &answer["result"]["configOptions"];
    assert_eq!(options[0]["id"], "mode", "{options}");
    assert_eq!(options[0]["category"], "mode");
    assert_eq!(options[0]["currentValue"], "default");
    assert_eq!(options[1]["id"], "model");
    assert_eq!(options[1]["category"], "model");
    assert_eq!(options[1]["type"], "select");
    assert_eq!(options[1]["currentValue"], "claude-sonnet-4-5");
    let offered: Vec<&str> = options[1]["options"]
        .as_array()
        .ok_or("no models")?
        .iter()
        .filter_map(|o| o["value"].as_str())
        .collect();
    assert!(offered.contains(&"claude-test-fallback"), "{offered:?}");
    assert!(offered.contains(&"claude-haiku-4-5"), "{offered:?}");

    editor.prompt(&session, "one")?;
    let set = |value: &str| json!({"sessionId": session, "configId": "model", "value": value});
    let changed = editor.call("session/set_config_option", set("claude-haiku-4-5"))?;
    assert_eq!(
        changed["result"]["configOptions"][1]["currentValue"], "claude-haiku-4-5",
        "{changed}"
    );
    editor.prompt(&session, "two")?;
    let models: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(
        models,
        [json!("claude-sonnet-4-5"), json!("claude-haiku-4-5")]
    );

    // What is not offered is refused, and nothing changes.
    for refused in [
        set("gpt-5"),
        json!({"sessionId": session, "configId": "model", "type": "boolean", "value": true}),
        json!({"sessionId": session, "configId": "temperature", "value": "hot"}),
        json!({"sessionId": session, "configId": "mode", "value": "yolo"}),
        json!({"sessionId": session, "configId": "mode", "value": "bypassPermissions"}),
    ] {
        let answer = editor.call("session/set_config_option", refused.clone())?;
        assert_eq!(answer["error"]["code"], -32602, "{refused} → {answer}");
    }
    let changed = editor.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "mode", "value": "plan"}),
    )?;
    assert_eq!(
        changed["result"]["configOptions"][0]["currentValue"], "plan",
        "{changed}"
    );
    assert_eq!(
        changed["result"]["configOptions"][1]["currentValue"],
        "claude-haiku-4-5"
    );
    wait_for_update(&mut editor, "config_option_update")?;
    let told = &editor.updates("config_option_update")[0]["configOptions"];
    assert_eq!(told[0]["currentValue"], "plan", "{told}");
    assert_eq!(
        editor.updates("current_mode_update")[0]["currentModeId"],
        "plan"
    );
    assert_eq!(editor.close()?, Some(0));
    Ok(())
}

#[test]
fn an_image_in_a_prompt_goes_to_the_model_before_the_text() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    let server = ScriptedServer::start(vec![Reply::text("A red pixel.")])?;
    let mut editor = Editor::start(&server, &cwd, &[], &[])?;
    let init = editor.initialize()?;
    let prompts = &init["result"]["agentCapabilities"]["promptCapabilities"];
    assert_eq!(prompts["image"], true, "{init}");
    assert_ne!(prompts["audio"], true, "{init}");
    let session = editor.new_session(&cwd)?;
    // A 1×1 PNG.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    let image = json!({"type": "image", "mimeType": "image/png", "data": png});
    let text = json!({"type": "text", "text": "what is this?"});
    let prompt = |blocks: Value| json!({"sessionId": session, "prompt": blocks});
    let done = editor.call("session/prompt", prompt(json!([image, text])))?;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let sent = &server.requests()[0].body["messages"];
    let content = sent[sent.as_array().ok_or("no messages")?.len() - 1]["content"].clone();
    let image_at = content
        .as_array()
        .ok_or("no blocks")?
        .iter()
        .position(|b| b["type"] == "image");
    let text_at = content
        .as_array()
        .ok_or("no blocks")?
        .iter()
        .position(|b| b["text"] == "what is this?");
    assert!(image_at.is_some() && image_at < text_at, "{content}");
    let image_at = image_at.ok_or("no image")?;
    assert_eq!(content[image_at]["source"]["media_type"], "image/png");
    assert_eq!(content[image_at]["source"]["data"], png);

    // What the model cannot read is refused before any request.
    for bad in [
        json!([{"type": "image", "mimeType": "image/tiff", "data": png}, text]),
        json!([{"type": "image", "mimeType": "image/png", "data": "%%%"}]),
        json!([{"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}]),
    ] {
        let answer = editor.call("session/prompt", prompt(bad.clone()))?;
        assert_eq!(answer["error"]["code"], -32602, "{bad} → {answer}");
    }
    assert_eq!(server.requests().len(), 1);
    assert_eq!(editor.close()?, Some(0));
    Ok(())
}

/// The same session — model, mode, rules, directory — asked for by print
/// mode's flags, by a worker's job and by an ACP client sends the model
/// the same first request: the three front ends open one spec the same
/// way.
#[test]
fn one_session_from_print_mode_a_worker_and_acp_sends_the_same_first_request() -> TestResult {
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().join("project");
    std::fs::create_dir(&cwd)?;
    let cwd = cwd.canonicalize()?;
    std::fs::write(cwd.join("CLAUDE.md"), "Answer briefly.\n")?;
    let config = workspace.path().join("config");
    let server = ScriptedServer::start(vec![
        Reply::text("from print mode"),
        Reply::text("from the worker"),
        Reply::text("from ACP"),
    ])?;
    let flags = [
        "--model",
        "claude-spec-test",
        "--permission-mode",
        "dontAsk",
        "--allowedTools",
        "Read",
    ];
    let printed = support::against(&server, &cwd)
        .env("CARAPACE_CONFIG_DIR", &config)
        .args([
            "-p",
            "same prompt",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .args(flags)
        .output()?;
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let job = json!({"prompt": "same prompt", "workspace": cwd, "model": "claude-spec-test",
        "permissionMode": "dontAsk", "allowedTools": ["Read"]});
    let job_file = workspace.path().join("job.json");
    std::fs::write(&job_file, job.to_string())?;
    let worked = support::against(&server, workspace.path())
        .env("CARAPACE_CONFIG_DIR", &config)
        .arg("worker")
        .arg(&job_file)
        .output()?;
    assert!(
        worked.status.success(),
        "{}",
        String::from_utf8_lossy(&worked.stderr)
    );
    let mut editor = Editor::start_with(&server, workspace.path(), &flags, &config)?;
    editor.initialize()?;
    let session = editor.new_session(&cwd)?;
    let done = editor.prompt(&session, "same prompt")?;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(editor.close()?, Some(0));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = requests[0].body.clone();
    assert_eq!(first["model"], "claude-spec-test");
    assert!(
        first["messages"].to_string().contains("Answer briefly."),
        "{first}"
    );
    assert!(
        first["tools"].as_array().is_some_and(|t| t.len() > 5),
        "{first}"
    );
    for (who, request) in [("the worker", &requests[1]), ("ACP", &requests[2])] {
        for part in [
            "model",
            "system",
            "tools",
            "messages",
            "max_tokens",
            "thinking",
        ] {
            assert_eq!(
                request.body[part], first[part],
                "{who} sent another `{part}` than print mode"
            );
        }
    }
    Ok(())
}
