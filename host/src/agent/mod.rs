//! The agent loop: Claude Code's `query()` state machine.
//!
//! One `while` loop over an explicit [`State`], a [`Transition`] recorded at
//! every continue site and a [`Terminal`] for every exit; the streaming tool
//! executor. The loop reaches the world only through
//! [`Model`](crate::model::Model), [`ToolRuntime`] and [`LoopHooks`], so it
//! can be run against fakes. Imports: `model` — and nothing else of
//! carapace.
//!
//! The loop never crashes on a tool: every call gets exactly one result,
//! paired by `tool_use_id`, and never a result from another response.

mod after_text;
mod after_tools;
mod attempt;
mod compaction;
mod context;
mod events;
mod executor;
mod history;
mod history_log;
mod input;
mod loop_hooks;
mod prompt;
mod query;
mod run;
mod state;
mod structured_output;
mod task_end;
mod tool_subset;
mod tools;

pub use after_text::MAX_OUTPUT_TOKENS_RECOVERIES;
pub use context::{
    CompactError, CompactRequest, Compacted, ContextConfig, ContextTracking, Microcompacted,
    clear_results, compact, context_window, estimate_tokens, microcompact,
};
pub use events::{AgentEvent, CommandState, EventRelay, EventSink, progress_text};
pub use executor::ToolExecutor;
pub use history_log::{DecisionLog, HistoryLog, NoHistoryLog};
pub use input::{InputHold, InputQueue, QueuedInput};
pub use loop_hooks::{
    BatchCall, BatchDecision, CompactTrigger, LoopHooks, NoLoopHooks, PreCompactDecision,
    StopDecision, StopHookInput,
};
pub use prompt::today;
pub use query::query;
pub use run::{QueryConfig, QueryDeps, QueryOutcome, RunError, StructuredOutputConfig};
pub use state::{State, Terminal, Transition};
pub use structured_output::{DEFAULT_STRUCTURED_OUTPUT_ATTEMPTS, STRUCTURED_OUTPUT_TOOL};
pub use task_end::TaskEnd;
pub use tool_subset::{CallObserver, ToolSubset, caller_tools};
pub use tools::{
    DenialSource, HookNotes, InterruptBehavior, PermissionDenial, Preparation, ReadyCall, ToolCall,
    ToolCallResult, ToolRuntime,
};
