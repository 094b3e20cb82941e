//! The loop: request → stream → tools → results → request …, one `loop`
//! over an explicit [`State`], rebuilt whole at each continue site with the
//! [`Transition`] that explains it, and a [`Terminal`] at each exit.
//!
//! Within one iteration, API attempts (retries, fallbacks) repeat the same
//! request; each failed attempt voids its partial response and drops its
//! tool executor, so nothing from it reaches the next attempt.

use super::executor::ToolExecutor;
use super::input::InputQueue;
use super::loop_hooks::{BatchCall, BatchDecision, LoopHooks, StopDecision, StopHookInput};
use super::state::{State, Terminal, Transition};
use super::tools::{PermissionDenial, ToolCall, ToolCallResult, ToolRuntime};
use crate::model::{
    Assembled, ContentBlock, FailureKind, Message, MessagesRequest, Model, ModelError,
    ResponseAssembler, RetryPolicy, Role, Usage, cost_usd,
};
use futures::StreamExt;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// What the loop reports while it runs, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// One content block of a response, as soon as it completes.
    AssistantBlock {
        message_id: String,
        model: String,
        block: ContentBlock,
        usage: Usage,
    },
    /// One tool result, as soon as it may be delivered.
    ToolResult(ToolCallResult),
    /// The policy refused a call (its `is_error` result follows).
    PermissionDenied(PermissionDenial),
    /// A user message the loop added and shows (a retry prompt, a nudge,
    /// Stop hook feedback, an interruption marker).
    SyntheticUser {
        text: String,
    },
    /// An attempt failed and the request will be sent again.
    ApiRetry {
        attempt: u32,
        max_retries: u32,
        delay: Duration,
        error_status: Option<u16>,
        error: FailureKind,
    },
    /// The model failed; the next model of the fallback chain takes over.
    ModelFallback {
        trigger: FailureKind,
        from: String,
        to: String,
    },
    /// The partial response `message_id` (and its tool calls) is void.
    Tombstone {
        message_id: String,
        tool_use_ids: Vec<String>,
        reason: String,
    },
    Warning {
        message: String,
    },
    /// A notice for the user (never the model): a hook's `systemMessage`,
    /// a hook that stopped the run or blocked the prompt.
    Informational {
        content: String,
        /// `info` or `warning`.
        level: &'static str,
        /// Whether the run stops because of it.
        prevent_continuation: bool,
    },
    /// A hook handler started (printed with `--include-hook-events`).
    HookStarted {
        hook_id: String,
        /// `PreToolUse:Bash`, `Stop`, … as Claude Code names it.
        hook_name: String,
        hook_event: String,
    },
    /// A hook handler finished (printed with `--include-hook-events`).
    HookResponse {
        hook_id: String,
        hook_name: String,
        hook_event: String,
        output: String,
        stdout: String,
        stderr: String,
        exit_code: Option<i32>,
        /// `success` or `error`.
        outcome: &'static str,
    },
    CommandLifecycle {
        uuid: String,
        state: CommandState,
    },
    /// The failure the run ends with, shown as an assistant message.
    Error {
        message: String,
        kind: &'static str,
    },
}

/// The fate of a queued user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandState {
    Queued,
    Started,
    Completed,
    Cancelled,
    Discarded,
}

impl CommandState {
    pub fn as_str(self) -> &'static str {
        match self {
            CommandState::Queued => "queued",
            CommandState::Started => "started",
            CommandState::Completed => "completed",
            CommandState::Cancelled => "cancelled",
            CommandState::Discarded => "discarded",
        }
    }
}

/// Receives the loop's events (the output layer, a test).
pub trait EventSink: Send {
    fn emit(&mut self, event: AgentEvent);
}

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
    /// Consecutive Stop hook blocks allowed before the hooks are overridden.
    pub stop_hook_block_cap: u32,
    pub max_budget_usd: Option<f64>,
}

/// Continuation requests after a response cut at max_tokens.
pub const MAX_OUTPUT_TOKENS_RECOVERIES: u32 = 3;
/// Consecutive overloaded answers after which a fallback model is tried.
const OVERLOADS_BEFORE_FALLBACK: u32 = 3;

/// What the loop talks to.
pub struct QueryDeps<'a> {
    pub model: &'a dyn Model,
    pub tools: Arc<dyn ToolRuntime>,
    pub hooks: &'a dyn LoopHooks,
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
    pub num_turns: u32,
    /// The final answer's text, or the error's.
    pub result: String,
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

// What the loop says to the model, in carapace's words.
const MAX_TOKENS_PROMPT: &str = "Your response was cut off by the output token limit. Continue exactly where it stopped, mid-sentence if need be, without apologising or repeating anything; if much remains, work in smaller steps.";
const MALFORMED_TOOL_USE_PROMPT: &str = "Your last response ended with stop_reason tool_use but held no complete tool call, so nothing was run. Make the tool call again, with well-formed input.";
const THINKING_ONLY_PROMPT: &str = "Your last response held only thinking and nothing the user can see. Give your answer as visible text.";
const STOP_HOOK_FEEDBACK: &str = "A Stop hook asked you to keep going:";
const INTERRUPTED_STREAMING: &str = "[The user interrupted this request]";
const INTERRUPTED_TOOLS: &str = "[The user interrupted this request while tools were running]";
const TOOL_INTERRUPTED: &str = "The user interrupted this tool call; it did not complete. Wait for the user to say how to proceed.";
const TOOL_NOT_RUN_BUDGET: &str = "This tool call was not run: the run reached its spending limit.";

/// Runs the loop from `messages` until a terminal.
pub async fn query(
    deps: &QueryDeps<'_>,
    config: &QueryConfig,
    messages: Vec<Message>,
    sink: &mut dyn EventSink,
) -> QueryOutcome {
    let chain_id = uuid::Uuid::new_v4();
    let span = tracing::debug_span!("query", %chain_id);
    run_loop(deps, config, messages, sink)
        .instrument(span)
        .await
}

/// Totals that run across iterations (not part of the per-iteration state).
struct Totals {
    usage: Usage,
    cost_usd: f64,
    denials: Vec<PermissionDenial>,
    transitions: Vec<Transition>,
    api_duration: Duration,
    consumed_inputs: Vec<String>,
    started: Instant,
    /// The query chain's depth: how many iterations came before this one.
    depth: u32,
}

impl Totals {
    /// A timing mark (printed with `--debug`), inside the query's span so it
    /// carries the chain id.
    fn mark(&self, name: &str) {
        tracing::debug!(
            mark = name,
            depth = self.depth,
            ms = self.started.elapsed().as_secs_f64() * 1e3,
            "timing"
        );
    }
}

async fn run_loop(
    deps: &QueryDeps<'_>,
    config: &QueryConfig,
    messages: Vec<Message>,
    sink: &mut dyn EventSink,
) -> QueryOutcome {
    let mut tool_specs = deps.tools.specs();
    let mut state = State::initial(messages);
    let mut totals = Totals {
        usage: Usage::default(),
        cost_usd: 0.0,
        denials: Vec::new(),
        transitions: Vec::new(),
        api_duration: Duration::ZERO,
        consumed_inputs: Vec::new(),
        started: Instant::now(),
        depth: 0,
    };
    let mut model = config.model.clone();
    let mut fallbacks = config.fallback_models.iter();

    loop {
        if let Some(transition) = state.transition {
            totals.transitions.push(transition);
        }
        // The query chain's depth: how many iterations came before this one.
        totals.depth = state.turn_count - 1;
        // Tool sets that changed during the last turn are offered from this
        // one on; unchanged, the specs stay the same object.
        if state.turn_count > 1 && deps.tools.refresh().await {
            tool_specs = deps.tools.specs();
        }
        totals.mark("query_setup_start");
        if deps.abort.is_cancelled() {
            sink.emit(AgentEvent::SyntheticUser {
                text: INTERRUPTED_STREAMING.into(),
            });
            return finish(
                state,
                totals,
                Terminal::AbortedStreaming,
                None,
                Ending::default(),
                sink,
            );
        }

        // One model iteration: attempts until a response, a terminal error,
        // or an abort.
        let mut attempt = 0;
        let mut overloads = 0;
        let response = loop {
            let request = MessagesRequest {
                model: model.clone(),
                max_tokens: config.max_tokens,
                system: config.system_prompt.clone(),
                messages: state.messages.clone(),
                tools: tool_specs.clone(),
            };
            totals.mark("query_api_streaming_start");
            let started = Instant::now();
            let streamed = stream_response(deps, &request, sink, &totals).await;
            totals.api_duration += started.elapsed();
            totals.mark("query_api_streaming_end");
            let (error, partial) = match streamed {
                Streamed::Complete(response) => break response,
                Streamed::Aborted(partial) => {
                    let Partial {
                        content,
                        mut executor,
                        mut delivered,
                        ..
                    } = partial;
                    let rest = executor.abandon(TOOL_INTERRUPTED);
                    emit_results(sink, &rest);
                    delivered.extend(rest);
                    let mut state = state;
                    append_turn(&mut state.messages, content, delivered, &mut totals.denials);
                    sink.emit(AgentEvent::SyntheticUser {
                        text: INTERRUPTED_STREAMING.into(),
                    });
                    return finish(
                        state,
                        totals,
                        Terminal::AbortedStreaming,
                        None,
                        Ending::default(),
                        sink,
                    );
                }
                Streamed::Failed { error, partial } => (error, partial),
            };
            void_partial(partial, sink, &error);
            if error.is_retryable() {
                overloads = if error.is_overloaded() {
                    overloads + 1
                } else {
                    0
                };
                let fall_back_now = overloads >= OVERLOADS_BEFORE_FALLBACK && fallbacks.len() > 0;
                if !fall_back_now && attempt < config.retry.max_retries {
                    attempt += 1;
                    let delay = config.retry.delay(attempt, &error, fastrand::f64());
                    sink.emit(AgentEvent::ApiRetry {
                        attempt,
                        max_retries: config.retry.max_retries,
                        delay,
                        error_status: error.status(),
                        error: error.kind(),
                    });
                    tracing::debug!(attempt, ?delay, %error, "retrying the request");
                    tokio::select! {
                        () = tokio::time::sleep(delay) => continue,
                        () = deps.abort.cancelled() => {
                            sink.emit(AgentEvent::SyntheticUser { text: INTERRUPTED_STREAMING.into() });
                            return finish(state, totals, Terminal::AbortedStreaming, None, Ending::default(), sink);
                        }
                    }
                }
                if let Some(next) = fallbacks.next() {
                    sink.emit(AgentEvent::ModelFallback {
                        trigger: error.kind(),
                        from: model.clone(),
                        to: next.clone(),
                    });
                    totals.transitions.push(Transition::ModelFallback);
                    model = next.clone();
                    attempt = 0;
                    overloads = 0;
                    continue;
                }
            }
            let terminal = match &error {
                ModelError::Http { .. } | ModelError::Api { .. } | ModelError::Connection(_)
                    if error.kind() == FailureKind::PromptTooLong =>
                {
                    Terminal::PromptTooLong
                }
                ModelError::Http { .. } | ModelError::Api { .. } | ModelError::Connection(_) => {
                    Terminal::ApiError
                }
                ModelError::MissingApiKey | ModelError::Stream(_) | ModelError::Replay(_) => {
                    Terminal::ModelError
                }
            };
            let run_error = RunError {
                message: api_error_text(&error),
                kind: error.kind().as_str(),
                status: error.status(),
            };
            return finish(
                state,
                totals,
                terminal,
                Some(run_error),
                Ending::default(),
                sink,
            );
        };

        let Response {
            content,
            stop_reason,
            usage,
            mut executor,
            mut delivered,
            ..
        } = response;
        totals.usage.add(&usage);
        totals.cost_usd += cost_usd(&model, &usage);

        if let Some(budget) = config.max_budget_usd
            && totals.cost_usd >= budget
        {
            let rest = executor.abandon(TOOL_NOT_RUN_BUDGET);
            emit_results(sink, &rest);
            delivered.extend(rest);
            let mut state = state;
            append_turn(&mut state.messages, content, delivered, &mut totals.denials);
            let ending = Ending {
                stop_reason,
                errors: vec![format!("Reached maximum budget (${budget})")],
                ..Ending::default()
            };
            return finish(state, totals, Terminal::BudgetExhausted, None, ending, sink);
        }

        if !executor.is_empty() {
            // The rest of the batch; results are delivered as they may be.
            totals.mark("query_tool_execution_start");
            let mut aborted = false;
            loop {
                let ready = executor.take_deliverable();
                emit_results(sink, &ready);
                delivered.extend(ready);
                if !executor.has_undelivered() {
                    break;
                }
                tokio::select! {
                    () = executor.wait_for_completion() => {}
                    () = deps.abort.cancelled(), if !aborted => {
                        aborted = true;
                        executor.interrupt(TOOL_INTERRUPTED);
                    }
                }
            }
            totals.mark("query_tool_execution_end");
            if !aborted {
                // A deferred call ends the run only when it is the whole
                // batch: deferring one of several would leave its siblings'
                // results without a call to pair with when it is answered.
                if let [only] = delivered.as_slice()
                    && only.hooks.deferred
                {
                    let mut state = state;
                    push_assistant(&mut state.messages, content);
                    let ending = Ending {
                        stop_reason,
                        ..Ending::default()
                    };
                    return finish(state, totals, Terminal::ToolDeferred, None, ending, sink);
                }
                for result in delivered.iter().filter(|r| r.hooks.deferred) {
                    sink.emit(AgentEvent::ToolResult(result.clone()));
                }
            }
            let hook_stop = delivered.iter().find_map(|r| r.hooks.stop.clone());
            let mut extra: Vec<ContentBlock> = delivered
                .iter()
                .flat_map(|r| r.hooks.context.iter())
                .map(|text| ContentBlock::Text { text: text.clone() })
                .collect();
            let batch = batch_calls(&content, &delivered);
            let mut results_message =
                append_turn(&mut state.messages, content, delivered, &mut totals.denials);
            if aborted {
                sink.emit(AgentEvent::SyntheticUser {
                    text: INTERRUPTED_TOOLS.into(),
                });
                let ending = Ending {
                    stop_reason,
                    ..Ending::default()
                };
                return finish(state, totals, Terminal::AbortedTools, None, ending, sink);
            }
            let stopped = match hook_stop {
                Some(reason) => Some(reason),
                None => match deps.hooks.after_batch(batch).await {
                    BatchDecision::Stop { reason } => Some(reason),
                    BatchDecision::Continue { context } => {
                        extra.extend(context.into_iter().map(|text| ContentBlock::Text { text }));
                        None
                    }
                },
            };
            results_message.append(&mut extra);
            if let Some(reason) = stopped {
                tracing::debug!(%reason, "a hook stopped the run after the tool batch");
                if let Some(last) = state.messages.last_mut() {
                    last.content = results_message;
                }
                let ending = Ending {
                    stop_reason,
                    turns: Some(state.turn_count + 1),
                    ..Ending::default()
                };
                return finish(state, totals, Terminal::HookStopped, None, ending, sink);
            }
            // Input that arrived while the tools ran joins their results.
            if let Some(queue) = deps.input {
                for input in queue.take_all() {
                    sink.emit(AgentEvent::CommandLifecycle {
                        uuid: input.uuid.clone(),
                        state: CommandState::Started,
                    });
                    results_message.push(ContentBlock::Text {
                        text: format!(
                            "While you were working, the user sent this message:\n{}\n\nFinish what you were doing, then respond to it.",
                            input.text
                        ),
                    });
                    totals.consumed_inputs.push(input.uuid);
                }
            }
            if let Some(last) = state.messages.last_mut()
                && last.role == Role::User
            {
                last.content = results_message;
            }
            if let Some(max_turns) = config.max_turns
                && state.turn_count + 1 > max_turns
            {
                let ending = Ending {
                    stop_reason,
                    errors: vec![format!("Reached maximum number of turns ({max_turns})")],
                    turns: Some(state.turn_count + 1),
                    ..Ending::default()
                };
                return finish(state, totals, Terminal::MaxTurns, None, ending, sink);
            }
            state = state.next_turn(Vec::new());
            continue;
        }

        // A response without tool calls: recoveries, then the Stop hooks.
        let stop = stop_reason.as_deref();
        if matches!(stop, Some("max_tokens" | "model_context_window_exceeded")) {
            if state.max_output_tokens_recovery_count < MAX_OUTPUT_TOKENS_RECOVERIES {
                let mut messages = state.messages;
                push_assistant(&mut messages, content);
                push_user_text(&mut messages, MAX_TOKENS_PROMPT);
                state = State {
                    messages,
                    max_output_tokens_recovery_count: state.max_output_tokens_recovery_count + 1,
                    transition: Some(Transition::MaxOutputTokensRecovery),
                    ..state
                };
                continue;
            }
            let error = RunError {
                message: format!(
                    "API Error: the response exceeded the {}-token output limit {} times in a row. Set CARAPACE_MAX_OUTPUT_TOKENS to change the limit.",
                    config.max_tokens,
                    MAX_OUTPUT_TOKENS_RECOVERIES + 1
                ),
                kind: "max_output_tokens",
                status: None,
            };
            let mut state = state;
            push_assistant(&mut state.messages, content);
            return finish(
                state,
                totals,
                Terminal::Completed,
                Some(error),
                Ending::default(),
                sink,
            );
        }

        if stop == Some("tool_use") {
            // stop_reason says tool_use, but no tool call arrived whole.
            if !state.malformed_tool_use_retried {
                let mut messages = state.messages;
                push_assistant(&mut messages, content);
                push_user_text(&mut messages, MALFORMED_TOOL_USE_PROMPT);
                sink.emit(AgentEvent::SyntheticUser {
                    text: MALFORMED_TOOL_USE_PROMPT.into(),
                });
                let next = State {
                    messages,
                    turn_count: state.turn_count + 1,
                    malformed_tool_use_retried: true,
                    transition: Some(Transition::MalformedToolUseRetry),
                    ..state
                };
                if let Some(ending) = max_turns_reached(&next, config, stop_reason.clone()) {
                    return finish(next, totals, Terminal::MaxTurns, None, ending, sink);
                }
                state = next;
                continue;
            }
            let error = RunError {
                message: "The model's tool call could not be parsed, and neither could the retry."
                    .into(),
                kind: "malformed_tool_use",
                status: None,
            };
            let mut state = state;
            push_assistant(&mut state.messages, content);
            return finish(
                state,
                totals,
                Terminal::MalformedToolUseExhausted,
                Some(error),
                Ending::default(),
                sink,
            );
        }

        let visible = final_text(&content);
        let has_thinking = content.iter().any(|b| {
            matches!(
                b,
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }
            )
        });
        if visible.trim().is_empty() && has_thinking && !state.thinking_only_nudged {
            let mut messages = state.messages;
            push_assistant(&mut messages, content);
            push_user_text(&mut messages, THINKING_ONLY_PROMPT);
            sink.emit(AgentEvent::SyntheticUser {
                text: THINKING_ONLY_PROMPT.into(),
            });
            let next = State {
                messages,
                turn_count: state.turn_count + 1,
                thinking_only_nudged: true,
                transition: Some(Transition::ThinkingOnlyNudge),
                ..state
            };
            if let Some(ending) = max_turns_reached(&next, config, stop_reason.clone()) {
                return finish(next, totals, Terminal::MaxTurns, None, ending, sink);
            }
            state = next;
            continue;
        }

        let decision = deps
            .hooks
            .on_stop(StopHookInput {
                stop_hook_active: state.stop_hook_active,
                last_assistant_message: visible.clone(),
            })
            .await;
        let ending = Ending {
            stop_reason: stop_reason.clone(),
            result: Some(visible),
            ..Ending::default()
        };
        match decision {
            StopDecision::Allow => {
                let mut state = state;
                push_assistant(&mut state.messages, content);
                return finish(state, totals, Terminal::Completed, None, ending, sink);
            }
            StopDecision::Prevent { reason } => {
                sink.emit(AgentEvent::Warning {
                    message: format!("A Stop hook ended the run: {reason}"),
                });
                let mut state = state;
                push_assistant(&mut state.messages, content);
                return finish(
                    state,
                    totals,
                    Terminal::StopHookPrevented,
                    None,
                    ending,
                    sink,
                );
            }
            StopDecision::Block { reason } => {
                if state.stop_hook_blocking_count >= config.stop_hook_block_cap {
                    sink.emit(AgentEvent::Warning {
                        message: format!(
                            "Stop hooks blocked the end of the turn {} times in a row; ending the turn anyway (cap {}, set CARAPACE_STOP_HOOK_BLOCK_CAP to change it).",
                            state.stop_hook_blocking_count, config.stop_hook_block_cap
                        ),
                    });
                    let mut state = state;
                    push_assistant(&mut state.messages, content);
                    return finish(state, totals, Terminal::Completed, None, ending, sink);
                }
                let feedback = format!("{STOP_HOOK_FEEDBACK}\n{reason}");
                let mut messages = state.messages;
                push_assistant(&mut messages, content);
                push_user_text(&mut messages, &feedback);
                sink.emit(AgentEvent::SyntheticUser { text: feedback });
                let next = State {
                    messages,
                    turn_count: state.turn_count + 1,
                    stop_hook_active: true,
                    stop_hook_blocking_count: state.stop_hook_blocking_count + 1,
                    transition: Some(Transition::StopHookBlocking),
                    ..state
                };
                if let Some(ending) = max_turns_reached(&next, config, stop_reason) {
                    return finish(next, totals, Terminal::MaxTurns, None, ending, sink);
                }
                state = next;
            }
        }
    }
}

/// How a run's final line is filled in, beyond the terminal.
#[derive(Default)]
struct Ending {
    stop_reason: Option<String>,
    result: Option<String>,
    errors: Vec<String>,
    /// `num_turns` when it is not the current turn (max_turns reports the
    /// turn it refused to start).
    turns: Option<u32>,
}

/// The max_turns ending when `next` would run a turn past the limit: the
/// limit wins over every recovery that counts a turn.
fn max_turns_reached(
    next: &State,
    config: &QueryConfig,
    stop_reason: Option<String>,
) -> Option<Ending> {
    let max_turns = config.max_turns?;
    (next.turn_count > max_turns).then(|| Ending {
        stop_reason,
        errors: vec![format!("Reached maximum number of turns ({max_turns})")],
        turns: Some(next.turn_count),
        ..Ending::default()
    })
}

/// Builds the outcome of a terminal; a run error is shown first, as an
/// assistant message (errors recovered from are never shown).
fn finish(
    state: State,
    totals: Totals,
    terminal: Terminal,
    error: Option<RunError>,
    ending: Ending,
    sink: &mut dyn EventSink,
) -> QueryOutcome {
    totals.mark("query_end");
    tracing::debug!(terminal = terminal.as_str(), "loop ended");
    if let Some(error) = &error {
        sink.emit(AgentEvent::Error {
            message: error.message.clone(),
            kind: error.kind,
        });
    }
    let result = match (&error, &ending.result) {
        (Some(error), _) => error.message.clone(),
        (None, Some(text)) => text.clone(),
        (None, None) => String::new(),
    };
    let stop_reason = if error.is_some() {
        Some("stop_sequence".to_string())
    } else {
        ending.stop_reason
    };
    QueryOutcome {
        terminal,
        num_turns: ending.turns.unwrap_or(state.turn_count),
        result,
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

/// The text shown for an API failure, as Claude Code words it.
fn api_error_text(error: &ModelError) -> String {
    match error {
        ModelError::Http {
            status, message, ..
        } => format!("API Error: {status} {message}"),
        other => format!("API Error: {other}"),
    }
}

/// Appends the assistant message and the user message holding the tool
/// results (in delivery order); returns the results message's content so
/// queued input can join it.
fn append_turn(
    messages: &mut Vec<Message>,
    content: Vec<ContentBlock>,
    results: Vec<ToolCallResult>,
    denials: &mut Vec<PermissionDenial>,
) -> Vec<ContentBlock> {
    denials.extend(results.iter().filter_map(|r| r.denial.as_deref().cloned()));
    push_assistant(messages, content);
    let blocks: Vec<ContentBlock> = results
        .into_iter()
        .map(|r| ContentBlock::ToolResult {
            tool_use_id: r.tool_use_id,
            content: r.content,
            is_error: r.is_error,
        })
        .collect();
    if !blocks.is_empty() {
        messages.push(Message {
            role: Role::User,
            content: blocks.clone(),
        });
    }
    blocks
}

/// The batch's calls with their results, for PostToolBatch hooks.
fn batch_calls(content: &[ContentBlock], results: &[ToolCallResult]) -> Vec<BatchCall> {
    results
        .iter()
        .map(|result| {
            let (name, input) = content
                .iter()
                .find_map(|b| match b {
                    ContentBlock::ToolUse { id, name, input } if *id == result.tool_use_id => {
                        Some((name.clone(), input.clone()))
                    }
                    _ => None,
                })
                .unwrap_or_default();
            BatchCall {
                tool_name: name,
                tool_input: input,
                tool_use_id: result.tool_use_id.clone(),
                tool_response: serde_json::to_value(&result.content).unwrap_or_default(),
            }
        })
        .collect()
}

/// Appends an assistant message; an empty one is dropped (the API rejects
/// it, and it says nothing).
fn push_assistant(messages: &mut Vec<Message>, content: Vec<ContentBlock>) {
    if !content.is_empty() {
        messages.push(Message {
            role: Role::Assistant,
            content,
        });
    }
}

/// Appends a user text, joining the last message when it is the user's (two
/// user messages in a row are one turn to the API).
fn push_user_text(messages: &mut Vec<Message>, text: &str) {
    let block = ContentBlock::Text { text: text.into() };
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(block),
        _ => messages.push(Message {
            role: Role::User,
            content: vec![block],
        }),
    }
}

fn emit_results(sink: &mut dyn EventSink, results: &[ToolCallResult]) {
    for result in results {
        emit_result(sink, result);
    }
}

/// A result, preceded by its `permission_denied` line when the policy
/// refused the call.
fn emit_result(sink: &mut dyn EventSink, result: &ToolCallResult) {
    // A deferred call's result is shown only if the batch goes on (it then
    // says the call was not run); a batch of just that call ends the run.
    if result.hooks.deferred {
        return;
    }
    if let Some(denial) = &result.denial {
        sink.emit(AgentEvent::PermissionDenied(denial.as_ref().clone()));
    }
    sink.emit(AgentEvent::ToolResult(result.clone()));
}

/// A response that streamed to its end.
struct Response {
    content: Vec<ContentBlock>,
    stop_reason: Option<String>,
    usage: Usage,
    executor: ToolExecutor,
    delivered: Vec<ToolCallResult>,
}

/// What was received of a response that did not complete.
struct Partial {
    message_id: String,
    content: Vec<ContentBlock>,
    executor: ToolExecutor,
    delivered: Vec<ToolCallResult>,
    /// Whether any of it reached the output.
    shown: bool,
}

enum Streamed {
    Complete(Response),
    Failed { error: ModelError, partial: Partial },
    Aborted(Partial),
}

/// Voids a failed attempt: its running tools are stopped (the executor is
/// dropped) and, if any of it was shown, a tombstone says so.
fn void_partial(partial: Partial, sink: &mut dyn EventSink, error: &ModelError) {
    let tool_use_ids: Vec<String> = partial
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect();
    drop(partial.executor);
    if partial.shown {
        sink.emit(AgentEvent::Tombstone {
            message_id: partial.message_id,
            tool_use_ids,
            reason: format!("the response was voided: {error}"),
        });
    }
}

/// Streams one response, starting each tool call as its block completes and
/// delivering results while the model still streams.
async fn stream_response(
    deps: &QueryDeps<'_>,
    request: &MessagesRequest,
    sink: &mut dyn EventSink,
    totals: &Totals,
) -> Streamed {
    let mut assembler = ResponseAssembler::new();
    let mut executor = ToolExecutor::new(deps.tools.clone(), totals.depth);
    let mut delivered = Vec::new();
    let mut message_id = String::new();
    let mut message_model = String::new();
    let mut shown = false;

    macro_rules! partial {
        () => {
            Partial {
                message_id: message_id.clone(),
                content: assembler.content(),
                executor,
                delivered,
                shown,
            }
        };
    }

    let opened = tokio::select! {
        opened = deps.model.stream(request) => opened,
        () = deps.abort.cancelled() => return Streamed::Aborted(partial!()),
    };
    let mut events = match opened {
        Ok(events) => events,
        Err(error) => {
            return Streamed::Failed {
                error,
                partial: partial!(),
            };
        }
    };
    let mut first_chunk = true;
    loop {
        tokio::select! {
            // Prefer the stream: a block's completion must reach the
            // executor before tool results are drained.
            biased;
            () = deps.abort.cancelled() => return Streamed::Aborted(partial!()),
            event = events.next() => {
                if first_chunk {
                    totals.mark("query_first_chunk_received");
                    first_chunk = false;
                }
                let Some(event) = event else { break };
                let assembled = match event.and_then(|e| assembler.push(e)) {
                    Ok(assembled) => assembled,
                    Err(error) => return Streamed::Failed { error, partial: partial!() },
                };
                match assembled {
                    Assembled::MessageStarted { id, model } => {
                        message_id = id;
                        message_model = model;
                    }
                    Assembled::BlockCompleted(completed) => {
                        shown = true;
                        sink.emit(AgentEvent::AssistantBlock {
                            message_id: message_id.clone(),
                            model: message_model.clone(),
                            block: completed.block.clone(),
                            usage: assembler.usage(),
                        });
                        if let ContentBlock::ToolUse { id, name, input } = completed.block {
                            tracing::debug!(tool = %name, %id, "tool_use complete; starting it");
                            executor
                                .add(ToolCall { id, name, input, invalid_input: completed.invalid_tool_input })
                                .await;
                            deliver(&mut executor, &mut delivered, sink);
                        }
                    }
                    Assembled::MessageStopped => break,
                    Assembled::Nothing => {}
                }
            }
            () = executor.wait_for_completion(), if executor.has_undelivered() => {
                deliver(&mut executor, &mut delivered, sink);
            }
        }
    }
    if !assembler.is_stopped() {
        let error = ModelError::Stream("the stream ended before message_stop".into());
        return Streamed::Failed {
            error,
            partial: partial!(),
        };
    }
    let content = history_content(assembler.content(), &executor);
    Streamed::Complete(Response {
        content,
        stop_reason: assembler.stop_reason().map(str::to_string),
        usage: assembler.usage(),
        executor,
        delivered,
    })
}

/// The response as history keeps it: a tool call whose input could not be
/// parsed keeps a placeholder describing what was received, so the history
/// shows what the model sent without holding invalid JSON.
fn history_content(content: Vec<ContentBlock>, executor: &ToolExecutor) -> Vec<ContentBlock> {
    content
        .into_iter()
        .map(|block| match block {
            ContentBlock::ToolUse { id, name, input } => {
                let input = match executor.invalid_input(&id) {
                    Some(invalid) => json!({"unparsable_input": {
                        "excerpt": invalid.raw.chars().take(2000).collect::<String>(),
                        "bytes": invalid.raw.len(),
                    }}),
                    None => input,
                };
                ContentBlock::ToolUse { id, name, input }
            }
            other => other,
        })
        .collect()
}

fn deliver(
    executor: &mut ToolExecutor,
    delivered: &mut Vec<ToolCallResult>,
    sink: &mut dyn EventSink,
) {
    for result in executor.take_deliverable() {
        emit_result(sink, &result);
        delivered.push(result);
    }
}

/// The visible text of a response.
fn final_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}
