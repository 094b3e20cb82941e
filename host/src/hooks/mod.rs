//! Hooks: the settings' handlers, loaded as sandboxed components and run on
//! the loop's events with Claude Code's semantics.
//!
//! A hook is a WebAssembly component (typed `carapace:hook`, or a WASI
//! command speaking Claude Code's stdin/stdout protocol). Each invocation is
//! a fresh instance holding only what the hook's settings grant — by default
//! nothing: no file, no socket, no environment variable. Matching handlers
//! run in parallel; their answers fold into one ([`aggregate`]). A timeout or
//! a crash is a hook error (the run goes on) unless the handler fails closed.

mod config;
mod protocol;

pub use config::{
    DEFAULT_TIMEOUT, HandlerKind, HookConfigError, HookGrants, HookSpec, Matcher, parse,
};
pub use protocol::{HandlerResult, aggregate, from_command, from_json, from_outcome, input_json};

use crate::agent::{
    AgentEvent, BatchCall, BatchDecision, CompactTrigger, EventSink, LoopHooks, PreCompactDecision,
    StopDecision, StopHookInput,
};
use crate::policy::{ModeCell, protected_entries, protected_reason, resolve_symlinks};
use crate::sandbox::{
    CallLimits, CommandHook, FileAccess, Grant, HookCommon, HookComponent, HookEvent,
    HookEventKind, HookPermission, Sandbox, SandboxError,
};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Memory one hook invocation may hold. Interpreted languages (Python,
/// JavaScript) carry their runtime in the component and need tens of MiB.
const HOOK_MEMORY_BYTES: usize = 256 << 20;

/// Characters of a hook's output kept in a `hook_response` line.
const RESPONSE_CHARS: usize = 10_000;

enum Handler {
    Typed(HookComponent),
    Command(CommandHook),
    Callback {
        id: String,
        callbacks: Arc<dyn HookCallbacks>,
    },
}

/// Where SDK hook callbacks are called (the control protocol's channel).
pub trait HookCallbacks: Send + Sync {
    /// Calls callback `id` with the hook's input (Claude Code's stdin
    /// JSON); the answer is hook output JSON.
    fn call(
        &self,
        id: String,
        input: Value,
        tool_use_id: Option<String>,
    ) -> BoxFuture<'_, Result<Value, String>>;
}

struct LoadedHook {
    spec: HookSpec,
    handler: Handler,
    grant: Grant,
    /// The file name, for messages.
    label: String,
}

/// Where hook lines and hook warnings go (the printer).
pub type HookObserver = Arc<Mutex<Box<dyn EventSink>>>;

/// The loaded hooks of a session.
pub struct HookRuntime {
    /// Settings' hooks from the start; the SDK's callbacks join when it
    /// initializes.
    hooks: std::sync::RwLock<Vec<Arc<LoadedHook>>>,
    common: HookCommon,
    /// The session's permission mode, read at each event (it can change
    /// during a session); without one, `common`'s is told.
    mode: Option<ModeCell>,
    /// The prompt being answered, told to every event from its
    /// UserPromptSubmit on.
    prompt_id: Mutex<Option<String>>,
    /// Set once the printer exists (after the pipeline holding the hooks).
    observer: std::sync::OnceLock<HookObserver>,
    /// Calls made by child loops: tool_use_id → (agent_id, agent_type).
    agent_calls: Mutex<std::collections::HashMap<String, (String, String)>>,
}

/// Why a hook could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum HookLoadError {
    #[error("hook {path}: cannot read the component: {reason}")]
    Read { path: String, reason: String },
    #[error("hook {path}: {source}")]
    Component { path: String, source: SandboxError },
    #[error("hook {path}: grant `{grant}`: {reason}")]
    Grant {
        path: String,
        grant: String,
        reason: String,
    },
}

impl HookRuntime {
    /// No hooks.
    pub fn empty(common: HookCommon) -> Self {
        Self {
            hooks: std::sync::RwLock::new(Vec::new()),
            common,
            mode: None,
            prompt_id: Mutex::new(None),
            observer: std::sync::OnceLock::new(),
            agent_calls: Mutex::default(),
        }
    }

    /// Loads every spec. A hook that cannot be loaded is an error when it
    /// fails closed (a guard that is missing must not look like one that
    /// allowed everything) and a warning otherwise.
    pub async fn load(
        sandbox: &Sandbox,
        specs: Vec<HookSpec>,
        common: HookCommon,
        home: &Path,
        config_dir: &Path,
    ) -> Result<(Self, Vec<String>), HookLoadError> {
        let mut hooks = Vec::new();
        let mut warnings = Vec::new();
        // One component may serve several events: load each file once.
        let mut typed: Vec<(std::path::PathBuf, HookComponent)> = Vec::new();
        let mut commands: Vec<(std::path::PathBuf, CommandHook)> = Vec::new();
        for spec in specs {
            let loaded =
                load_one(sandbox, &spec, &mut typed, &mut commands, home, config_dir).await;
            match loaded {
                Ok(Ok((grant, label, handler))) => hooks.push(Arc::new(LoadedHook {
                    spec,
                    handler,
                    grant,
                    label,
                })),
                Ok(Err(warning)) => warnings.push(warning),
                Err(e) if spec.fail_closed => return Err(e),
                Err(e) => warnings.push(format!(
                    "{e}; this hook fails open, so the run goes on without it"
                )),
            }
        }
        Ok((
            Self {
                hooks: std::sync::RwLock::new(hooks),
                common,
                mode: None,
                prompt_id: Mutex::new(None),
                observer: std::sync::OnceLock::new(),
                agent_calls: Mutex::default(),
            },
            warnings,
        ))
    }

    /// Hook lines (`hook_started`, `hook_response`), hook warnings and
    /// messages go to `sink` (set once; later calls are ignored).
    pub fn observe(&self, sink: Box<dyn EventSink>) {
        let _ = self.observer.set(Arc::new(Mutex::new(sink)));
    }

    /// Whether any hook handles `kind`: the loop skips building events
    /// nobody listens to.
    pub fn handles(&self, kind: HookEventKind) -> bool {
        self.hooks
            .read()
            .is_ok_and(|hooks| hooks.iter().any(|h| h.spec.event == kind))
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.read().map_or(true, |hooks| hooks.is_empty())
    }

    /// Registers the Agent SDK's hook callbacks (`initialize`'s `hooks`:
    /// event → [{matcher, hookCallbackIds, timeout?, onFailure?}]). They
    /// run beside the settings' hooks, folded with the same precedence.
    /// Returns how many were added.
    pub fn add_callbacks(
        &self,
        config: &Value,
        callbacks: Arc<dyn HookCallbacks>,
    ) -> Result<usize, String> {
        let Some(events) = config.as_object() else {
            return Ok(0);
        };
        let mut added = Vec::new();
        for (event, matchers) in events {
            let kind = HookEventKind::ALL
                .into_iter()
                .find(|k| k.name() == event)
                .ok_or_else(|| format!("hooks: carapace has no `{event}` event"))?;
            for group in matchers.as_array().into_iter().flatten() {
                let matcher = Matcher::parse(group["matcher"].as_str())
                    .map_err(|e| format!("hooks.{event}: {e}"))?;
                let timeout = group["timeout"]
                    .as_f64()
                    .filter(|t| t.is_finite() && *t > 0.0)
                    .map_or(DEFAULT_TIMEOUT, std::time::Duration::from_secs_f64);
                // The SDK's own reading: any value but "continue" blocks.
                let fail_closed = group
                    .get("onFailure")
                    .is_some_and(|v| v.as_str() != Some("continue"));
                for id in group["hookCallbackIds"].as_array().into_iter().flatten() {
                    let id = id
                        .as_str()
                        .ok_or_else(|| format!("hooks.{event}: a callback id is not a string"))?;
                    added.push(Arc::new(LoadedHook {
                        spec: HookSpec {
                            event: kind,
                            matcher: matcher.clone(),
                            kind: HandlerKind::Callback,
                            path: std::path::PathBuf::from(format!("sdk:{id}")),
                            timeout,
                            fail_closed,
                            grants: HookGrants::default(),
                            source: crate::policy::RuleSource {
                                kind: crate::policy::SourceKind::CliFlag,
                                file: None,
                            },
                        },
                        handler: Handler::Callback {
                            id: id.to_string(),
                            callbacks: callbacks.clone(),
                        },
                        grant: Grant::none(),
                        label: format!("SDK callback {id}"),
                    }));
                }
            }
        }
        let count = added.len();
        if let Ok(mut hooks) = self.hooks.write() {
            hooks.extend(added);
        }
        Ok(count)
    }

    /// A new user prompt begins: its id is told to the hooks of every event
    /// until the next.
    pub fn begin_prompt(&self) {
        if let Ok(mut prompt) = self.prompt_id.lock() {
            *prompt = Some(uuid::Uuid::new_v4().to_string());
        }
    }

    /// Tells hooks the session's mode as it is at each event.
    pub fn with_mode(mut self, mode: ModeCell) -> Self {
        self.mode = Some(mode);
        self
    }

    fn emit(&self, event: AgentEvent) {
        if let Some(observer) = self.observer.get()
            && let Ok(mut sink) = observer.lock()
        {
            sink.emit(event);
        }
    }

    /// A warning for the user (never the model).
    pub fn warn(&self, message: String) {
        tracing::warn!("{message}");
        self.emit(AgentEvent::Warning { message });
    }

    /// Notes that call `tool_use_id` comes from a child loop: its hooks
    /// are told `agent_id` and `agent_type`.
    pub fn tag_agent_call(&self, tool_use_id: &str, agent_id: &str, agent_type: &str) {
        if let Ok(mut calls) = self.agent_calls.lock() {
            calls.insert(tool_use_id.into(), (agent_id.into(), agent_type.into()));
        }
    }

    /// Runs `event` as a child loop's (`agent_id`, `agent_type`).
    pub async fn run_for_agent(&self, event: HookEvent, agent: (String, String)) -> HandlerResult {
        self.run_with(event, Some(agent)).await
    }

    /// Runs every matching handler of `event` in parallel and folds their
    /// answers. Never fails: a handler's failure is its error (or, when it
    /// fails closed, a deny / block).
    pub async fn run(&self, event: HookEvent) -> HandlerResult {
        let agent = event.tool_use_id().and_then(|id| {
            self.agent_calls
                .lock()
                .ok()
                .and_then(|calls| calls.get(id).cloned())
        });
        self.run_with(event, agent).await
    }

    async fn run_with(&self, event: HookEvent, agent: Option<(String, String)>) -> HandlerResult {
        let kind = event.kind();
        let subject = matcher_subject(&event);
        let matching: Vec<Arc<LoadedHook>> = self
            .hooks
            .read()
            .map(|hooks| {
                hooks
                    .iter()
                    .filter(|h| h.spec.event == kind && h.spec.matcher.matches(subject.as_deref()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if matching.is_empty() {
            return HandlerResult::default();
        }
        let mut common = self.common.clone();
        if let Some(mode) = &self.mode {
            common.permission_mode = mode.get().as_str().to_string();
        }
        common.prompt_id = self.prompt_id.lock().ok().and_then(|p| p.clone());
        common.agent = agent;
        let hook_name = match &subject {
            Some(s) if event.tool_name().is_some() => format!("{}:{s}", kind.name()),
            _ => kind.name().to_string(),
        };
        let event = Arc::new(event);
        let common = Arc::new(common);
        let mut started = Vec::with_capacity(matching.len());
        for hook in matching {
            let hook_id = uuid::Uuid::new_v4().to_string();
            self.emit(AgentEvent::HookStarted {
                hook_id: hook_id.clone(),
                hook_name: hook_name.clone(),
                hook_event: kind.name().to_string(),
            });
            started.push((hook, hook_id));
        }
        let invocations = invoke_all(&started, &common, &event).await;
        let mut results = Vec::with_capacity(started.len());
        for ((hook, hook_id), invocation) in started.into_iter().zip(invocations) {
            let result = match &invocation.failure {
                None => invocation.result.clone(),
                Some(failure) => failed(kind, &hook, failure),
            };
            if let Some(error) = &result.error {
                tracing::warn!(hook = %hook.label, event = kind.name(), "hook error: {error}");
            }
            self.emit(AgentEvent::HookResponse {
                hook_id,
                hook_name: hook_name.clone(),
                hook_event: kind.name().to_string(),
                output: invocation.output,
                stdout: invocation.stdout,
                stderr: invocation.stderr,
                exit_code: invocation.exit_code,
                outcome: if invocation.failure.is_some() || result.error.is_some() {
                    "error"
                } else {
                    "success"
                },
            });
            results.push(result);
        }
        let folded = aggregate(results);
        if let Some(message) = &folded.system_message {
            self.emit(AgentEvent::Informational {
                content: message.clone(),
                level: "info",
                prevent_continuation: false,
            });
        }
        folded
    }

    /// Tells the user the run stops because of a hook.
    pub fn notify_stop(&self, event: HookEventKind, reason: &str) {
        self.emit(AgentEvent::Informational {
            content: format!("{} hook stopped the run: {reason}", event.name()),
            level: "warning",
            prevent_continuation: true,
        });
    }
}

type Parts = (Grant, String, Handler);

/// Loads one spec's component (once per file) and its grant. `Ok(Err(_))`
/// is a warning: the hook is fine but will not run for this event.
async fn load_one(
    sandbox: &Sandbox,
    spec: &HookSpec,
    typed: &mut Vec<(std::path::PathBuf, HookComponent)>,
    commands: &mut Vec<(std::path::PathBuf, CommandHook)>,
    home: &Path,
    config_dir: &Path,
) -> Result<Result<Parts, String>, HookLoadError> {
    let path = spec.path.display().to_string();
    let grant = grant_for(spec, home, config_dir)?;
    let label = spec
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.clone());
    let read = || {
        std::fs::read(&spec.path).map_err(|e| HookLoadError::Read {
            path: path.clone(),
            reason: e.to_string(),
        })
    };
    let component_error = |source| HookLoadError::Component {
        path: path.clone(),
        source,
    };
    let handler = match spec.kind {
        HandlerKind::Component => {
            let component = match typed.iter().find(|(p, _)| *p == spec.path) {
                Some((_, c)) => c.clone(),
                None => {
                    let c = HookComponent::load(sandbox, &label, &read()?)
                        .await
                        .map_err(component_error)?;
                    typed.push((spec.path.clone(), c.clone()));
                    c
                }
            };
            if !component.events().contains(&spec.event) {
                return Ok(Err(format!(
                    "hook {path} is configured for {} but does not handle it (it handles {}); it will not run for it",
                    spec.event.name(),
                    component
                        .events()
                        .iter()
                        .map(|e| e.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            Handler::Typed(component)
        }
        HandlerKind::Command => {
            let command = match commands.iter().find(|(p, _)| *p == spec.path) {
                Some((_, c)) => c.clone(),
                None => {
                    let c = CommandHook::load(sandbox, &label, &read()?)
                        .await
                        .map_err(component_error)?;
                    commands.push((spec.path.clone(), c.clone()));
                    c
                }
            };
            Handler::Command(command)
        }
        HandlerKind::Callback => {
            return Ok(Err(format!(
                "hook {path}: SDK callbacks are registered by the SDK, not in settings"
            )));
        }
    };
    Ok(Ok((grant, label, handler)))
}

/// What one invocation produced, for the loop and for the `hook_response`
/// line.
#[derive(Default)]
struct Invocation {
    result: HandlerResult,
    /// Why the handler did not answer (timeout, crash, error).
    failure: Option<String>,
    output: String,
    stdout: String,
    stderr: String,
    exit_code: Option<i32>,
}

impl Invocation {
    fn failed(reason: String) -> Self {
        Self {
            stderr: reason.clone(),
            failure: Some(reason),
            ..Self::default()
        }
    }
}

/// Runs the hooks of one event, each on its own task so that they run in
/// parallel; a lone hook runs on the caller's task, sparing two thread
/// hand-offs, most of what a small hook costs.
async fn invoke_all(
    hooks: &[(Arc<LoadedHook>, String)],
    common: &Arc<HookCommon>,
    event: &Arc<HookEvent>,
) -> Vec<Invocation> {
    if let [(hook, _)] = hooks {
        return vec![invoke(hook, common, event).await];
    }
    let tasks: Vec<_> = hooks
        .iter()
        .map(|(hook, _)| {
            let (hook, common, event) = (hook.clone(), common.clone(), event.clone());
            tokio::spawn(async move { invoke(&hook, &common, &event).await })
        })
        .collect();
    let mut invocations = Vec::with_capacity(tasks.len());
    for task in tasks {
        invocations.push(match task.await {
            Ok(invocation) => invocation,
            Err(e) => Invocation::failed(format!("the hook task ended abnormally: {e}")),
        });
    }
    invocations
}

async fn invoke(hook: &LoadedHook, common: &HookCommon, event: &HookEvent) -> Invocation {
    let limits = CallLimits {
        deadline: hook.spec.timeout,
        memory_bytes: HOOK_MEMORY_BYTES,
        output_bytes: 1 << 20,
    };
    let kind = event.kind();
    match &hook.handler {
        Handler::Typed(component) => {
            match component.handle(common, event, &hook.grant, &limits).await {
                Ok(Ok(outcome)) => {
                    let output = outcome_json(&outcome).to_string();
                    Invocation {
                        result: from_outcome(kind, outcome),
                        output: cut(output),
                        exit_code: Some(0),
                        ..Invocation::default()
                    }
                }
                Ok(Err(message)) => {
                    Invocation::failed(format!("the hook returned an error: {message}"))
                }
                Err(e) => Invocation::failed(describe_failure(&e, hook)),
            }
        }
        Handler::Command(command) => {
            let stdin = input_json(common, event).to_string().into_bytes();
            match command.run(stdin, &common.cwd, &hook.grant, &limits).await {
                Ok(run) => {
                    let result = from_command(kind, &run);
                    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
                    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
                    // Exit codes other than 0 and 2 are Claude Code's
                    // "non-blocking error": the hook did not do its job, so
                    // a hook that fails closed blocks.
                    let failure = (!matches!(run.exit_code, 0 | 2)).then(|| {
                        result
                            .error
                            .clone()
                            .unwrap_or_else(|| format!("exited with code {}", run.exit_code))
                    });
                    Invocation {
                        result,
                        output: cut(format!("{stdout}{stderr}")),
                        stdout: cut(stdout),
                        stderr: cut(stderr),
                        exit_code: Some(run.exit_code),
                        failure,
                    }
                }
                Err(e) => Invocation::failed(describe_failure(&e, hook)),
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

fn describe_failure(e: &SandboxError, hook: &LoadedHook) -> String {
    match e {
        SandboxError::Timeout(_) => format!("timed out after {:?}", hook.spec.timeout),
        other => other.to_string(),
    }
}

/// A handler that did not answer: an error, or — when it fails closed — the
/// event's blocking answer.
fn failed(kind: HookEventKind, hook: &LoadedHook, failure: &str) -> HandlerResult {
    let message = format!("{} hook {} failed: {failure}", kind.name(), hook.label);
    if !hook.spec.fail_closed {
        return HandlerResult {
            error: Some(message),
            ..HandlerResult::default()
        };
    }
    let reason = format!("{message}. It fails closed, so this is blocked.");
    match kind {
        HookEventKind::PreToolUse => HandlerResult {
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
        | HookEventKind::UserPromptSubmit => HandlerResult {
            block: Some(reason),
            error: Some(message),
            ..HandlerResult::default()
        },
        HookEventKind::SessionStart
        | HookEventKind::SessionEnd
        | HookEventKind::PreCompact
        | HookEventKind::Notification => HandlerResult {
            stop: Some(reason),
            error: Some(message),
            ..HandlerResult::default()
        },
    }
}

/// What a matcher is compared with, per event (as in Claude Code).
fn matcher_subject(event: &HookEvent) -> Option<String> {
    match event {
        HookEvent::PreToolUse(call)
        | HookEvent::PostToolUse { call, .. }
        | HookEvent::PostToolUseFailure { call, .. } => Some(call.tool_name.clone()),
        HookEvent::SessionStart { source } => Some(source.clone()),
        HookEvent::SessionEnd { reason } => Some(reason.clone()),
        HookEvent::PreCompact { trigger, .. } => Some(trigger.clone()),
        _ => None,
    }
}

/// The capabilities a hook's settings grant; protected locations are never
/// granted for writing (a hook must not be able to rewrite settings, hooks
/// or shell start-up files).
fn grant_for(spec: &HookSpec, home: &Path, config_dir: &Path) -> Result<Grant, HookLoadError> {
    let base = spec
        .source
        .file
        .as_ref()
        .and_then(|f| f.parent())
        .map(Path::to_path_buf);
    let resolve = |p: &Path| match (&base, p.is_absolute()) {
        (_, true) | (None, false) => p.to_path_buf(),
        (Some(base), false) => base.join(p),
    };
    let bad = |grant: &Path, reason: String| HookLoadError::Grant {
        path: spec.path.display().to_string(),
        grant: grant.display().to_string(),
        reason,
    };
    let mut grant = Grant::none();
    for (paths, access) in [
        (&spec.grants.read, FileAccess::Read),
        (&spec.grants.write, FileAccess::Write),
    ] {
        for raw in paths {
            let path = resolve(raw);
            // Judged as written and where its links lead (before anything
            // is made for it).
            for candidate in [path.clone(), resolve_symlinks(&path)] {
                if let Some(reason) = refused_for_hooks(&candidate, home, config_dir) {
                    return Err(bad(raw, format!("{reason}; hooks are never granted it")));
                }
            }
            // Grants are resolved in the host: /proc/self is carapace.
            if let Some(reason) = crate::sandbox::refused_process_info(&path, true) {
                return Err(bad(raw, reason));
            }
            if access == FileAccess::Write {
                // An audit directory that does not exist yet is made.
                std::fs::create_dir_all(&path)
                    .map_err(|e| bad(raw, format!("cannot create it: {e}")))?;
            }
            let path = path.canonicalize().map_err(|e| bad(raw, e.to_string()))?;
            if let Some(reason) = refused_for_hooks(&path, home, config_dir) {
                return Err(bad(raw, format!("{reason}; hooks are never granted it")));
            }
            if access == FileAccess::Write && path.is_dir() {
                match protected_entries(&path, home, config_dir, HOOK_TREE_SCAN_LIMIT) {
                    Ok(found) if found.is_empty() => {}
                    Ok(found) => {
                        return Err(bad(
                            raw,
                            format!(
                                "the tree holds {}, which is protected; hooks are never granted writes there",
                                found[0].display()
                            ),
                        ));
                    }
                    Err(e) => {
                        return Err(bad(
                            raw,
                            format!("it cannot be checked for protected files ({e})"),
                        ));
                    }
                }
            }
            grant = if path.is_dir() {
                grant.tree(&path, access)
            } else if access == FileAccess::Read {
                grant.read_file(&path)
            } else {
                grant.write_file(&path)
            }
            .map_err(|e| bad(raw, e.to_string()))?;
        }
    }
    for name in &spec.grants.env {
        if is_carapace_variable(name) {
            return Err(HookLoadError::Grant {
                path: spec.path.display().to_string(),
                grant: name.clone(),
                reason: "carapace's own credentials and settings (ANTHROPIC_*, CARAPACE_*, CLAUDE_CODE_*) are never granted to hooks".into(),
            });
        }
        if let Ok(value) = std::env::var(name) {
            grant = grant.env_var(name, value);
        }
    }
    Ok(grant)
}

/// Trees a hook's write grant may hold at most (to be checked for protected
/// entries).
const HOOK_TREE_SCAN_LIMIT: usize = 20_000;

/// Why `path` may never be granted to a hook, read or write: a protected
/// location, the home directory (or a directory holding it: its dotfiles
/// come with it), or one of the home directory's dotfiles.
fn refused_for_hooks(path: &Path, home: &Path, config_dir: &Path) -> Option<String> {
    if let Some(reason) = protected_reason(path, home, config_dir) {
        return Some(format!("protected ({reason})"));
    }
    if home.starts_with(path) {
        return Some(format!(
            "it holds your home directory {} and its dotfiles",
            home.display()
        ));
    }
    let first = path.strip_prefix(home).ok()?.components().next()?;
    first
        .as_os_str()
        .to_string_lossy()
        .starts_with('.')
        .then(|| "it is one of your home directory's dotfiles".to_string())
}

/// carapace's own credentials and settings: never handed to a plugin or a
/// hook by name, never expanded into an MCP configuration unless the user
/// says so.
pub fn is_carapace_variable(name: &str) -> bool {
    ["ANTHROPIC_", "CARAPACE_", "CLAUDE_CODE_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

fn outcome_json(outcome: &crate::sandbox::HookOutcome) -> Value {
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

/// What Stop (or SubagentStop) hooks' folded answer means for the loop:
/// `continue: false` ends the run, a block sends the model back.
pub fn stop_decision(answer: HandlerResult) -> StopDecision {
    match (answer.stop, answer.block) {
        (Some(reason), _) => StopDecision::Prevent { reason },
        (None, Some(reason)) => StopDecision::Block { reason },
        (None, None) => StopDecision::Allow,
    }
}

impl LoopHooks for HookRuntime {
    fn on_stop(&self, input: StopHookInput) -> BoxFuture<'_, StopDecision> {
        Box::pin(async move {
            if !self.handles(HookEventKind::Stop) {
                return StopDecision::Allow;
            }
            let answer = self
                .run(HookEvent::Stop {
                    stop_hook_active: input.stop_hook_active,
                    last_assistant_message: input.last_assistant_message,
                })
                .await;
            stop_decision(answer)
        })
    }

    fn after_batch(&self, batch: Vec<BatchCall>) -> BoxFuture<'_, BatchDecision> {
        Box::pin(async move {
            if !self.handles(HookEventKind::PostToolBatch) {
                return BatchDecision::Continue {
                    context: Vec::new(),
                };
            }
            let calls = batch
                .into_iter()
                .map(|call| {
                    (
                        crate::sandbox::HookToolCall {
                            tool_name: call.tool_name,
                            tool_input: call.tool_input.to_string(),
                            tool_use_id: call.tool_use_id,
                        },
                        call.tool_response.to_string(),
                    )
                })
                .collect();
            let answer = self.run(HookEvent::PostToolBatch(calls)).await;
            match answer.stop.or(answer.block) {
                Some(reason) => {
                    self.notify_stop(HookEventKind::PostToolBatch, &reason);
                    BatchDecision::Stop { reason }
                }
                None => BatchDecision::Continue {
                    context: answer
                        .additional_context
                        .into_iter()
                        .filter(|c| !c.trim().is_empty())
                        .map(|c| format!("<system-reminder>\nPostToolBatch hook context: {c}\n</system-reminder>"))
                        .collect(),
                },
            }
        })
    }

    fn pre_compact(
        &self,
        trigger: CompactTrigger,
        instructions: Option<String>,
    ) -> BoxFuture<'_, PreCompactDecision> {
        Box::pin(async move {
            if !self.handles(HookEventKind::PreCompact) {
                return PreCompactDecision::Continue {
                    instructions: Vec::new(),
                };
            }
            let answer = self
                .run(HookEvent::PreCompact {
                    trigger: trigger.as_str().into(),
                    custom_instructions: instructions,
                })
                .await;
            match answer.stop.or(answer.block) {
                Some(reason) => PreCompactDecision::Block { reason },
                None => PreCompactDecision::Continue {
                    instructions: answer.additional_context,
                },
            }
        })
    }

    fn after_compact(&self) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async move {
            if !self.handles(HookEventKind::SessionStart) {
                return Vec::new();
            }
            let answer = self
                .run(HookEvent::SessionStart {
                    source: "compact".into(),
                })
                .await;
            answer
                .additional_context
                .into_iter()
                .filter(|c| !c.trim().is_empty())
                .map(|c| {
                    format!("<system-reminder>\nSessionStart hook context: {c}\n</system-reminder>")
                })
                .collect()
        })
    }
}
