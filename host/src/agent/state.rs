//! The loop's explicit state: what it carries between iterations, why it
//! continued, and why it stopped.

use crate::model::Message;
use serde::Serialize;

/// Why the loop went round again. Recorded at every continue site so that
/// tests (and `--debug`) can tell which path fired without reading text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transition {
    /// A tool batch finished; its results go to the model.
    NextTurn,
    /// A Stop hook blocked the end of the turn; its feedback goes back.
    StopHookBlocking,
    /// The response was cut at max_tokens; the model is asked to continue.
    MaxOutputTokensRecovery,
    /// The prompt was too long; the history was compacted and resent.
    ReactiveCompactRetry,
    /// `stop_reason: tool_use` without a usable tool_use block.
    MalformedToolUseRetry,
    /// The answer had thinking but no visible text.
    ThinkingOnlyNudge,
    /// The model failed; the next model of the fallback chain is asked.
    ModelFallback,
}

/// Why the loop stopped. The mapping to the result's `subtype`, `is_error`
/// and the exit code follows the seeds' table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Terminal {
    Completed,
    BackgroundRequested,
    MaxTurns,
    ToolDeferred,
    HookStopped,
    StopHookPrevented,
    AbortedStreaming,
    AbortedTools,
    BlockingLimit,
    RapidRefillBreaker,
    PromptTooLong,
    ImageError,
    ModelError,
    ApiError,
    MalformedToolUseExhausted,
    BudgetExhausted,
    StructuredOutputRetryExhausted,
    ToolDeferredUnavailable,
    TurnSetupFailed,
}

impl Terminal {
    /// The name printed as `terminal_reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            Terminal::Completed => "completed",
            Terminal::BackgroundRequested => "background_requested",
            Terminal::MaxTurns => "max_turns",
            Terminal::ToolDeferred => "tool_deferred",
            Terminal::HookStopped => "hook_stopped",
            Terminal::StopHookPrevented => "stop_hook_prevented",
            Terminal::AbortedStreaming => "aborted_streaming",
            Terminal::AbortedTools => "aborted_tools",
            Terminal::BlockingLimit => "blocking_limit",
            Terminal::RapidRefillBreaker => "rapid_refill_breaker",
            Terminal::PromptTooLong => "prompt_too_long",
            Terminal::ImageError => "image_error",
            Terminal::ModelError => "model_error",
            Terminal::ApiError => "api_error",
            Terminal::MalformedToolUseExhausted => "malformed_tool_use_exhausted",
            Terminal::BudgetExhausted => "budget_exhausted",
            Terminal::StructuredOutputRetryExhausted => "structured_output_retry_exhausted",
            Terminal::ToolDeferredUnavailable => "tool_deferred_unavailable",
            Terminal::TurnSetupFailed => "turn_setup_failed",
        }
    }

    /// Whether the run counts as failed: the result's `is_error` and a
    /// non-zero exit code. `max_turns` is a controlled stop inside the loop
    /// but an error variant for the SDK; cancellations are errors too.
    pub fn is_error(self) -> bool {
        match self {
            Terminal::Completed
            | Terminal::BackgroundRequested
            | Terminal::ToolDeferred
            | Terminal::HookStopped
            | Terminal::StopHookPrevented => false,
            Terminal::MaxTurns
            | Terminal::AbortedStreaming
            | Terminal::AbortedTools
            | Terminal::BlockingLimit
            | Terminal::RapidRefillBreaker
            | Terminal::PromptTooLong
            | Terminal::ImageError
            | Terminal::ModelError
            | Terminal::ApiError
            | Terminal::MalformedToolUseExhausted
            | Terminal::BudgetExhausted
            | Terminal::StructuredOutputRetryExhausted
            | Terminal::ToolDeferredUnavailable
            | Terminal::TurnSetupFailed => true,
        }
    }

    /// The result line's `subtype`. As in Claude Code, a run that ends on
    /// an error the model API reported (shown as an assistant message) is a
    /// `success` subtype with `is_error: true`; `error_during_execution` is
    /// for runs that broke off (a cancellation, a broken stream, setup).
    pub fn subtype(self) -> &'static str {
        match self {
            Terminal::MaxTurns => "error_max_turns",
            Terminal::BudgetExhausted => "error_max_budget_usd",
            Terminal::StructuredOutputRetryExhausted => "error_max_structured_output_retries",
            Terminal::AbortedStreaming
            | Terminal::AbortedTools
            | Terminal::ModelError
            | Terminal::TurnSetupFailed => "error_during_execution",
            Terminal::Completed
            | Terminal::BackgroundRequested
            | Terminal::ToolDeferred
            | Terminal::HookStopped
            | Terminal::StopHookPrevented
            | Terminal::BlockingLimit
            | Terminal::RapidRefillBreaker
            | Terminal::PromptTooLong
            | Terminal::ImageError
            | Terminal::ApiError
            | Terminal::MalformedToolUseExhausted
            | Terminal::ToolDeferredUnavailable => "success",
        }
    }
}

/// What one iteration hands to the next. Rebuilt whole at every continue
/// site: no field is mutated in place across iterations.
#[derive(Debug, Clone)]
pub struct State {
    pub messages: Vec<Message>,
    /// The model iteration about to run, from 1.
    pub turn_count: u32,
    pub max_output_tokens_recovery_count: u32,
    pub has_attempted_reactive_compact: bool,
    pub thinking_only_nudged: bool,
    pub stop_hook_active: bool,
    pub stop_hook_blocking_count: u32,
    pub malformed_tool_use_retried: bool,
    /// Why this iteration exists; `None` for the first.
    pub transition: Option<Transition>,
}

impl State {
    pub fn initial(messages: Vec<Message>) -> Self {
        Self {
            messages,
            turn_count: 1,
            max_output_tokens_recovery_count: 0,
            has_attempted_reactive_compact: false,
            thinking_only_nudged: false,
            stop_hook_active: false,
            stop_hook_blocking_count: 0,
            malformed_tool_use_retried: false,
            transition: None,
        }
    }

    /// The state after a tool batch: the batch's messages appended, the turn
    /// counted, and the per-round recovery counters reset.
    pub fn next_turn(self, appended: Vec<Message>) -> Self {
        let mut messages = self.messages;
        messages.extend(appended);
        Self {
            messages,
            turn_count: self.turn_count + 1,
            max_output_tokens_recovery_count: 0,
            has_attempted_reactive_compact: false,
            thinking_only_nudged: false,
            stop_hook_active: false,
            stop_hook_blocking_count: 0,
            malformed_tool_use_retried: false,
            transition: Some(Transition::NextTurn),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_maps_to_subtype_and_error_as_the_seeds_table_says() {
        let table = [
            (Terminal::Completed, "success", false),
            (Terminal::HookStopped, "success", false),
            (Terminal::StopHookPrevented, "success", false),
            (Terminal::ToolDeferred, "success", false),
            (Terminal::MaxTurns, "error_max_turns", true),
            (Terminal::BudgetExhausted, "error_max_budget_usd", true),
            (Terminal::ApiError, "success", true),
            (Terminal::ModelError, "error_during_execution", true),
            (Terminal::AbortedTools, "error_during_execution", true),
            (Terminal::MalformedToolUseExhausted, "success", true),
            (Terminal::AbortedStreaming, "error_during_execution", true),
            (Terminal::PromptTooLong, "success", true),
        ];
        for (terminal, subtype, is_error) in table {
            assert_eq!(
                (terminal.subtype(), terminal.is_error()),
                (subtype, is_error),
                "{terminal:?}"
            );
        }
    }

    #[test]
    fn next_turn_counts_and_resets_round_counters() {
        let mut state = State::initial(vec![]);
        state.max_output_tokens_recovery_count = 2;
        state.thinking_only_nudged = true;
        let next = state.next_turn(vec![]);
        assert_eq!(next.turn_count, 2);
        assert_eq!(next.max_output_tokens_recovery_count, 0);
        assert!(!next.thinking_only_nudged);
        assert_eq!(next.transition, Some(Transition::NextTurn));
    }
}
