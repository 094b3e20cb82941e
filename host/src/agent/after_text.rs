//! After a response without tool calls: the recoveries — a response cut at
//! max_tokens is continued (up to three times), `stop_reason: tool_use`
//! without a usable call is retried once, a thinking-only answer is nudged
//! once — then the Stop hooks, which may let the turn end, end the whole
//! run, or send the model back (up to the block cap).
//!
//! Every recovery re-enters the loop the same way, through [`Run::nudge`]:
//! the response and a user message are appended and the state is rebuilt
//! with the recovery's transition.

use super::events::AgentEvent;
use super::history::{final_text, push_assistant};
use super::loop_hooks::{StopDecision, StopHookInput};
use super::run::Response;
use super::run::{Ending, Next, Run, RunError, Stop};
use super::state::{State, Terminal, Transition};
use super::structured_output::{STRUCTURED_OUTPUT_PROMPT, exhausted_ending};
use crate::model::ContentBlock;

/// Continuation requests after a response cut at max_tokens.
pub const MAX_OUTPUT_TOKENS_RECOVERIES: u32 = 3;

// What the loop says to the model, in carapace's words.
const MAX_TOKENS_PROMPT: &str = "Your response was cut off by the output token limit. Continue exactly where it stopped, mid-sentence if need be, without apologising or repeating anything; if much remains, work in smaller steps.";
const MALFORMED_TOOL_USE_PROMPT: &str = "Your last response ended with stop_reason tool_use but held no complete tool call, so nothing was run. Make the tool call again, with well-formed input.";
const THINKING_ONLY_PROMPT: &str = "Your last response held only thinking and nothing the user can see. Give your answer as visible text.";

impl Run<'_, '_> {
    pub(super) async fn after_text(&mut self, state: State, response: Response) -> Next {
        let Response {
            content,
            stop_reason,
            ..
        } = response;
        match stop_reason.as_deref() {
            Some("max_tokens" | "model_context_window_exceeded") => {
                self.cut_at_max_tokens(state, content, stop_reason)
            }
            // stop_reason says tool_use, but no tool call arrived whole.
            Some("tool_use") => self.malformed_tool_use(state, content, stop_reason),
            _ => self.end_of_turn(state, content, stop_reason).await,
        }
    }

    fn cut_at_max_tokens(
        &mut self,
        state: State,
        content: Vec<ContentBlock>,
        stop_reason: Option<String>,
    ) -> Next {
        if state.max_output_tokens_recovery_count < MAX_OUTPUT_TOKENS_RECOVERIES {
            return self.nudge(
                state,
                content,
                MAX_TOKENS_PROMPT,
                Transition::MaxOutputTokensRecovery,
                stop_reason,
            );
        }
        let error = RunError {
            message: format!(
                "API Error: the response exceeded the {}-token output limit {} times in a row. Set CARAPACE_MAX_OUTPUT_TOKENS to change the limit.",
                self.config.max_tokens,
                MAX_OUTPUT_TOKENS_RECOVERIES + 1
            ),
            kind: "max_output_tokens",
            status: None,
        };
        let mut state = state;
        push_assistant(&mut state.messages, content);
        Next::Stop(Stop::new(state, Terminal::Completed).with_error(error))
    }

    fn malformed_tool_use(
        &mut self,
        state: State,
        content: Vec<ContentBlock>,
        stop_reason: Option<String>,
    ) -> Next {
        if !state.malformed_tool_use_retried {
            return self.nudge(
                state,
                content,
                MALFORMED_TOOL_USE_PROMPT,
                Transition::MalformedToolUseRetry,
                stop_reason,
            );
        }
        let error = RunError {
            message: "The model's tool call could not be parsed, and neither could the retry."
                .into(),
            kind: "malformed_tool_use",
            status: None,
        };
        let mut state = state;
        push_assistant(&mut state.messages, content);
        Next::Stop(Stop::new(state, Terminal::MalformedToolUseExhausted).with_error(error))
    }

    /// A response that ends the turn: a thinking-only answer is nudged once;
    /// otherwise the Stop hooks decide.
    async fn end_of_turn(
        &mut self,
        state: State,
        content: Vec<ContentBlock>,
        stop_reason: Option<String>,
    ) -> Next {
        let visible = final_text(&content);
        let has_thinking = content.iter().any(|b| {
            matches!(
                b,
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }
            )
        });
        if visible.trim().is_empty() && has_thinking && !state.thinking_only_nudged {
            return self.nudge(
                state,
                content,
                THINKING_ONLY_PROMPT,
                Transition::ThinkingOnlyNudge,
                stop_reason,
            );
        }
        if let Some(config) = self.config.structured_output {
            // No answer through the tool this turn: one more attempt spent.
            if state.structured_output_failures + 1 >= config.max_attempts {
                let mut state = state;
                state.structured_output_failures += 1;
                let ending = exhausted_ending(state.structured_output_failures, stop_reason);
                push_assistant(&mut state.messages, content);
                return Next::Stop(
                    Stop::new(state, Terminal::StructuredOutputRetryExhausted).with_ending(ending),
                );
            }
            return self.nudge(
                state,
                content,
                STRUCTURED_OUTPUT_PROMPT,
                Transition::StructuredOutputNudge,
                stop_reason,
            );
        }
        let decision = self
            .deps
            .hooks
            .on_stop(StopHookInput {
                stop_hook_active: state.stop_hook_active,
                last_assistant_message: visible.clone(),
            })
            .await;
        let ending = Ending {
            stop_reason: stop_reason.clone(),
            result: Some(visible),
            ..Ending::default()
        };
        let mut state = state;
        match decision {
            StopDecision::Allow => {
                push_assistant(&mut state.messages, content);
                Next::Stop(Stop::new(state, Terminal::Completed).with_ending(ending))
            }
            StopDecision::Prevent { reason } => {
                self.sink.emit(AgentEvent::Warning {
                    message: format!("A Stop hook ended the run: {reason}"),
                });
                push_assistant(&mut state.messages, content);
                Next::Stop(Stop::new(state, Terminal::StopHookPrevented).with_ending(ending))
            }
            decision @ (StopDecision::Block { .. } | StopDecision::Remind { .. }) => {
                let feedback = decision.feedback().unwrap_or_default();
                let next = self.nudge(
                    state,
                    content,
                    &feedback,
                    Transition::StopHookBlocking,
                    stop_reason.clone(),
                );
                match next {
                    Next::Continue(next)
                        if next.stop_hook_blocking_count > self.config.stop_hook_block_cap =>
                    {
                        self.stop_hook_cap_reached(next, stop_reason)
                    }
                    other => other,
                }
            }
        }
    }

    /// The Stop hooks blocked once more than the cap allows: as Claude Code
    /// does, the last feedback stays in history, no request is sent for it,
    /// and the turn ends with an empty result and a warning for the user.
    fn stop_hook_cap_reached(&mut self, state: State, stop_reason: Option<String>) -> Next {
        self.sink.emit(AgentEvent::Informational {
            content: format!(
                "Stop hooks blocked the end of the turn {} times in a row, more than the cap of {}; carapace ended the turn anyway. A Stop hook should let the turn end when its input says stop_hook_active is true. Set CARAPACE_STOP_HOOK_BLOCK_CAP to change the cap.",
                state.stop_hook_blocking_count, self.config.stop_hook_block_cap
            ),
            level: "warning",
            prevent_continuation: false,
        });
        let ending = Ending {
            stop_reason,
            result: Some(String::new()),
            ..Ending::default()
        };
        Next::Stop(Stop::new(state, Terminal::Completed).with_ending(ending))
    }

    /// Appends the response and the recovery's message to the model, and
    /// goes round again with `transition`: the one way every recovery
    /// re-enters the loop. A recovery that counts a turn stops at
    /// `--max-turns` instead.
    pub(super) fn nudge(
        &mut self,
        state: State,
        content: Vec<ContentBlock>,
        prompt: &str,
        transition: Transition,
        stop_reason: Option<String>,
    ) -> Next {
        let mut messages = state.messages;
        push_assistant(&mut messages, content);
        // The max_tokens continuation is not shown: to the user the
        // response simply goes on.
        let shown = transition != Transition::MaxOutputTokensRecovery;
        self.add_user_text(&mut messages, prompt, shown);
        let next = State { messages, ..state }.advance(transition);
        if transition.counts_turn() {
            self.max_turns_reached(next, stop_reason)
        } else {
            Next::Continue(next)
        }
    }
}
