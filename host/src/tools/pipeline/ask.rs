//! The ask stage: a verdict becomes a grant or a refusal. An `Ask` is put
//! to whoever can answer in print mode — the permission prompt tool, if one
//! is configured — after telling the Notification hooks, as Claude Code
//! does when it shows a prompt. Approving takes the grant the policy
//! decided with the question; nothing is decided again.

use super::ToolPipeline;
use super::stages::Staged;
use crate::agent::ToolCall;
use crate::policy::{Outcome, Verdict};
use crate::sandbox::{CallPlan, Grant, HookEvent, HookEventKind, ToolContent};
use serde_json::{Value, json};

/// How an `Ask` was settled.
enum AskAnswer {
    Approved,
    Refused(String),
}

impl ToolPipeline {
    /// ask: the grant the verdict gives (once approved, for an `Ask`), or
    /// the refused call's result. Every outcome is audited.
    pub(super) async fn ask(
        &self,
        call: &ToolCall,
        plan: &CallPlan,
        verdict: Verdict,
    ) -> Staged<Grant> {
        let Verdict { outcome, basis } = verdict;
        match outcome {
            Outcome::Allow(grant) => {
                self.audit(call, plan, &grant, "allow", &basis);
                Ok(grant)
            }
            Outcome::Deny(message) => {
                self.audit(call, plan, &Grant::none(), "deny", &basis);
                Err(Box::new(self.denied(call, message, &basis)))
            }
            Outcome::Ask(question) => match self.ask_notified(call, &question.text).await {
                AskAnswer::Approved => {
                    // The audit names what asked; the decision says it was
                    // approved.
                    let grant = question.approve();
                    self.audit(call, plan, &grant, "ask_approved", &basis);
                    Ok(grant)
                }
                AskAnswer::Refused(message) => {
                    self.audit(call, plan, &Grant::none(), "ask_refused", &basis);
                    Err(Box::new(self.denied(call, message, &basis)))
                }
            },
        }
    }

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
        self.ask_prompt_tool(call, question).await
    }

    /// The permission prompt tool's answer; without one the answer is no,
    /// with the reason and what would allow it.
    async fn ask_prompt_tool(&self, call: &ToolCall, question: &str) -> AskAnswer {
        let Some(prompt_tool) = &self.prompt_tool else {
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
        let Some(prompter) = prompter.filter(|_| self.policy.hidden_by(prompt_tool).is_none())
        else {
            return AskAnswer::Refused(format!(
                "{question} The permission prompt tool `{prompt_tool}` is not loaded."
            ));
        };
        let input = json!({"tool_name": call.name, "input": call.input, "tool_use_id": call.id, "question": question});
        let limits = prompter.limits.as_ref().unwrap_or(&self.limits);
        let answer = match prompter.handle().await {
            Ok(handle) => {
                handle
                    .call(
                        prompt_tool,
                        &input.to_string(),
                        &Grant::none(),
                        limits,
                        &self.reads,
                        &Default::default(),
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
}
