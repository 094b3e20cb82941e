//! The API attempts of one model iteration: the request is sent, streamed
//! (each tool call starting as its block completes), and, on a retryable
//! failure, sent again after a backoff or to the next model of the fallback
//! chain.
//!
//! A failed attempt is void: its running tools are stopped (its executor
//! is dropped) and, if any of it was shown, a tombstone says so. Nothing of
//! it reaches the next attempt.

use super::events::{AgentEvent, EventSink};
use super::executor::ToolExecutor;
use super::run::{Next, Response, Run, RunError, Stop, TOOL_INTERRUPTED};
use super::state::{State, Terminal, Transition};
use super::tools::{ToolCall, ToolCallResult};
use crate::model::{
    Assembled, ContentBlock, FailureKind, MessagesRequest, ModelError, ResponseAssembler,
};
use futures::StreamExt;
use std::time::Instant;

/// Consecutive overloaded answers after which a fallback model is tried.
const OVERLOADS_BEFORE_FALLBACK: u32 = 3;

pub(super) const INTERRUPTED_STREAMING: &str = "[The user interrupted this request]";

/// What was received of a response that did not complete.
pub(super) struct Partial {
    message_id: String,
    content: Vec<ContentBlock>,
    executor: ToolExecutor,
    delivered: Vec<ToolCallResult>,
    /// Whether any of it reached the output.
    shown: bool,
}

/// How the attempts of one iteration ended.
pub(super) enum Attempted {
    Response(Response),
    /// Cancelled; what had streamed, if anything.
    Aborted(Option<Partial>),
    /// No retry or fallback is left for this failure.
    Failed(ModelError),
}

enum Streamed {
    Complete(Response),
    Failed { error: ModelError, partial: Partial },
    Aborted(Partial),
}

impl Run<'_, '_> {
    /// Sends the iteration's request until a response, a failure nothing
    /// more can be done about, or an abort.
    pub(super) async fn attempt(&mut self, state: &State) -> Attempted {
        let mut attempt = 0;
        let mut overloads = 0;
        // Written before it is sent: what the model is asked is on disk.
        self.deps.history.sync(&state.messages);
        loop {
            let request = MessagesRequest {
                model: self.model.clone(),
                max_tokens: self.config.max_tokens,
                system: self.config.system_prompt.clone(),
                messages: with_user_context(&state.messages, &self.config.user_context),
                tools: self.tool_specs.clone(),
                server_tools: Vec::new(),
                effort: self.config.effort.and_then(|e| e.for_model(&self.model)),
                thinking: crate::model::Thinking::for_model(
                    &self.model,
                    self.config.thinking,
                    self.config.max_tokens,
                ),
                task_budget: self.config.task_budget,
                output_format: None,
                tool_choice: None,
            };
            self.totals.mark("query_api_streaming_start");
            let started = Instant::now();
            let streamed = self.stream_response(&request).await;
            self.totals.api_duration += started.elapsed();
            self.totals.mark("query_api_streaming_end");
            let (error, partial) = match streamed {
                Streamed::Complete(response) => return Attempted::Response(response),
                Streamed::Aborted(partial) => return Attempted::Aborted(Some(partial)),
                Streamed::Failed { error, partial } => (error, partial),
            };
            void_partial(partial, self.sink, &error);
            if !error.is_retryable() {
                return Attempted::Failed(error);
            }
            overloads = if error.is_overloaded() {
                overloads + 1
            } else {
                0
            };
            let fall_back_now = overloads >= OVERLOADS_BEFORE_FALLBACK && self.fallbacks.len() > 0;
            if !fall_back_now && attempt < self.config.retry.max_retries {
                attempt += 1;
                let delay = self.config.retry.delay(attempt, &error, fastrand::f64());
                self.sink.emit(AgentEvent::ApiRetry {
                    attempt,
                    max_retries: self.config.retry.max_retries,
                    delay,
                    error_status: error.status(),
                    error: error.kind(),
                });
                tracing::debug!(attempt, ?delay, %error, "retrying the request");
                tokio::select! {
                    () = tokio::time::sleep(delay) => continue,
                    () = self.deps.abort.cancelled() => return Attempted::Aborted(None),
                }
            }
            let Some(next) = self.fallbacks.next() else {
                return Attempted::Failed(error);
            };
            self.sink.emit(AgentEvent::ModelFallback {
                trigger: error.kind(),
                from: self.model.clone(),
                to: next.clone(),
            });
            self.totals.transitions.push(Transition::ModelFallback);
            self.model = crate::model::resolve_model(next);
            attempt = 0;
            overloads = 0;
        }
    }

    /// The stop after a model failure that no retry or fallback recovers.
    pub(super) async fn model_failed(&mut self, state: State, error: &ModelError) -> Stop {
        let terminal = match error {
            ModelError::Http { .. } | ModelError::Api { .. } | ModelError::Connection(_)
                if error.kind() == FailureKind::PromptTooLong =>
            {
                Terminal::PromptTooLong
            }
            ModelError::Http { .. } | ModelError::Api { .. } | ModelError::Connection(_) => {
                Terminal::ApiError
            }
            ModelError::MissingApiKey
            | ModelError::Stream(_)
            | ModelError::Replay(_)
            | ModelError::Garbage(_) => Terminal::ModelError,
        };
        let message = api_error_text(error);
        self.deps
            .hooks
            .on_stop_failure(error.kind().as_str().to_string(), message.clone())
            .await;
        Stop::new(state, terminal).with_error(RunError {
            message,
            kind: error.kind().as_str(),
            status: error.status(),
        })
    }

    /// Cancelled while the model streamed (or before the request): what had
    /// streamed is kept, every call it started gets a result.
    pub(super) fn aborted_streaming(&mut self, mut state: State, partial: Option<Partial>) -> Next {
        if let Some(Partial {
            content,
            mut executor,
            mut delivered,
            ..
        }) = partial
        {
            let rest = executor.abandon(TOOL_INTERRUPTED);
            self.emit_results(&rest);
            delivered.extend(rest);
            self.append_turn(&mut state.messages, content, delivered);
        }
        self.sink.emit(AgentEvent::SyntheticUser {
            text: INTERRUPTED_STREAMING.into(),
        });
        Next::Stop(Stop::new(state, Terminal::AbortedStreaming))
    }

    /// Streams one response, starting each tool call as its block completes
    /// and delivering results while the model still streams.
    async fn stream_response(&mut self, request: &MessagesRequest) -> Streamed {
        let mut assembler = ResponseAssembler::new();
        let mut executor = ToolExecutor::new(self.deps.tools.clone(), self.totals.depth);
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
            opened = self.deps.model.stream(request) => opened,
            () = self.deps.abort.cancelled() => return Streamed::Aborted(partial!()),
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
                () = self.deps.abort.cancelled() => return Streamed::Aborted(partial!()),
                event = events.next() => {
                    if first_chunk {
                        self.totals.mark("query_first_chunk_received");
                        first_chunk = false;
                    }
                    let Some(event) = event else { break };
                    if let Ok(event) = &event {
                        self.sink.emit(AgentEvent::Partial(event.clone()));
                    }
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
                            let message = (&message_id, &message_model, assembler.usage());
                            self.completed(completed, message, &mut executor, &mut delivered).await;
                        }
                        Assembled::MessageStopped => break,
                        Assembled::Nothing => {}
                    }
                }
                () = executor.wait_for_completion(), if executor.has_undelivered() => {
                    self.deliver(&mut executor, &mut delivered);
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
        let content = super::history::history_content(assembler.content(), &executor);
        Streamed::Complete(Response {
            content,
            stop_reason: assembler.stop_reason().map(str::to_string),
            usage: assembler.usage(),
            executor,
            delivered,
        })
    }

    /// A block the stream completed: shown, and a tool call started at
    /// once (its result delivered as soon as it is there).
    async fn completed(
        &mut self,
        completed: crate::model::CompletedBlock,
        (message_id, model, usage): (&String, &String, crate::model::Usage),
        executor: &mut ToolExecutor,
        delivered: &mut Vec<ToolCallResult>,
    ) {
        self.sink.emit(AgentEvent::AssistantBlock {
            message_id: message_id.clone(),
            model: model.clone(),
            block: super::history::shown_block(
                &completed.block,
                completed.invalid_tool_input.as_ref(),
            ),
            usage,
        });
        if let ContentBlock::ToolUse { id, name, input } = completed.block {
            tracing::debug!(tool = %name, %id, "tool_use complete; starting it");
            let call = ToolCall {
                id,
                name,
                input,
                invalid_input: completed.invalid_tool_input,
            };
            executor.add(call).await;
            self.deliver(executor, delivered);
        }
    }

    fn deliver(&mut self, executor: &mut ToolExecutor, delivered: &mut Vec<ToolCallResult>) {
        for result in executor.take_deliverable() {
            self.emit_result(&result);
            delivered.push(result);
        }
    }
}

/// Voids a failed attempt: its running tools are stopped (the executor is
/// dropped) and, if any of it was shown, a tombstone says so.
fn void_partial(partial: Partial, sink: &mut dyn EventSink, error: &ModelError) {
    let tool_use_ids = crate::model::tool_use_ids(&partial.content);
    drop(partial.executor);
    if partial.shown {
        sink.emit(AgentEvent::Tombstone {
            message_id: partial.message_id,
            tool_use_ids,
            reason: format!("the response was voided: {error}"),
        });
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

/// The history as sent: the user context first in the first user message.
fn with_user_context(
    messages: &[crate::model::Message],
    context: &[String],
) -> Vec<crate::model::Message> {
    let mut sent = messages.to_vec();
    if !context.is_empty()
        && let Some(first) = sent.first_mut()
        && first.role == crate::model::Role::User
    {
        let blocks = context
            .iter()
            .map(|text| crate::model::ContentBlock::Text { text: text.clone() });
        first.content.splice(0..0, blocks);
    }
    sent
}
