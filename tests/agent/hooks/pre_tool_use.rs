//! PreToolUse.

use super::*;

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

/// `/hooks disable N` switches a hook off for the session, `/hooks enable
/// N` on again; a number that names no hook says so.
#[tokio::test]
async fn a_hook_switched_off_does_not_run_until_switched_on() -> TestResult {
    let (_dir, ws) = workspace()?;
    hook_script(
        &ws,
        json!({"PreToolUse": {"decision": "deny", "reason": "DENIED_BY_HOOK"}}),
    )?;
    let sandbox = carapace_test_support::sandbox()?;
    let hooks =
        support::load_hooks(&sandbox, &hook_on("PreToolUse", "Read", typed(&ws)), &ws).await?;
    let call = || {
        HookEvent::PreToolUse(carapace::hooks::HookToolCall {
            tool_name: "Read".into(),
            tool_input: json!({"file_path": "/x"}),
            tool_use_id: "toolu_1".into(),
        })
    };
    let denied = |answer: &carapace::hooks::HandlerResult| {
        answer.decision == Some(carapace::hooks::HookPermission::Deny)
    };
    assert!(denied(&hooks.run(call()).await), "on: it denies");
    assert!(hooks.switch(1, false)?.contains("off for this session"));
    assert!(hooks.describe()[0].ends_with("off for this session"));
    assert!(!denied(&hooks.run(call()).await), "off: it does not run");
    hooks.switch(1, true)?;
    assert!(denied(&hooks.run(call()).await), "on again");
    assert!(
        hooks
            .switch(7, false)
            .is_err_and(|e| e.contains("no hook 7"))
    );
    Ok(())
}
