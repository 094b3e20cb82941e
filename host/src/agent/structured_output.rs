//! `--json-schema`: the run's answer is the input of a valid call of the
//! StructuredOutput tool (its input schema is the user's schema, so the
//! pipeline's validation is the check). A valid call ends the turn as a
//! final answer would (the Stop hooks still decide); an invalid call's
//! error goes back to the model, and a turn that ends without a valid call
//! is answered with a request for one. Both count toward one bound per
//! run; past it the run ends `structured_output_retry_exhausted`.

use super::events::AgentEvent;
use super::loop_hooks::{StopDecision, StopHookInput};
use super::run::{Ending, Run};
use super::state::{State, Terminal};
use super::tools::ToolCallResult;
use crate::model::ContentBlock;
use serde_json::Value;

/// The tool's name, as Claude Code names it (models trained on Claude
/// Code know it).
pub const STRUCTURED_OUTPUT_TOOL: &str = "StructuredOutput";

/// Attempts allowed when `MAX_STRUCTURED_OUTPUT_RETRIES` does not say.
pub const DEFAULT_STRUCTURED_OUTPUT_ATTEMPTS: u32 = 5;

/// What the model is told when it ends a turn without the tool.
pub(super) const STRUCTURED_OUTPUT_PROMPT: &str = "You ended your turn without giving your final answer through the StructuredOutput tool. Call StructuredOutput now, with input that matches its schema.";

/// The StructuredOutput calls of one tool batch.
pub(super) struct BatchOutcome {
    /// The input of the batch's last valid call.
    pub accepted: Option<Value>,
    /// Calls that were refused (invalid input, a hook's or rule's denial).
    pub failures: u32,
}

/// The StructuredOutput calls among `content` and how their results went.
pub(super) fn batch_outcome(content: &[ContentBlock], results: &[ToolCallResult]) -> BatchOutcome {
    let mut outcome = BatchOutcome {
        accepted: None,
        failures: 0,
    };
    for block in content {
        let ContentBlock::ToolUse { id, name, input } = block else {
            continue;
        };
        if name != STRUCTURED_OUTPUT_TOOL {
            continue;
        }
        match results.iter().find(|r| &r.tool_use_id == id) {
            Some(result) if !result.is_error => {
                // The tool answers with the input it validated (a hook may
                // have rewritten the model's).
                outcome.accepted = Some(result.structured.clone().unwrap_or_else(|| input.clone()));
            }
            _ => outcome.failures += 1,
        }
    }
    outcome
}

/// Where a batch with StructuredOutput calls leads.
pub(super) enum Verdict {
    /// Nothing decided: the next turn as usual.
    GoOn,
    /// The run ends.
    Stop(Terminal, Ending),
    /// A Stop hook sent the model back after its answer; the feedback joins
    /// the batch's results.
    Feedback(String),
}

/// What the run ends with when attempts ran out.
pub(super) fn exhausted_ending(attempts: u32, stop_reason: Option<String>) -> Ending {
    Ending {
        stop_reason,
        errors: vec![format!(
            "Failed to provide valid structured output after {attempts} attempts"
        )],
        ..Ending::default()
    }
}

/// The ending of a run that answered `value`.
pub(super) fn answered(value: Value, stop_reason: Option<String>) -> Ending {
    Ending {
        stop_reason,
        result: Some(value.to_string()),
        structured_output: Some(Box::new(value)),
        ..Ending::default()
    }
}

impl Run<'_, '_> {
    /// After a batch: a valid call is the answer (if the Stop hooks let the
    /// turn end); invalid ones count toward the bound.
    pub(super) async fn structured_verdict(
        &mut self,
        state: &mut State,
        batch: BatchOutcome,
        stop_reason: &Option<String>,
    ) -> Verdict {
        let Some(config) = self.config.structured_output else {
            return Verdict::GoOn;
        };
        state.structured_output_failures += batch.failures;
        let Some(value) = batch.accepted else {
            return if state.structured_output_failures >= config.max_attempts {
                Verdict::Stop(
                    Terminal::StructuredOutputRetryExhausted,
                    exhausted_ending(state.structured_output_failures, stop_reason.clone()),
                )
            } else {
                Verdict::GoOn
            };
        };
        let decision = self
            .deps
            .hooks
            .on_stop(StopHookInput {
                stop_hook_active: state.stop_hook_active,
                last_assistant_message: value.to_string(),
            })
            .await;
        match decision {
            StopDecision::Allow => {
                Verdict::Stop(Terminal::Completed, answered(value, stop_reason.clone()))
            }
            StopDecision::Prevent { reason } => {
                self.sink.emit(AgentEvent::Warning {
                    message: format!("A Stop hook ended the run: {reason}"),
                });
                Verdict::Stop(
                    Terminal::StopHookPrevented,
                    answered(value, stop_reason.clone()),
                )
            }
            decision @ (StopDecision::Block { .. } | StopDecision::Remind { .. }) => {
                if state.stop_hook_blocking_count >= self.config.stop_hook_block_cap {
                    // Past the cap the hooks are overridden: the answer stands.
                    return Verdict::Stop(
                        Terminal::Completed,
                        answered(value, stop_reason.clone()),
                    );
                }
                Verdict::Feedback(decision.feedback().unwrap_or_default())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolResultContent;
    use serde_json::json;

    fn call(id: &str, name: &str, input: Value) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        }
    }

    fn result(id: &str, is_error: bool) -> ToolCallResult {
        ToolCallResult {
            is_error,
            ..ToolCallResult::error(id, "x")
        }
    }

    #[test]
    fn valid_calls_are_answers_and_refused_ones_failures() {
        let content = [
            call("a", STRUCTURED_OUTPUT_TOOL, json!({"n": 1})),
            call("b", "Read", json!({})),
            call("c", STRUCTURED_OUTPUT_TOOL, json!({"n": "x"})),
        ];
        let outcome = batch_outcome(
            &content,
            &[result("a", false), result("b", true), result("c", true)],
        );
        assert_eq!(outcome.accepted, Some(json!({"n": 1})));
        assert_eq!(outcome.failures, 1);
        // A call without a result (cut off) is no answer either.
        let outcome = batch_outcome(&content[..1], &[]);
        assert_eq!((outcome.accepted, outcome.failures), (None, 1));
        // The validated input the tool answers with wins over the model's.
        let mut rewritten = result("a", false);
        rewritten.structured = Some(json!({"n": 2}));
        rewritten.content = ToolResultContent::Text("ok".into());
        let outcome = batch_outcome(&content[..1], &[rewritten]);
        assert_eq!(outcome.accepted, Some(json!({"n": 2})));
    }
}
