//! Claude Code's `agent` hook: a verifier — a child loop that may only
//! read — decides. The hook's `prompt` (its `$ARGUMENTS` replaced by the
//! event's JSON) is the verifier's task; its `{ok, reason}` verdict means
//! what 2.1.332's does: `ok: false` refuses a PreToolUse call ("Agent hook
//! condition was not met: …", the run going on) and blocks elsewhere.
//! The verifier itself is the session's (`subagents::verifier`); no
//! `agent` hook runs on its own calls.

use super::event::{HookEventKind, HookPermission};
use super::protocol::HandlerResult;
use futures::future::BoxFuture;

/// The agent type a verifier's calls carry, so that hooks can tell them.
pub const VERIFIER_AGENT_TYPE: &str = "hook-verifier";

/// Runs a verifier on a task: its verdict and reason.
pub trait AgentVerifier: Send + Sync {
    fn verify(
        &self,
        prompt: String,
        model: Option<String>,
    ) -> BoxFuture<'_, Result<(bool, String), String>>;
}

/// One `agent` hook, as its settings describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTarget {
    pub prompt: String,
    /// The hook's own `model`; else a small one.
    pub model: Option<String>,
}

impl AgentTarget {
    /// The verifier's task for the event whose JSON is `event`.
    pub fn task(&self, event: &serde_json::Value) -> String {
        super::prompt::with_event(&self.prompt, event)
    }

    /// What the verdict means for the event.
    pub fn meaning(kind: HookEventKind, ok: bool, reason: &str) -> HandlerResult {
        if ok {
            return HandlerResult::default();
        }
        let reason = format!("Agent hook condition was not met: {reason}");
        match kind {
            HookEventKind::PreToolUse => HandlerResult {
                decision: Some(HookPermission::Deny),
                reason: Some(reason),
                errored: true,
                ..HandlerResult::default()
            },
            _ => HandlerResult {
                block: Some(reason),
                ..HandlerResult::default()
            },
        }
    }
}
