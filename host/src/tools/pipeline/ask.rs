//! The ask stage: a verdict becomes a grant or a refusal. An `Ask` is put
//! to whoever can answer in print mode — the permission prompt tool, if one
//! is configured — after telling the Notification hooks, as Claude Code
//! does when it shows a prompt. Approving takes the grant the policy
//! decided with the question; nothing is decided again.

use super::ToolPipeline;
use super::stages::Staged;
use crate::agent::ToolCall;
use crate::hooks::{HookEvent, HookEventKind, HookPermission, HookToolCall};
use crate::policy::{Basis, BasisKind, HookAnswer, Outcome, Suggestion, Verdict};
use crate::sandbox::{CallPlan, Grant, ToolContent, ToolInvocation};
use crate::tools::auto_mode::AutoDecision;
use crate::tools::registry::{RegisteredTool, ToolHandle};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;

/// `--permission-prompt-tool stdio`: the Agent SDK answers, over the
/// control protocol.
pub const STDIO_PROMPT: &str = "stdio";

/// Who answers what the policy would ask the user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Asker {
    /// Nobody can be asked: the call is refused, with what would allow it.
    #[default]
    Nobody,
    /// A loaded tool answers (`--permission-prompt-tool NAME`).
    PromptTool(String),
    /// A front end's prompter, attached when the session starts: the SDK's
    /// `can_use_tool`, the person at the screen, an ACP client. `hosts`:
    /// whether it is also asked about a host no rule names (the SDK's is;
    /// the screen's and ACP's answer calls only, for now).
    Prompter { hosts: bool },
}

impl Asker {
    /// `--permission-prompt-tool`: `stdio` is the SDK, any other name a
    /// loaded tool.
    pub fn from_prompt_tool(name: Option<&str>) -> Self {
        match name {
            None => Self::Nobody,
            Some(STDIO_PROMPT) => Self::Prompter { hosts: true },
            Some(tool) => Self::PromptTool(tool.to_string()),
        }
    }
}

/// Rounds of a prompter answering with a changed input before the call is
/// refused (each changed input is decided afresh).
const PROMPT_ROUNDS: usize = 3;

/// A permission question put to the SDK.
pub struct PromptRequest<'a> {
    pub call: &'a ToolCall,
    pub question: &'a str,
    /// What "don't ask again" would add: the policy's narrowest cover
    /// for this call, the same for every front end.
    pub suggestion: Suggestion,
    /// What saying yes grants ("write /ws/src/main.rs", "run the command
    /// sandbox"), as the policy decided it with the question.
    pub grants: Vec<String>,
}

/// The SDK's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptAnswer {
    /// Run the call, with this input instead when it is given.
    Allow { updated_input: Option<Value> },
    /// Refuse; with `interrupt`, the turn ends once the refusal is given.
    Deny { message: String, interrupt: bool },
}

/// Who answers permission questions besides a prompt tool: the SDK's
/// `can_use_tool` callback.
pub trait PermissionPrompter: Send + Sync {
    fn ask<'a>(&'a self, request: PromptRequest<'a>) -> BoxFuture<'a, PromptAnswer>;

    /// An MCP server's question for the user during a call. A front end
    /// that cannot put it cancels it, as Claude Code's print mode does.
    fn elicit<'a>(
        &'a self,
        _request: &'a crate::mcp::ElicitRequest,
    ) -> BoxFuture<'a, crate::mcp::ElicitAnswer> {
        Box::pin(std::future::ready(crate::mcp::ElicitAnswer::Cancel))
    }
}

/// How an `Ask` was settled.
enum AskAnswer {
    Approved {
        updated_input: Option<Value>,
    },
    Refused(String),
    RefusedInterrupting(String),
    /// A PermissionRequest hook answered no: its message is the result.
    RefusedByHook {
        message: String,
        interrupt: bool,
    },
}

impl ToolPipeline {
    /// The SDK's permission callback (`--permission-prompt-tool stdio`),
    /// once the control protocol is up (set once).
    /// Who answers what the policy would ask the user.
    pub fn asker(&self) -> &Asker {
        &self.asker
    }

    pub fn set_prompter(&self, prompter: Arc<dyn PermissionPrompter>) {
        let _ = self.prompter.set(prompter);
    }

    /// ask, until the call is granted or refused: an approval that changes
    /// the input is checked against the schema, planned and decided again
    /// (deny rules, ceilings and protected paths see the new input); the
    /// default question it already answered is not asked twice.
    pub(super) async fn ask_until_settled(
        &self,
        tool: &RegisteredTool,
        handle: &ToolHandle,
        mut call: ToolCall,
        mut plan: CallPlan,
        mut verdict: Verdict,
    ) -> Staged<(ToolCall, Grant)> {
        for _ in 0..PROMPT_ROUNDS {
            let (grant, updated) = self.ask(&call, &plan, verdict).await?;
            let Some(updated) = updated.filter(|input| *input != call.input) else {
                return Ok((call, grant));
            };
            use super::stages::{InputChanger, re_input, settled};
            plan = re_input(tool, handle, &mut call, updated, InputChanger::Prompt)
                .await
                .map_err(|refused| settled(&call, refused.message))?;
            verdict = match self.decide(tool, &call, &plan, HookAnswer::None) {
                // The question the prompter answered, with this very input.
                Verdict {
                    outcome: Outcome::Ask(question),
                    basis,
                } if matches!(basis.kind, BasisKind::Default | BasisKind::Mode) => {
                    let grant = question.approve();
                    self.audit(&call, &plan, &grant, "ask_approved", &basis);
                    return Ok((call, grant));
                }
                other => other,
            };
        }
        Err(super::stages::settled(
            &call,
            "The permission prompt kept changing the input of this call, so it was not run.",
        ))
    }

    /// ask: the grant the verdict gives (once approved, for an `Ask`), and
    /// the input an approval changed, or the refused call's result. Every
    /// outcome is audited.
    pub(super) async fn ask(
        &self,
        call: &ToolCall,
        plan: &CallPlan,
        verdict: Verdict,
    ) -> Staged<(Grant, Option<Value>)> {
        let Verdict { outcome, basis } = verdict;
        match outcome {
            Outcome::Allow(grant) => {
                self.audit(call, plan, &grant, "allow", &basis);
                Ok((grant, None))
            }
            Outcome::Deny(message) => {
                self.audit(call, plan, &Grant::none(), "deny", &basis);
                Err(Box::new(self.denied(call, message, &basis)))
            }
            Outcome::Ask(question) => {
                let mut asked = question.text.clone();
                match self.auto_decide(call, &question, &basis).await {
                    Some(AutoDecision::Allow(_)) => {
                        let grant = question.approve();
                        self.audit(call, plan, &grant, "auto_allowed", &basis);
                        return Ok((grant, None));
                    }
                    Some(AutoDecision::Deny(reason)) => {
                        self.audit(call, plan, &Grant::none(), "auto_denied", &basis);
                        let message =
                            format!("Auto mode refused this {} call: {reason}", call.name);
                        let basis = Basis::auto_mode();
                        return Err(Box::new(self.denied(call, message, &basis)));
                    }
                    Some(AutoDecision::Ask(reason)) => {
                        asked = format!("{asked} Auto mode left it to the user: {reason}.");
                    }
                    None => {}
                }
                let (suggestion, grants) = match self.grant_question(call) {
                    Some(grant) => {
                        asked = grant.question;
                        (grant.always, grant.grants)
                    }
                    None => (
                        Suggestion::for_call(&call.name, &call.input),
                        question.grants(),
                    ),
                };
                let request = PromptRequest {
                    call,
                    question: &asked,
                    suggestion,
                    grants,
                };
                match self.ask_notified(request).await {
                    AskAnswer::Approved { updated_input } => {
                        // The audit names what asked; the decision says it
                        // was approved.
                        let grant = question.approve();
                        self.audit(call, plan, &grant, "ask_approved", &basis);
                        Ok((grant, updated_input))
                    }
                    AskAnswer::Refused(message) => {
                        self.audit(call, plan, &Grant::none(), "ask_refused", &basis);
                        Err(Box::new(self.denied(call, message, &basis)))
                    }
                    AskAnswer::RefusedByHook { message, interrupt } => {
                        self.audit(call, plan, &Grant::none(), "ask_refused", &basis);
                        let mut refused = super::results::hook_denied(call, message, false);
                        if let Some(denial) = &mut refused.denial {
                            denial.interrupts_turn = interrupt;
                        }
                        Err(Box::new(refused))
                    }
                    AskAnswer::RefusedInterrupting(message) => {
                        self.audit(call, plan, &Grant::none(), "ask_refused", &basis);
                        let mut refused = self.denied(call, message, &basis);
                        if let Some(denial) = &mut refused.denial {
                            denial.interrupts_turn = true;
                        }
                        Err(Box::new(refused))
                    }
                }
            }
        }
    }

    async fn ask_notified(&self, request: PromptRequest<'_>) -> AskAnswer {
        let (call, question) = (request.call, request.question);
        if let Some(answer) = self
            .permission_request_hooks(call, &request.suggestion)
            .await
        {
            return answer;
        }
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
        // The SDK (`--permission-prompt-tool stdio`) or the person at the
        // interactive screen; a prompt tool named otherwise is asked below.
        if let Asker::Prompter { .. } = self.asker {
            let Some(prompter) = self.prompter.get() else {
                return AskAnswer::Refused(format!(
                    "{question} The permission prompt (the SDK over stdio, or the front end) is not connected."
                ));
            };
            return match prompter.ask(request).await {
                PromptAnswer::Allow { updated_input } => AskAnswer::Approved { updated_input },
                PromptAnswer::Deny {
                    message,
                    interrupt: false,
                } => AskAnswer::Refused(message),
                PromptAnswer::Deny {
                    message,
                    interrupt: true,
                } => AskAnswer::RefusedInterrupting(message),
            };
        }
        self.ask_prompt_tool(call, question).await
    }

    /// PermissionRequest hooks, before anyone is asked: an allow or a deny
    /// settles the question in the user's place; no answer asks as usual.
    async fn permission_request_hooks(
        &self,
        call: &ToolCall,
        suggestion: &Suggestion,
    ) -> Option<AskAnswer> {
        let hooks = self.hooks_for(HookEventKind::PermissionRequest)?;
        let answer = hooks
            .run(HookEvent::PermissionRequest {
                call: HookToolCall {
                    tool_name: call.name.clone(),
                    tool_input: call.input.clone(),
                    tool_use_id: call.id.clone(),
                },
                suggestions: suggestion.to_updates(),
            })
            .await;
        match answer.decision? {
            HookPermission::Allow => Some(AskAnswer::Approved {
                updated_input: answer.updated_input,
            }),
            HookPermission::Deny => Some(AskAnswer::RefusedByHook {
                message: answer.reason.unwrap_or_else(|| {
                    format!("A PermissionRequest hook denied this {} call.", call.name)
                }),
                interrupt: answer.stop.is_some(),
            }),
            HookPermission::Ask | HookPermission::Defer => None,
        }
    }

    /// The permission prompt tool's answer; without one the answer is no,
    /// with the reason and what would allow it.
    async fn ask_prompt_tool(&self, call: &ToolCall, question: &str) -> AskAnswer {
        let Asker::PromptTool(prompt_tool) = &self.asker else {
            return AskAnswer::Refused(format!(
                "{question} carapace is running non-interactively and cannot ask, so the call was denied. \
To allow it, add a permission rule (--allowedTools or settings), choose another --permission-mode, \
or name a --permission-prompt-tool."
            ));
        };
        let prompter = self
            .registry
            .read()
            .ok()
            .and_then(|r| r.get_shared(prompt_tool));
        let Some(prompter) = prompter.filter(|_| self.policy().hidden_by(prompt_tool).is_none())
        else {
            return AskAnswer::Refused(format!(
                "{question} The permission prompt tool `{prompt_tool}` is not loaded."
            ));
        };
        let input = json!({"tool_name": call.name, "input": call.input, "tool_use_id": call.id, "question": question});
        let limits = prompter.limits.as_ref().unwrap_or(&self.limits);
        let answer = match prompter.handle().await {
            Ok(handle) => {
                let grant = Grant::none();
                let mut invocation = ToolInvocation::new(prompt_tool, &input, &grant, limits);
                invocation.reads = Some(&self.reads);
                handle
                    .call(invocation, self.call_requests(&handle, &call.id))
                    .await
            }
            Err(e) => Err(e.into()),
        };
        let text = match answer {
            Ok(output) => output
                .content
                .iter()
                .filter_map(|c| match c {
                    ToolContent::Text(t) => Some(t.as_str()),
                    ToolContent::Image { .. } => None,
                })
                .collect::<String>(),
            Err(e) => {
                return AskAnswer::Refused(format!(
                    "{question} The permission prompt tool failed: {e}."
                ));
            }
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v["behavior"] == "allow" => AskAnswer::Approved {
                updated_input: v.get("updatedInput").filter(|u| u.is_object()).cloned(),
            },
            Ok(v) if v["behavior"] == "deny" => AskAnswer::Refused(format!(
                "{question} The permission prompt tool refused: {}",
                v["message"].as_str().unwrap_or("no reason given")
            )),
            _ => AskAnswer::Refused(format!(
                "{question} The permission prompt tool gave no usable answer (expected {{\"behavior\": \"allow\" or \"deny\"}})."
            )),
        }
    }
}
