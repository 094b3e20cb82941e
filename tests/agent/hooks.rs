//! Hooks through the loop: real hook components (the typed `hook-probe`
//! and the Claude Code–protocol `command-hook-probe`), loaded from settings
//! as the CLI loads them, against the scripted Messages server. Each test
//! asserts what the model was sent, not only the final line.
//!
//! The escape attempts at the end run hooks that try to reach what they
//! were not granted; each has a granted twin that succeeds, so a sandbox
//! that refuses everything cannot pass by accident.

mod support;

use carapace::agent::{Terminal, Transition};
use carapace::cli::print::Prompts;
use carapace::hooks::HookEvent;
use carapace::policy::{
    Anchors, PermissionMode, Policy, PolicyConfig, Rule, RuleKind, RuleSet, RuleSource, SourceKind,
};
use carapace::sandbox::{Sandbox, SandboxConfig};
use scripted_server::{Block, Reply};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{
    Run, Setup, TestResult, command_probe, hook_on, hook_script, texts, typed_probe, workspace,
};

fn one(prompt: &str) -> Prompts {
    Prompts::One(prompt.into())
}

fn read_call(id: &str, path: &Path) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        id,
        "Read",
        json!({"file_path": path.display().to_string()}),
    )])
}

/// The tool_result block for `id` in request `n`.
fn tool_result(run: &Run, n: usize, id: &str) -> Value {
    for message in run.messages(n).as_array().cloned().unwrap_or_default() {
        for block in message["content"].as_array().cloned().unwrap_or_default() {
            if block["type"] == "tool_result" && block["tool_use_id"] == id {
                return block;
            }
        }
    }
    Value::Null
}

fn content_text(block: &Value) -> String {
    match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The message of request `n` that holds the tool results.
fn results_message(run: &Run, n: usize) -> Value {
    run.messages(n)
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or(Value::Null)
}

fn typed(ws: &Path) -> Value {
    typed_probe(ws, json!({}))
}

// ---- PreToolUse ---------------------------------------------------------------

#[tokio::test]
async fn a_pre_tool_use_deny_is_an_error_result_carrying_the_hooks_reason() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("secret.txt"), "SECRET_CONTENT\n")?;
    hook_script(
        &ws,
        json!({"PreToolUse": {"decision": "deny", "reason": "HOOK_DENY_REASON: not this file"}}),
    )?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("secret.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(hook_on("PreToolUse", "Read", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    let result = tool_result(&run, 1, "toolu_1");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["content"], "HOOK_DENY_REASON: not this file");
    assert!(!run.messages(1).to_string().contains("SECRET_CONTENT"));
    let denied = run.lines_of("system", Some("permission_denied"));
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0]["decided_by"], "hook");
    assert_eq!(
        run.result()["permission_denials"][0]["tool_use_id"],
        "toolu_1"
    );
    let started = run.lines_of("system", Some("hook_started"));
    assert_eq!(started[0]["hook_name"], "PreToolUse:Read");
    assert_eq!(
        run.lines_of("system", Some("hook_response"))[0]["outcome"],
        "success"
    );
    Ok(())
}

#[tokio::test]
async fn a_claude_code_protocol_hook_denies_with_exit_code_2_and_json() -> TestResult {
    for (step, reason) in [
        (
            json!({"stderr": "rm -r is not allowed here", "exit": 2}),
            "rm -r is not allowed here",
        ),
        (
            json!({"stdout": {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                  "permissionDecision": "deny", "permissionDecisionReason": "JSON_DENY"}}}),
            "JSON_DENY",
        ),
    ] {
        let (_dir, ws) = workspace()?;
        std::fs::write(ws.join("a.txt"), "alpha\n")?;
        hook_script(&ws, json!({ "PreToolUse": step }))?;
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("a.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_settings = Some(hook_on("PreToolUse", "Read|Write", command_probe(&ws)));
        let run = support::run(setup, &ws, one("read it")).await?;
        let result = tool_result(&run, 1, "toolu_1");
        assert_eq!(
            (result["is_error"].clone(), content_text(&result)),
            (json!(true), reason.to_string())
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_command_hook_reads_claude_codes_fields_on_stdin() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(&ws, json!({"PreToolUse": {"echo": true}}))?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(hook_on("PreToolUse", "", command_probe(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    let response = run.lines_of("system", Some("hook_response"));
    assert_eq!(
        response[0]["exit_code"], 1,
        "echo exits 1: a non-blocking error"
    );
    let mut stdin: Value = serde_json::from_str(response[0]["stderr"].as_str().unwrap_or(""))?;
    // The prompt's id is new each run: it must be there, and is compared
    // as a uuid.
    let prompt_id = stdin["prompt_id"].take();
    assert!(
        prompt_id
            .as_str()
            .is_some_and(|id| uuid::Uuid::parse_str(id).is_ok()),
        "{prompt_id}"
    );
    assert_eq!(
        stdin,
        json!({
            "session_id": "00000000-0000-4000-8000-000000000000",
            "transcript_path": "",
            "cwd": ws.display().to_string(),
            "prompt_id": null,
            "permission_mode": "bypassPermissions",
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": ws.join("a.txt").display().to_string()},
            "tool_use_id": "toolu_1",
        })
    );
    // A non-blocking error: the call ran.
    assert_eq!(
        content_text(&tool_result(&run, 1, "toolu_1")),
        "1\talpha\n2\t"
    );
    Ok(())
}

#[tokio::test]
async fn updated_input_is_validated_again_then_used() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("asked.txt"), "ASKED\n")?;
    std::fs::write(ws.join("rewritten.txt"), "REWRITTEN\n")?;
    let rewritten = ws.join("rewritten.txt").display().to_string();
    for (update, expect_error, expect_text) in [
        (json!({"file_path": rewritten}), false, "REWRITTEN"),
        (json!({"file_path": 5}), true, "fails its schema"),
        (
            json!({"file_path": rewritten, "extra": true}),
            true,
            "fails its schema",
        ),
    ] {
        hook_script(
            &ws,
            json!({"PreToolUse": {"decision": "allow", "updated_input": update}}),
        )?;
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("asked.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_settings = Some(hook_on("PreToolUse", "Read", typed(&ws)));
        let run = support::run(setup, &ws, one("read it")).await?;
        let result = tool_result(&run, 1, "toolu_1");
        let text = content_text(&result);
        assert_eq!(result["is_error"] == true, expect_error, "{update}: {text}");
        assert!(text.contains(expect_text), "{update}: {text}");
        assert!(!text.contains("ASKED"), "the original input never ran");
    }
    Ok(())
}

fn default_mode_policy(
    ws: &Path,
    deny: &[&str],
    ask: &[&str],
) -> Result<Policy, Box<dyn std::error::Error>> {
    let source = RuleSource {
        kind: SourceKind::CliFlag,
        file: None,
    };
    let anchors = Anchors {
        cwd: ws.to_path_buf(),
        home: PathBuf::from("/nonexistent-home"),
        project: ws.to_path_buf(),
    };
    let rules = deny
        .iter()
        .map(|text| (text, RuleKind::Deny))
        .chain(ask.iter().map(|text| (text, RuleKind::Ask)))
        .map(|(text, kind)| Rule::parse(text, kind, source.clone(), &anchors))
        .collect::<Result<Vec<_>, _>>()?;
    let mut config = PolicyConfig::new(PermissionMode::Default, ws);
    config.rules = RuleSet::new(rules);
    Ok(Policy::from_config(config))
}

fn probe_create(id: &str, path: &Path) -> Reply {
    let target = path.display().to_string();
    Reply::tool_uses(vec![Block::tool_use(
        id,
        "Probe",
        json!({"attempts": [{"op": "create", "path": target}],
               "needs": [{"kind": "write-file", "target": target}]}),
    )])
}

#[tokio::test]
async fn a_hook_allow_answers_the_default_question_but_never_beats_a_deny_or_ask_rule() -> TestResult
{
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("secret.txt"), "SECRET\n")?;
    std::fs::write(ws.join("asked.txt"), "ASKED\n")?;
    hook_script(
        &ws,
        json!({"PreToolUse": {"decision": "allow", "reason": "trusted"}}),
    )?;
    for with_hook in [false, true] {
        let out = ws.join(format!("out-{with_hook}.txt"));
        let mut setup = Setup::new(vec![
            probe_create("toolu_w", &out),
            read_call("toolu_r", &ws.join("secret.txt")),
            read_call("toolu_a", &ws.join("asked.txt")),
            Reply::text("ok"),
        ]);
        setup.policy = Some(default_mode_policy(
            &ws,
            &["Read(./secret.txt)"],
            &["Read(./asked.txt)"],
        )?);
        if with_hook {
            setup.hook_settings = Some(hook_on("PreToolUse", "", typed(&ws)));
        }
        let run = support::run(setup, &ws, one("go")).await?;
        // Writing in default mode asks; print mode cannot ask, so only the
        // hook's allow lets it through.
        assert_eq!(out.exists(), with_hook, "with_hook={with_hook}");
        let read = tool_result(&run, 2, "toolu_r");
        assert_eq!(
            read["is_error"], true,
            "the deny rule wins over the hook's allow"
        );
        assert!(content_text(&read).contains("denied"), "{read}");
        let asked = tool_result(&run, 3, "toolu_a");
        assert_eq!(asked["is_error"], true, "the ask rule still asks: {asked}");
        assert!(!content_text(&asked).contains("ASKED"));
    }
    Ok(())
}

#[tokio::test]
async fn a_hook_ask_asks_even_in_bypass_mode() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(
        &ws,
        json!({"PreToolUse": {"decision": "ask", "reason": "looks risky"}}),
    )?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(hook_on("PreToolUse", "", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    let result = tool_result(&run, 1, "toolu_1");
    assert_eq!(result["is_error"], true);
    let text = content_text(&result);
    assert!(
        text.contains("asks for approval") && text.contains("looks risky"),
        "{text}"
    );
    Ok(())
}

#[tokio::test]
async fn deny_wins_across_hooks_that_run_in_parallel() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    let (one_dir, two_dir) = (ws.join("one"), ws.join("two"));
    std::fs::create_dir_all(&one_dir)?;
    std::fs::create_dir_all(&two_dir)?;
    let mark = |d: &Path| d.join("here").display().to_string();
    // Each typed hook may write only its own directory and read the other's:
    // each waits for the other's mark, which only a hook running at the same
    // time can leave.
    hook_script(
        &ws,
        json!({"PreToolUse": {"decision": "allow", "attempts": [
            {"op": "create", "path": mark(&one_dir)},
            {"op": "create", "path": mark(&two_dir)},
            {"op": "wait_for", "path": mark(&one_dir), "timeout_ms": 20000},
            {"op": "wait_for", "path": mark(&two_dir), "timeout_ms": 20000},
        ]},
        "PostToolUse": {}}),
    )?;
    let grants = |w: &Path, r: &Path| json!({"write": [w.display().to_string()], "read": [r.display().to_string()]});
    let settings = json!({"PreToolUse": [{"matcher": "Read", "hooks": [
        typed_probe(&ws, grants(&one_dir, &two_dir)),
        typed_probe(&ws, grants(&two_dir, &one_dir)),
    ]}]});
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(settings);
    let run = support::run(setup, &ws, one("read it")).await?;
    let reports: Vec<Vec<Value>> = texts(&results_message(&run, 1))
        .iter()
        .filter_map(|t| t.find('[').map(|i| &t[i..]))
        .filter_map(|t| {
            t.rfind(']')
                .and_then(|end| serde_json::from_str(&t[..=end]).ok())
        })
        .collect();
    assert_eq!(reports.len(), 2, "both hooks answered: {reports:?}");
    for report in &reports {
        let waits: Vec<&Value> = report.iter().filter(|r| r["op"] == "wait_for").collect();
        assert!(
            waits.iter().all(|w| w["ok"] == true),
            "the hooks overlapped: {report:?}"
        );
        let created = report
            .iter()
            .filter(|r| r["op"] == "create" && r["ok"] == true)
            .count();
        assert_eq!(created, 1, "each wrote only its own directory: {report:?}");
    }
    assert_eq!(
        content_text(&tool_result(&run, 1, "toolu_1")),
        "1\talpha\n2\t",
        "both allowed"
    );

    // A typed allow and a Claude Code–protocol deny (one script, read by
    // both kinds): the deny wins.
    hook_script(
        &ws,
        json!({"PreToolUse": {"decision": "allow",
               "stdout": {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "ONE_DENY"}}}}),
    )?;
    let settings =
        json!({"PreToolUse": [{"matcher": "Read", "hooks": [typed(&ws), command_probe(&ws)]}]});
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(settings);
    let run = support::run(setup, &ws, one("read it")).await?;
    let result = tool_result(&run, 1, "toolu_1");
    assert_eq!(
        (result["is_error"].clone(), content_text(&result)),
        (json!(true), "ONE_DENY".to_string())
    );
    Ok(())
}

#[tokio::test]
async fn a_deferred_single_call_ends_the_run_with_tool_deferred() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(&ws, json!({"PreToolUse": {"decision": "defer"}}))?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("never"),
    ]);
    setup.hook_settings = Some(hook_on("PreToolUse", "", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    assert_eq!(run.outcome.terminal, Terminal::ToolDeferred);
    assert_eq!(run.requests.len(), 1);
    assert_eq!(run.result()["terminal_reason"], "tool_deferred");
    assert_eq!(run.result()["is_error"], false);
    assert!(
        run.lines_of("user", None).is_empty(),
        "the deferred call has no result yet"
    );

    // Two calls: deferring one is refused (it is reported as not run).
    let two = Reply::tool_uses(vec![
        Block::tool_use(
            "toolu_a",
            "Read",
            json!({"file_path": ws.join("a.txt").display().to_string()}),
        ),
        Block::tool_use(
            "toolu_b",
            "Read",
            json!({"file_path": ws.join("a.txt").display().to_string()}),
        ),
    ]);
    let mut setup = Setup::new(vec![two, Reply::text("done")]);
    setup.hook_settings = Some(hook_on("PreToolUse", "", typed(&ws)));
    let run = run_two(setup, &ws).await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    for id in ["toolu_a", "toolu_b"] {
        let result = tool_result(&run, 1, id);
        assert_eq!(result["is_error"], true);
        assert!(content_text(&result).contains("deferred"));
    }
    Ok(())
}

async fn run_two(setup: Setup, ws: &Path) -> Result<Run, Box<dyn std::error::Error>> {
    support::run(setup, ws, one("read twice")).await
}

// ---- PostToolUse ----------------------------------------------------------------

#[tokio::test]
async fn post_tool_use_context_goes_next_to_the_tool_result() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(
        &ws,
        json!({"PostToolUse": {"context": "POST_CONTEXT_MARKER"}}),
    )?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(hook_on("PostToolUse", "Read", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    let message = results_message(&run, 1);
    assert_eq!(message["content"][0]["type"], "tool_result");
    assert_eq!(
        content_text(&message["content"][0]),
        "1\talpha\n2\t",
        "the result is unchanged"
    );
    assert_eq!(message["content"][1]["type"], "text");
    assert!(
        content_text(&json!({"content": [message["content"][1].clone()]}))
            .contains("POST_CONTEXT_MARKER")
    );
    Ok(())
}

#[tokio::test]
async fn updated_tool_output_replaces_a_valid_output_and_keeps_an_invalid_one() -> TestResult {
    for (output, expected, warned) in [
        (json!("REPLACED OUTPUT"), json!("REPLACED OUTPUT"), false),
        (
            json!([{"type": "text", "text": "BLOCKS"}]),
            json!([{"type": "text", "text": "BLOCKS"}]),
            false,
        ),
        (json!(42), json!("1\talpha\n2\t"), true),
        (
            json!([{"type": "video", "url": "x"}]),
            json!("1\talpha\n2\t"),
            true,
        ),
    ] {
        let (_dir, ws) = workspace()?;
        std::fs::write(ws.join("a.txt"), "alpha\n")?;
        hook_script(&ws, json!({"PostToolUse": {"updated_output": output}}))?;
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("a.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_settings = Some(hook_on("PostToolUse", "", typed(&ws)));
        let run = support::run(setup, &ws, one("read it")).await?;
        assert_eq!(
            tool_result(&run, 1, "toolu_1")["content"],
            expected,
            "{output}"
        );
        let warnings = run.lines_of("system", Some("warning"));
        assert_eq!(
            warnings.len(),
            usize::from(warned),
            "{output}: {warnings:?}"
        );
        if warned {
            assert!(
                warnings[0]["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("original output was kept")
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_post_tool_use_block_tells_the_model_why() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(
        &ws,
        json!({"PostToolUse": {"block": "LINT_FAILED: fix the style"}}),
    )?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(hook_on("PostToolUse", "", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    assert_eq!(
        run.outcome.transitions,
        vec![Transition::NextTurn],
        "the loop goes on"
    );
    assert!(
        texts(&results_message(&run, 1))
            .join("")
            .contains("LINT_FAILED: fix the style")
    );
    Ok(())
}

#[tokio::test]
async fn continue_false_from_post_tool_use_stops_the_run_after_the_batch() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(
        &ws,
        json!({"PostToolUse": {"stdout": {"continue": false, "stopReason": "HALT_REASON", "systemMessage": "SYSMSG"}}}),
    )?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("never"),
    ]);
    setup.hook_settings = Some(hook_on("PostToolUse", "Read", command_probe(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    assert_eq!(run.outcome.terminal, Terminal::HookStopped);
    assert_eq!(run.requests.len(), 1, "no request after the stop");
    assert_eq!(run.result()["terminal_reason"], "hook_stopped");
    assert_eq!(run.result()["num_turns"], 2);
    assert_eq!(run.result()["is_error"], false);
    assert_eq!(
        run.lines_of("user", None).len(),
        1,
        "the tool result was still printed"
    );
    let notices: Vec<String> = run
        .lines_of("system", Some("informational"))
        .iter()
        .map(|l| l["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(notices.iter().any(|n| n == "SYSMSG"), "{notices:?}");
    assert!(
        notices.iter().any(|n| n.contains("HALT_REASON")),
        "{notices:?}"
    );
    Ok(())
}

#[tokio::test]
async fn post_tool_use_failure_runs_on_a_failed_call_with_its_error() -> TestResult {
    let (_dir, ws) = workspace()?;
    hook_script(
        &ws,
        json!({"PostToolUseFailure": {"echo": true}, "PostToolUse": {"echo": true}}),
    )?;
    let missing = ws.join("missing.txt");
    let mut setup = Setup::new(vec![read_call("toolu_1", &missing), Reply::text("ok")]);
    setup.hook_settings = Some(json!({
        "PostToolUse": [{"hooks": [typed(&ws)]}],
        "PostToolUseFailure": [{"hooks": [typed(&ws)]}],
    }));
    let run = support::run(setup, &ws, one("read it")).await?;
    let context = texts(&results_message(&run, 1)).join("");
    assert!(context.contains("PostToolUseFailure"), "{context}");
    assert!(
        !context.contains("\"event\":\"PostToolUse\""),
        "only the failure event ran"
    );
    assert!(
        context.contains("does not exist") || context.contains("not found"),
        "{context}"
    );
    Ok(())
}

#[tokio::test]
async fn post_tool_batch_context_joins_the_results_and_a_block_stops_the_run() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    hook_script(&ws, json!({"PostToolBatch": {"context": "BATCH_CONTEXT"}}))?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("ok"),
    ]);
    setup.hook_settings = Some(hook_on("PostToolBatch", "", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert!(
        texts(&results_message(&run, 1))
            .join("")
            .contains("BATCH_CONTEXT")
    );

    hook_script(&ws, json!({"PostToolBatch": {"block": "audit says stop"}}))?;
    let mut setup = Setup::new(vec![
        read_call("toolu_1", &ws.join("a.txt")),
        Reply::text("never"),
    ]);
    setup.hook_settings = Some(hook_on("PostToolBatch", "", typed(&ws)));
    let run = support::run(setup, &ws, one("read it")).await?;
    assert_eq!(run.outcome.terminal, Terminal::HookStopped);
    assert_eq!(
        run.requests.len(),
        1,
        "a PostToolBatch block does not re-enter the loop"
    );
    Ok(())
}

// ---- failures: timeouts and crashes ---------------------------------------------

#[tokio::test]
async fn a_hanging_hook_fails_open_by_default_and_closed_when_it_says_so() -> TestResult {
    for fail_closed in [false, true] {
        let (_dir, ws) = workspace()?;
        std::fs::write(ws.join("a.txt"), "alpha\n")?;
        hook_script(&ws, json!({"PreToolUse": {"spin": true}}))?;
        let mut handler = typed(&ws);
        handler["timeout"] = json!(0.5);
        handler["failClosed"] = json!(fail_closed);
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("a.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_settings = Some(hook_on("PreToolUse", "", handler));
        let run = support::run(setup, &ws, one("read it")).await?;
        let result = tool_result(&run, 1, "toolu_1");
        let response = run.lines_of("system", Some("hook_response"));
        assert_eq!(response[0]["outcome"], "error");
        assert!(
            response[0]["stderr"]
                .as_str()
                .unwrap_or("")
                .contains("timed out"),
            "{response:?}"
        );
        if fail_closed {
            assert_eq!(result["is_error"], true);
            assert!(content_text(&result).contains("fails closed"), "{result}");
        } else {
            assert_eq!(content_text(&result), "1\talpha\n2\t", "the call ran");
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_command_hook_that_exits_with_an_error_blocks_only_when_it_fails_closed() -> TestResult {
    for fail_closed in [false, true] {
        let (_dir, ws) = workspace()?;
        std::fs::write(ws.join("a.txt"), "alpha\n")?;
        hook_script(
            &ws,
            json!({"PreToolUse": {"stderr": "cannot reach the audit log", "exit": 1}}),
        )?;
        let mut handler = command_probe(&ws);
        handler["failClosed"] = json!(fail_closed);
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("a.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_settings = Some(hook_on("PreToolUse", "", handler));
        let run = support::run(setup, &ws, one("read it")).await?;
        let result = tool_result(&run, 1, "toolu_1");
        if fail_closed {
            assert_eq!(result["is_error"], true);
            let text = content_text(&result);
            assert!(
                text.contains("fails closed") && text.contains("cannot reach the audit log"),
                "{text}"
            );
        } else {
            assert_eq!(
                content_text(&result),
                "1\talpha\n2\t",
                "a non-blocking error: the call ran"
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_crashing_hook_is_a_hook_error_and_the_run_goes_on() -> TestResult {
    for step in [json!({"trap": true}), json!({"error": "HOOK_SAYS_NO_IDEA"})] {
        let (_dir, ws) = workspace()?;
        std::fs::write(ws.join("a.txt"), "alpha\n")?;
        hook_script(
            &ws,
            json!({ "PreToolUse": step.clone(), "PostToolUse": step.clone() }),
        )?;
        let mut setup = Setup::new(vec![
            read_call("toolu_1", &ws.join("a.txt")),
            Reply::text("ok"),
        ]);
        setup.hook_settings = Some(json!({
            "PreToolUse": [{"hooks": [typed(&ws)]}],
            "PostToolUse": [{"hooks": [typed(&ws)]}],
        }));
        let run = support::run(setup, &ws, one("read it")).await?;
        assert_eq!(run.outcome.terminal, Terminal::Completed, "{step}");
        assert_eq!(
            content_text(&tool_result(&run, 1, "toolu_1")),
            "1\talpha\n2\t"
        );
        let responses = run.lines_of("system", Some("hook_response"));
        assert_eq!(responses.len(), 2);
        assert!(
            responses.iter().all(|r| r["outcome"] == "error"),
            "{responses:?}"
        );
    }
    Ok(())
}

// ---- prompt and session hooks -----------------------------------------------------

#[tokio::test]
async fn user_prompt_submit_adds_context_or_blocks_the_prompt() -> TestResult {
    let (_dir, ws) = workspace()?;
    hook_script(
        &ws,
        json!({"UserPromptSubmit": {"context": "PROMPT_CONTEXT"}, "SessionStart": {"context": "SESSION_CONTEXT"}}),
    )?;
    let mut setup = Setup::new(vec![Reply::text("ok")]);
    setup.hook_settings = Some(json!({
        "UserPromptSubmit": [{"hooks": [typed(&ws)]}],
        "SessionStart": [{"hooks": [typed(&ws)]}],
    }));
    let run = support::run(setup, &ws, one("THE_PROMPT")).await?;
    let first = texts(&run.messages(0)[0]);
    assert_eq!(first.len(), 3, "{first:?}");
    assert!(first[0].contains("SESSION_CONTEXT") && first[1].contains("PROMPT_CONTEXT"));
    assert_eq!(first[2], "THE_PROMPT");

    hook_script(
        &ws,
        json!({"UserPromptSubmit": {"block": "PROMPT_BLOCKED"}}),
    )?;
    let mut setup = Setup::new(vec![Reply::text("never")]);
    setup.hook_settings = Some(hook_on("UserPromptSubmit", "", typed(&ws)));
    let run = support::run(setup, &ws, one("forbidden")).await?;
    assert!(run.requests.is_empty(), "nothing is sent");
    assert_eq!(run.result()["num_turns"], 0);
    assert!(
        run.result()["result"]
            .as_str()
            .unwrap_or("")
            .contains("PROMPT_BLOCKED")
    );
    assert_eq!(
        run.lines_of("system", Some("informational"))[0]["prevent_continuation"],
        true
    );
    Ok(())
}

// ---- escape attempts ----------------------------------------------------------------

/// Runs one UserPromptSubmit with an inline script through a hook loaded
/// from `handler` settings; returns the attempts' report.
async fn attempts(
    ws: &Path,
    grants: Value,
    attempts: Value,
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    attempts_in(SandboxConfig::default(), ws, grants, attempts).await
}

/// [`attempts`] in a sandbox made from `config` (a weakened one, for a
/// control).
async fn attempts_in(
    config: SandboxConfig,
    ws: &Path,
    grants: Value,
    attempts: Value,
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: carapace_test_support::component_cache(),
        ..config
    })?;
    let handler = json!({"type": "wasm", "path": support::hook_probe(), "grants": grants});
    let runtime =
        support::load_hooks(&sandbox, &hook_on("UserPromptSubmit", "", handler), ws).await?;
    let script = json!({"UserPromptSubmit": {"attempts": attempts}});
    let answer = runtime
        .run(HookEvent::UserPromptSubmit {
            prompt: script.to_string(),
        })
        .await;
    if let Some(error) = answer.error {
        return Err(error.into());
    }
    let report = answer.additional_context.join("");
    Ok(serde_json::from_str(&report)?)
}

fn worked(report: &[Value]) -> Vec<bool> {
    report.iter().map(|r| r["ok"] == true).collect()
}

#[tokio::test]
async fn a_hook_reads_no_file_it_was_not_granted() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("secret.txt"), "HOOK_ESCAPE_SECRET")?;
    std::fs::create_dir_all(ws.join("granted"))?;
    std::fs::write(ws.join("granted").join("ok.txt"), "fine")?;
    let secret = ws.join("secret.txt").display().to_string();
    let tries = json!([
        {"op": "read", "path": secret},
        {"op": "read", "path": "/etc/passwd"},
        {"op": "list", "path": "/"},
        {"op": "list", "path": ws.display().to_string()},
        {"op": "read", "path": format!("{}/granted/../secret.txt", ws.display())},
        {"op": "write", "path": secret},
    ]);
    let report = attempts(
        &ws,
        json!({"read": [ws.join("granted").display().to_string()]}),
        tries.clone(),
    )
    .await?;
    assert_eq!(worked(&report), vec![false; 6], "{report:?}");
    assert!(
        !Value::Array(report)
            .to_string()
            .contains("HOOK_ESCAPE_SECRET")
    );
    assert_eq!(std::fs::read_to_string(&secret)?, "HOOK_ESCAPE_SECRET");
    // Granted: the same reads work, so the refusals above were the sandbox's.
    let report = attempts(
        &ws,
        json!({"read": [ws.display().to_string()]}),
        json!([{"op": "read", "path": secret}]),
    )
    .await?;
    assert_eq!(report[0]["detail"], "HOOK_ESCAPE_SECRET");
    Ok(())
}

#[tokio::test]
async fn a_hook_opens_no_socket() -> TestResult {
    let (_dir, ws) = workspace()?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?.to_string();
    // A second listener reached by name: tests aim only at this machine.
    let named = std::net::TcpListener::bind("127.0.0.1:0")?;
    named.set_nonblocking(true)?;
    let by_name = format!("localhost:{}", named.local_addr()?.port());
    let report = attempts(
        &ws,
        json!({"read": [ws.display().to_string()], "write": [ws.join("w").display().to_string()], "env": ["PATH"]}),
        json!([{"op": "connect", "path": addr}, {"op": "connect", "path": by_name}]),
    )
    .await?;
    assert_eq!(report.len(), 2, "both attempts ran: {report:?}");
    assert_eq!(worked(&report), vec![false, false], "{report:?}");
    assert!(listener.accept().is_err(), "nothing reached the listener");
    assert!(
        named.accept().is_err(),
        "nothing reached the named listener"
    );
    // Control: with guests' sockets let through (a weakened sandbox), the
    // same connect reaches the listener, which answers.
    let answered = std::thread::spawn(move || {
        use std::io::Write;
        for _ in 0..3000 {
            if let Ok((mut stream, _)) = listener.accept() {
                let _ = stream.write_all(b"pong");
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        false
    });
    let weak = SandboxConfig {
        weakened_sockets: true,
        ..SandboxConfig::default()
    };
    let report = attempts_in(
        weak,
        &ws,
        json!({}),
        json!([{"op": "connect", "path": addr}]),
    )
    .await?;
    assert_eq!(
        worked(&report),
        vec![true],
        "the control connects: {report:?}"
    );
    assert!(answered.join().unwrap_or(false), "the listener saw it");
    Ok(())
}

#[tokio::test]
async fn a_hook_sees_no_environment_variable_it_was_not_granted() -> TestResult {
    let (_dir, ws) = workspace()?;
    let path = std::env::var("PATH")?;
    let tries = json!([{"op": "env", "name": "PATH"}, {"op": "env", "name": "HOME"},
                       {"op": "env_all"}, {"op": "env", "name": "PWD"}]);
    let report = attempts(&ws, json!({}), tries.clone()).await?;
    // The one variable every hook has is PWD: the workspace its input names
    // anyway (the convention for where a WASI program starts), never the
    // host's.
    assert_eq!(
        worked(&report),
        vec![false, false, true, true],
        "{report:?}"
    );
    assert_eq!(report[2]["detail"], "PWD", "nothing of the host's");
    assert_eq!(report[3]["detail"], ws.display().to_string());
    let report = attempts(&ws, json!({"env": ["PATH"]}), tries).await?;
    assert_eq!(
        report[0]["detail"],
        path.as_str(),
        "granted by name: visible"
    );
    assert_eq!(report[1]["ok"], false, "HOME was not granted");
    assert_eq!(
        report[2]["detail"], "PWD,PATH",
        "only the granted name exists, besides PWD"
    );
    Ok(())
}

#[tokio::test]
async fn a_hook_cannot_be_granted_writes_to_protected_places() -> TestResult {
    let (_dir, ws) = workspace()?;
    hook_script(&ws, json!({}))?;
    let sandbox = carapace_test_support::sandbox()?;
    for protected in [
        ws.join(".carapace"),
        ws.join(".claude").join("hooks"),
        ws.join(".git").join("hooks"),
    ] {
        let mut handler = typed(&ws);
        handler["grants"]["write"] = json!([protected.display().to_string()]);
        handler["failClosed"] = json!(true);
        let loaded = support::load_hooks(&sandbox, &hook_on("Stop", "", handler), &ws).await;
        let error = loaded.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            error.contains("protected"),
            "{}: {error}",
            protected.display()
        );
        assert!(!protected.exists(), "nothing was created");
    }
    // Control: the same handler with a write grant on an ordinary folder
    // loads.
    let mut handler = typed(&ws);
    handler["grants"]["write"] = json!([ws.join("out").display().to_string()]);
    handler["failClosed"] = json!(true);
    let loaded = support::load_hooks(&sandbox, &hook_on("Stop", "", handler), &ws).await;
    assert!(
        loaded.is_ok(),
        "an ordinary write grant loads: {:?}",
        loaded.err().map(|e| e.to_string())
    );
    Ok(())
}

#[tokio::test]
async fn a_hook_is_never_granted_carapaces_credentials_or_the_homes_dotfiles() -> TestResult {
    let (_dir, ws) = workspace()?;
    hook_script(&ws, json!({}))?;
    let home_dir = tempfile::tempdir()?;
    let home = std::fs::canonicalize(home_dir.path())?;
    std::fs::create_dir_all(home.join(".ssh"))?;
    std::fs::create_dir_all(home.join("projects"))?;
    std::fs::write(home.join(".netrc"), "machine x password y")?;
    // A link in the workspace that leads to the keys.
    std::os::unix::fs::symlink(home.join(".ssh"), ws.join("keys"))?;
    let sandbox = carapace_test_support::sandbox()?;
    let load = |grants: Value| {
        let mut handler = typed(&ws);
        handler["grants"] = grants;
        handler["failClosed"] = json!(true);
        let settings = hook_on("Stop", "", handler);
        let sandbox = &sandbox;
        let ws = &ws;
        let home = &home;
        async move {
            support::load_hooks_at_home(sandbox, &settings, ws, home)
                .await
                .err()
                .map(|e| e.to_string())
        }
    };
    let path = |p: &Path| p.display().to_string();
    for (grants, why) in [
        (
            json!({"env": ["ANTHROPIC_API_KEY"]}),
            "never granted to hooks",
        ),
        (
            json!({"env": ["CARAPACE_CONFIG_DIR"]}),
            "never granted to hooks",
        ),
        // Protected by meaning (the reason says what it is).
        (
            json!({"read": [path(&home.join(".ssh"))]}),
            "ssh's configuration",
        ),
        (json!({"read": [path(&home.join(".netrc"))]}), "credentials"),
        (
            json!({"read": [path(&home.join(".aws-cache"))]}),
            "dotfiles",
        ),
        (json!({"read": [path(&home)]}), "home directory"),
        (json!({"read": ["/"]}), "home directory"),
        // Grants are resolved in the host: /proc/self is carapace itself.
        (
            json!({"read": ["/proc/self/environ"]}),
            "process information",
        ),
        (
            json!({"read": ["/proc/thread-self"]}),
            "process information",
        ),
        (json!({"read": ["/dev/fd"]}), "process information"),
        (json!({"read": ["/dev/stdin"]}), "process information"),
        (
            json!({"read": [path(&ws.join("keys"))]}),
            "ssh's configuration",
        ),
        (json!({"write": [path(&ws)]}), "protected"),
    ] {
        if why == "protected" {
            // A write tree holding a protected entry.
            std::fs::create_dir_all(ws.join(".git/hooks"))?;
        }
        let error = load(grants.clone()).await.unwrap_or_default();
        assert!(error.contains(why), "{grants}: {error}");
    }
    // The control: the same shapes, harmless names, load.
    for grants in [
        json!({"env": ["PATH"]}),
        json!({"read": [path(&home.join("projects"))]}),
        json!({"write": [path(&ws.join("audit"))]}),
    ] {
        assert_eq!(load(grants.clone()).await, None, "{grants}");
    }
    Ok(())
}
