//! The pipeline's stages, in the order a call goes through them. A stage
//! either hands the call on or settles it with its result (`Err`).

use super::ToolPipeline;
use super::results::{
    closest_name, contexts, denial_source, describe_need, hook_call, hook_denied,
    replacement_output, result_text, to_result,
};
use crate::agent::{HookNotes, PermissionDenial, ToolCall, ToolCallResult};
use crate::hooks::{HookEvent, HookEventKind, HookPermission};
use crate::model::ToolResultContent;
use crate::policy::{
    Approval, AuditEntry, Basis, CallRequest, HookAnswer, Verdict, protected_entries,
};
use crate::sandbox::{CallContext, CallError, CallPlan, Grant, PlanError, ToolInvocation};
use crate::tools::registry::{RegisteredTool, ToolHandle};
use std::sync::Arc;
use std::time::Duration;

/// Longest excerpt of unparsable tool input quoted back to the model.
const INPUT_EXCERPT_CHARS: usize = 200;

/// Characters of an oversized result shown inline.
const PREVIEW_CHARS: usize = 2_000;

/// A stage's verdict on the call: go on with `T`, or this is its result.
pub(super) type Staged<T> = Result<T, Box<ToolCallResult>>;

/// A call as the PreToolUse hooks left it.
pub(super) struct PreHooked {
    pub call: ToolCall,
    pub plan: CallPlan,
    pub handle: ToolHandle,
    /// What the hooks said, for the decision.
    pub hook: HookAnswer,
    pub notes: HookNotes,
}

pub(super) fn settled(call: &ToolCall, message: impl AsRef<str>) -> Box<ToolCallResult> {
    Box::new(ToolCallResult::error(&call.id, message))
}

/// Who gave a call a new input before it ran.
#[derive(Clone, Copy)]
pub(super) enum InputChanger {
    /// A PreToolUse hook's `updatedInput`.
    Hook,
    /// The permission prompt's approval with an `updatedInput`.
    Prompt,
}

/// Why a changed input was not taken: the refusal's words, and the schema's
/// complaints when that was the reason.
pub(super) struct InputRefused {
    pub message: String,
    pub problems: Vec<String>,
}

/// The one step for an input changed before the call runs: checked
/// against the tool's schema, planned again (the needs follow the input
/// the tool will actually get), then adopted. The new plan, or why not.
pub(super) async fn re_input(
    tool: &RegisteredTool,
    handle: &ToolHandle,
    call: &mut ToolCall,
    updated: serde_json::Value,
    changer: InputChanger,
) -> Result<CallPlan, InputRefused> {
    let problems = tool.schema_errors(&updated);
    if !problems.is_empty() {
        let message = match changer {
            InputChanger::Hook => format!(
                "A PreToolUse hook rewrote the input of {} into one that fails its schema, so the call was not run:\n{}",
                call.name,
                problems.join("\n")
            ),
            InputChanger::Prompt => format!(
                "The permission prompt approved {} with an input that fails its schema, so the call was not run:\n{}",
                call.name,
                problems.join("\n")
            ),
        };
        return Err(InputRefused { message, problems });
    }
    let plan = match handle.plan(&call.name, &updated).await {
        Ok(plan) => plan,
        Err(PlanError::Rejected(message)) => {
            return Err(InputRefused {
                message,
                problems: Vec::new(),
            });
        }
        Err(PlanError::Sandbox(e)) => {
            let what = match changer {
                InputChanger::Hook => "the input a hook gave it",
                InputChanger::Prompt => "the approved input",
            };
            return Err(InputRefused {
                message: format!("{} could not check {what}: {}", call.name, e.describe()),
                problems: Vec::new(),
            });
        }
    };
    call.input = updated;
    Ok(plan)
}

impl ToolPipeline {
    /// lookup: the tool by name, unless a bare deny rule hides it; an
    /// unknown name gets a suggestion.
    pub(super) fn lookup(&self, call: &ToolCall) -> Staged<Arc<RegisteredTool>> {
        let hidden = self.policy().hidden_by(&call.name).is_some() || self.withheld(&call.name);
        let found = match hidden {
            true => None,
            false => self
                .registry
                .read()
                .ok()
                .and_then(|r| r.get_shared(&call.name)),
        };
        found.ok_or_else(|| {
            let mut message = format!("Error: No such tool available: {}", call.name);
            if let Some(close) = closest_name(&call.name, &self.offered_names()) {
                message.push_str(&format!(". Did you mean {close}?"));
            }
            settled(call, message)
        })
    }

    /// validate: the input parsed as JSON and matches the tool's schema.
    pub(super) fn validate(&self, tool: &RegisteredTool, call: &ToolCall) -> Staged<()> {
        if let Some(invalid) = &call.invalid_input {
            let excerpt: String = invalid.raw.chars().take(INPUT_EXCERPT_CHARS).collect();
            let ellipsis = if invalid.raw.chars().count() > INPUT_EXCERPT_CHARS {
                "…"
            } else {
                ""
            };
            return Err(settled(
                call,
                format!(
                    "InputValidationError: the input for {} is not valid JSON ({}). Received: {excerpt}{ellipsis}",
                    call.name, invalid.error
                ),
            ));
        }
        let problems = tool.schema_errors(&call.input);
        if problems.is_empty() {
            return Ok(());
        }
        let noun = if problems.len() == 1 {
            "issue"
        } else {
            "issues"
        };
        Err(settled(
            call,
            format!(
                "InputValidationError: {} failed due to the following {noun}:\n{}",
                call.name,
                problems.join("\n")
            ),
        ))
    }

    /// plan: the tool's own validation, and what the call needs (in an
    /// instance with no capabilities).
    pub(super) async fn plan(
        &self,
        tool: &RegisteredTool,
        call: &ToolCall,
    ) -> Staged<(ToolHandle, CallPlan)> {
        let handle = tool.handle().await.map_err(|e| {
            settled(
                call,
                format!("{} is unavailable: {}", call.name, e.describe()),
            )
        })?;
        match handle.plan(&call.name, &call.input).await {
            Ok(plan) => Ok((handle, plan)),
            Err(PlanError::Rejected(message)) => Err(settled(call, message)),
            Err(PlanError::Sandbox(e)) => Err(settled(
                call,
                format!("{} could not check its input: {}", call.name, e.describe()),
            )),
        }
    }

    /// pre-hooks: the PreToolUse hooks may settle the call (deny, defer,
    /// stop, an invalid update) or rewrite its input (checked and planned
    /// again); their permission answer goes to the decision.
    pub(super) async fn pre_hooks(
        &self,
        tool: &RegisteredTool,
        handle: ToolHandle,
        mut call: ToolCall,
        mut plan: CallPlan,
    ) -> Staged<PreHooked> {
        let mut notes = HookNotes::default();
        let Some(hooks) = self.hooks_for(HookEventKind::PreToolUse) else {
            return Ok(PreHooked {
                call,
                plan,
                handle,
                hook: HookAnswer::None,
                notes,
            });
        };
        let mut answer = hooks.pre_tool_use(hook_call(&call)).await;
        notes.context = contexts("PreToolUse", &call.name, &answer.context);
        let settle = |mut result: Box<ToolCallResult>, notes: HookNotes| {
            result.hooks = notes;
            Err(result)
        };
        // As Claude Code 2.1.332: `continue: false` lets this call run (and
        // its PostToolUse hooks), and the run ends after the batch, saying
        // nothing more.
        notes.stop = answer.stop.take();
        let reason = answer.reason.unwrap_or_default();
        let hook = match answer.decision {
            Some(HookPermission::Deny) => {
                self.audit(
                    &call,
                    &plan,
                    &Grant::none(),
                    "hook_deny",
                    &Basis::hook(None, None),
                );
                let denied = hook_denied(&call, reason, answer.errored);
                return settle(Box::new(denied), notes);
            }
            Some(HookPermission::Defer) => {
                notes.deferred = true;
                let result = settled(
                    &call,
                    "A PreToolUse hook deferred this call, so it was not run. Only a response with a single tool call can be deferred (the run then ends, to be answered later).",
                );
                return settle(result, notes);
            }
            Some(HookPermission::Allow) => HookAnswer::Allow,
            Some(HookPermission::Ask) => HookAnswer::Ask(reason),
            None => HookAnswer::None,
        };
        if let Some(updated) = answer.updated_input {
            match re_input(tool, &handle, &mut call, updated, InputChanger::Hook).await {
                Ok(replanned) => plan = replanned,
                Err(refused) => {
                    if !refused.problems.is_empty() {
                        hooks.warn(format!(
                            "PreToolUse hook gave {} an invalid updatedInput ({}); the call was not run",
                            call.name,
                            refused.problems.join("; ")
                        ));
                    }
                    return settle(settled(&call, refused.message), notes);
                }
            }
        }
        Ok(PreHooked {
            call,
            plan,
            handle,
            hook,
            notes,
        })
    }

    /// decide: the policy's verdict, the hook's answer included.
    pub(super) fn decide(
        &self,
        tool: &RegisteredTool,
        call: &ToolCall,
        plan: &CallPlan,
        hook: HookAnswer,
    ) -> Verdict {
        self.decide_with(tool, call, plan, hook, Approval::None)
    }

    /// [`decide`](Self::decide), with what the user said beforehand.
    pub(super) fn decide_with(
        &self,
        tool: &RegisteredTool,
        call: &ToolCall,
        plan: &CallPlan,
        hook: HookAnswer,
        approval: Approval,
    ) -> Verdict {
        let asking = self.skill_approval(tool, call).unwrap_or(tool.approval);
        let mut request = CallRequest::new(&call.name, &plan.needs, &tool.ceiling)
            .asking(asking)
            .with_hook(hook)
            .with_approval(approval);
        if tool.starts_skills() {
            request = request.naming(super::skill::skill_name(call));
        }
        self.permissions().decide(&request)
    }

    /// call: the sandboxed call holding exactly `grant`.
    pub(super) async fn call(
        &self,
        tool: &RegisteredTool,
        handle: &ToolHandle,
        call: &ToolCall,
        grant: &Grant,
    ) -> ToolCallResult {
        tracing::debug!(tool = %call.name, id = %call.id, granted = ?grant.describe(), "calling tool");
        if self.runs_skill(tool) {
            return Box::pin(self.call_skill(call)).await;
        }
        if tool.grants_permissions() {
            return self.apply_grant(call);
        }
        if tool.runs_scripts() {
            return Box::pin(self.run_script(call)).await;
        }
        let limits = tool.limits.as_ref().unwrap_or(&self.limits);
        let context = CallContext {
            tool_use_id: call.id.clone(),
            session_id: self.session_id.clone(),
            wants_structured: self.structured_results
                || self.hooks_for(HookEventKind::PostToolUse).is_some(),
        };
        let invocation = ToolInvocation {
            tool: &call.name,
            input: &call.input,
            grant,
            limits,
            reads: Some(&self.reads),
            context,
        };
        match handle
            .call(invocation, self.call_requests(handle, &call.id))
            .await
        {
            Ok(output) => to_result(&call.id, output),
            Err(CallError::InvalidInput(message)) => {
                ToolCallResult::error(&call.id, format!("InputValidationError: {message}"))
            }
            Err(CallError::Failed(message)) => ToolCallResult::error(&call.id, message),
            Err(CallError::Sandbox(e)) => {
                ToolCallResult::error(&call.id, format!("{} failed: {}", call.name, e.describe()))
            }
        }
    }

    /// sweep: after a call holding a write grant on a tree, a protected file
    /// that appeared in the tree (none was there, or the grant would not
    /// have been given) is moved aside under a name nothing reads — never
    /// deleted: the user may have made it meanwhile — and the call says
    /// where. The sandbox refuses such names at the call that would make
    /// them; this is the net behind it, for what that judgement cannot see
    /// (a folder `core.hooksPath` names).
    pub(super) fn sweep(&self, call: &ToolCall, grant: &Grant) -> Option<ToolCallResult> {
        let (home, config_dir) = self.policy().protected_roots();
        let mut moved = Vec::new();
        for tree in grant.write_trees() {
            let found = protected_entries(tree, &home, &config_dir, usize::MAX).unwrap_or_default();
            for path in found {
                moved.push(match crate::sandbox::move_aside(&path) {
                    Ok(to) => format!("{} (now {})", path.display(), to.display()),
                    Err(e) => {
                        tracing::error!(path = %path.display(), error = %e, "cannot move aside a protected file a tool created");
                        format!("{} (it could not be moved aside: {e})", path.display())
                    }
                });
            }
        }
        (!moved.is_empty()).then(|| {
            ToolCallResult::error(
                &call.id,
                format!(
                    "{} created protected files: {}; carapace moved them aside, nothing was deleted. Writing them needs the user's explicit approval.",
                    call.name,
                    moved.join(", ")
                ),
            )
        })
    }

    /// post-hooks: PostToolUse (PostToolUseFailure on an error) — their
    /// context, a block's reason for the model, a validated replacement
    /// output, a stop.
    pub(super) async fn post_hooks(
        &self,
        call: &ToolCall,
        mut result: ToolCallResult,
        duration: Duration,
    ) -> ToolCallResult {
        let failed = result.is_error;
        let kind = if failed {
            HookEventKind::PostToolUseFailure
        } else {
            HookEventKind::PostToolUse
        };
        let Some(hooks) = self.hooks_for(kind) else {
            return result;
        };
        let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let event = if failed {
            HookEvent::PostToolUseFailure {
                call: hook_call(call),
                error: result_text(&result.content),
                duration_ms,
            }
        } else {
            HookEvent::PostToolUse {
                call: hook_call(call),
                // What the tool said it did, in its own (Claude Code's, for
                // first-party tools) shape; else what the model sees.
                tool_response: match &result.structured {
                    // An MCP tool's structured content, as the JSON text
                    // Claude Code 2.1.332 gives its hooks.
                    Some(structured) if call.name.starts_with("mcp__") => {
                        match structured.get("structuredContent") {
                            Some(object) => serde_json::Value::String(object.to_string()),
                            None => structured.clone(),
                        }
                    }
                    Some(structured) => structured.clone(),
                    // An MCP tool's result as its content blocks, as Claude
                    // Code gives it, even when it is one text.
                    None if call.name.starts_with("mcp__") => match &result.content {
                        ToolResultContent::Text(text) => {
                            serde_json::json!([{"type": "text", "text": text}])
                        }
                        blocks => serde_json::to_value(blocks).unwrap_or_default(),
                    },
                    None => serde_json::to_value(&result.content).unwrap_or_default(),
                },
                duration_ms,
            }
        };
        let answer = hooks.post_tool_use(event).await;
        let context = contexts(kind.name(), &call.name, &answer.context);
        if let Some(output) = answer.updated_output {
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
        if let Some(told) = &answer.block {
            // Inside the result, as Claude Code 2.1.332 sends it.
            let reminder = format!("\n\n<system-reminder>\n{told}\n\n</system-reminder>");
            match &mut result.content {
                ToolResultContent::Text(text) => {
                    text.truncate(text.trim_end().len());
                    text.push_str(&reminder);
                }
                ToolResultContent::Blocks(blocks) => {
                    blocks.push(crate::model::ToolResultBlock::Text { text: reminder })
                }
            }
        }
        if let Some(reason) = &answer.stop {
            hooks.notify_stop(kind, reason);
        }
        result.hooks.context = context;
        result.hooks.stop = answer.stop;
        result
    }

    /// spill: a text result longer than the limit is saved whole to the
    /// session's directory and the model gets a preview and the path (Read
    /// can page through it), so one large result cannot crowd out the
    /// context.
    pub(super) fn spill(&self, mut result: ToolCallResult) -> ToolCallResult {
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
        let saved = crate::files::write(&path, text.as_bytes());
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

    /// The `is_error` result of a refused call, naming what refused it.
    pub(super) fn denied(&self, call: &ToolCall, message: String, basis: &Basis) -> ToolCallResult {
        let mut result = ToolCallResult::error(&call.id, &message);
        result.denial = Some(Box::new(PermissionDenial {
            tool_name: call.name.clone(),
            tool_use_id: call.id.clone(),
            tool_input: call.input.clone(),
            reason: message,
            source: Some(denial_source(basis)),
            interrupts_turn: false,
        }));
        result
    }

    pub(super) fn audit(
        &self,
        call: &ToolCall,
        plan: &CallPlan,
        grant: &Grant,
        decision: &'static str,
        basis: &Basis,
    ) {
        self.audit.record(&AuditEntry {
            time: AuditEntry::now(),
            tool: call.name.clone(),
            tool_use_id: call.id.clone(),
            input_sha256: AuditEntry::digest(&call.input),
            requested: plan.needs.iter().map(describe_need).collect(),
            granted: grant.describe(),
            decision,
            basis: basis.clone(),
        });
    }
}
