//! The loop's seam for Stop hooks: asked when the model ends its turn
//! without tool calls. The WebAssembly hook runtime implements this trait;
//! tests use doubles.

use futures::future::BoxFuture;

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
    /// End the whole run now (`continue: false`), with this reason.
    Prevent { reason: String },
}

pub trait StopHooks: Send + Sync {
    fn on_stop(&self, input: StopHookInput) -> BoxFuture<'_, StopDecision>;
}

/// No Stop hooks configured: every stop is allowed.
pub struct NoStopHooks;

impl StopHooks for NoStopHooks {
    fn on_stop(&self, _input: StopHookInput) -> BoxFuture<'_, StopDecision> {
        Box::pin(async { StopDecision::Allow })
    }
}
