//! The hook world and its components, the two kinds: typed (`carapace:hook`, one binding per
//! contract version, mapped onto host types) and Claude Code–protocol WASI
//! commands (stdin JSON in, stdout JSON and an exit code out). Both run like
//! tools: a fresh instance per invocation, only what their settings grant.

use super::event::{
    HookCommon, HookEvent, HookEventKind, HookOutcome, HookPermission, HookToolCall,
};
use crate::sandbox::world::{CallCore, CallIo, EngineInner, World, link_file_streams, wasi_view};
use crate::sandbox::{CallLimits, Grant, Sandbox, SandboxError};
use std::sync::Arc;
use wasmtime::component::Linker;

/// The hook world's context: WASI built from the hook's grant, nothing
/// else. A hook cannot link `wasi:http`, the tool host interfaces or the
/// MCP transport: they are not in this world's linker.
pub(crate) struct HookState {
    core: CallCore,
}

wasi_view!(HookState);

impl World for HookState {
    fn link(linker: &mut Linker<Self>) -> Result<(), SandboxError> {
        link_file_streams(linker)
    }

    fn core(&mut self) -> &mut CallCore {
        &mut self.core
    }
}

mod v0_1 {
    wasmtime::component::bindgen!({
        world: "hook-plugin",
        path: "../wit/hook/v0.1.0",
        exports: { default: async },
    });
}

use v0_1::carapace::hook::types as wit;

/// A typed hook component, compiled and linked, its events read once.
#[derive(Clone)]
pub struct HookComponent {
    name: Arc<str>,
    engine: Arc<EngineInner>,
    pre: v0_1::HookPluginPre<HookState>,
    events: Arc<[HookEventKind]>,
}

/// Limits for asking a hook which events it handles. Interpreted languages
/// bring their runtime's heap: the memory is that of an invocation.
pub(super) const METADATA_LIMITS: CallLimits = CallLimits {
    deadline: std::time::Duration::from_secs(10),
    memory_bytes: 256 << 20,
    output_bytes: 1 << 20,
};

impl HookComponent {
    pub async fn load(sandbox: &Sandbox, name: &str, wasm: &[u8]) -> Result<Self, SandboxError> {
        let (instance_pre, _) = sandbox.link::<HookState>(wasm)?;
        let engine = sandbox.sandbox_engine().inner().clone();
        let pre = v0_1::HookPluginPre::new(instance_pre).map_err(SandboxError::link(""))?;
        let pre_for_events = pre.clone();
        let (events, _) = engine
            .execute(
                name,
                &Grant::none(),
                &METADATA_LIMITS,
                CallIo::default(),
                |core| HookState { core },
                move |store| Box::pin(async move { pre_for_events.instantiate_async(store).await }),
                |bindings, store| {
                    Box::pin(
                        async move { bindings.carapace_hook_handler().call_events(store).await },
                    )
                },
            )
            .await?;
        let mut kinds: Vec<HookEventKind> = events.into_iter().map(kind_from_wit).collect();
        kinds.dedup();
        Ok(Self {
            name: name.into(),
            engine,
            pre,
            events: Arc::from(kinds),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn events(&self) -> &[HookEventKind] {
        &self.events
    }

    /// Handles one event in a fresh instance holding `grant`.
    pub async fn handle(
        &self,
        common: &HookCommon,
        event: &HookEvent,
        grant: &Grant,
        limits: &CallLimits,
    ) -> Result<HookOutcome, HookError> {
        let common = wit::Common {
            session_id: common.session_id.clone(),
            transcript_path: common.transcript_path.clone(),
            cwd: common.cwd.clone(),
            permission_mode: common.permission_mode.clone(),
            hook_event_name: event.kind().name().into(),
        };
        let cwd = common.cwd.clone();
        // An event the typed world has no case for: nothing to say.
        let Some(event) = event_to_wit(event) else {
            return Ok(HookOutcome::default());
        };
        let pre = self.pre.clone();
        let (answer, _) = self
            .engine
            .execute(
                &self.name,
                grant,
                limits,
                CallIo {
                    env: vec![("CLAUDE_PROJECT_DIR".into(), cwd.clone())],
                    cwd: Some(cwd),
                    ..CallIo::default()
                },
                |core| HookState { core },
                move |store| Box::pin(async move { pre.instantiate_async(store).await }),
                move |bindings, store| {
                    Box::pin(async move {
                        bindings
                            .carapace_hook_handler()
                            .call_handle(store, &common, &event)
                            .await
                    })
                },
            )
            .await?;
        answer.map(outcome_from_wit).map_err(HookError::Returned)
    }
}

/// Why a typed hook gave no outcome.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The hook itself returned an error.
    #[error("the hook returned an error: {0}")]
    Returned(String),
    /// The sandbox stopped it (a trap, its deadline, its memory cap) or
    /// could not run it.
    #[error("{}", .0.describe())]
    Sandbox(SandboxError),
}

/// What a command hook left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
}

/// A WASI command component run with Claude Code's hook protocol.
#[derive(Clone)]
pub struct CommandHook {
    name: Arc<str>,
    engine: Arc<EngineInner>,
    pre: wasmtime_wasi::p2::bindings::CommandPre<HookState>,
}

impl CommandHook {
    pub async fn load(sandbox: &Sandbox, name: &str, wasm: &[u8]) -> Result<Self, SandboxError> {
        let (instance_pre, _) = sandbox.link::<HookState>(wasm)?;
        let pre = wasmtime_wasi::p2::bindings::CommandPre::new(instance_pre)
            .map_err(SandboxError::link("not a WASI command component"))?;
        Ok(Self {
            name: name.into(),
            engine: sandbox.sandbox_engine().inner().clone(),
            pre,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs the command with `stdin`; its exit code is 0 for a normal
    /// return, the code it passed to `exit`, or 1 for `Err` from `run`.
    /// The instance starts in `cwd` (the workspace), as a Claude Code
    /// command hook does; what it may open there is what its grant holds.
    pub async fn run(
        &self,
        stdin: Vec<u8>,
        cwd: &str,
        grant: &Grant,
        limits: &CallLimits,
    ) -> Result<CommandRun, SandboxError> {
        let pre = self.pre.clone();
        // As a Claude Code command hook: where the project is (knowing it
        // grants nothing).
        let io = CallIo {
            stdin: Some(stdin),
            capture_stdout: true,
            cwd: Some(cwd.to_string()),
            env: vec![("CLAUDE_PROJECT_DIR".into(), cwd.to_string())],
            clock: None,
        };
        let ran = self
            .engine
            .execute(
                &self.name,
                grant,
                limits,
                io,
                |core| HookState { core },
                move |store| Box::pin(async move { pre.instantiate_async(store).await }),
                |bindings, store| {
                    Box::pin(async move { bindings.wasi_cli_run().call_run(store).await })
                },
            )
            .await;
        match ran {
            Ok((status, captured)) => Ok(CommandRun {
                stdout: captured.stdout,
                stderr: captured.stderr,
                exit_code: if status.is_ok() { 0 } else { 1 },
            }),
            // `exit(n)` unwinds as a trap carrying the code: a normal end.
            Err(SandboxError::Trap {
                exit_code: Some(code),
                stdout,
                stderr,
                ..
            }) => Ok(CommandRun {
                stdout,
                stderr: stderr.into_bytes(),
                exit_code: code,
            }),
            Err(e) => Err(e),
        }
    }
}

fn kind_from_wit(kind: wit::EventKind) -> HookEventKind {
    match kind {
        wit::EventKind::PreToolUse => HookEventKind::PreToolUse,
        wit::EventKind::PostToolUse => HookEventKind::PostToolUse,
        wit::EventKind::PostToolUseFailure => HookEventKind::PostToolUseFailure,
        wit::EventKind::PostToolBatch => HookEventKind::PostToolBatch,
        wit::EventKind::Stop => HookEventKind::Stop,
        wit::EventKind::SubagentStop => HookEventKind::SubagentStop,
        wit::EventKind::UserPromptSubmit => HookEventKind::UserPromptSubmit,
        wit::EventKind::SessionStart => HookEventKind::SessionStart,
        wit::EventKind::SessionEnd => HookEventKind::SessionEnd,
        wit::EventKind::PreCompact => HookEventKind::PreCompact,
        wit::EventKind::Notification => HookEventKind::Notification,
    }
}

fn call_to_wit(call: &HookToolCall) -> wit::ToolCall {
    wit::ToolCall {
        tool_name: call.tool_name.clone(),
        tool_input: call.tool_input.to_string(),
        tool_use_id: call.tool_use_id.clone(),
    }
}

/// The event in `carapace:hook` 0.1's terms; `None` for events that
/// version does not have (typed hooks never declare them).
fn event_to_wit(event: &HookEvent) -> Option<wit::Event> {
    Some(match event {
        HookEvent::PreToolUse(call) => wit::Event::PreToolUse(call_to_wit(call)),
        HookEvent::PostToolUse {
            call,
            tool_response,
            ..
        } => wit::Event::PostToolUse(wit::ToolCompleted {
            call: call_to_wit(call),
            tool_response: tool_response.to_string(),
        }),
        HookEvent::PostToolUseFailure { call, error, .. } => {
            wit::Event::PostToolUseFailure(wit::ToolFailed {
                call: call_to_wit(call),
                error: error.clone(),
            })
        }
        HookEvent::PostToolBatch(calls) => wit::Event::PostToolBatch(
            calls
                .iter()
                .map(|(call, response)| wit::ToolCompleted {
                    call: call_to_wit(call),
                    tool_response: response.to_string(),
                })
                .collect(),
        ),
        HookEvent::Stop {
            stop_hook_active,
            last_assistant_message,
        } => wit::Event::Stop(wit::StopEvent {
            stop_hook_active: *stop_hook_active,
            last_assistant_message: last_assistant_message.clone(),
        }),
        HookEvent::SubagentStop {
            stop_hook_active,
            last_assistant_message,
            ..
        } => wit::Event::SubagentStop(wit::StopEvent {
            stop_hook_active: *stop_hook_active,
            last_assistant_message: last_assistant_message.clone(),
        }),
        HookEvent::UserPromptSubmit { prompt } => wit::Event::UserPromptSubmit(prompt.clone()),
        HookEvent::SessionStart { source, .. } => wit::Event::SessionStart(source.clone()),
        HookEvent::SessionEnd { reason } => wit::Event::SessionEnd(reason.clone()),
        HookEvent::PreCompact { trigger, .. } => wit::Event::PreCompact(trigger.clone()),
        HookEvent::Notification { message } => wit::Event::Notification(message.clone()),
        HookEvent::SubagentStart
        | HookEvent::StopFailure { .. }
        | HookEvent::InstructionsLoaded { .. }
        | HookEvent::PostCompact { .. }
        | HookEvent::PermissionRequest { .. }
        | HookEvent::UserPromptExpansion { .. }
        | HookEvent::Setup { .. }
        | HookEvent::MessageDisplay { .. }
        | HookEvent::PreSkillShellCommand { .. }
        | HookEvent::PreModelSwitch(_)
        | HookEvent::PostModelSwitch(_)
        | HookEvent::Elicitation(_)
        | HookEvent::ElicitationResult(_) => return None,
    })
}

fn outcome_from_wit(outcome: wit::Outcome) -> HookOutcome {
    HookOutcome {
        decision: outcome.decision.map(|d| match d {
            wit::PermissionDecision::Allow => HookPermission::Allow,
            wit::PermissionDecision::Deny => HookPermission::Deny,
            wit::PermissionDecision::Ask => HookPermission::Ask,
            wit::PermissionDecision::Defer => HookPermission::Defer,
        }),
        reason: outcome.reason,
        block: outcome.block,
        updated_input: outcome.updated_input,
        additional_context: outcome.additional_context,
        updated_tool_output: outcome.updated_tool_output,
        stop_reason: outcome.stop_reason,
        system_message: outcome.system_message,
    }
}

impl From<SandboxError> for HookError {
    fn from(e: SandboxError) -> Self {
        HookError::Sandbox(e)
    }
}
