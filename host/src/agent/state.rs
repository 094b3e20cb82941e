//! The loop's explicit state: what it carries between iterations, why it
//! continued, and why it stopped.

use super::context::ContextTracking;
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
    /// `stop_reason: tool_use` without a usable tool_use block.
    MalformedToolUseRetry,
    /// The answer had thinking but no visible text.
    ThinkingOnlyNudge,
    /// The model failed; the next model of the fallback chain is asked.
    ModelFallback,
    /// The API said the prompt is too long; the history was compacted and
    /// the same request goes again (once per turn).
    ReactiveCompactRetry,
    /// `--json-schema`: the model ended its turn without a valid
    /// StructuredOutput call; it is asked for one.
    StructuredOutputNudge,
}

/// Why the loop stopped. The mapping to the result's `subtype`, `is_error`
/// and the exit code follows the seeds' table; what the result line prints
/// as `terminal_reason` follows Claude Code's CLI (see [`Terminal::reported`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Terminal {
    /// The model answered without tool calls (or a Stop hook cap overrode
    /// the hooks).
    Completed,
    /// Running the next turn would pass `--max-turns`.
    MaxTurns,
    /// A PreToolUse hook deferred the batch's only call.
    ToolDeferred,
    /// A hook stopped the run after a tool batch (or before the first turn).
    HookStopped,
    /// A Stop hook said `continue: false`.
    StopHookPrevented,
    /// Cancelled while the model streamed.
    AbortedStreaming,
    /// Cancelled while tools ran.
    AbortedTools,
    /// The API said the prompt is too long, and compaction could not help.
    PromptTooLong,
    /// The next request was known to be over the context limit and nothing
    /// could be compacted: it was not sent.
    BlockingLimit,
    /// Compaction after compaction was followed at once by a full context:
    /// the loop stopped instead of summarising forever.
    RapidRefillBreaker,
    /// The model could not be used: a broken stream, no key, a bad replay
    /// script.
    ModelError,
    /// The API answered with an error (after retries and fallbacks).
    ApiError,
    /// `stop_reason: tool_use` without a usable call, twice.
    MalformedToolUseExhausted,
    /// `--max-budget-usd` was reached.
    BudgetExhausted,
    /// `--json-schema`: no valid structured output after the allowed
    /// attempts.
    StructuredOutputRetryExhausted,
}

impl Terminal {
    /// The internal name (`--debug`, tests).
    pub fn as_str(self) -> &'static str {
        match self {
            Terminal::Completed => "completed",
            Terminal::MaxTurns => "max_turns",
            Terminal::ToolDeferred => "tool_deferred",
            Terminal::HookStopped => "hook_stopped",
            Terminal::StopHookPrevented => "stop_hook_prevented",
            Terminal::AbortedStreaming => "aborted_streaming",
            Terminal::AbortedTools => "aborted_tools",
            Terminal::PromptTooLong => "prompt_too_long",
            Terminal::BlockingLimit => "blocking_limit",
            Terminal::RapidRefillBreaker => "rapid_refill_breaker",
            Terminal::ModelError => "model_error",
            Terminal::ApiError => "api_error",
            Terminal::MalformedToolUseExhausted => "malformed_tool_use_exhausted",
            Terminal::BudgetExhausted => "budget_exhausted",
            Terminal::StructuredOutputRetryExhausted => "structured_output_retry_exhausted",
        }
    }

    /// The `terminal_reason` the result line prints. Claude Code (checked
    /// against 2.1.332 on the scripted server) reports every failure of the
    /// model call — an HTTP error, a connection lost mid-stream, a stream it
    /// cannot parse — as `api_error`; carapace keeps the finer internal
    /// reason and prints Claude Code's.
    pub fn reported(self) -> &'static str {
        match self {
            Terminal::ModelError => Terminal::ApiError.as_str(),
            other => other.as_str(),
        }
    }

    /// Whether the run counts as failed: the result's `is_error` and a
    /// non-zero exit code. `max_turns` is a controlled stop inside the loop
    /// but an error variant for the SDK; cancellations are errors too.
    pub fn is_error(self) -> bool {
        match self {
            Terminal::Completed
            | Terminal::ToolDeferred
            | Terminal::HookStopped
            | Terminal::StopHookPrevented => false,
            Terminal::MaxTurns
            | Terminal::AbortedStreaming
            | Terminal::AbortedTools
            | Terminal::PromptTooLong
            | Terminal::BlockingLimit
            | Terminal::RapidRefillBreaker
            | Terminal::ModelError
            | Terminal::ApiError
            | Terminal::MalformedToolUseExhausted
            | Terminal::BudgetExhausted
            | Terminal::StructuredOutputRetryExhausted => true,
        }
    }

    /// The result line's `subtype`. As in Claude Code, a run that ends on
    /// a failure of the model call (shown as an assistant message) is a
    /// `success` subtype with `is_error: true`; `error_during_execution` is
    /// for runs that broke off (a cancellation).
    pub fn subtype(self) -> &'static str {
        match self {
            Terminal::MaxTurns => "error_max_turns",
            Terminal::BudgetExhausted => "error_max_budget_usd",
            Terminal::StructuredOutputRetryExhausted => "error_max_structured_output_retries",
            Terminal::AbortedStreaming | Terminal::AbortedTools => "error_during_execution",
            Terminal::Completed
            | Terminal::ToolDeferred
            | Terminal::HookStopped
            | Terminal::StopHookPrevented
            | Terminal::PromptTooLong
            | Terminal::BlockingLimit
            | Terminal::RapidRefillBreaker
            | Terminal::ModelError
            | Terminal::ApiError
            | Terminal::MalformedToolUseExhausted => "success",
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
    pub thinking_only_nudged: bool,
    pub stop_hook_active: bool,
    pub stop_hook_blocking_count: u32,
    pub malformed_tool_use_retried: bool,
    /// Set by a reactive compaction; reset by the next normal turn (never
    /// by a Stop hook's re-entry: compact → still too long → hook → compact
    /// … would burn requests without end).
    pub has_attempted_reactive_compact: bool,
    /// `--json-schema`: attempts that gave no valid structured output (an
    /// invalid StructuredOutput call, or a turn ended without one). Never
    /// reset: the bound is the run's.
    pub structured_output_failures: u32,
    /// The history's size as far as known, and the compactions so far.
    pub context: ContextTracking,
    /// Why this iteration exists; `None` for the first.
    pub transition: Option<Transition>,
}

impl Transition {
    /// Whether going round for this reason runs another model turn (so
    /// `--max-turns` applies). Continuing a cut response is the same turn;
    /// a fallback repeats the same request.
    pub fn counts_turn(self) -> bool {
        match self {
            Transition::NextTurn
            | Transition::StopHookBlocking
            | Transition::MalformedToolUseRetry
            | Transition::ThinkingOnlyNudge
            | Transition::StructuredOutputNudge => true,
            Transition::MaxOutputTokensRecovery
            | Transition::ModelFallback
            | Transition::ReactiveCompactRetry => false,
        }
    }
}

impl State {
    pub fn initial(messages: Vec<Message>) -> Self {
        Self {
            messages,
            turn_count: 1,
            max_output_tokens_recovery_count: 0,
            thinking_only_nudged: false,
            stop_hook_active: false,
            stop_hook_blocking_count: 0,
            malformed_tool_use_retried: false,
            has_attempted_reactive_compact: false,
            structured_output_failures: 0,
            context: ContextTracking::default(),
            transition: None,
        }
    }

    /// The state after a tool batch (its messages already appended): the
    /// turn counted, and the per-round recovery counters reset.
    pub fn next_turn(self) -> Self {
        Self {
            turn_count: self.turn_count + 1,
            max_output_tokens_recovery_count: 0,
            thinking_only_nudged: false,
            stop_hook_active: false,
            stop_hook_blocking_count: 0,
            malformed_tool_use_retried: false,
            has_attempted_reactive_compact: false,
            transition: Some(Transition::NextTurn),
            ..self
        }
    }

    /// The state that goes round again for `transition` (its messages
    /// already appended): the transition recorded, the turn counted if it
    /// counts one, and the recovery's own counter moved.
    pub fn advance(self, transition: Transition) -> Self {
        let turn_count = self.turn_count + u32::from(transition.counts_turn());
        let state = Self {
            turn_count,
            transition: Some(transition),
            ..self
        };
        match transition {
            Transition::NextTurn => Self {
                turn_count: state.turn_count - 1,
                ..state
            }
            .next_turn(),
            Transition::StopHookBlocking => Self {
                stop_hook_active: true,
                stop_hook_blocking_count: state.stop_hook_blocking_count + 1,
                ..state
            },
            Transition::MaxOutputTokensRecovery => Self {
                max_output_tokens_recovery_count: state.max_output_tokens_recovery_count + 1,
                ..state
            },
            Transition::MalformedToolUseRetry => Self {
                malformed_tool_use_retried: true,
                ..state
            },
            Transition::ThinkingOnlyNudge => Self {
                thinking_only_nudged: true,
                ..state
            },
            Transition::ReactiveCompactRetry => Self {
                has_attempted_reactive_compact: true,
                ..state
            },
            Transition::StructuredOutputNudge => Self {
                structured_output_failures: state.structured_output_failures + 1,
                ..state
            },
            Transition::ModelFallback => state,
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
            (Terminal::ModelError, "success", true),
            (Terminal::AbortedTools, "error_during_execution", true),
            (Terminal::MalformedToolUseExhausted, "success", true),
            (Terminal::AbortedStreaming, "error_during_execution", true),
            (Terminal::PromptTooLong, "success", true),
            (Terminal::BlockingLimit, "success", true),
            (Terminal::RapidRefillBreaker, "success", true),
            (
                Terminal::StructuredOutputRetryExhausted,
                "error_max_structured_output_retries",
                true,
            ),
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
    fn model_failures_are_reported_as_claude_code_reports_them() {
        assert_eq!(Terminal::ModelError.reported(), "api_error");
        assert_eq!(Terminal::ModelError.as_str(), "model_error");
        assert_eq!(
            Terminal::MalformedToolUseExhausted.reported(),
            "malformed_tool_use_exhausted"
        );
    }

    #[test]
    fn next_turn_counts_and_resets_round_counters() {
        let mut state = State::initial(vec![]);
        state.max_output_tokens_recovery_count = 2;
        state.thinking_only_nudged = true;
        let next = state.next_turn();
        assert_eq!(next.turn_count, 2);
        assert_eq!(next.max_output_tokens_recovery_count, 0);
        assert!(!next.thinking_only_nudged);
        assert_eq!(next.transition, Some(Transition::NextTurn));
    }

    #[test]
    fn each_recovery_moves_its_own_counter_and_counts_a_turn_or_not() {
        let start = State::initial(vec![]);
        let cut = start.clone().advance(Transition::MaxOutputTokensRecovery);
        assert_eq!(
            (cut.turn_count, cut.max_output_tokens_recovery_count),
            (1, 1)
        );
        let blocked = start
            .clone()
            .advance(Transition::StopHookBlocking)
            .advance(Transition::StopHookBlocking);
        assert_eq!(
            (
                blocked.turn_count,
                blocked.stop_hook_blocking_count,
                blocked.stop_hook_active
            ),
            (3, 2, true)
        );
        let retried = start.clone().advance(Transition::MalformedToolUseRetry);
        assert_eq!(
            (retried.turn_count, retried.malformed_tool_use_retried),
            (2, true)
        );
        let compacted = start.clone().advance(Transition::ReactiveCompactRetry);
        assert_eq!(
            (
                compacted.turn_count,
                compacted.has_attempted_reactive_compact
            ),
            (1, true)
        );
        // A Stop hook's re-entry keeps the guard; the next normal turn resets it.
        let blocked_after = compacted.clone().advance(Transition::StopHookBlocking);
        assert!(blocked_after.has_attempted_reactive_compact);
        assert!(!compacted.next_turn().has_attempted_reactive_compact);
        let nudged = start.clone().advance(Transition::ThinkingOnlyNudge);
        assert_eq!((nudged.turn_count, nudged.thinking_only_nudged), (2, true));
        let next = blocked.advance(Transition::NextTurn);
        assert_eq!(
            (
                next.turn_count,
                next.stop_hook_blocking_count,
                next.stop_hook_active
            ),
            (4, 0, false)
        );
        assert_eq!(next.transition, Some(Transition::NextTurn));
    }
}
