//! The single-tool pipeline, as named stages:
//!
//! ```text
//! prepare:  lookup → validate → plan
//! run:      pre-hooks → decide → ask → call → sweep → post-hooks → spill
//! ```
//!
//! `prepare` runs when the call's block completes and says whether the call
//! may overlap with others; `run` runs when the executor starts it. Each
//! stage is a method in [`stages`]; a stage that settles the call returns
//! its result, and the call goes no further.
//!
//! Every failure along the way is an `is_error` result with the call's id;
//! nothing here can end the loop. The pipeline never grants what the policy
//! did not decide, and decides each call exactly once.

mod ask;
mod auto;
mod grants;
mod middleware;
mod results;
mod script;
mod server_requests;
mod skill;
mod stages;

pub use ask::{Asker, PermissionPrompter, PromptAnswer, PromptRequest, STDIO_PROMPT};
pub use script::{BackgroundScripts, CodeMode};

use crate::agent::{
    InterruptBehavior, Preparation, ReadyCall, ToolCall, ToolCallResult, ToolRuntime,
};
use crate::hooks::HookEventKind;
use crate::hooks::HookRuntime;
use crate::model::ToolSpec;
use crate::policy::{Approval, AuditLog, HookAnswer, LivePolicy, LiveReadDenials, Policy, Verdict};
use crate::sandbox::{CallLimits, CallPlan, ReadLedger};
use crate::tools::registry::{McpSet, McpToggleError, RegisteredTool, ToolHandle, ToolRegistry};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;

/// A call checked and decided, not run ([`ToolPipeline::check`]).
pub struct CheckedCall {
    pub tool: Arc<RegisteredTool>,
    pub handle: ToolHandle,
    pub plan: CallPlan,
    pub verdict: Verdict,
}

pub struct ToolPipeline {
    /// Replaced whole when an MCP server's tools change (between turns).
    registry: std::sync::RwLock<ToolRegistry>,
    /// Connected MCP servers, asked between turns whether their tools
    /// changed; the SDK may add and remove some while the session runs.
    mcp: Arc<McpSet>,
    /// The session's permissions as they are now, and every decision.
    permissions: Arc<LivePolicy>,
    limits: CallLimits,
    audit: AuditLog,
    /// Who answers what the policy would ask the user.
    asker: Asker,
    /// Where a call's progress is told (the session's output).
    output: Option<crate::agent::EventRelay>,
    /// Who answers an MCP server's questions when the asker cannot (the
    /// SDK's control channel, whatever asks about calls).
    elicitor: std::sync::OnceLock<Arc<dyn PermissionPrompter>>,
    /// The front end's prompter ([`Asker::Prompter`]), once attached.
    prompter: std::sync::OnceLock<Arc<dyn PermissionPrompter>>,
    /// What the model was shown of each file in this session (first-party
    /// tools only).
    reads: Arc<ReadLedger>,
    /// Where results over the limit (second) are saved in full.
    spill: Option<(PathBuf, usize)>,
    /// PreToolUse / PostToolUse / PostToolUseFailure / Notification hooks.
    hooks: Option<Arc<HookRuntime>>,
    /// Told to tools with each call (contract 0.2.0 on).
    session_id: String,
    /// Whether something outside reads each result's structured form
    /// (stream-json's `tool_use_result`); PostToolUse hooks always do.
    structured_results: bool,
    /// Memory that joins beside the first Read of a file it covers.
    /// Folder memory, and the tool whose results carry it (Read).
    memory: Option<(String, Arc<crate::memory::NestedMemory>)>,
    /// What the Skill tool and `/name` start, and what started skills
    /// pre-approved.
    skills: skill::Skills,
    /// Files kept before each turn's first write (the SDK's rewind).
    checkpoints: Option<Arc<crate::checkpoints::FileCheckpoints>>,
    /// What the middleware last left of the tool list, in order, with the
    /// descriptions they gave (`None`: no middleware judges the list).
    offered: std::sync::RwLock<Option<Vec<(String, String)>>>,
    /// The auto mode's classifier (none: auto mode asks as default does).
    auto: Option<Arc<crate::tools::auto_mode::AutoJudge>>,
    /// Where its decisions are kept (the transcript), once it is open; not
    /// held, so a pipeline something still holds keeps no transcript (and
    /// its lease) open past its session.
    decisions: Arc<std::sync::OnceLock<std::sync::Weak<dyn crate::agent::DecisionLog>>>,
    /// Code mode's runner and limits (none: no Script tool runs).
    code_mode: Option<Arc<CodeMode>>,
    /// This pipeline, as its callers hold it: a script's calls are run
    /// through it as the loop's are. Set by the first call prepared.
    myself: std::sync::OnceLock<std::sync::Weak<ToolPipeline>>,
}

impl ToolPipeline {
    pub fn new(registry: ToolRegistry, policy: Policy, limits: CallLimits) -> Self {
        Self {
            registry: std::sync::RwLock::new(registry),
            mcp: Arc::default(),
            permissions: Arc::new(LivePolicy::new(policy)),
            limits,
            audit: AuditLog::disabled(),
            asker: Asker::Nobody,
            prompter: std::sync::OnceLock::new(),
            output: None,
            elicitor: std::sync::OnceLock::new(),
            reads: ReadLedger::new(),
            spill: None,
            hooks: None,
            session_id: String::new(),
            structured_results: false,
            memory: None,
            skills: skill::Skills::default(),
            checkpoints: None,
            offered: Default::default(),
            auto: None,
            decisions: Arc::default(),
            code_mode: None,
            myself: std::sync::OnceLock::new(),
        }
    }

    /// Scripts run (the session offers the Script tool).
    pub fn with_code_mode(mut self, code_mode: CodeMode) -> Self {
        self.code_mode = Some(Arc::new(code_mode));
        self
    }

    fn myself(&self) -> Option<Arc<ToolPipeline>> {
        self.myself.get().and_then(std::sync::Weak::upgrade)
    }

    /// Keeps auto mode's decisions in `log` (the transcript) from now on.
    pub fn set_decision_log(&self, log: &Arc<dyn crate::agent::DecisionLog>) {
        let _ = self.decisions.set(Arc::downgrade(log));
    }

    /// The command sandbox's proxy lets through the hosts the WebFetch
    /// domain allow rules name, as rules join while the session runs.
    pub fn with_network(self, proxy: &Arc<crate::sandbox::egress::EgressProxy>) -> Self {
        self.permissions.keep_network_in_step(proxy);
        self
    }

    /// The classifier auto mode asks before the user.
    pub fn with_auto_judge(mut self, judge: Arc<crate::tools::auto_mode::AutoJudge>) -> Self {
        self.auto = Some(judge);
        self
    }

    /// Asks tools for their structured results on every call (for
    /// stream-json's `tool_use_result`), not only when hooks read them.
    pub fn with_structured_results(mut self, wanted: bool) -> Self {
        self.structured_results = wanted;
        self
    }

    /// The session id tools are told with each call.
    pub fn with_session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = session_id.into();
        self
    }

    /// Keeps each file a call may write before it runs, for rewinds.
    pub fn with_checkpoints(
        mut self,
        checkpoints: Arc<crate::checkpoints::FileCheckpoints>,
    ) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }

    /// Attaches folder memory to the results of `tool` (a file's reader,
    /// its `file_path`) that it covers.
    pub fn with_memory(
        mut self,
        tool: impl Into<String>,
        memory: Arc<crate::memory::NestedMemory>,
    ) -> Self {
        self.memory = Some((tool.into(), memory));
        self
    }

    /// Runs the tool hooks of `hooks` around every call.
    pub fn with_hooks(mut self, hooks: Arc<HookRuntime>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Saves any text result longer than `max_chars` to `dir` and gives the
    /// model a preview and the file's path instead (Read can page through
    /// it), so one large result cannot crowd out the context.
    pub fn with_result_spill(mut self, dir: PathBuf, max_chars: usize) -> Self {
        self.spill = Some((dir, max_chars));
        self
    }

    /// Records every permission decision in `audit`.
    pub fn with_audit(mut self, audit: AuditLog) -> Self {
        self.audit = audit;
        self
    }

    /// Who answers MCP servers' questions (set once): the SDK's control
    /// channel, as Claude Code asks the SDK whoever answers for calls.
    pub fn set_elicitor(&self, elicitor: Arc<dyn PermissionPrompter>) {
        let _ = self.elicitor.set(elicitor);
    }

    /// Where calls' progress is told: the session's output.
    pub fn with_output(mut self, output: crate::agent::EventRelay) -> Self {
        self.output = Some(output);
        self
    }

    /// Who hears one call's server and answers its questions: only an MCP
    /// tool's call has a server to hear.
    fn call_requests(
        &self,
        handle: &ToolHandle,
        tool_use_id: &str,
    ) -> Option<Arc<dyn crate::mcp::ServerRequests>> {
        if !matches!(handle, ToolHandle::Mcp(_)) {
            return None;
        }
        let prompter = match self.asker {
            Asker::Prompter { .. } => self.prompter.get().cloned(),
            Asker::Nobody | Asker::PromptTool(_) => None,
        };
        let prompter = self.elicitor.get().cloned().or(prompter);
        Some(Arc::new(server_requests::CallRequests {
            tool_use_id: tool_use_id.to_string(),
            output: self.output.clone(),
            hooks: self.hooks.clone(),
            prompter,
        }))
    }

    /// Who answers whenever the policy would ask the user.
    pub fn with_asker(mut self, asker: Asker) -> Self {
        self.asker = asker;
        self
    }

    /// The session's MCP servers: their tools refreshed between turns,
    /// turned off and on, shut down at the end.
    pub fn with_mcp_set(mut self, servers: Arc<McpSet>) -> Self {
        self.mcp = servers;
        self
    }

    /// The tools as they are now.
    pub fn registry(&self) -> ToolRegistry {
        self.registry.read().map(|r| r.clone()).unwrap_or_default()
    }

    /// How `name`'s calls are shown, as it was registered.
    pub fn presentation_of(&self, name: &str) -> crate::tools::Presentation {
        self.registry
            .read()
            .map(|r| r.presentation_of(name))
            .unwrap_or_default()
    }

    /// How each tool offered now is shown, for a front end to keep.
    pub fn presentations(&self) -> crate::tools::Presentations {
        self.registry
            .read()
            .map(|r| r.presentations())
            .unwrap_or_default()
    }

    /// The policy as it is now.
    pub fn policy(&self) -> Arc<Policy> {
        self.permissions.current()
    }

    /// The session's permissions: what was added while it runs, by whom,
    /// and the decision.
    pub fn permissions(&self) -> &Arc<LivePolicy> {
        &self.permissions
    }

    /// Recomputes what commands are hidden when the rules change.
    pub fn with_read_denials(self, live: Arc<LiveReadDenials>) -> Self {
        self.permissions.keep_in_step(live);
        self
    }

    /// The tools offered to the model: every loaded tool that no bare deny
    /// rule removes.
    pub fn offered_names(&self) -> Vec<String> {
        let policy = self.policy();
        self.registry()
            .names()
            .into_iter()
            .filter(|name| policy.hidden_by(name).is_none())
            .collect()
    }

    /// Offers a new definition of a tool the host runs itself (the Agent
    /// tool's list of agent types changed).
    pub fn replace_native_tool(
        &self,
        definition: crate::sandbox::ToolDefinition,
        tool: Arc<dyn crate::tools::NativeTool>,
    ) -> Result<(), crate::tools::RegistryError> {
        match self.registry.write() {
            Ok(mut registry) => registry.replace_native(definition, tool),
            Err(_) => Ok(()),
        }
    }

    /// Offers a server's tools from the next request on (the Agent SDK's
    /// servers, connected after the session started); returns warnings.
    pub fn add_mcp_server(&self, server: &Arc<crate::mcp::McpServer>) -> Vec<String> {
        self.mcp.add(&self.registry, server)
    }

    /// Stops offering a server's tools and forgets it, turned off or not
    /// (the SDK's `mcp_set_servers` and `mcp_reconnect`); the caller shuts
    /// it down.
    pub fn remove_mcp_server(&self, name: &str) -> Option<Arc<crate::mcp::McpServer>> {
        self.mcp.remove(&self.registry, name)
    }

    /// Shuts down every server the session holds (its end).
    pub async fn shutdown_mcp(&self) {
        self.mcp.shutdown().await;
    }

    /// The MCP servers the session holds.
    pub fn mcp_servers(&self) -> &McpSet {
        &self.mcp
    }

    /// Stops or starts offering an MCP server's tools, from the next
    /// request on (the SDK's `mcp_toggle`). The server stays connected.
    pub fn toggle_mcp(&self, name: &str, enabled: bool) -> Result<(), McpToggleError> {
        self.mcp.toggle(&self.registry, name, enabled)
    }

    /// A successful read of a file that a folder's memory or a scoped rule
    /// covers gets that memory beside its result, once per session.
    fn attach_memory(&self, call: &ToolCall, result: &mut ToolCallResult) {
        let Some((reader, memory)) = &self.memory else {
            return;
        };
        if call.name != *reader || result.is_error {
            return;
        }
        let Some(path) = call.input["file_path"].as_str() else {
            return;
        };
        let reminders = memory.for_read(std::path::Path::new(path));
        if reminders.is_empty() {
            return;
        }
        let extra = format!("\n\n{}", reminders.join("\n\n"));
        match &mut result.content {
            crate::model::ToolResultContent::Text(text) => text.push_str(&extra),
            crate::model::ToolResultContent::Blocks(blocks) => {
                blocks.push(crate::model::ToolResultBlock::Text { text: extra })
            }
        }
    }

    fn hooks_for(&self, kind: HookEventKind) -> Option<&HookRuntime> {
        self.hooks.as_deref().filter(|h| h.handles(kind))
    }

    /// lookup → validate → plan.
    async fn prepared(
        &self,
        call: &ToolCall,
    ) -> stages::Staged<(Arc<RegisteredTool>, ToolHandle, CallPlan)> {
        let tool = self.lookup(call)?;
        self.validate(&tool, call)?;
        let (handle, plan) = self.plan(&tool, call).await?;
        Ok((tool, handle, plan))
    }

    /// The prepare stages, when the call's block completes.
    async fn prepare_call(self: Arc<Self>, call: ToolCall) -> Preparation {
        let _ = self.myself.set(Arc::downgrade(&self));
        match self.prepared(&call).await {
            Ok((tool, handle, plan)) => Preparation::Ready(Box::new(PreparedCall {
                pipeline: self,
                tool,
                handle,
                call,
                plan,
            })),
            Err(result) => Preparation::Failed(result),
        }
    }

    /// A call the host makes outside the model's turn (a skill's
    /// `` !`command` ``, the interactive screen's `!command` and `@path`):
    /// every stage a model's call goes through — the rules, the hooks, the
    /// question when one is due, the sandbox.
    pub async fn run_nested(&self, call: ToolCall) -> ToolCallResult {
        results::redacted(match self.prepared(&call).await {
            Ok((tool, handle, plan)) => self.run_hooked(tool, handle, call, plan).await,
            Err(result) => *result,
        })
    }

    /// One call checked and decided as a session's would be — the prepare
    /// stages, then the decision with what the user said beforehand — but
    /// not run (`carapace tool call` runs it itself, to report what its
    /// instance held). `Err` is the result the call would get.
    pub async fn check(
        &self,
        call: &ToolCall,
        approval: Approval,
    ) -> Result<CheckedCall, Box<ToolCallResult>> {
        let (tool, handle, plan) = self.prepared(call).await?;
        let verdict = self.decide_with(&tool, call, &plan, HookAnswer::None, approval);
        Ok(CheckedCall {
            tool,
            handle,
            plan,
            verdict,
        })
    }

    /// pre-hooks → decide → ask → call → sweep → post-hooks → spill.
    async fn run_call(
        &self,
        tool: Arc<RegisteredTool>,
        handle: ToolHandle,
        call: ToolCall,
        plan: CallPlan,
    ) -> ToolCallResult {
        let hooked = match self.pre_hooks(&tool, handle, call, plan).await {
            Ok(hooked) => hooked,
            Err(result) => return *result,
        };
        let stages::PreHooked {
            call,
            plan,
            handle,
            hook,
            mut notes,
        } = hooked;
        let verdict = self.decide(&tool, &call, &plan, hook);
        let (call, grant) = match self
            .ask_until_settled(&tool, &handle, call, plan, verdict)
            .await
        {
            Ok(settled) => settled,
            Err(mut refused) => {
                // A refused call did not run: no PostToolUse.
                refused.hooks = notes;
                return *refused;
            }
        };
        if let Some(checkpoints) = &self.checkpoints {
            for path in grant.write_files() {
                checkpoints.before_write(path);
            }
        }
        let started = std::time::Instant::now();
        let result = self.call(&tool, &handle, &call, &grant).await;
        if let Some(checkpoints) = &self.checkpoints {
            for path in grant.write_files() {
                checkpoints.after_write(path);
            }
        }
        let result = self.sweep(&call, &grant).unwrap_or(result);
        let mut result = self.spill(self.post_hooks(&call, result, started.elapsed()).await);
        self.attach_memory(&call, &mut result);
        notes.context.append(&mut result.hooks.context);
        notes.stop = notes.stop.or(result.hooks.stop.take());
        result.hooks = notes;
        result
    }
}

/// A call that passed lookup, validation and planning.
struct PreparedCall {
    pipeline: Arc<ToolPipeline>,
    tool: Arc<RegisteredTool>,
    handle: ToolHandle,
    call: ToolCall,
    plan: CallPlan,
}

impl ReadyCall for PreparedCall {
    fn concurrency_safe(&self) -> bool {
        self.plan.concurrency_safe
    }

    fn interrupt(&self) -> InterruptBehavior {
        match self.plan.interrupt {
            crate::sandbox::InterruptBehavior::Cancel => InterruptBehavior::Cancel,
            crate::sandbox::InterruptBehavior::Block => InterruptBehavior::Block,
        }
    }

    fn run(self: Box<Self>) -> BoxFuture<'static, ToolCallResult> {
        let PreparedCall {
            pipeline,
            tool,
            handle,
            call,
            plan,
        } = *self;
        async move { results::redacted(pipeline.run_hooked(tool, handle, call, plan).await) }
            .boxed()
    }
}

impl ToolRuntime for ToolPipeline {
    fn specs(&self) -> Vec<ToolSpec> {
        let policy = self.policy();
        // A request for a grant has nobody to answer it in dontAsk, and
        // nothing to ask for in bypassPermissions.
        let grants_answered = !matches!(
            policy.mode(),
            crate::policy::PermissionMode::DontAsk
                | crate::policy::PermissionMode::BypassPermissions
        );
        let specs = self
            .registry()
            .specs()
            .into_iter()
            .filter(|spec| policy.hidden_by(&spec.name).is_none())
            .filter(|spec| {
                grants_answered
                    || spec.name != crate::tools::request_permissions::REQUEST_PERMISSIONS_TOOL
            })
            .collect();
        self.respec(self.as_offered(specs))
    }

    /// The Script tool declares the tools a script may call: those offered
    /// with it.
    fn respec(&self, mut specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
        if let Some(code_mode) = &self.code_mode {
            let described = crate::tools::script::description(&specs, &code_mode.limits);
            if let Some(script) = specs
                .iter_mut()
                .find(|s| s.name == crate::tools::script::SCRIPT_TOOL)
            {
                script.description = described;
            }
        }
        specs
    }

    fn offer(&self) -> BoxFuture<'_, Vec<ToolSpec>> {
        self.offer_through_middleware().boxed()
    }

    fn prepare(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Preparation> {
        self.prepare_call(call).boxed()
    }

    fn refresh(&self) -> BoxFuture<'_, bool> {
        self.mcp.refresh(&self.registry).boxed()
    }

    fn notices(&self) -> BoxFuture<'_, Vec<String>> {
        self.mcp.resource_updates().boxed()
    }

    fn note_user_prompt(&self, text: &str) {
        self.end_turn_grants();
        if let Some(judge) = &self.auto {
            judge.note_prompt(text);
        }
    }
}
