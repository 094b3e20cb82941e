//! The single-tool pipeline: lookup → input parse → JSON-Schema validation →
//! the tool's own validation and plan → permission decision and grant → the
//! call in a sandbox holding only the grant → the `tool_result`.
//!
//! Every failure along the way is an `is_error` result with the call's id;
//! nothing here can end the loop.

use super::tools::{
    HookNotes, PermissionDenial, Preparation, ToolCall, ToolCallResult, ToolRuntime,
};
use crate::hooks::{HandlerResult, HookRuntime};
use crate::model::{ImageSource, ToolResultBlock, ToolResultContent, ToolSpec};
use crate::plugins::{RegisteredTool, ToolRegistry};
use crate::policy::{AuditEntry, AuditLog, Basis, Outcome, Policy, Verdict, protected_entries};
use crate::sandbox::{
    CallContext, CallLimits, Capability, Grant, HookEvent, HookEventKind, HookPermission,
    HookToolCall, ReadLedger, ToolContent, ToolFailure, ToolOutput,
};
use base64::Engine as _;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;

/// Characters of an oversized result shown inline.
const PREVIEW_CHARS: usize = 2_000;

/// Longest excerpt of unparsable tool input quoted back to the model.
const INPUT_EXCERPT_CHARS: usize = 200;

pub struct ToolPipeline {
    /// Replaced whole when an MCP server's tools change (between turns).
    registry: std::sync::RwLock<ToolRegistry>,
    /// Connected MCP servers, asked between turns whether their tools changed.
    mcp_servers: Vec<Arc<crate::mcp::McpServer>>,
    policy: Policy,
    limits: CallLimits,
    audit: AuditLog,
    /// A tool that answers permission questions in print mode
    /// (`--permission-prompt-tool`).
    prompt_tool: Option<String>,
    /// What the model was shown of each file in this session.
    reads: Arc<ReadLedger>,
    /// Where results over the limit (second) are saved in full.
    spill: Option<(std::path::PathBuf, usize)>,
    /// PreToolUse / PostToolUse / PostToolUseFailure / Notification hooks.
    hooks: Option<Arc<HookRuntime>>,
    /// Told to tools with each call (contract 0.2.0 on).
    session_id: String,
}

/// How an `Ask` was settled.
enum AskAnswer {
    Approved,
    Refused(String),
}

impl ToolPipeline {
    pub fn new(registry: ToolRegistry, policy: Policy, limits: CallLimits) -> Self {
        Self {
            registry: std::sync::RwLock::new(registry),
            mcp_servers: Vec::new(),
            policy,
            limits,
            audit: AuditLog::disabled(),
            prompt_tool: None,
            reads: ReadLedger::new(),
            spill: None,
            hooks: None,
            session_id: String::new(),
        }
    }

    /// The session id tools are told with each call.
    pub fn with_session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = session_id.into();
        self
    }

    /// Runs the tool hooks of `hooks` around every call.
    pub fn with_hooks(mut self, hooks: Arc<HookRuntime>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    fn hooks_for(&self, kind: HookEventKind) -> Option<&HookRuntime> {
        self.hooks.as_deref().filter(|h| h.handles(kind))
    }

    /// Saves any text result longer than `max_chars` to `dir` and gives the
    /// model a preview and the file's path instead (Read can page through
    /// it), so one large result cannot crowd out the context.
    pub fn with_result_spill(mut self, dir: std::path::PathBuf, max_chars: usize) -> Self {
        self.spill = Some((dir, max_chars));
        self
    }

    fn budget(&self, mut result: ToolCallResult) -> ToolCallResult {
        let Some((dir, max_chars)) = &self.spill else {
            return result;
        };
        let ToolResultContent::Text(text) = &result.content else {
            return result;
        };
        let total = text.chars().count();
        if total <= *max_chars {
            return result;
        }
        let name: String = result
            .tool_use_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        let path = dir.join(format!("{name}.txt"));
        let saved =
            std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, text.as_bytes()));
        let preview: String = text.chars().take(PREVIEW_CHARS).collect();
        let note = match saved {
            Ok(()) => format!(
                "\n\n[This result was {total} characters long; the first {PREVIEW_CHARS} are shown. The whole result is saved at {} — read it with Read, using offset and limit.]",
                path.display()
            ),
            Err(e) => format!(
                "\n\n[This result was {total} characters long and was cut to {PREVIEW_CHARS}; saving it whole failed: {e}]"
            ),
        };
        result.content = ToolResultContent::Text(preview + &note);
        result
    }

    /// Records every permission decision in `audit`.
    pub fn with_audit(mut self, audit: AuditLog) -> Self {
        self.audit = audit;
        self
    }

    /// Asks `tool` (a loaded tool) whenever the policy would ask the user.
    pub fn with_prompt_tool(mut self, tool: Option<String>) -> Self {
        self.prompt_tool = tool;
        self
    }

    /// The tools as they are now.
    pub fn registry(&self) -> ToolRegistry {
        self.registry.read().map(|r| r.clone()).unwrap_or_default()
    }

    /// Refreshes these servers' tools between turns.
    pub fn with_mcp_servers(mut self, servers: Vec<Arc<crate::mcp::McpServer>>) -> Self {
        self.mcp_servers = servers;
        self
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The tools offered to the model: every loaded tool that no bare deny
    /// rule removes.
    pub fn offered_names(&self) -> Vec<String> {
        self.registry()
            .names()
            .into_iter()
            .filter(|name| self.policy.hidden_by(name).is_none())
            .collect()
    }

    fn lookup(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        if self.policy.hidden_by(name).is_some() {
            return None;
        }
        self.registry.read().ok()?.get_shared(name)
    }

    async fn prepare_call(&self, call: &ToolCall) -> Preparation {
        let Some(tool) = self.lookup(&call.name) else {
            let mut message = format!("Error: No such tool available: {}", call.name);
            if let Some(close) = closest_name(&call.name, &self.offered_names()) {
                message.push_str(&format!(". Did you mean {close}?"));
            }
            return Preparation::Failed(ToolCallResult::error(&call.id, message));
        };
        if let Some(invalid) = &call.invalid_input {
            let excerpt: String = invalid.raw.chars().take(INPUT_EXCERPT_CHARS).collect();
            let ellipsis = if invalid.raw.chars().count() > INPUT_EXCERPT_CHARS {
                "…"
            } else {
                ""
            };
            return Preparation::Failed(ToolCallResult::error(
                &call.id,
                format!(
                    "InputValidationError: the input for {} is not valid JSON ({}). Received: {excerpt}{ellipsis}",
                    call.name, invalid.error
                ),
            ));
        }
        let problems = tool.schema_errors(&call.input);
        if !problems.is_empty() {
            let noun = if problems.len() == 1 {
                "issue"
            } else {
                "issues"
            };
            return Preparation::Failed(ToolCallResult::error(
                &call.id,
                format!(
                    "InputValidationError: {} failed due to the following {noun}:\n{}",
                    call.name,
                    problems.join("\n")
                ),
            ));
        }
        let component = match tool.handle().await {
            Ok(component) => component,
            Err(e) => {
                return Preparation::Failed(ToolCallResult::error(
                    &call.id,
                    format!("{} is unavailable: {e}", call.name),
                ));
            }
        };
        match component.plan(&call.name, &call.input.to_string()).await {
            Ok(Ok(plan)) => Preparation::Ready {
                concurrency_safe: plan.concurrency_safe,
                interrupt: plan.interrupt,
                plan,
            },
            Ok(Err(message)) => Preparation::Failed(ToolCallResult::error(&call.id, message)),
            Err(e) => Preparation::Failed(ToolCallResult::error(
                &call.id,
                format!("{} could not check its input: {e}", call.name),
            )),
        }
    }
}

impl ToolPipeline {
    async fn run_call(&self, call: ToolCall, preparation: Preparation) -> ToolCallResult {
        let plan = match preparation {
            Preparation::Failed(result) => return result,
            Preparation::Ready { plan, .. } => plan,
        };
        let Some(tool) = self.lookup(&call.name) else {
            return ToolCallResult::error(
                &call.id,
                format!("Error: No such tool available: {}", call.name),
            );
        };
        let (call, plan, hook_decision, mut notes) =
            match self.pre_tool_use(&tool, call, plan).await {
                Ok(ready) => ready,
                Err(result) => return *result,
            };
        let result = self
            .decide_and_call(&tool, &call, &plan, hook_decision)
            .await;
        let mut result = match result {
            // A refused call did not run: no PostToolUse.
            result if result.denial.is_some() => result,
            result => self.budget(self.post_tool_use(&call, result).await),
        };
        notes.context.append(&mut result.hooks.context);
        notes.stop = notes.stop.or(result.hooks.stop.take());
        result.hooks = notes;
        result
    }

    /// Runs the PreToolUse hooks: the call as they leave it (input updated
    /// and re-checked) with their decision, or the call's result when they
    /// settled it (deny, defer, stop, an invalid update).
    async fn pre_tool_use(
        &self,
        tool: &RegisteredTool,
        mut call: ToolCall,
        mut plan: crate::sandbox::CallPlan,
    ) -> Result<PreparedCall, Box<ToolCallResult>> {
        let mut notes = HookNotes::default();
        let Some(hooks) = self.hooks_for(HookEventKind::PreToolUse) else {
            return Ok((call, plan, None, notes));
        };
        let answer = hooks.run(HookEvent::PreToolUse(hook_call(&call))).await;
        notes.context = contexts("PreToolUse", &call.name, &answer);
        let settled = |mut result: ToolCallResult, notes: HookNotes| {
            result.hooks = notes;
            Err(Box::new(result))
        };
        if let Some(reason) = answer.stop {
            hooks.notify_stop(HookEventKind::PreToolUse, &reason);
            notes.stop = Some(reason.clone());
            let result = ToolCallResult::error(
                &call.id,
                format!("A PreToolUse hook stopped the run before this call: {reason}"),
            );
            return settled(result, notes);
        }
        let reason = answer.reason.unwrap_or_default();
        match answer.decision {
            Some(HookPermission::Deny) => {
                self.audit(
                    &call,
                    &plan.needs,
                    &Grant::none(),
                    "hook_deny",
                    &Basis::hook(None, None),
                );
                return settled(hook_denied(&call, reason), notes);
            }
            Some(HookPermission::Defer) => {
                notes.deferred = true;
                let result = ToolCallResult::error(
                    &call.id,
                    "A PreToolUse hook deferred this call, so it was not run. Only a response with a single tool call can be deferred (the run then ends, to be answered later).",
                );
                return settled(result, notes);
            }
            _ => {}
        }
        if let Some(updated) = answer.updated_input {
            let problems = tool.schema_errors(&updated);
            if !problems.is_empty() {
                let result = ToolCallResult::error(
                    &call.id,
                    format!(
                        "A PreToolUse hook rewrote the input of {} into one that fails its schema, so the call was not run:\n{}",
                        call.name,
                        problems.join("\n")
                    ),
                );
                hooks.warn(format!(
                    "PreToolUse hook gave {} an invalid updatedInput ({}); the call was not run",
                    call.name,
                    problems.join("; ")
                ));
                return settled(result, notes);
            }
            // The needs follow the input the tool will actually get.
            let replanned = match tool.handle().await {
                Ok(component) => component.plan(&call.name, &updated.to_string()).await,
                Err(e) => Err(e),
            };
            plan = match replanned {
                Ok(Ok(plan)) => plan,
                Ok(Err(message)) => {
                    return settled(ToolCallResult::error(&call.id, message), notes);
                }
                Err(e) => {
                    return settled(
                        ToolCallResult::error(
                            &call.id,
                            format!(
                                "{} could not check the input a hook gave it: {e}",
                                call.name
                            ),
                        ),
                        notes,
                    );
                }
            };
            call.input = updated;
        }
        let decision = answer.decision.map(|d| (d, reason));
        Ok((call, plan, decision, notes))
    }

    /// The policy's decision (with the hook's), the ask, the grant and the
    /// sandboxed call.
    async fn decide_and_call(
        &self,
        tool: &RegisteredTool,
        call: &ToolCall,
        plan: &crate::sandbox::CallPlan,
        hook_decision: Option<(HookPermission, String)>,
    ) -> ToolCallResult {
        let call = call.clone();
        let mut verdict = match &hook_decision {
            // A hook's allow answers the default question, nothing more.
            Some((HookPermission::Allow, _)) => {
                self.policy
                    .decide_hook_allowed(&call.name, &plan.needs, &tool.ceiling)
            }
            _ => self.policy.decide(&call.name, &plan.needs, &tool.ceiling),
        };
        if let (Some((HookPermission::Ask, reason)), Outcome::Allow(_)) =
            (&hook_decision, &verdict.outcome)
        {
            let why = if reason.is_empty() {
                "no reason given".to_string()
            } else {
                reason.clone()
            };
            verdict = Verdict {
                outcome: Outcome::Ask(format!(
                    "A PreToolUse hook asks for approval of this {} call ({why}).",
                    call.name
                )),
                basis: Basis::hook(None, None),
            };
        }
        let (grant, decision) = match verdict.outcome {
            Outcome::Allow(grant) => (grant, "allow"),
            Outcome::Deny(message) => {
                self.audit(&call, &plan.needs, &Grant::none(), "deny", &verdict.basis);
                return denied(&call, message, verdict.basis);
            }
            Outcome::Ask(question) => match self.ask_notified(&call, &question).await {
                AskAnswer::Refused(message) => {
                    self.audit(
                        &call,
                        &plan.needs,
                        &Grant::none(),
                        "ask_refused",
                        &verdict.basis,
                    );
                    return denied(&call, message, verdict.basis);
                }
                AskAnswer::Approved => {
                    match self.policy.approve(&call.name, &plan.needs, &tool.ceiling) {
                        Verdict {
                            outcome: Outcome::Allow(grant),
                            ..
                        } => (grant, "ask_approved"),
                        Verdict { outcome, basis } => {
                            let message = match outcome {
                                Outcome::Deny(m) | Outcome::Ask(m) => m,
                                Outcome::Allow(_) => String::new(),
                            };
                            self.audit(&call, &plan.needs, &Grant::none(), "deny", &basis);
                            return denied(&call, message, basis);
                        }
                    }
                }
            },
        };
        self.audit(&call, &plan.needs, &grant, decision, &verdict.basis);
        tracing::debug!(tool = %call.name, id = %call.id, granted = ?grant.describe(), "calling tool");
        let limits = tool.limits.as_ref().unwrap_or(&self.limits);
        let answer = match tool.handle().await {
            Ok(component) => {
                component
                    .call_in_session(
                        &call.name,
                        &call.input.to_string(),
                        &grant,
                        limits,
                        Some(&self.reads),
                        &CallContext {
                            tool_use_id: call.id.clone(),
                            session_id: self.session_id.clone(),
                        },
                    )
                    .await
            }
            Err(e) => Err(e),
        };
        if let Some(result) = self.sweep_protected(&call, &grant) {
            return result;
        }
        match answer {
            Ok(Ok(output)) => to_result(&call.id, output),
            Ok(Err(ToolFailure::InvalidInput(message))) => {
                ToolCallResult::error(&call.id, format!("InputValidationError: {message}"))
            }
            Ok(Err(ToolFailure::Failed(message))) => ToolCallResult::error(&call.id, message),
            Err(e) => ToolCallResult::error(&call.id, format!("{} failed: {e}", call.name)),
        }
    }

    /// Runs the PostToolUse hooks on a result (PostToolUseFailure on an
    /// error): their context, a block's reason for the model, a validated
    /// replacement output, a stop.
    async fn post_tool_use(&self, call: &ToolCall, mut result: ToolCallResult) -> ToolCallResult {
        let failed = result.is_error;
        let kind = if failed {
            HookEventKind::PostToolUseFailure
        } else {
            HookEventKind::PostToolUse
        };
        let Some(hooks) = self.hooks_for(kind) else {
            return result;
        };
        let event = if failed {
            HookEvent::PostToolUseFailure {
                call: hook_call(call),
                error: result_text(&result.content),
            }
        } else {
            HookEvent::PostToolUse {
                call: hook_call(call),
                tool_response: serde_json::to_string(&result.content).unwrap_or_default(),
            }
        };
        let answer = hooks.run(event).await;
        let mut context = contexts(kind.name(), &call.name, &answer);
        if let Some(reason) = &answer.block {
            context.push(format!(
                "<system-reminder>\nA {} hook objected to the {} call: {reason}\n</system-reminder>",
                kind.name(),
                call.name
            ));
        }
        if let Some(output) = answer.updated_tool_output {
            match replacement_output(output) {
                Ok(content) if !failed => result.content = content,
                Ok(_) => hooks.warn(format!(
                    "{} hook returned updatedToolOutput for a failed {} call; only PostToolUse may replace an output, so the original was kept",
                    kind.name(),
                    call.name
                )),
                Err(problem) => hooks.warn(format!(
                    "{} hook returned an invalid updatedToolOutput for {} ({problem}); the original output was kept",
                    kind.name(),
                    call.name
                )),
            }
        }
        if let Some(reason) = &answer.stop {
            hooks.notify_stop(kind, reason);
        }
        result.hooks.context = context;
        result.hooks.stop = answer.stop;
        result
    }

    /// An ask, after telling the Notification hooks that permission is
    /// needed (as Claude Code does when it shows a prompt).
    async fn ask_notified(&self, call: &ToolCall, question: &str) -> AskAnswer {
        if let Some(hooks) = self.hooks_for(HookEventKind::Notification) {
            hooks
                .run(HookEvent::Notification {
                    message: format!(
                        "carapace needs your permission to use {}: {question}",
                        call.name
                    ),
                })
                .await;
        }
        self.ask(call, question).await
    }

    /// Settles an `Ask` without a terminal: the permission prompt tool
    /// answers if one is configured; otherwise the answer is no, with the
    /// reason and what would allow it.
    async fn ask(&self, call: &ToolCall, question: &str) -> AskAnswer {
        let Some(prompt_tool) = &self.prompt_tool else {
            return AskAnswer::Refused(format!(
                "{question} carapace is running non-interactively and cannot ask, so the call was denied. \
To allow it, add a permission rule (--allowedTools or settings), choose another --permission-mode, \
or name a --permission-prompt-tool."
            ));
        };
        let Some(prompter) = self.lookup(prompt_tool) else {
            return AskAnswer::Refused(format!(
                "{question} The permission prompt tool `{prompt_tool}` is not loaded."
            ));
        };
        let input = json!({"tool_name": call.name, "input": call.input, "tool_use_id": call.id, "question": question});
        let answer = match prompter.handle().await {
            Ok(component) => {
                component
                    .call(
                        prompt_tool,
                        &input.to_string(),
                        &Grant::none(),
                        prompter.limits.as_ref().unwrap_or(&self.limits),
                    )
                    .await
            }
            Err(e) => Err(e),
        };
        let text = match answer {
            Ok(Ok(output)) => output
                .content
                .iter()
                .filter_map(|c| match c {
                    ToolContent::Text(t) => Some(t.as_str()),
                    ToolContent::Image { .. } => None,
                })
                .collect::<String>(),
            Ok(Err(failure)) => {
                return AskAnswer::Refused(format!(
                    "{question} The permission prompt tool failed: {failure:?}."
                ));
            }
            Err(e) => {
                return AskAnswer::Refused(format!(
                    "{question} The permission prompt tool failed: {e}."
                ));
            }
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v["behavior"] == "allow" => AskAnswer::Approved,
            Ok(v) if v["behavior"] == "deny" => AskAnswer::Refused(format!(
                "{question} The permission prompt tool refused: {}",
                v["message"].as_str().unwrap_or("no reason given")
            )),
            _ => AskAnswer::Refused(format!(
                "{question} The permission prompt tool gave no usable answer (expected {{\"behavior\": \"allow\" or \"deny\"}})."
            )),
        }
    }

    /// After a call holding a write grant on a tree: a protected file that
    /// appeared in the tree (none was there, or the grant would not have
    /// been given) is removed, and the call reports it.
    fn sweep_protected(&self, call: &ToolCall, grant: &Grant) -> Option<ToolCallResult> {
        let (home, config_dir) = self.policy.protected_roots();
        let mut removed = Vec::new();
        for tree in grant.write_trees() {
            let found = protected_entries(tree, &home, &config_dir, usize::MAX).unwrap_or_default();
            for path in found {
                let gone = if path.is_dir() && !path.is_symlink() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                if let Err(e) = gone {
                    tracing::error!(path = %path.display(), error = %e, "cannot remove a protected file a tool created");
                }
                removed.push(path.display().to_string());
            }
        }
        (!removed.is_empty()).then(|| {
            ToolCallResult::error(
                &call.id,
                format!(
                    "{} created protected files ({}); carapace removed them. Writing them needs the user's explicit approval.",
                    call.name,
                    removed.join(", ")
                ),
            )
        })
    }

    fn audit(
        &self,
        call: &ToolCall,
        needs: &[Capability],
        grant: &Grant,
        decision: &'static str,
        basis: &Basis,
    ) {
        self.audit.record(&AuditEntry {
            time: AuditEntry::now(),
            tool: call.name.clone(),
            tool_use_id: call.id.clone(),
            input_sha256: AuditEntry::digest(&call.input),
            requested: needs.iter().map(describe_need).collect(),
            granted: grant.describe(),
            decision,
            basis: basis.clone(),
        });
    }
}

fn describe_need(need: &Capability) -> String {
    match need {
        Capability::ReadFile(p) => format!("read {p}"),
        Capability::WriteFile(p) => format!("write {p}"),
        Capability::ReadTree(p) => format!("read tree {p}"),
        Capability::WriteTree(p) => format!("write tree {p}"),
        Capability::Http(h) => format!("http {h}"),
        Capability::Env(n) => format!("env {n}"),
        Capability::Process(c) => format!("run {c}"),
    }
}

/// A call as the PreToolUse hooks left it, their decision (with its
/// reason) and their notes.
type PreparedCall = (
    ToolCall,
    crate::sandbox::CallPlan,
    Option<(HookPermission, String)>,
    HookNotes,
);

fn hook_call(call: &ToolCall) -> HookToolCall {
    HookToolCall {
        tool_name: call.name.clone(),
        tool_input: call.input.to_string(),
        tool_use_id: call.id.clone(),
    }
}

/// A hook's additional context, as the model sees it next to the results.
fn contexts(event: &str, tool: &str, answer: &HandlerResult) -> Vec<String> {
    answer
        .additional_context
        .iter()
        .filter(|c| !c.trim().is_empty())
        .map(|c| format!("<system-reminder>\n{event} hook context for the {tool} call: {c}\n</system-reminder>"))
        .collect()
}

/// A PreToolUse hook's deny: the tool_result is the hook's reason, as is
/// (models read it as the hook wrote it).
fn hook_denied(call: &ToolCall, reason: String) -> ToolCallResult {
    let reason = if reason.trim().is_empty() {
        format!("A PreToolUse hook denied this {} call.", call.name)
    } else {
        reason
    };
    ToolCallResult {
        tool_use_id: call.id.clone(),
        content: ToolResultContent::Text(reason.clone()),
        is_error: true,
        denial: Some(Box::new(PermissionDenial {
            tool_name: call.name.clone(),
            tool_use_id: call.id.clone(),
            tool_input: call.input.clone(),
            reason,
            basis: Some(Basis::hook(None, None)),
        })),
        hooks: HookNotes::default(),
    }
}

/// A PostToolUse replacement output: a string, or content blocks the API
/// accepts in a tool_result (text, base64 images).
fn replacement_output(output: Value) -> Result<ToolResultContent, String> {
    match output {
        Value::String(text) => Ok(ToolResultContent::Text(text)),
        Value::Array(_) => serde_json::from_value::<Vec<ToolResultBlock>>(output)
            .map(ToolResultContent::Blocks)
            .map_err(|e| format!("content blocks must be text or base64 images: {e}")),
        other => Err(format!(
            "expected a string or an array of content blocks, got {}",
            match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                _ => "an object",
            }
        )),
    }
}

/// The text of a result, for PostToolUseFailure's `error`.
fn result_text(content: &ToolResultContent) -> String {
    match content {
        ToolResultContent::Text(text) => text.clone(),
        ToolResultContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ToolResultBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The `is_error` result of a denied call, naming what denied it.
fn denied(call: &ToolCall, message: String, basis: Basis) -> ToolCallResult {
    let mut result = ToolCallResult::error(&call.id, &message);
    result.denial = Some(Box::new(PermissionDenial {
        tool_name: call.name.clone(),
        tool_use_id: call.id.clone(),
        tool_input: call.input.clone(),
        reason: message,
        basis: Some(basis),
    }));
    result
}

impl ToolRuntime for ToolPipeline {
    fn specs(&self) -> Vec<ToolSpec> {
        self.registry()
            .specs()
            .into_iter()
            .filter(|spec| self.policy.hidden_by(&spec.name).is_none())
            .collect()
    }

    fn prepare<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, Preparation> {
        self.prepare_call(call).boxed()
    }

    fn refresh(&self) -> BoxFuture<'_, bool> {
        async move {
            let mut changed = false;
            for server in &self.mcp_servers {
                match server.refresh_if_changed().await {
                    Ok(false) => {}
                    Ok(true) => {
                        if let Ok(mut registry) = self.registry.write() {
                            for warning in registry.replace_mcp(server) {
                                tracing::warn!("{warning}");
                            }
                        }
                        changed = true;
                    }
                    Err(e) => {
                        tracing::warn!(server = %server.name, "cannot refresh its tools: {e}")
                    }
                }
            }
            changed
        }
        .boxed()
    }

    fn run(
        self: Arc<Self>,
        call: ToolCall,
        preparation: Preparation,
    ) -> BoxFuture<'static, ToolCallResult> {
        async move { self.run_call(call, preparation).await }.boxed()
    }
}

/// The tool's output as a `tool_result`: a plain string when it is one text,
/// blocks (images base64-encoded) otherwise.
fn to_result(id: &str, output: ToolOutput) -> ToolCallResult {
    let content = match output.content.as_slice() {
        [ToolContent::Text(text)] => ToolResultContent::Text(text.clone()),
        [] => ToolResultContent::Text(String::new()),
        blocks => ToolResultContent::Blocks(
            blocks
                .iter()
                .map(|block| match block {
                    ToolContent::Text(text) => ToolResultBlock::Text { text: text.clone() },
                    ToolContent::Image { media_type, data } => ToolResultBlock::Image {
                        source: ImageSource {
                            kind: "base64".into(),
                            media_type: media_type.clone(),
                            data: base64::engine::general_purpose::STANDARD.encode(data),
                        },
                    },
                })
                .collect(),
        ),
    };
    ToolCallResult {
        tool_use_id: id.to_string(),
        content,
        is_error: output.is_error,
        denial: None,
        hooks: Default::default(),
    }
}

/// The known tool name closest to `name`, if it is close enough to be a typo.
fn closest_name<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| {
            (
                strsim::levenshtein(&name.to_lowercase(), &k.to_lowercase()),
                k,
            )
        })
        .filter(|(distance, k)| *distance <= (k.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_tool_names_only() {
        let known = vec!["Read".to_string(), "Write".to_string(), "Grep".to_string()];
        assert_eq!(closest_name("read", &known), Some("Read"));
        assert_eq!(closest_name("Reed", &known), Some("Read"));
        assert_eq!(closest_name("Delete", &known), None);
    }
}
