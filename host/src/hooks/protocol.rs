//! Claude Code's hook protocol as pure functions: the JSON a command hook
//! reads on stdin, what its stdout and exit code mean, what a typed outcome
//! means, and how the answers of several hooks fold into one.

use super::{CommandRun, HookCommon, HookEvent, HookEventKind, HookOutcome, HookPermission};
use serde_json::{Value, json};

/// What one handler said, in the terms the loop acts on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HandlerResult {
    pub decision: Option<HookPermission>,
    /// The decision's reason (PreToolUse).
    pub reason: Option<String>,
    /// Block (PostToolUse, PostToolBatch, Stop, SubagentStop,
    /// UserPromptSubmit) with this reason.
    pub block: Option<String>,
    pub updated_input: Option<Value>,
    pub additional_context: Vec<String>,
    pub updated_tool_output: Option<Value>,
    /// Stop the whole run (`continue: false`).
    pub stop: Option<String>,
    pub system_message: Option<String>,
    /// A hook error to report to the user (not to the model).
    pub error: Option<String>,
    /// The decision came from a hook that failed (its deny still holds;
    /// the model is told it was a hook error).
    pub errored: bool,
    /// An Elicitation or ElicitationResult hook's answer: the action and,
    /// for `accept`, the content.
    pub elicitation: Option<(String, Option<Value>)>,
}

/// The JSON a Claude Code command hook reads on stdin.
pub fn input_json(common: &HookCommon, event: &HookEvent) -> Value {
    let mut v = json!({
        "session_id": common.session_id,
        "transcript_path": common.transcript_path,
        "cwd": common.cwd,
    });
    // As Claude Code 2.1.332: events about the session, not a call, carry
    // no mode; those before the first prompt no prompt either.
    let kind = event.kind();
    // A compaction happens within a prompt; a session's start before one.
    let before_a_prompt = match event {
        HookEvent::SessionStart { source, .. } => source != "compact",
        _ => matches!(
            kind,
            HookEventKind::InstructionsLoaded | HookEventKind::Setup
        ),
    };
    if !before_a_prompt && let Some(prompt_id) = &common.prompt_id {
        v["prompt_id"] = json!(prompt_id);
    }
    if !matches!(
        kind,
        HookEventKind::SessionStart
            | HookEventKind::SessionEnd
            | HookEventKind::InstructionsLoaded
            | HookEventKind::SubagentStart
            | HookEventKind::StopFailure
            | HookEventKind::PostCompact
            | HookEventKind::Setup
            | HookEventKind::MessageDisplay
            | HookEventKind::PreModelSwitch
            | HookEventKind::PostModelSwitch
    ) {
        v["permission_mode"] = json!(common.permission_mode);
    }
    if let Some((agent_id, agent_type)) = &common.agent {
        v["agent_id"] = json!(agent_id);
        v["agent_type"] = json!(agent_type);
    }
    v["hook_event_name"] = json!(event.kind().name());
    event_fields(&mut v, event);
    // After the call's own fields, as Claude Code 2.1.332 orders them.
    if let Some((name, source)) = &common.mcp_server {
        v["mcp_server"] = json!({"name": name, "source": source});
    }
    v
}

/// The fields of `event` itself, beside those every event carries.
fn event_fields(v: &mut Value, event: &HookEvent) {
    match event {
        HookEvent::PreToolUse(_)
        | HookEvent::PostToolUse { .. }
        | HookEvent::PostToolUseFailure { .. }
        | HookEvent::PostToolBatch(_)
        | HookEvent::PreSkillShellCommand { .. }
        | HookEvent::PermissionRequest { .. } => tool_fields(v, event),
        HookEvent::Stop { .. }
        | HookEvent::SubagentStop { .. }
        | HookEvent::SubagentStart
        | HookEvent::StopFailure { .. } => stop_fields(v, event),
        HookEvent::SessionStart { .. }
        | HookEvent::SessionEnd { .. }
        | HookEvent::PreCompact { .. }
        | HookEvent::PostCompact { .. }
        | HookEvent::InstructionsLoaded { .. }
        | HookEvent::Setup { .. }
        | HookEvent::PreModelSwitch(_)
        | HookEvent::PostModelSwitch(_) => session_fields(v, event),
        HookEvent::UserPromptSubmit { .. }
        | HookEvent::UserPromptExpansion { .. }
        | HookEvent::MessageDisplay { .. }
        | HookEvent::Notification { .. } => message_fields(v, event),
        HookEvent::Elicitation(_) | HookEvent::ElicitationResult(_) => elicitation_fields(v, event),
    }
}

/// An MCP server's question, and its answer, in Claude Code 2.1.332's
/// fields.
fn elicitation_fields(v: &mut Value, event: &HookEvent) {
    match event {
        HookEvent::Elicitation(asked) => {
            v["mcp_server_name"] = json!(asked.server);
            v["message"] = json!(asked.message);
            v["mode"] = json!(asked.mode);
            if let Some(url) = &asked.url {
                v["url"] = json!(url);
            }
            if let Some(id) = &asked.elicitation_id {
                v["elicitation_id"] = json!(id);
            }
            if let Some(schema) = &asked.requested_schema {
                v["requested_schema"] = schema.clone();
            }
        }
        HookEvent::ElicitationResult(answered) => {
            v["mcp_server_name"] = json!(answered.server);
            if let Some(id) = &answered.elicitation_id {
                v["elicitation_id"] = json!(id);
            }
            v["mode"] = json!(answered.mode);
            v["action"] = json!(answered.action);
            if let Some(content) = &answered.content {
                v["content"] = content.clone();
            }
        }
        _ => {}
    }
}

/// A tool call's events: the call, and what came of it.
fn tool_fields(v: &mut Value, event: &HookEvent) {
    let call_fields = |v: &mut Value, call: &super::HookToolCall| {
        v["tool_name"] = json!(call.tool_name);
        v["tool_input"] = call.tool_input.clone();
        v["tool_use_id"] = json!(call.tool_use_id);
    };
    match event {
        HookEvent::PreToolUse(call) => call_fields(v, call),
        HookEvent::PostToolUse {
            call,
            tool_response,
            duration_ms,
        } => {
            call_fields(v, call);
            v["tool_response"] = tool_response.clone();
            v["duration_ms"] = json!(duration_ms);
        }
        HookEvent::PostToolUseFailure {
            call,
            error,
            duration_ms,
        } => {
            call_fields(v, call);
            v["error"] = json!(error);
            v["is_interrupt"] = json!(false);
            v["duration_ms"] = json!(duration_ms);
        }
        HookEvent::PostToolBatch(calls) => {
            v["tool_calls"] = Value::Array(
                calls
                    .iter()
                    .map(|(call, response)| {
                        json!({"tool_name": call.tool_name, "tool_input": call.tool_input,
                               "tool_use_id": call.tool_use_id, "tool_response": response})
                    })
                    .collect(),
            );
        }
        HookEvent::PreSkillShellCommand {
            call,
            command_name,
            command_source,
            invoked_by,
        } => {
            call_fields(v, call);
            v["command_name"] = json!(command_name);
            v["command_source"] = json!(command_source);
            v["invoked_by"] = json!(invoked_by);
        }
        // As Claude Code 2.1.332: the call without its id.
        HookEvent::PermissionRequest { call, suggestions } => {
            v["tool_name"] = json!(call.tool_name);
            v["tool_input"] = call.tool_input.clone();
            v["permission_suggestions"] = suggestions.clone();
        }
        _ => {}
    }
}

/// The events of a turn (or a subagent's) ending.
fn stop_fields(v: &mut Value, event: &HookEvent) {
    match event {
        HookEvent::Stop {
            stop_hook_active,
            last_assistant_message,
        } => {
            v["stop_hook_active"] = json!(stop_hook_active);
            v["last_assistant_message"] = json!(last_assistant_message);
            no_tasks(v);
        }
        HookEvent::SubagentStop {
            stop_hook_active,
            last_assistant_message,
            agent_transcript_path,
        } => {
            v["stop_hook_active"] = json!(stop_hook_active);
            v["agent_transcript_path"] = json!(agent_transcript_path);
            v["last_assistant_message"] = json!(last_assistant_message);
            no_tasks(v);
        }
        HookEvent::SubagentStart => {}
        HookEvent::StopFailure {
            error,
            last_assistant_message,
        } => {
            v["error"] = json!(error);
            v["last_assistant_message"] = json!(last_assistant_message);
        }
        _ => {}
    }
}

/// The session's own events: its start and end, compaction, memory,
/// setup, model switches.
fn session_fields(v: &mut Value, event: &HookEvent) {
    match event {
        HookEvent::SessionStart { source, details } => {
            v["source"] = json!(source);
            if let Some(resumed) = &details.resumed {
                v["seconds_since_last_response"] = json!(resumed.seconds_since_last_response);
                v["context_tokens"] = json!(resumed.context_tokens);
                // Anthropic's prompt cache keeps an entry five minutes.
                v["prompt_cache_likely_expired"] = json!(resumed.seconds_since_last_response > 300);
                v["estimated_cache_write_usd"] = json!(resumed.estimated_cache_write_usd);
            }
            if let Some(model) = &details.model {
                v["model"] = json!(model);
            }
        }
        HookEvent::SessionEnd { reason } => v["reason"] = json!(reason),
        HookEvent::PreCompact {
            trigger,
            custom_instructions,
        } => {
            v["trigger"] = json!(trigger);
            v["custom_instructions"] = json!(custom_instructions);
        }
        HookEvent::PostCompact {
            trigger,
            compact_summary,
        } => {
            v["trigger"] = json!(trigger);
            v["compact_summary"] = json!(compact_summary);
        }
        HookEvent::InstructionsLoaded {
            file_path,
            memory_type,
            load_reason,
        } => {
            v["file_path"] = json!(file_path);
            v["memory_type"] = json!(memory_type);
            v["load_reason"] = json!(load_reason);
        }
        HookEvent::Setup { trigger } => v["trigger"] = json!(trigger),
        HookEvent::PreModelSwitch(switch) | HookEvent::PostModelSwitch(switch) => {
            v["from_model"] = json!(switch.from_model);
            v["to_model"] = json!(switch.to_model);
            v["requested_model"] = json!(switch.requested_model);
            v["source"] = json!(switch.source);
            v["context_tokens"] = json!(switch.context_tokens);
            v["prompt_cache_warm"] = json!(switch.prompt_cache_warm);
            v["cache_ttl"] = json!("5m");
            if let Some(usd) = switch.estimated_cache_write_usd {
                v["estimated_cache_write_usd"] = json!(usd);
                v["pricing"] = json!("catalog");
            }
        }
        _ => {}
    }
}

/// The events of what the user sent and was shown.
fn message_fields(v: &mut Value, event: &HookEvent) {
    match event {
        HookEvent::UserPromptSubmit { prompt } => v["prompt"] = json!(prompt),
        HookEvent::UserPromptExpansion {
            expansion_type,
            command_name,
            command_args,
            command_source,
            prompt,
        } => {
            v["expansion_type"] = json!(expansion_type);
            v["command_name"] = json!(command_name);
            v["command_args"] = json!(command_args);
            v["command_source"] = json!(command_source);
            v["prompt"] = json!(prompt);
        }
        // As Claude Code 2.1.332: each block whole, so the first and last
        // piece of itself.
        HookEvent::MessageDisplay {
            turn_id,
            message_id,
            text,
        } => {
            v["turn_id"] = json!(turn_id);
            v["message_id"] = json!(message_id);
            v["index"] = json!(0);
            v["final"] = json!(true);
            v["delta"] = json!(text);
        }
        HookEvent::Notification { message } => v["message"] = json!(message),
        _ => {}
    }
}

/// Claude Code's `background_tasks` and `session_crons`: carapace's
/// background shells and agents end with their turn, and it has no
/// scheduled prompts, so a turn that stops has none running.
fn no_tasks(v: &mut Value) {
    v["background_tasks"] = json!([]);
    v["session_crons"] = json!([]);
}

/// Whether exit code 2 (or a block) stops something for this event.
fn blocks(kind: HookEventKind) -> bool {
    matches!(
        kind,
        HookEventKind::PreToolUse
            | HookEventKind::PostToolUse
            | HookEventKind::PostToolUseFailure
            | HookEventKind::PostToolBatch
            | HookEventKind::Stop
            | HookEventKind::SubagentStop
            | HookEventKind::UserPromptSubmit
            | HookEventKind::UserPromptExpansion
            | HookEventKind::PreModelSwitch
            // Checked against Claude Code 2.1.197: exit 2 (or a JSON
            // block) stops the compaction.
            | HookEventKind::PreCompact
            // Declines the server's question (Claude Code 2.1.332).
            | HookEventKind::Elicitation
            | HookEventKind::ElicitationResult
    )
}

/// What a command hook's exit code, stdout and stderr mean, as Claude Code
/// defines it: exit 0 with JSON (or plain text) on stdout; exit 2 blocks with
/// stderr as the reason; any other code is a non-blocking error.
pub fn from_command(kind: HookEventKind, run: &CommandRun) -> HandlerResult {
    let stdout = String::from_utf8_lossy(&run.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&run.stderr).trim().to_string();
    match run.exit_code {
        0 => match serde_json::from_str::<Value>(&stdout) {
            Ok(value @ Value::Object(_)) => from_json(kind, &value),
            _ if stdout.is_empty() => HandlerResult::default(),
            // Plain text: context for the model where Claude Code uses it so.
            _ if matches!(
                kind,
                HookEventKind::UserPromptSubmit | HookEventKind::SessionStart
            ) =>
            {
                HandlerResult {
                    additional_context: vec![stdout],
                    ..HandlerResult::default()
                }
            }
            _ => HandlerResult::default(),
        },
        2 => {
            let reason = if stderr.is_empty() {
                "blocked by a hook (exit code 2, no reason given)".to_string()
            } else {
                stderr
            };
            match kind {
                HookEventKind::PreToolUse
                | HookEventKind::PermissionRequest
                | HookEventKind::PreSkillShellCommand => HandlerResult {
                    decision: Some(HookPermission::Deny),
                    reason: Some(reason),
                    ..HandlerResult::default()
                },
                k if blocks(k) => HandlerResult {
                    block: Some(reason),
                    ..HandlerResult::default()
                },
                _ => HandlerResult {
                    error: Some(reason),
                    ..HandlerResult::default()
                },
            }
        }
        code => {
            let error = format!(
                "exited with code {code}{}",
                if stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {stderr}")
                }
            );
            errored_deny(kind, &stdout, &error).unwrap_or(HandlerResult {
                error: Some(error),
                ..HandlerResult::default()
            })
        }
    }
}

/// A PreToolUse hook that failed (an exit code other than 0 and 2) but
/// said `deny` on stdout: Claude Code 2.1.332 honours the deny, telling
/// the model it came from a hook error. Nothing else such a hook says is
/// taken.
fn errored_deny(kind: HookEventKind, stdout: &str, error: &str) -> Option<HandlerResult> {
    if kind != HookEventKind::PreToolUse {
        return None;
    }
    let value = serde_json::from_str::<Value>(stdout).ok()?;
    let said = from_json(kind, &value);
    (said.decision == Some(HookPermission::Deny)).then(|| HandlerResult {
        decision: Some(HookPermission::Deny),
        reason: said.reason,
        errored: true,
        error: Some(error.to_string()),
        ..HandlerResult::default()
    })
}

/// A hook's JSON answer (Claude Code's fields).
pub fn from_json(kind: HookEventKind, v: &Value) -> HandlerResult {
    let text = |v: &Value| v.as_str().map(str::to_string);
    let specific = &v["hookSpecificOutput"];
    let mut result = HandlerResult {
        system_message: text(&v["systemMessage"]),
        ..HandlerResult::default()
    };
    if v["continue"] == false {
        result.stop = Some(text(&v["stopReason"]).unwrap_or_else(|| "stopped by a hook".into()));
    }
    let reason = text(&v["reason"]);
    let decides = matches!(
        kind,
        HookEventKind::PreToolUse | HookEventKind::PreSkillShellCommand
    );
    match (decides, v["decision"].as_str()) {
        (true, Some("approve" | "allow")) => {
            result.decision = Some(HookPermission::Allow);
            result.reason = reason.clone();
        }
        (true, Some("block" | "deny")) => {
            result.decision = Some(HookPermission::Deny);
            result.reason = reason.clone();
        }
        (false, Some("block")) if blocks(kind) => {
            result.block = Some(reason.clone().unwrap_or_else(|| "blocked by a hook".into()));
        }
        _ => {}
    }
    if let Some(decision) = specific["permissionDecision"].as_str() {
        result.decision = match decision {
            "allow" => Some(HookPermission::Allow),
            "deny" => Some(HookPermission::Deny),
            "ask" => Some(HookPermission::Ask),
            "defer" => Some(HookPermission::Defer),
            _ => result.decision,
        };
        result.reason = text(&specific["permissionDecisionReason"]).or(result.reason);
    }
    if kind == HookEventKind::PermissionRequest {
        permission_request_answer(&mut result, &specific["decision"]);
    }
    if matches!(
        kind,
        HookEventKind::Elicitation | HookEventKind::ElicitationResult
    ) {
        elicitation_answer(&mut result, kind, specific, reason.as_deref());
    }
    if specific["updatedInput"].is_object() {
        result.updated_input = Some(specific["updatedInput"].clone());
    }
    if let Some(context) = text(&specific["additionalContext"]) {
        result.additional_context.push(context);
    }
    for key in ["updatedToolOutput", "updatedMCPToolOutput"] {
        if !specific[key].is_null() {
            result.updated_tool_output = Some(specific[key].clone());
        }
    }
    result
}

/// An Elicitation(Result) hook's `hookSpecificOutput`: its action and
/// content, for its own event only; `decline` blocks, as Claude Code
/// treats it.
fn elicitation_answer(
    result: &mut HandlerResult,
    kind: HookEventKind,
    specific: &Value,
    reason: Option<&str>,
) {
    if specific["hookEventName"] != kind.name() {
        return;
    }
    let Some(action) = specific["action"].as_str() else {
        return;
    };
    let content = specific.get("content").filter(|c| c.is_object()).cloned();
    result.elicitation = Some((action.to_string(), content));
    if action == "decline" {
        result.block = Some(
            reason
                .unwrap_or("the elicitation was declined by a hook")
                .into(),
        );
    }
}

/// A PermissionRequest hook's `decision`: `behavior` allow (with
/// `updatedInput`) or deny (with `message`; `interrupt` stops the run).
fn permission_request_answer(result: &mut HandlerResult, decision: &Value) {
    let text = |v: &Value| v.as_str().map(str::to_string);
    match decision["behavior"].as_str() {
        Some("allow") => {
            result.decision = Some(HookPermission::Allow);
            if decision["updatedInput"].is_object() {
                result.updated_input = Some(decision["updatedInput"].clone());
            }
        }
        Some("deny") => {
            result.decision = Some(HookPermission::Deny);
            result.reason = text(&decision["message"]).or(result.reason.take());
            if decision["interrupt"] == true {
                let why = result.reason.clone();
                result.stop = result
                    .stop
                    .take()
                    .or(why)
                    .or(Some("interrupted by a hook".into()));
            }
        }
        _ => {}
    }
}

/// What a typed hook's outcome means.
pub fn from_outcome(kind: HookEventKind, outcome: HookOutcome) -> HandlerResult {
    let mut result = HandlerResult {
        system_message: outcome.system_message,
        stop: outcome.stop_reason,
        ..HandlerResult::default()
    };
    if kind == HookEventKind::PreToolUse {
        // `block` on PreToolUse means deny, as Claude Code's `decision: block`.
        result.decision = outcome
            .decision
            .or(outcome.block.then_some(HookPermission::Deny));
        result.reason = outcome.reason.clone();
        if let Some(input) = &outcome.updated_input {
            match serde_json::from_str::<Value>(input) {
                Ok(value @ Value::Object(_)) => result.updated_input = Some(value),
                _ => result.error = Some("updated-input is not a JSON object; ignored".into()),
            }
        }
    } else if outcome.block && blocks(kind) {
        result.block = Some(
            outcome
                .reason
                .clone()
                .unwrap_or_else(|| "blocked by a hook".into()),
        );
    }
    if let Some(context) = outcome.additional_context {
        result.additional_context.push(context);
    }
    if let Some(output) = &outcome.updated_tool_output {
        match serde_json::from_str::<Value>(output) {
            Ok(value) => result.updated_tool_output = Some(value),
            Err(_) => {
                result.error =
                    Some("updated-tool-output is not JSON; the original output is kept".into())
            }
        }
    }
    result
}

/// Several hooks' answers as one: deny > defer > ask > allow; any block
/// blocks (reasons joined); contexts and messages all kept; the first
/// updated input / output and stop win.
pub fn aggregate(results: Vec<HandlerResult>) -> HandlerResult {
    let rank = |d: HookPermission| match d {
        HookPermission::Deny => 3,
        HookPermission::Defer => 2,
        HookPermission::Ask => 1,
        HookPermission::Allow => 0,
    };
    let mut out = HandlerResult::default();
    let mut blocks = Vec::new();
    let mut messages = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        if let Some(d) = r.decision
            && out.decision.is_none_or(|current| rank(d) > rank(current))
        {
            out.decision = Some(d);
            out.reason = r.reason.clone();
            out.errored = r.errored;
        }
        if let Some(b) = r.block {
            blocks.push(b);
        }
        if out.updated_input.is_none() {
            out.updated_input = r.updated_input;
        }
        out.additional_context.extend(r.additional_context);
        if out.updated_tool_output.is_none() {
            out.updated_tool_output = r.updated_tool_output;
        }
        if out.stop.is_none() {
            out.stop = r.stop;
        }
        // Any hook's cancel wins; else the last answer.
        let cancelled = out.elicitation.as_ref().is_some_and(|(a, _)| a == "cancel");
        if !cancelled && r.elicitation.is_some() {
            out.elicitation = r.elicitation;
        }
        messages.extend(r.system_message);
        errors.extend(r.error);
    }
    if !blocks.is_empty() {
        out.block = Some(blocks.join("\n"));
    }
    if !messages.is_empty() {
        out.system_message = Some(messages.join("\n"));
    }
    if !errors.is_empty() {
        out.error = Some(errors.join("\n"));
    }
    out
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;
