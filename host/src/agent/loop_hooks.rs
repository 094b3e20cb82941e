//! The loop's seam for the hooks it runs itself: Stop when the model ends
//! its turn without tool calls, PostToolBatch when a tool batch is done.
//! (Tool hooks run in the pipeline; prompt and session hooks around the
//! loop.) The WebAssembly hook runtime implements this trait; tests use
//! doubles.

use futures::future::BoxFuture;
use serde_json::Value;

/// What a Stop hook is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopHookInput {
    /// True when this stop follows a Stop hook's block: the hook should
    /// usually let the turn end now.
    pub stop_hook_active: bool,
    /// The text of the response that is ending the turn.
    pub last_assistant_message: String,
}

/// The combined decision of the Stop hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopDecision {
    /// Let the turn end.
    Allow,
    /// Do not end: the reason goes back to the model, which continues.
    Block { reason: String },
    /// Do not end: the hooks' context goes to the model, which continues
    /// (Claude Code 2.1.332 goes on for a Stop hook's `additionalContext`;
    /// it counts toward the same cap as a block).
    Remind { context: String },
    /// End the whole run now (`continue: false`), with this reason.
    Prevent { reason: String },
}

/// How the model is told a Stop hook blocked.
const STOP_HOOK_FEEDBACK: &str = "A Stop hook asked you to keep going:";

impl StopDecision {
    /// What the model is told when the turn goes on (a block or a
    /// reminder), in Claude Code's words.
    pub fn feedback(&self) -> Option<String> {
        match self {
            StopDecision::Block { reason } => Some(format!("{STOP_HOOK_FEEDBACK}\n{reason}")),
            StopDecision::Remind { context } => Some(format!(
                "<system-reminder>\nStop hook additional context: {context}\n</system-reminder>"
            )),
            StopDecision::Allow | StopDecision::Prevent { .. } => None,
        }
    }
}

/// One call of a finished batch, as PostToolBatch hooks see it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchCall {
    pub tool_name: String,
    pub tool_input: Value,
    pub tool_use_id: String,
    /// The tool_result's content, as JSON.
    pub tool_response: Value,
}

/// The combined decision of the PostToolBatch hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchDecision {
    /// Go on to the next turn, with this context for the model.
    Continue { context: Vec<String> },
    /// End the run here (`hook_stopped`): a block or `continue: false`.
    Stop { reason: String },
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTrigger {
    /// The loop: the threshold was crossed, or the API said the prompt is
    /// too long.
    Auto,
    /// The user asked (`/compact`).
    Manual,
}

impl CompactTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactTrigger::Auto => "auto",
            CompactTrigger::Manual => "manual",
        }
    }
}

/// The combined decision of the PreCompact hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreCompactDecision {
    /// Compact, with these extra instructions for the summary.
    Continue { instructions: Vec<String> },
    /// Do not compact.
    Block { reason: String },
}

pub trait LoopHooks: Send + Sync {
    fn on_stop(&self, input: StopHookInput) -> BoxFuture<'_, StopDecision>;

    /// The response's text blocks, as the user is shown them (Claude
    /// Code's MessageDisplay, one per block). Told, not asked.
    fn message_display(&self, _turn_id: &str, _texts: Vec<String>) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// What the hooks' own model requests cost since the last call (a
    /// `prompt` hook's judge): the run's cost counts it.
    fn take_spent_usd(&self) -> f64 {
        0.0
    }

    fn after_batch(&self, _batch: Vec<BatchCall>) -> BoxFuture<'_, BatchDecision> {
        Box::pin(async {
            BatchDecision::Continue {
                context: Vec::new(),
            }
        })
    }

    /// PreCompact, before the summary request (`instructions`: the user's,
    /// from `/compact`).
    fn pre_compact(
        &self,
        _trigger: CompactTrigger,
        _instructions: Option<String>,
    ) -> BoxFuture<'_, PreCompactDecision> {
        Box::pin(async {
            PreCompactDecision::Continue {
                instructions: Vec::new(),
            }
        })
    }

    /// After a compaction (`trigger`, the model's `summary`): SessionStart
    /// with `source: compact` — context for the new history — then
    /// PostCompact, told.
    fn after_compact(
        &self,
        _trigger: CompactTrigger,
        _summary: String,
        _model: String,
    ) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async { Vec::new() })
    }

    /// StopFailure: the turn ends because the model could not be reached
    /// (`error`: the failure's kind; `message`: what the user is shown).
    /// Told, not asked.
    fn on_stop_failure(&self, _error: String, _message: String) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// No loop hooks configured: every stop is allowed, every batch goes on.
pub struct NoLoopHooks;

impl LoopHooks for NoLoopHooks {
    fn on_stop(&self, _input: StopHookInput) -> BoxFuture<'_, StopDecision> {
        Box::pin(async { StopDecision::Allow })
    }
}
