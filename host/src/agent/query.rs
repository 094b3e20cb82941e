//! The loop: request → stream → tools → results → request …, one `loop`
//! over an explicit [`State`], rebuilt whole at each continue site with the
//! [`Transition`] that explains it, and a [`Terminal`] at each exit.
//!
//! One iteration is three steps, each in its own module: the API attempts
//! of one request ([`attempt`](super::attempt): retries and fallbacks), then
//! either what follows a response with tool calls
//! ([`after_tools`](super::after_tools)) or what follows one without
//! ([`after_text`](super::after_text): the recoveries and the Stop hooks).
//! Each step answers with [`Next`]: go round again with a new state, or stop.

use super::context::ContextConfig;
use super::events::{AgentEvent, EventSink};
use super::history_log::HistoryLog;
use super::input::InputQueue;
use super::loop_hooks::LoopHooks;
use super::state::{State, Terminal, Transition};
use super::structured_output::StructuredOutputConfig;
use super::tools::{PermissionDenial, ToolRuntime};
use crate::model::{Message, Model, RetryPolicy, ToolSpec, Usage, cost_usd};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

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

/// Runs the loop from `messages` until a terminal.
pub async fn query(
    deps: &QueryDeps<'_>,
    config: &QueryConfig,
    messages: Vec<Message>,
    sink: &mut dyn EventSink,
) -> QueryOutcome {
    let chain_id = uuid::Uuid::new_v4();
    let span = tracing::debug_span!("query", %chain_id);
    Run::new(deps, config, sink)
        .run(messages)
        .instrument(span)
        .await
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
    started: Instant,
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
}

impl<'r, 'a> Run<'r, 'a> {
    fn new(deps: &'r QueryDeps<'a>, config: &'r QueryConfig, sink: &'r mut dyn EventSink) -> Self {
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
            model: config.model.clone(),
            fallbacks: config.fallback_models.iter(),
            tool_specs: Vec::new(),
        }
    }

    async fn run(mut self, messages: Vec<Message>) -> QueryOutcome {
        self.tool_specs = self.deps.tools.specs();
        let mut state = State::initial(messages);
        loop {
            match self.iteration(state).await {
                Next::Continue(next) => state = next,
                Next::Stop(stop) => return self.finish(stop),
            }
        }
    }

    /// One model iteration: the context pipeline, the request's attempts,
    /// then what follows the response.
    async fn iteration(&mut self, state: State) -> Next {
        if let Some(transition) = state.transition {
            self.totals.transitions.push(transition);
        }
        self.totals.depth = state.turn_count - 1;
        // Tool sets that changed during the last turn are offered from this
        // one on; unchanged, the specs stay the same object.
        if state.turn_count > 1 && self.deps.tools.refresh().await {
            self.tool_specs = self.deps.tools.specs();
        }
        self.totals.mark("query_setup_start");
        if self.deps.abort.is_cancelled() {
            return self.aborted_streaming(state, None);
        }
        let mut state = match self.prepare_context(state).await {
            Ok(state) => state,
            Err(next) => return next,
        };
        let response = match self.attempt(&state).await {
            super::attempt::Attempted::Response(response) => response,
            super::attempt::Attempted::Aborted(partial) => {
                return self.aborted_streaming(state, partial);
            }
            super::attempt::Attempted::Failed(error) => {
                return self.after_failure(state, error).await;
            }
        };
        state.context = state
            .context
            .measured(state.messages.len(), &response.usage);
        if !response.content.is_empty() {
            self.deps.history.response(&response.content);
        }
        self.totals.usage.add(&response.usage);
        self.totals.cost_usd += cost_usd(&self.model, &response.usage);
        if let Some(budget) = self.config.max_budget_usd
            && self.totals.cost_usd >= budget
        {
            return self.over_budget(state, response, budget);
        }
        if response.executor.is_empty() {
            self.after_text(state, response).await
        } else {
            self.after_tools(state, response).await
        }
    }

    /// The run reached `--max-budget-usd`: the response's calls that have
    /// not finished are not waited for.
    fn over_budget(
        &mut self,
        mut state: State,
        response: super::attempt::Response,
        budget: f64,
    ) -> Next {
        const TOOL_NOT_RUN_BUDGET: &str =
            "This tool call was not run: the run reached its spending limit.";
        let super::attempt::Response {
            content,
            stop_reason,
            mut executor,
            mut delivered,
            ..
        } = response;
        let rest = executor.abandon(TOOL_NOT_RUN_BUDGET);
        self.emit_results(&rest);
        delivered.extend(rest);
        self.append_turn(&mut state.messages, content, delivered);
        let ending = Ending {
            stop_reason,
            errors: vec![format!("Reached maximum budget (${budget})")],
            ..Ending::default()
        };
        Next::Stop(Stop::new(state, Terminal::BudgetExhausted).with_ending(ending))
    }

    /// The max_turns stop when `next` would run a turn past the limit: the
    /// limit wins over every recovery that counts a turn.
    pub fn max_turns_reached(&self, next: State, stop_reason: Option<String>) -> Next {
        match self.config.max_turns {
            Some(max_turns) if next.turn_count > max_turns => {
                let ending = Ending {
                    stop_reason,
                    errors: vec![format!("Reached maximum number of turns ({max_turns})")],
                    turns: Some(next.turn_count),
                    ..Ending::default()
                };
                Next::Stop(Stop::new(next, Terminal::MaxTurns).with_ending(ending))
            }
            _ => Next::Continue(next),
        }
    }

    /// Builds the outcome of a terminal; a run error is shown first, as an
    /// assistant message (errors recovered from are never shown).
    fn finish(self, stop: Stop) -> QueryOutcome {
        let Stop {
            state,
            terminal,
            error,
            ending,
        } = stop;
        self.totals.mark("query_end");
        self.deps.history.sync(&state.messages);
        tracing::debug!(terminal = terminal.as_str(), "loop ended");
        if let Some(error) = &error {
            self.sink.emit(AgentEvent::Error {
                message: error.message.clone(),
                kind: error.kind,
            });
        }
        let result = match (&error, ending.result) {
            (Some(error), _) => error.message.clone(),
            (None, Some(text)) => text,
            (None, None) => String::new(),
        };
        let stop_reason = if error.is_some() {
            Some("stop_sequence".to_string())
        } else {
            ending.stop_reason
        };
        let totals = self.totals;
        QueryOutcome {
            terminal,
            num_turns: ending.turns.unwrap_or(totals.user_messages),
            result,
            structured_output: ending.structured_output.map(|v| *v),
            errors: ending.errors,
            error,
            stop_reason,
            usage: totals.usage,
            cost_usd: totals.cost_usd,
            permission_denials: totals.denials,
            transitions: totals.transitions,
            api_duration: totals.api_duration,
            messages: state.messages,
            consumed_inputs: totals.consumed_inputs,
        }
    }
}
