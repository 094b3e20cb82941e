//! The loop's seam to tools: a call, what preparing it gives, its result,
//! and the [`ToolRuntime`] behind which the whole single-tool pipeline
//! lives. Nothing here knows how a tool runs: the loop only starts prepared
//! calls, honours what they say about concurrency and interrupts, and pairs
//! their results by `tool_use_id`.

use crate::model::{InvalidToolInput, ToolResultContent, ToolSpec};
use futures::FutureExt;
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

/// What happens to a running call when the user interrupts the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterruptBehavior {
    /// The call is stopped and gets a synthetic result.
    Cancel,
    /// The call runs to completion.
    Block,
}

/// What decided that a call was refused, as the `permission_denied` line
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenialSource {
    /// `rule`, `mode`, `ceiling`, `hook`, … (snake case).
    pub decided_by: String,
    /// The rule as written, when a rule decided.
    pub rule: Option<String>,
    /// Where that rule came from.
    pub source: Option<String>,
}

/// A permission the policy refused, as the result line lists it (the reason
/// and its source go to the `permission_denied` line, not the result).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionDenial {
    pub tool_name: String,
    pub tool_use_id: String,
    pub tool_input: Value,
    #[serde(skip)]
    pub reason: String,
    #[serde(skip)]
    pub source: Option<DenialSource>,
    /// Whoever refused also asked to stop the turn (the SDK's deny with
    /// `interrupt`): the refusal is delivered, then the turn ends as if
    /// interrupted.
    #[serde(skip)]
    pub interrupts_turn: bool,
}

/// The `tool_result` of one call. Always paired with its call by
/// `tool_use_id`; every call gets exactly one.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallResult {
    pub tool_use_id: String,
    pub content: ToolResultContent,
    pub is_error: bool,
    /// What the call did, for programs (hooks, SDK clients), when the tool
    /// says; never sent to the model.
    pub structured: Option<Value>,
    pub denial: Option<Box<PermissionDenial>>,
    /// What hooks added to this call's outcome.
    pub hooks: HookNotes,
    /// Text for the model that joins the user message after the batch's
    /// results and is shown as a user line of its own (a skill's
    /// instructions).
    pub follow_up: Option<String>,
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
            structured: None,
            denial: None,
            hooks: HookNotes::default(),
            follow_up: None,
        }
    }
}

/// A call that passed lookup and validation and was planned: it knows how
/// to run itself.
pub trait ReadyCall: Send {
    /// Whether the call may overlap with other concurrency-safe calls.
    fn concurrency_safe(&self) -> bool;

    fn interrupt(&self) -> InterruptBehavior;

    /// Permission, the sandboxed call and its result. Never fails: every
    /// failure is an error result.
    fn run(self: Box<Self>) -> BoxFuture<'static, ToolCallResult>;
}

/// A call checked and planned, before it runs.
pub enum Preparation {
    Ready(Box<dyn ReadyCall>),
    /// The call failed before running (unknown tool, invalid input, the
    /// tool's own validation, a crash while planning): this is its result.
    Failed(Box<ToolCallResult>),
}

impl std::fmt::Debug for Preparation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Preparation::Ready(call) => f
                .debug_struct("Ready")
                .field("concurrency_safe", &call.concurrency_safe())
                .field("interrupt", &call.interrupt())
                .finish(),
            Preparation::Failed(result) => f.debug_tuple("Failed").field(result).finish(),
        }
    }
}

/// Prepares tool calls: the single-tool pipeline behind a seam the loop and
/// the executor can be tested through.
pub trait ToolRuntime: Send + Sync + 'static {
    /// The tools offered to the model, in a stable order.
    fn specs(&self) -> Vec<ToolSpec>;

    /// Lookup, input parsing and schema validation, the tool's own
    /// validation and its plan (concurrency safety, needs).
    fn prepare(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Preparation>;

    /// The tools offered to the model for a run, as `specs` says once
    /// whatever judges the offer (middleware hooks) has judged it.
    fn offer(&self) -> BoxFuture<'_, Vec<ToolSpec>> {
        Box::pin(async { self.specs() })
    }

    /// Between turns: takes in tool sets that changed (an MCP server's
    /// `notifications/tools/list_changed`). `true` when `specs` changed.
    fn refresh(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { false })
    }

    /// `specs` — some of this runtime's own, as a subset (a subagent's
    /// tools) offers them — described for that subset: a tool whose
    /// description speaks of the others (code mode's Script) is
    /// described again.
    fn respec(&self, specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
        specs
    }

    /// A prompt the user typed (not a subagent's task, not a command's
    /// expansion): what judges calls on the user's behalf (the auto mode's
    /// classifier) reads their recent prompts.
    fn note_user_prompt(&self, _text: &str) {}

    /// Between turns: what the tools heard that the model should be told
    /// (a resource it read from an MCP server changed), each a text it
    /// reads after the results. Taken once.
    fn notices(&self) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async { Vec::new() })
    }

    /// Prepares and runs one call to its result (what a caller outside the
    /// loop — `mcp serve`, a test — wants).
    fn call(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, ToolCallResult> {
        async move {
            match self.prepare(call).await {
                Preparation::Ready(ready) => ready.run().await,
                Preparation::Failed(result) => *result,
            }
        }
        .boxed()
    }
}
