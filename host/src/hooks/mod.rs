//! Hooks: the settings' handlers, loaded as sandboxed components and run on
//! the loop's events with Claude Code's semantics.
//!
//! A hook is a WebAssembly component (typed `carapace:hook`, or a WASI
//! command speaking Claude Code's stdin/stdout protocol). Each invocation is
//! a fresh instance holding only what the hook's settings grant — by default
//! nothing: no file, no socket, no environment variable. Matching handlers
//! run in parallel; their answers fold into one ([`aggregate`]). A timeout or
//! a crash is a hook error (the run goes on) unless the handler fails closed.
//!
//! Imports: `agent`, `policy`, `sandbox` — folders below it; nothing that
//! imports it.

mod agent_hook;
mod answers;
mod approval;
mod callbacks;
mod component;
mod config;
mod event;
mod handlers;
mod http;
mod invoke;
mod load;
mod loop_hooks;
mod mcp_tool;
mod middleware;
mod prompt;
mod protocol;
mod seated;
mod shell;
mod tier;

pub use agent_hook::{AgentTarget, AgentVerifier, VERIFIER_AGENT_TYPE};
pub use answers::{PostToolUseAnswer, PreToolUseAnswer, StopAnswer};
pub use approval::{Held, HookApprovals};
pub use component::{CommandHook, CommandRun, HookComponent, HookError};
pub use event::{
    ElicitationAnswered, ElicitationAsked, HookCommon, HookEvent, HookEventKind, HookOutcome,
    HookPermission, HookToolCall, ModelSwitch, ResumedHistory, StartDetails,
};
pub use http::{HttpHookError, HttpHookLimits, HttpTarget};
pub use loop_hooks::stop_decision;
pub use mcp_tool::{McpToolCaller, McpToolTarget};
pub use middleware::{
    EventKind as MiddlewareEvent, Offer as ToolOffer, Spawn as SubagentSpawn, ToolCallIn,
    ToolResultOut,
};
pub use prompt::{PromptJudge, PromptTarget};
pub use shell::is_carapace_variable;
pub use tier::Tier;

pub use config::{
    DEFAULT_TIMEOUT, HandlerKind, HookConfigError, HookGrants, HookSpec, MIDDLEWARE_KEY, Matcher,
    MiddlewareEntry, ShellLine, parse, unreadable_guard,
};
pub use protocol::{HandlerResult, aggregate, from_command, from_json, from_outcome, input_json};

use crate::agent::{AgentEvent, EventRelay, EventSink};
use crate::policy::ModeCell;
use crate::sandbox::{Grant, Sandbox, SandboxError};
use futures::future::BoxFuture;
use invoke::{failed, invoke_all, matcher_subject};
use load::{Loaded, load_one};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};

enum Handler {
    Typed(HookComponent),
    Command(CommandHook),
    Shell(shell::ShellHook),
    Http(http::HttpTarget),
    Prompt(prompt::PromptTarget),
    McpTool(mcp_tool::McpToolTarget),
    Agent(agent_hook::AgentTarget),
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
    /// A `once` hook has run.
    spent: std::sync::atomic::AtomicBool,
    /// Switched off for this session (`/hooks disable N`).
    off: std::sync::atomic::AtomicBool,
}

impl LoadedHook {
    /// Whether this hook runs for `event`: its matcher, then its `if`
    /// against the call (judged from the call's input, holding when in
    /// doubt), then — taking the one run it has — `once`.
    fn runs_for(
        &self,
        event: &HookEvent,
        subject: Option<&str>,
        cwd: &Path,
        agent: Option<&(String, String)>,
    ) -> bool {
        if self.spec.event != event.kind()
            || !self.spec.matcher.matches(subject)
            || self.off.load(std::sync::atomic::Ordering::SeqCst)
        {
            return false;
        }
        // A verifier's own calls start no verifier.
        let by_verifier = agent.is_some_and(|(_, kind)| kind == VERIFIER_AGENT_TYPE);
        if by_verifier && self.spec.kind == config::HandlerKind::Agent {
            return false;
        }
        if let (Some(rule), Some(call)) = (&self.spec.condition, event.tool_call())
            && !rule.may_cover_call(&call.tool_name, &call.tool_input, cwd)
        {
            return false;
        }
        !self.spec.once || !self.spent.swap(true, std::sync::atomic::Ordering::SeqCst)
    }
}

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
    /// Where hook lines, hook warnings and messages go (the session's
    /// output, once it has one).
    output: EventRelay,
    /// Calls made by child loops: tool_use_id → (agent_id, agent_type).
    agent_calls: Mutex<std::collections::HashMap<String, (String, String)>>,
    /// The memory files read at the start, (path, memory type), told to
    /// InstructionsLoaded hooks once the session starts.
    instructions: Mutex<Vec<(String, String)>>,
    /// What `prompt` and `mcp_tool` hooks call: the session's model and
    /// its MCP servers, once it has them.
    services: std::sync::RwLock<Services>,
    /// Middleware hooks, in their seats.
    middleware: middleware::Middleware,
    /// What hooks' own model requests cost since the loop last took it.
    spent_usd: Mutex<f64>,
    /// Each MCP server's kind of configuration place (`mcp_server.source`).
    mcp_scopes: std::sync::RwLock<std::collections::HashMap<String, String>>,
}

/// What hooks that call into the session use.
#[derive(Clone, Default)]
pub(crate) struct Services {
    pub(crate) judge: Option<Arc<PromptJudge>>,
    pub(crate) mcp: Option<Arc<dyn McpToolCaller>>,
    pub(crate) verifier: Option<Arc<dyn AgentVerifier>>,
}

/// Why a hook could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum HookLoadError {
    #[error("hook {path}: cannot read the component: {reason}")]
    Read { path: String, reason: String },
    #[error("hook {path}: {}", .source.describe())]
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
            output: EventRelay::default(),
            agent_calls: Mutex::default(),
            instructions: Mutex::default(),
            services: Default::default(),
            middleware: Default::default(),
            spent_usd: Mutex::new(0.0),
            mcp_scopes: Default::default(),
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
        let mut middleware = middleware::Middleware::default();
        for spec in specs {
            let places = load::Places {
                home,
                config_dir,
                project: Path::new(&common.cwd),
            };
            if spec.kind == HandlerKind::Middleware {
                if let Some(guard) = seated::seat(&mut middleware, sandbox, &spec, &places).await {
                    warnings.push(guard.0);
                    hooks.push(guard.1);
                }
                continue;
            }
            let loaded = load_one(sandbox, &spec, &mut typed, &mut commands, &places).await;
            match loaded {
                Ok(Loaded::Ready(ready)) => {
                    let (grant, label, handler) = *ready;
                    hooks.push(Arc::new(LoadedHook {
                        spec,
                        handler,
                        grant,
                        label,
                        spent: Default::default(),
                        off: Default::default(),
                    }))
                }
                Ok(Loaded::NotForThisEvent(warning)) => warnings.push(warning),
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
                output: EventRelay::default(),
                agent_calls: Mutex::default(),
                instructions: Mutex::default(),
                services: Default::default(),
                middleware,
                spent_usd: Mutex::new(0.0),
                mcp_scopes: Default::default(),
            },
            warnings,
        ))
    }

    /// Hook lines (`hook_started`, `hook_response`), hook warnings and
    /// messages go to `output` (the session's).
    pub fn with_output(mut self, output: EventRelay) -> Self {
        self.output = output;
        self
    }

    /// From now on, hook lines, warnings and messages go to `sink` (with
    /// the session's other events, when the hooks report to the session's
    /// output).
    pub fn observe(&self, sink: Box<dyn EventSink>) {
        self.output.attach(sink);
    }

    /// Each loaded hook in a line: its event, what it matches, its kind,
    /// its file and where it was configured (`/hooks`); then the middleware
    /// in their seats (not the user's to switch off: they may guard).
    pub fn describe(&self) -> Vec<String> {
        let Ok(hooks) = self.hooks.read() else {
            return Vec::new();
        };
        let mut lines: Vec<String> = hooks
            .iter()
            .enumerate()
            .map(|(index, hook)| {
                let number = index + 1;
                let spec = &hook.spec;
                let matcher = match &spec.matcher {
                    config::Matcher::All => "*".to_string(),
                    config::Matcher::Names(names) => names.join("|"),
                    config::Matcher::Regex(regex) => regex.as_str().to_string(),
                };
                let kind = match spec.kind {
                    config::HandlerKind::Component => "component",
                    config::HandlerKind::Command => "command",
                    config::HandlerKind::Callback => "SDK callback",
                    config::HandlerKind::Shell => "shell command",
                    config::HandlerKind::Http => "http",
                    config::HandlerKind::Prompt => "prompt",
                    config::HandlerKind::McpTool => "mcp_tool",
                    config::HandlerKind::Agent => "agent",
                    config::HandlerKind::Middleware => "middleware",
                };
                let off = match hook.off.load(std::sync::atomic::Ordering::SeqCst) {
                    true => " — off for this session",
                    false => "",
                };
                format!(
                    "{number}. {} [{matcher}] {kind} {} ({}){off}",
                    spec.event.name(),
                    hook.label,
                    spec.source.describe()
                )
            })
            .collect();
        lines.extend(
            self.describe_middleware()
                .into_iter()
                .map(|l| format!("- {l}")),
        );
        lines
    }

    /// Switches hook `number` (as [`Self::describe`] numbers them) on or
    /// off for this session; what it did, or why not. The administrator's
    /// hooks are not the user's to switch off.
    pub fn switch(&self, number: usize, on: bool) -> Result<String, String> {
        let hooks = self
            .hooks
            .read()
            .map_err(|_| "the hooks are unusable".to_string())?;
        let hook = number
            .checked_sub(1)
            .and_then(|i| hooks.get(i))
            .ok_or_else(|| format!("there is no hook {number} (see /hooks)"))?;
        if hook.spec.source.kind == crate::policy::SourceKind::Managed {
            return Err(format!(
                "hook {number} is your administrator's (managed settings): it cannot be switched off"
            ));
        }
        hook.off.store(!on, std::sync::atomic::Ordering::SeqCst);
        Ok(format!(
            "{} hook {number} ({}) is {} for this session.",
            hook.spec.event.name(),
            hook.label,
            if on { "on" } else { "off" }
        ))
    }

    /// Whether any hook handles `kind`: the loop skips building events
    /// nobody listens to.
    pub fn handles(&self, kind: HookEventKind) -> bool {
        self.hooks
            .read()
            .is_ok_and(|hooks| hooks.iter().any(|h| h.spec.event == kind))
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.read().map_or(true, |hooks| hooks.is_empty()) && self.middleware.is_empty()
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
        self.output.send(event);
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
        let subject = matcher_subject(&event, agent.as_ref());
        let matching: Vec<Arc<LoadedHook>> = self
            .hooks
            .read()
            .map(|hooks| {
                let cwd = Path::new(&self.common.cwd);
                hooks
                    .iter()
                    .filter(|h| h.runs_for(&event, subject.as_deref(), cwd, agent.as_ref()))
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
        common.mcp_server = self.mcp_server_of(&event);
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
                status_message: hook.spec.status_message.clone(),
            });
            started.push((hook, hook_id));
        }
        let services = self.services.read().map(|s| s.clone()).unwrap_or_default();
        let invocations = invoke_all(&started, &common, &event, services).await;
        let mut results = Vec::with_capacity(started.len());
        let spent: f64 = invocations.iter().map(|i| i.cost_usd).sum();
        if spent > 0.0
            && let Ok(mut total) = self.spent_usd.lock()
        {
            *total += spent;
        }
        for ((hook, hook_id), invocation) in started.into_iter().zip(invocations) {
            let result = match &invocation.failure {
                None => invocation.result.clone(),
                Some(failure) => failed(kind, &hook, failure, invocation.cannot_run),
            };
            if invocation.cannot_run && kind != HookEventKind::PreToolUse {
                // Each time it misses, not once: nothing it should have
                // done happened.
                self.warn(format!(
                    "{} hook {} did not run: {}",
                    kind.name(),
                    hook.label,
                    invocation.failure.as_deref().unwrap_or("")
                ));
            }
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

    /// The model `prompt` hooks ask: the session's.
    pub fn set_judge(&self, judge: PromptJudge) {
        if let Ok(mut services) = self.services.write() {
            services.judge = Some(Arc::new(judge));
        }
    }

    /// The verifiers `agent` hooks run: the session's.
    pub fn set_verifier(&self, verifier: Arc<dyn AgentVerifier>) {
        if let Ok(mut services) = self.services.write() {
            services.verifier = Some(verifier);
        }
    }

    /// Where each of the session's MCP servers was configured, for the
    /// `mcp_server` of its tools' events.
    pub fn set_mcp_scopes(&self, scopes: std::collections::HashMap<String, String>) {
        if let Ok(mut held) = self.mcp_scopes.write() {
            *held = scopes;
        }
    }

    /// The server of an MCP tool's call (`mcp__SERVER__tool`).
    fn mcp_server_of(&self, event: &HookEvent) -> Option<(String, String)> {
        let tool = &event.tool_call()?.tool_name;
        let name = tool.strip_prefix("mcp__")?.split("__").next()?;
        let scopes = self.mcp_scopes.read().ok()?;
        let scope = scopes
            .get(name)
            .cloned()
            .unwrap_or_else(|| "dynamic".into());
        Some((name.to_string(), scope))
    }

    /// The MCP servers `mcp_tool` hooks call: the session's.
    pub fn set_mcp(&self, mcp: Arc<dyn McpToolCaller>) {
        if let Ok(mut services) = self.services.write() {
            services.mcp = Some(mcp);
        }
    }

    /// The memory files the session read at its start, for
    /// InstructionsLoaded.
    pub fn remember_instructions(&self, files: Vec<(String, String)>) {
        if let Ok(mut kept) = self.instructions.lock() {
            *kept = files;
        }
    }

    /// InstructionsLoaded, once per memory file read at the start (after
    /// SessionStart, as Claude Code 2.1.332 fires it). Told, not asked.
    pub async fn instructions_loaded(&self) {
        if !self.handles(HookEventKind::InstructionsLoaded) {
            return;
        }
        let files = self
            .instructions
            .lock()
            .map(|mut kept| std::mem::take(&mut *kept))
            .unwrap_or_default();
        for (file_path, memory_type) in files {
            self.run(HookEvent::InstructionsLoaded {
                file_path,
                memory_type,
                load_reason: "session_start".into(),
            })
            .await;
        }
    }

    /// PreModelSwitch: why a hook refuses the switch, if one does (Claude
    /// Code's words); PostModelSwitch is told once it is made.
    pub async fn model_switch(&self, switch: &ModelSwitch) -> Result<(), String> {
        if !self.handles(HookEventKind::PreModelSwitch) {
            return Ok(());
        }
        let answer = self.run(HookEvent::PreModelSwitch(switch.clone())).await;
        match answer.block.or(answer.stop) {
            Some(reason) => Err(format!(
                "Model switch blocked by a PreModelSwitch hook: {reason}"
            )),
            None => Ok(()),
        }
    }

    /// PostModelSwitch, told.
    pub async fn model_switched(&self, switch: ModelSwitch) {
        if self.handles(HookEventKind::PostModelSwitch) {
            self.run(HookEvent::PostModelSwitch(switch)).await;
        }
    }

    /// A warning line for the user that stops nothing (a hook refused a
    /// step, and the run goes on).
    pub fn inform(&self, content: String) {
        self.emit(AgentEvent::Informational {
            content,
            level: "warning",
            prevent_continuation: false,
        });
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
