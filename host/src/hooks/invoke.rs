//! Invoking the handlers of one event: each in its own instance (or the
//! SDK's callback), in parallel, under its timeout; what each produced,
//! for the loop and for the `hook_response` line.

use super::Services;
use super::component::{CommandRun, HookError};
use super::shell::{RunEnd, ShellHook};
use super::{
    Handler, HandlerResult, HookCommon, HookEvent, HookEventKind, HookOutcome, HookPermission,
    LoadedHook, from_command, from_json, from_outcome, input_json,
};
use crate::sandbox::describe_chain as chain;
use crate::sandbox::{CallLimits, SandboxError};
use serde_json::{Value, json};
use std::sync::Arc;

/// Memory one hook invocation may hold. Interpreted languages (Python,
/// JavaScript) carry their runtime in the component and need tens of MiB.
const HOOK_MEMORY_BYTES: usize = 256 << 20;

/// Characters of a hook's output kept in a `hook_response` line.
const RESPONSE_CHARS: usize = 10_000;

/// What one invocation produced, for the loop and for the `hook_response`
/// line.
#[derive(Default)]
pub(super) struct Invocation {
    pub(super) result: HandlerResult,
    /// Why the handler did not answer (timeout, crash, error).
    pub(super) failure: Option<String>,
    pub(super) output: String,
    pub(super) stdout: String,
    pub(super) stderr: String,
    pub(super) exit_code: Option<i32>,
    /// The handler could not run at all (not a wrong answer): a
    /// PreToolUse hook's call is refused for it.
    pub(super) cannot_run: bool,
    /// What the handler's model requests cost (a `prompt` hook's judge).
    pub(super) cost_usd: f64,
}

impl Invocation {
    fn failed(reason: String) -> Self {
        Self {
            stderr: reason.clone(),
            failure: Some(reason),
            ..Self::default()
        }
    }

    fn cannot_run(reason: String) -> Self {
        Self {
            cannot_run: true,
            ..Self::failed(reason)
        }
    }

    /// What a process that spoke Claude Code's hook protocol answered.
    fn from_run(kind: HookEventKind, run: &CommandRun) -> Self {
        let result = from_command(kind, run);
        let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        // Exit codes other than 0 and 2 are Claude Code's "non-blocking
        // error": the hook did not do its job, so a hook that fails closed
        // blocks.
        // A failed PreToolUse hook's deny still holds (`errored`).
        let failure = (!matches!(run.exit_code, 0 | 2) && !result.errored).then(|| {
            result
                .error
                .clone()
                .unwrap_or_else(|| format!("exited with code {}", run.exit_code))
        });
        Self {
            result,
            output: cut(format!("{stdout}{stderr}")),
            stdout: cut(stdout),
            stderr: cut(stderr),
            exit_code: Some(run.exit_code),
            failure,
            cannot_run: false,
            cost_usd: 0.0,
        }
    }
}

/// Runs the hooks of one event, each on its own task so that they run in
/// parallel; a lone hook runs on the caller's task, sparing two thread
/// hand-offs, most of what a small hook costs.
pub(super) async fn invoke_all(
    hooks: &[(Arc<LoadedHook>, String)],
    common: &Arc<HookCommon>,
    event: &Arc<HookEvent>,
    services: Services,
) -> Vec<Invocation> {
    if let [(hook, _)] = hooks
        && !hook.spec.in_background
    {
        return vec![invoke(hook, common, event, &services).await];
    }
    let tasks: Vec<_> = hooks
        .iter()
        .map(|(hook, _)| {
            let (hook, common, event) = (hook.clone(), common.clone(), event.clone());
            let services = services.clone();
            let background = hook.spec.in_background;
            let task = tokio::spawn(async move {
                let invocation = invoke(&hook, &common, &event, &services).await;
                if background && let Some(failure) = &invocation.failure {
                    tracing::warn!(hook = %hook.label, "an async hook failed: {failure}");
                }
                invocation
            });
            (background, task)
        })
        .collect();
    let mut invocations = Vec::with_capacity(tasks.len());
    for (background, task) in tasks {
        // An async hook runs on; the event does not wait, nor take its
        // answer.
        if background {
            invocations.push(Invocation {
                output: "running in the background (async)".into(),
                ..Invocation::default()
            });
            continue;
        }
        invocations.push(match task.await {
            Ok(invocation) => invocation,
            Err(e) => Invocation::failed(format!("the hook task ended abnormally: {e}")),
        });
    }
    invocations
}

async fn invoke(
    hook: &LoadedHook,
    common: &HookCommon,
    event: &HookEvent,
    services: &Services,
) -> Invocation {
    let mut invocation = invoke_handler(hook, common, event, services).await;
    let kind = event.kind();
    let after_a_call = matches!(
        kind,
        HookEventKind::PostToolUse | HookEventKind::PostToolUseFailure
    );
    if let (HookEventKind::PreModelSwitch, Some(reason), Some(super::ShellLine::Run(line))) =
        (kind, &invocation.result.block, &hook.spec.command)
    {
        invocation.result.block = Some(format!("[{line}]: {reason}"));
    }
    if let (true, Some(call), Some(reason)) =
        (after_a_call, event.tool_call(), &invocation.result.block)
    {
        // As Claude Code 2.1.332 tells the model (beside the result).
        let from = match &hook.spec.command {
            Some(super::ShellLine::Run(line)) => format!(" from command: \"{line}\": [{line}]"),
            _ => String::new(),
        };
        let told = format!(
            "{}:{} hook blocking error{from}: {reason}",
            kind.name(),
            call.tool_name
        );
        invocation.result.block = Some(told);
    }
    invocation
}

async fn invoke_handler(
    hook: &LoadedHook,
    common: &HookCommon,
    event: &HookEvent,
    services: &Services,
) -> Invocation {
    let limits = CallLimits {
        deadline: hook.spec.timeout,
        memory_bytes: HOOK_MEMORY_BYTES,
        output_bytes: 1 << 20,
    };
    let kind = event.kind();
    match &hook.handler {
        Handler::Typed(component) => {
            match component.handle(common, event, &hook.grant, &limits).await {
                Ok(outcome) => {
                    let output = outcome_json(&outcome).to_string();
                    Invocation {
                        result: from_outcome(kind, outcome),
                        output: cut(output),
                        exit_code: Some(0),
                        ..Invocation::default()
                    }
                }
                Err(HookError::Returned(message)) => {
                    Invocation::failed(format!("the hook returned an error: {message}"))
                }
                Err(HookError::Sandbox(e)) => Invocation::failed(describe_failure(&e, hook)),
            }
        }
        Handler::Command(command) => {
            let stdin = input_json(common, event).to_string().into_bytes();
            match command.run(stdin, &common.cwd, &hook.grant, &limits).await {
                Ok(run) => Invocation::from_run(kind, &run),
                Err(e) => Invocation::failed(describe_failure(&e, hook)),
            }
        }
        Handler::Shell(shell) => invoke_shell(shell, hook, common, event).await,
        Handler::Agent(target) => invoke_agent(target, hook, common, event, services).await,
        Handler::McpTool(target) => invoke_mcp_tool(target, hook, common, event, services).await,
        Handler::Prompt(target) => invoke_prompt(target, hook, common, event, services).await,
        Handler::Http(target) => {
            let input = input_json(common, event).to_string().into_bytes();
            match target.post(input, hook.spec.timeout).await {
                Ok(run) => Invocation::from_run(kind, &run),
                // One carapace may not ask cannot run (a PreToolUse one
                // refuses the call); a server that fails is a hook error.
                Err(e) if e.refused() => Invocation::cannot_run(format!("it cannot run: {e}")),
                Err(e) => Invocation::failed(chain(&e)),
            }
        }
        Handler::Callback { id, callbacks } => {
            let input = input_json(common, event);
            let tool_use_id = input["tool_use_id"].as_str().map(str::to_string);
            let called = tokio::time::timeout(
                hook.spec.timeout,
                callbacks.call(id.clone(), input, tool_use_id),
            )
            .await;
            match called {
                Ok(Ok(answer)) => Invocation {
                    result: from_json(kind, &answer),
                    output: cut(answer.to_string()),
                    exit_code: Some(0),
                    ..Invocation::default()
                },
                Ok(Err(e)) => Invocation::failed(format!("the SDK's hook callback failed: {e}")),
                Err(_) => Invocation::failed(format!("timed out after {:?}", hook.spec.timeout)),
            }
        }
    }
}

/// An `agent` hook: the session's verifier, under the hook's deadline.
async fn invoke_agent(
    target: &super::AgentTarget,
    hook: &LoadedHook,
    common: &HookCommon,
    event: &HookEvent,
    services: &Services,
) -> Invocation {
    let Some(verifier) = &services.verifier else {
        return Invocation::cannot_run("it cannot run: this session runs no agents".into());
    };
    let task = target.task(&input_json(common, event));
    let verified = verifier.verify(task, target.model.clone());
    match tokio::time::timeout(hook.spec.timeout, verified).await {
        Ok(Ok((ok, reason))) => Invocation {
            result: super::AgentTarget::meaning(event.kind(), ok, &reason),
            exit_code: Some(0),
            ..Invocation::default()
        },
        Ok(Err(e)) => Invocation::failed(e),
        Err(_) => Invocation::failed(format!("timed out after {:?}", hook.spec.timeout)),
    }
}

/// An `mcp_tool` hook: a connected server's tool, its text read as a
/// command hook's stdout.
async fn invoke_mcp_tool(
    target: &super::McpToolTarget,
    hook: &LoadedHook,
    common: &HookCommon,
    event: &HookEvent,
    services: &Services,
) -> Invocation {
    let Some(mcp) = &services.mcp else {
        return Invocation::cannot_run("it cannot run: this session has no MCP servers".into());
    };
    let arguments = target.arguments(&input_json(common, event));
    let called = mcp.call(&target.server, &target.tool, arguments);
    match tokio::time::timeout(hook.spec.timeout, called).await {
        Ok(Ok((text, false))) => {
            let run = CommandRun {
                exit_code: 0,
                stdout: text.into_bytes(),
                stderr: Vec::new(),
            };
            Invocation::from_run(event.kind(), &run)
        }
        Ok(Ok((text, true))) => Invocation::failed(format!("the tool failed: {text}")),
        Ok(Err(e)) => Invocation::cannot_run(format!("it cannot run: {e}")),
        Err(_) => Invocation::failed(format!("timed out after {:?}", hook.spec.timeout)),
    }
}

/// A `prompt` hook: the session's model, asked once.
async fn invoke_prompt(
    target: &super::PromptTarget,
    hook: &LoadedHook,
    common: &HookCommon,
    event: &HookEvent,
    services: &Services,
) -> Invocation {
    let Some(judge) = &services.judge else {
        return Invocation::cannot_run("it cannot run: this session has no model".into());
    };
    let input = input_json(common, event);
    let judged = target.judge(judge, event.kind(), &input);
    match tokio::time::timeout(hook.spec.timeout, judged).await {
        Ok((Ok(result), cost_usd)) => Invocation {
            result,
            exit_code: Some(0),
            cost_usd,
            ..Invocation::default()
        },
        Ok((Err(e), cost_usd)) => Invocation {
            cost_usd,
            ..Invocation::failed(e)
        },
        Err(_) => Invocation::failed(format!("timed out after {:?}", hook.spec.timeout)),
    }
}

/// A `command` hook, run in the command sandbox.
async fn invoke_shell(
    shell: &ShellHook,
    hook: &LoadedHook,
    common: &HookCommon,
    event: &HookEvent,
) -> Invocation {
    let confined = match shell {
        ShellHook::Ready(confined) => confined,
        ShellHook::CannotRun(why) => {
            return Invocation::cannot_run(format!("it cannot run: {why}"));
        }
    };
    let stdin = input_json(common, event).to_string().into_bytes();
    match confined.run(stdin, hook.spec.timeout).await {
        Ok(RunEnd::Exited(run)) => {
            let mut invocation = Invocation::from_run(event.kind(), &run);
            for warning in confined.collect_env() {
                invocation.stderr.push_str(&format!("\n{warning}"));
            }
            invocation
        }
        Ok(RunEnd::TimedOut) => {
            Invocation::failed(format!("timed out after {:?}", hook.spec.timeout))
        }
        Err(why) => Invocation::cannot_run(format!("it could not run: {why}")),
    }
}

fn describe_failure(e: &SandboxError, hook: &LoadedHook) -> String {
    match e {
        SandboxError::Timeout(_) => format!("timed out after {:?}", hook.spec.timeout),
        other => other.describe(),
    }
}

/// A handler that did not answer: an error, or — when it fails closed, or
/// is a PreToolUse hook that could not run at all — the event's blocking
/// answer.
pub(super) fn failed(
    kind: HookEventKind,
    hook: &LoadedHook,
    failure: &str,
    cannot_run: bool,
) -> HandlerResult {
    let message = format!("{} hook {} failed: {failure}", kind.name(), hook.label);
    let closed = hook.spec.fail_closed || (cannot_run && kind == HookEventKind::PreToolUse);
    if !closed {
        return HandlerResult {
            error: Some(message),
            ..HandlerResult::default()
        };
    }
    let reason = if cannot_run && !hook.spec.fail_closed {
        format!("{message}. A guard that cannot run refuses what it guards.")
    } else {
        format!("{message}. It fails closed, so this is blocked.")
    };
    match kind {
        HookEventKind::PreToolUse
        | HookEventKind::PermissionRequest
        | HookEventKind::PreSkillShellCommand => HandlerResult {
            decision: Some(HookPermission::Deny),
            reason: Some(reason),
            error: Some(message),
            ..HandlerResult::default()
        },
        HookEventKind::PostToolUse
        | HookEventKind::PostToolUseFailure
        | HookEventKind::PostToolBatch
        | HookEventKind::Stop
        | HookEventKind::SubagentStop
        | HookEventKind::UserPromptSubmit
        | HookEventKind::UserPromptExpansion
        | HookEventKind::PreModelSwitch
        | HookEventKind::Elicitation
        | HookEventKind::ElicitationResult => HandlerResult {
            block: Some(reason),
            error: Some(message),
            ..HandlerResult::default()
        },
        HookEventKind::SessionStart
        | HookEventKind::SessionEnd
        | HookEventKind::PreCompact
        | HookEventKind::Notification
        | HookEventKind::SubagentStart
        | HookEventKind::StopFailure
        | HookEventKind::InstructionsLoaded
        | HookEventKind::PostCompact
        | HookEventKind::Setup
        | HookEventKind::MessageDisplay
        | HookEventKind::PostModelSwitch => HandlerResult {
            stop: Some(reason),
            error: Some(message),
            ..HandlerResult::default()
        },
    }
}

/// What a matcher is compared with, per event (as in Claude Code).
pub(super) fn matcher_subject(
    event: &HookEvent,
    agent: Option<&(String, String)>,
) -> Option<String> {
    match event {
        HookEvent::PreToolUse(call)
        | HookEvent::PostToolUse { call, .. }
        | HookEvent::PostToolUseFailure { call, .. }
        | HookEvent::PermissionRequest { call, .. } => Some(call.tool_name.clone()),
        HookEvent::PreSkillShellCommand { command_name, .. } => Some(command_name.clone()),
        HookEvent::UserPromptExpansion { command_name, .. } => Some(command_name.clone()),
        HookEvent::Setup { trigger } => Some(trigger.clone()),
        HookEvent::Elicitation(asked) => Some(asked.server.clone()),
        HookEvent::ElicitationResult(answered) => Some(answered.server.clone()),
        HookEvent::PreModelSwitch(switch) | HookEvent::PostModelSwitch(switch) => {
            Some(switch.to_model.clone())
        }
        HookEvent::SessionStart { source, .. } => Some(source.clone()),
        HookEvent::SessionEnd { reason } => Some(reason.clone()),
        HookEvent::PreCompact { trigger, .. } => Some(trigger.clone()),
        HookEvent::SubagentStart | HookEvent::SubagentStop { .. } => {
            agent.map(|(_, agent_type)| agent_type.clone())
        }
        HookEvent::StopFailure { error, .. } => Some(error.clone()),
        HookEvent::InstructionsLoaded { load_reason, .. } => Some(load_reason.clone()),
        HookEvent::PostCompact { trigger, .. } => Some(trigger.clone()),
        _ => None,
    }
}

fn outcome_json(outcome: &HookOutcome) -> Value {
    let decision = outcome.decision.map(|d| match d {
        HookPermission::Allow => "allow",
        HookPermission::Deny => "deny",
        HookPermission::Ask => "ask",
        HookPermission::Defer => "defer",
    });
    json!({
        "decision": decision,
        "reason": outcome.reason,
        "block": outcome.block,
        "updatedInput": outcome.updated_input,
        "additionalContext": outcome.additional_context,
        "updatedToolOutput": outcome.updated_tool_output,
        "stopReason": outcome.stop_reason,
        "systemMessage": outcome.system_message,
    })
}

fn cut(mut text: String) -> String {
    if let Some((at, _)) = text.char_indices().nth(RESPONSE_CHARS) {
        text.truncate(at);
        text.push('…');
    }
    text
}
