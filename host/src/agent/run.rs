//! The vocabulary one run of the loop is written in, shared by the step
//! modules (`query` and the steps it calls): what the
//! loop is given ([`QueryConfig`], [`QueryDeps`]), what it answers
//! ([`QueryOutcome`]), and what an iteration hands on ([`Next`], [`Stop`],
//! [`Response`]). It imports no step, so no step imports another through
//! it.

use super::context::ContextConfig;
use super::events::EventSink;
use super::executor::ToolExecutor;
use super::history_log::HistoryLog;
use super::input::InputQueue;
use super::loop_hooks::LoopHooks;
use super::state::{State, Terminal, Transition};
use super::tools::{PermissionDenial, ToolCallResult, ToolRuntime};
use crate::model::{ContentBlock, Message, Model, RetryPolicy, ToolSpec, Usage};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// `--json-schema`'s bound (the StructuredOutput tool's steps are in
/// `structured_output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StructuredOutputConfig {
    /// Attempts without a valid answer before the run gives up.
    pub max_attempts: u32,
}

pub(super) const TOOL_INTERRUPTED: &str = "The user interrupted this tool call; it did not complete. Wait for the user to say how to proceed.";

#[derive(Debug, Clone)]
pub struct QueryConfig {
    pub model: String,
    /// Tried in order when the model keeps failing.
    pub fallback_models: Vec<String>,
    pub system_prompt: String,
    pub max_tokens: u32,
    /// Model iterations allowed; `None` is unlimited.
    pub max_turns: Option<u32>,
    pub retry: RetryPolicy,
    /// Consecutive Stop hook blocks allowed; the next one is overridden.
    pub stop_hook_block_cap: u32,
    pub max_budget_usd: Option<f64>,
    /// How large the history may grow, and whether it is compacted.
    pub context: ContextConfig,
    /// `--json-schema`: the answer must come through the StructuredOutput
    /// tool.
    pub structured_output: Option<StructuredOutputConfig>,
    /// `--effort`, sent to models that take it.
    pub effort: Option<crate::model::Effort>,
    /// The reminders (the skills listing; memory files and today's date),
    /// one text block each, put at the head of the first user message of
    /// every request — not kept in the history,
    /// so it is there after compaction and on resume, as in Claude Code.
    pub user_context: Vec<String>,
    /// Extended thinking, as the user chose it (see `model::Thinking`).
    pub thinking: crate::model::ThinkingChoice,
    /// `--task-budget`: tokens the model has for the whole task, told to
    /// it on every request.
    pub task_budget: Option<u64>,
}

/// What the loop talks to.
pub struct QueryDeps<'a> {
    pub model: &'a dyn Model,
    pub tools: Arc<dyn ToolRuntime>,
    pub hooks: &'a dyn LoopHooks,
    /// The durable copy of the history.
    pub history: &'a dyn HistoryLog,
    /// User messages arriving while the loop runs.
    pub input: Option<&'a InputQueue>,
    /// Cancelled on SIGINT / SIGTERM.
    pub abort: CancellationToken,
}

/// The failure a run ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct RunError {
    pub message: String,
    pub kind: &'static str,
    pub status: Option<u16>,
}

/// How the run ended and what it produced.
#[derive(Debug, Clone)]
pub struct QueryOutcome {
    pub terminal: Terminal,
    /// As Claude Code counts it: the user messages of the run (the prompt,
    /// each tool result, each message the loop added), or, for `max_turns`,
    /// the turn that was refused.
    pub num_turns: u32,
    /// The final answer's text, or the error's.
    pub result: String,
    /// `--json-schema`: the answer, valid against the schema.
    pub structured_output: Option<serde_json::Value>,
    /// For error subtypes: why.
    pub errors: Vec<String>,
    /// Set when the run ended on a failure shown as an error message.
    pub error: Option<RunError>,
    pub stop_reason: Option<String>,
    pub usage: Usage,
    pub cost_usd: f64,
    pub permission_denials: Vec<PermissionDenial>,
    /// Every transition taken, in order.
    pub transitions: Vec<Transition>,
    pub api_duration: Duration,
    pub messages: Vec<Message>,
    /// Queued inputs this run consumed (their lifecycle ends with the run).
    pub consumed_inputs: Vec<String>,
}

impl QueryOutcome {
    /// The outcome of a run that ended before its first model request (a
    /// hook stopped it).
    pub fn without_turn(terminal: Terminal, result: String, messages: Vec<Message>) -> Self {
        Self {
            terminal,
            num_turns: 0,
            result,
            structured_output: None,
            errors: Vec::new(),
            error: None,
            stop_reason: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            permission_denials: Vec::new(),
            transitions: Vec::new(),
            api_duration: Duration::ZERO,
            messages,
            consumed_inputs: Vec::new(),
        }
    }

    pub fn is_error(&self) -> bool {
        self.terminal.is_error() || self.error.is_some()
    }
}

/// Where an iteration leads.
pub(super) enum Next {
    Continue(State),
    Stop(Stop),
}

/// A terminal and what its result line needs.
pub(super) struct Stop {
    pub state: State,
    pub terminal: Terminal,
    pub error: Option<RunError>,
    pub ending: Ending,
}

impl Stop {
    pub fn new(state: State, terminal: Terminal) -> Self {
        Self {
            state,
            terminal,
            error: None,
            ending: Ending::default(),
        }
    }

    pub fn with_error(mut self, error: RunError) -> Self {
        self.error = Some(error);
        self
    }

    pub fn with_ending(mut self, ending: Ending) -> Self {
        self.ending = ending;
        self
    }
}

/// How a run's final line is filled in, beyond the terminal.
#[derive(Default)]
pub(super) struct Ending {
    pub stop_reason: Option<String>,
    pub result: Option<String>,
    pub errors: Vec<String>,
    /// `num_turns` when it is not the count of user messages (max_turns
    /// reports the turn it refused to start).
    pub turns: Option<u32>,
    pub structured_output: Option<Box<serde_json::Value>>,
}

/// Totals that run across iterations (not part of the per-iteration state).
pub(super) struct Totals {
    pub usage: Usage,
    pub cost_usd: f64,
    pub denials: Vec<PermissionDenial>,
    pub transitions: Vec<Transition>,
    pub api_duration: Duration,
    pub consumed_inputs: Vec<String>,
    /// User messages so far, the prompt included (Claude Code's `num_turns`).
    pub user_messages: u32,
    pub(super) started: Instant,
    /// The query chain's depth: how many iterations came before this one.
    pub depth: u32,
}

impl Totals {
    /// A timing mark (printed with `--debug`), inside the query's span so it
    /// carries the chain id.
    pub fn mark(&self, name: &str) {
        tracing::debug!(
            mark = name,
            depth = self.depth,
            ms = self.started.elapsed().as_secs_f64() * 1e3,
            "timing"
        );
    }
}

/// One run of the loop: what it talks to, and what it has added up.
pub(super) struct Run<'r, 'a> {
    pub deps: &'r QueryDeps<'a>,
    pub config: &'r QueryConfig,
    pub sink: &'r mut dyn EventSink,
    pub totals: Totals,
    /// The model being asked (the fallback chain moves it on).
    pub model: String,
    pub fallbacks: std::slice::Iter<'r, String>,
    pub tool_specs: Vec<ToolSpec>,
    /// This run's id, told to MessageDisplay hooks (Claude Code's
    /// `turn_id`).
    pub turn_id: String,
}

impl<'r, 'a> Run<'r, 'a> {
    pub(super) fn new(
        deps: &'r QueryDeps<'a>,
        config: &'r QueryConfig,
        sink: &'r mut dyn EventSink,
    ) -> Self {
        Self {
            deps,
            config,
            sink,
            totals: Totals {
                usage: Usage::default(),
                cost_usd: 0.0,
                denials: Vec::new(),
                transitions: Vec::new(),
                api_duration: Duration::ZERO,
                consumed_inputs: Vec::new(),
                user_messages: 1,
                started: Instant::now(),
                depth: 0,
            },
            // Whoever built the configuration, a name like `sonnet` goes
            // out as the id Claude Code would send.
            model: crate::model::resolve_model(&config.model),
            fallbacks: config.fallback_models.iter(),
            tool_specs: Vec::new(),
            turn_id: uuid::Uuid::new_v4().to_string(),
        }
    }
}

/// A response that streamed to its end.
pub(super) struct Response {
    pub content: Vec<ContentBlock>,
    pub stop_reason: Option<String>,
    pub usage: Usage,
    pub executor: ToolExecutor,
    /// Results already delivered while the model streamed.
    pub delivered: Vec<ToolCallResult>,
}
