use super::*;
use crate::hooks::HookToolCall;

fn run(code: i32, stdout: &str, stderr: &str) -> CommandRun {
    CommandRun {
        stdout: stdout.as_bytes().to_vec(),
        stderr: stderr.as_bytes().to_vec(),
        exit_code: code,
    }
}

#[test]
fn the_stdin_json_has_claude_codes_fields() {
    let common = HookCommon {
        mcp_server: None,
        session_id: "s".into(),
        transcript_path: "/t.jsonl".into(),
        cwd: "/w".into(),
        permission_mode: "default".into(),
        prompt_id: None,
        agent: None,
    };
    let event = HookEvent::PreToolUse(HookToolCall {
        tool_name: "Bash".into(),
        tool_input: json!({"command": "ls"}),
        tool_use_id: "toolu_1".into(),
    });
    assert_eq!(
        input_json(&common, &event),
        json!({"session_id": "s", "transcript_path": "/t.jsonl", "cwd": "/w", "permission_mode": "default",
               "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"},
               "tool_use_id": "toolu_1"})
    );
    let stop = HookEvent::Stop {
        stop_hook_active: true,
        last_assistant_message: "done".into(),
    };
    let v = input_json(&common, &stop);
    assert_eq!(
        (
            v["stop_hook_active"].clone(),
            v["last_assistant_message"].clone()
        ),
        (json!(true), json!("done"))
    );
}

#[test]
fn command_outputs_mean_what_they_mean_in_claude_code() {
    let deny = run(
        0,
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no rm"}}"#,
        "",
    );
    assert_eq!(
        from_command(HookEventKind::PreToolUse, &deny),
        HandlerResult {
            decision: Some(HookPermission::Deny),
            reason: Some("no rm".into()),
            ..HandlerResult::default()
        }
    );
    assert_eq!(
        from_command(HookEventKind::PreToolUse, &run(2, "", "not allowed\n")),
        HandlerResult {
            decision: Some(HookPermission::Deny),
            reason: Some("not allowed".into()),
            ..HandlerResult::default()
        }
    );
    assert_eq!(
        from_command(
            HookEventKind::Stop,
            &run(0, r#"{"decision":"block","reason":"keep going"}"#, "")
        ),
        HandlerResult {
            block: Some("keep going".into()),
            ..HandlerResult::default()
        }
    );
    assert_eq!(
        from_command(HookEventKind::Stop, &run(2, "", "tests fail"))
            .block
            .as_deref(),
        Some("tests fail")
    );
    assert_eq!(
        from_command(
            HookEventKind::PostToolUse,
            &run(
                0,
                r#"{"continue":false,"stopReason":"enough","systemMessage":"bye"}"#,
                ""
            )
        ),
        HandlerResult {
            stop: Some("enough".into()),
            system_message: Some("bye".into()),
            ..HandlerResult::default()
        }
    );
    assert_eq!(
        from_command(
            HookEventKind::UserPromptSubmit,
            &run(0, "today is Tuesday", "")
        )
        .additional_context,
        vec!["today is Tuesday".to_string()]
    );
    assert!(
        from_command(HookEventKind::PreToolUse, &run(1, "", "boom"))
            .error
            .is_some_and(|e| e.contains("boom"))
    );
    assert_eq!(
        from_command(HookEventKind::SessionEnd, &run(2, "", "x")).block,
        None,
        "exit 2 blocks nothing here"
    );
    let updated = from_command(
        HookEventKind::PreToolUse,
        &run(
            0,
            r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls -la"},"additionalContext":"ctx"}}"#,
            "",
        ),
    );
    assert_eq!(updated.updated_input, Some(json!({"command": "ls -la"})));
    assert_eq!(updated.additional_context, vec!["ctx".to_string()]);
}

#[test]
fn answers_fold_with_deny_over_defer_over_ask_over_allow() {
    let with = |d: HookPermission, r: &str| HandlerResult {
        decision: Some(d),
        reason: Some(r.into()),
        ..HandlerResult::default()
    };
    let folded = aggregate(vec![
        with(HookPermission::Allow, "a"),
        with(HookPermission::Ask, "b"),
        with(HookPermission::Deny, "c"),
        with(HookPermission::Defer, "d"),
    ]);
    assert_eq!(
        (folded.decision, folded.reason.as_deref()),
        (Some(HookPermission::Deny), Some("c"))
    );
    let folded = aggregate(vec![
        with(HookPermission::Allow, "a"),
        with(HookPermission::Ask, "b"),
    ]);
    assert_eq!(folded.decision, Some(HookPermission::Ask));
    let folded = aggregate(vec![
        HandlerResult {
            block: Some("x".into()),
            additional_context: vec!["1".into()],
            ..HandlerResult::default()
        },
        HandlerResult {
            block: Some("y".into()),
            additional_context: vec!["2".into()],
            ..HandlerResult::default()
        },
    ]);
    assert_eq!(folded.block.as_deref(), Some("x\ny"));
    assert_eq!(
        folded.additional_context,
        vec!["1".to_string(), "2".to_string()]
    );
}
