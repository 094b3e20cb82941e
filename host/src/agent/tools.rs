//! What the loop knows of tools: a call, its preparation, its result, and
//! the [`ToolRuntime`] that prepares and runs calls.

use crate::model::{InvalidToolInput, ToolResultContent, ToolSpec};
use crate::sandbox::InterruptBehavior;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// One `tool_use` of a response, as the executor receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
    /// Set when the streamed input was not valid JSON; the call then fails
    /// with an input error and never runs.
    pub invalid_input: Option<InvalidToolInput>,
}

/// A permission the policy refused, as the result line lists it (the reason
/// and basis go to the `permission_denied` line, not the result).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionDenial {
    pub tool_name: String,
    pub tool_use_id: String,
    pub tool_input: Value,
    #[serde(skip)]
    pub reason: String,
    #[serde(skip)]
    pub basis: Option<crate::policy::Basis>,
}

/// The `tool_result` of one call. Always paired with its call by
/// `tool_use_id`; every call gets exactly one.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallResult {
    pub tool_use_id: String,
    pub content: ToolResultContent,
    pub is_error: bool,
    pub denial: Option<Box<PermissionDenial>>,
    /// What hooks added to this call's outcome.
    pub hooks: HookNotes,
}

/// What the call's PreToolUse / PostToolUse hooks said beyond its result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookNotes {
    /// Context for the model, placed after the batch's tool results.
    pub context: Vec<String>,
    /// A PreToolUse hook deferred the call: it did not run, and a batch of
    /// only this call ends the run (`tool_deferred`) so that it can be
    /// answered later.
    pub deferred: bool,
    /// A hook said `continue: false`: the run stops after this batch.
    pub stop: Option<String>,
}

impl ToolCallResult {
    /// An error result, worded the way models trained on Claude Code expect.
    pub fn error(tool_use_id: &str, message: impl AsRef<str>) -> Self {
        Self {
            tool_use_id: tool_use_id.to_string(),
            content: ToolResultContent::Text(format!(
                "<tool_use_error>{}</tool_use_error>",
                message.as_ref()
            )),
            is_error: true,
            denial: None,
            hooks: HookNotes::default(),
        }
    }
}

/// A call checked and planned, before it runs.
#[derive(Debug, Clone)]
pub enum Preparation {
    /// The call may run: what the tool said about it.
    Ready {
        concurrency_safe: bool,
        interrupt: InterruptBehavior,
        plan: crate::sandbox::CallPlan,
    },
    /// The call failed before running (unknown tool, invalid input, the
    /// tool's own validation, a crash while planning): this is its result.
    Failed(ToolCallResult),
}

impl Preparation {
    /// Whether the call may overlap with other safe calls. A failure in
    /// deciding means unsafe.
    pub fn concurrency_safe(&self) -> bool {
        match self {
            Preparation::Ready {
                concurrency_safe, ..
            } => *concurrency_safe,
            Preparation::Failed(_) => false,
        }
    }

    /// Interrupt behaviour; anything undecided blocks.
    pub fn interrupt(&self) -> InterruptBehavior {
        match self {
            Preparation::Ready { interrupt, .. } => *interrupt,
            Preparation::Failed(_) => InterruptBehavior::Block,
        }
    }
}

/// Prepares and runs tool calls: the single-tool pipeline behind a seam the
/// loop and the executor can be tested through.
pub trait ToolRuntime: Send + Sync {
    /// The tools offered to the model, in a stable order.
    fn specs(&self) -> Vec<ToolSpec>;

    /// Lookup, input parsing and schema validation, the tool's own
    /// validation and its plan (concurrency safety, needs).
    fn prepare<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, Preparation>;

    /// Between turns: takes in tool sets that changed (an MCP server's
    /// `notifications/tools/list_changed`). `true` when `specs` changed.
    fn refresh(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { false })
    }

    /// Permission, grant, the sandboxed call and the mapping to a result.
    /// Never fails: every failure is an error result.
    fn run(
        self: Arc<Self>,
        call: ToolCall,
        preparation: Preparation,
    ) -> BoxFuture<'static, ToolCallResult>;
}
