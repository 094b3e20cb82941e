//! The hooks as the loop sees them ([`LoopHooks`]): Stop, PostToolBatch
//! and PreCompact answers turned into the loop's decisions.

use super::{HookEvent, HookEventKind, HookRuntime, HookToolCall, StopAnswer};
use crate::agent::{
    BatchCall, BatchDecision, CompactTrigger, LoopHooks, PreCompactDecision, StopDecision,
    StopHookInput,
};
use futures::future::BoxFuture;

/// What Stop (or SubagentStop) hooks' answer means for the loop:
/// `continue: false` ends the run, a block sends the model back, and so
/// does context (as Claude Code 2.1.332 does).
pub fn stop_decision(answer: StopAnswer) -> StopDecision {
    match (answer.stop, answer.block) {
        (Some(reason), _) => StopDecision::Prevent { reason },
        (None, Some(reason)) => StopDecision::Block { reason },
        (None, None) if !answer.context.is_empty() => StopDecision::Remind {
            context: answer.context.join("\n"),
        },
        (None, None) => StopDecision::Allow,
    }
}

impl LoopHooks for HookRuntime {
    fn take_spent_usd(&self) -> f64 {
        self.spent_usd
            .lock()
            .map(|mut spent| std::mem::take(&mut *spent))
            .unwrap_or(0.0)
    }

    fn message_display(&self, turn_id: &str, texts: Vec<String>) -> BoxFuture<'_, ()> {
        let turn_id = turn_id.to_string();
        Box::pin(async move {
            if !self.handles(HookEventKind::MessageDisplay) {
                return;
            }
            for text in texts {
                self.run(HookEvent::MessageDisplay {
                    turn_id: turn_id.clone(),
                    message_id: uuid::Uuid::new_v4().to_string(),
                    text,
                })
                .await;
            }
        })
    }

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
            stop_decision(answer.into())
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
                        HookToolCall {
                            tool_name: call.tool_name,
                            tool_input: call.tool_input,
                            tool_use_id: call.tool_use_id,
                        },
                        call.tool_response,
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

    fn on_stop_failure(&self, error: String, message: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if self.handles(HookEventKind::StopFailure) {
                self.run(HookEvent::StopFailure {
                    error,
                    last_assistant_message: message,
                })
                .await;
            }
        })
    }

    fn after_compact(
        &self,
        trigger: CompactTrigger,
        summary: String,
        model: String,
    ) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async move {
            let mut context = Vec::new();
            self.tell_middleware(super::MiddlewareEvent::SessionStart, "compact")
                .await;
            if self.handles(HookEventKind::SessionStart) {
                let answer = self
                    .run(HookEvent::SessionStart {
                        source: "compact".into(),
                        details: super::StartDetails {
                            model: Some(model),
                            resumed: None,
                        },
                    })
                    .await;
                context = answer
                    .additional_context
                    .into_iter()
                    .filter(|c| !c.trim().is_empty())
                    .map(|c| {
                        format!(
                            "<system-reminder>\nSessionStart hook context: {c}\n</system-reminder>"
                        )
                    })
                    .collect();
            }
            // Told, not asked, as Claude Code 2.1.332 fires it.
            if self.handles(HookEventKind::PostCompact) {
                self.run(HookEvent::PostCompact {
                    trigger: trigger.as_str().into(),
                    compact_summary: summary,
                })
                .await;
            }
            context
        })
    }
}
