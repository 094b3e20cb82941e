//! The agent loop: Claude Code's `query()` state machine.
//!
//! One `while` loop over an explicit [`State`], a [`Transition`] recorded at
//! every continue site and a [`Terminal`] for every exit; the streaming tool
//! executor; the single-tool pipeline. The loop reaches the world only
//! through [`Model`](crate::model::Model) and [`ToolRuntime`], so it can be
//! run against fakes.
//!
//! The loop never crashes on a tool: every call gets exactly one result,
//! paired by `tool_use_id`, and never a result from another response.

mod executor;
mod input;
mod loop_hooks;
mod pipeline;
mod prompt;
mod query;
mod state;
mod tools;

pub use executor::ToolExecutor;
pub use input::{InputQueue, QueuedInput};
pub use loop_hooks::{
    BatchCall, BatchDecision, LoopHooks, NoLoopHooks, StopDecision, StopHookInput,
};
pub use pipeline::ToolPipeline;
pub use prompt::system_prompt;
pub use query::{
    AgentEvent, CommandState, EventSink, MAX_OUTPUT_TOKENS_RECOVERIES, QueryConfig, QueryDeps,
    QueryOutcome, RunError, query,
};
pub use state::{State, Terminal, Transition};
pub use tools::{HookNotes, PermissionDenial, Preparation, ToolCall, ToolCallResult, ToolRuntime};
