//! One answer type per event the loop acts on: what PreToolUse,
//! PostToolUse (and PostToolUseFailure) and Stop (and SubagentStop) hooks
//! may say, folded, and nothing else — a PostToolUse answer has no
//! permission decision, a Stop answer no updated input. The protocol's
//! fold ([`aggregate`](super::aggregate)) reads every field Claude Code
//! defines; these keep what each event can mean.

use super::{HandlerResult, HookEvent, HookPermission, HookRuntime, HookToolCall};
use serde_json::Value;

/// What PreToolUse hooks answered about one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreToolUseAnswer {
    pub decision: Option<HookPermission>,
    /// The decision's reason.
    pub reason: Option<String>,
    /// The input the call runs with instead (checked again).
    pub updated_input: Option<Value>,
    /// Context for the model, beside the call's result.
    pub context: Vec<String>,
    /// The run stops (`continue: false`), with this reason.
    pub stop: Option<String>,
    /// The deny came from a hook that failed (said so to the model).
    pub errored: bool,
}

/// What PostToolUse (or PostToolUseFailure) hooks answered about a call
/// that ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostToolUseAnswer {
    /// The hook objects, with this reason (told to the model).
    pub block: Option<String>,
    /// The output the model sees instead (PostToolUse only).
    pub updated_output: Option<Value>,
    pub context: Vec<String>,
    pub stop: Option<String>,
}

/// What Stop (or SubagentStop) hooks answered when a turn would end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StopAnswer {
    /// Keep going, told this.
    pub block: Option<String>,
    /// End the run, for this reason.
    pub stop: Option<String>,
    /// Context for the model, which goes on with it.
    pub context: Vec<String>,
}

impl From<HandlerResult> for PreToolUseAnswer {
    fn from(folded: HandlerResult) -> Self {
        Self {
            decision: folded.decision,
            reason: folded.reason,
            updated_input: folded.updated_input,
            context: folded.additional_context,
            stop: folded.stop,
            errored: folded.errored,
        }
    }
}

impl From<HandlerResult> for PostToolUseAnswer {
    fn from(folded: HandlerResult) -> Self {
        Self {
            block: folded.block,
            updated_output: folded.updated_tool_output,
            context: folded.additional_context,
            stop: folded.stop,
        }
    }
}

impl From<HandlerResult> for StopAnswer {
    fn from(folded: HandlerResult) -> Self {
        Self {
            block: folded.block,
            stop: folded.stop,
            context: folded
                .additional_context
                .into_iter()
                .filter(|c| !c.trim().is_empty())
                .collect(),
        }
    }
}

impl HookRuntime {
    /// The PreToolUse hooks of one call.
    pub async fn pre_tool_use(&self, call: HookToolCall) -> PreToolUseAnswer {
        self.run(HookEvent::PreToolUse(call)).await.into()
    }

    /// The PostToolUse hooks of a call that succeeded, or the
    /// PostToolUseFailure hooks of one that failed (`event` says which).
    pub async fn post_tool_use(&self, event: HookEvent) -> PostToolUseAnswer {
        debug_assert!(matches!(
            event,
            HookEvent::PostToolUse { .. } | HookEvent::PostToolUseFailure { .. }
        ));
        self.run(event).await.into()
    }
}
