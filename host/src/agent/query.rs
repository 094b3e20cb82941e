//! The loop: request → stream → tools → results → request …, one `while`
//! with an explicit [`State`] rebuilt at each continue site.

use super::executor::ToolExecutor;
use super::state::{State, Terminal, Transition};
use super::tools::{PermissionDenial, ToolCall, ToolCallResult, ToolRuntime};
use crate::model::{
    Assembled, ContentBlock, Message, MessagesRequest, Model, ModelError, ResponseAssembler, Role,
    Usage,
};
use futures::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// A failure the run ends with, shown as an assistant error message.
    Error { message: String },
}

/// Receives the loop's events (the output layer, a test).
pub trait EventSink: Send {
    fn emit(&mut self, event: AgentEvent);
}

#[derive(Debug, Clone)]
pub struct QueryConfig {
    pub model: String,
    pub system_prompt: String,
    pub max_tokens: u32,
    /// Model iterations allowed; `None` is unlimited.
    pub max_turns: Option<u32>,
}

/// How the run ended and what it produced.
#[derive(Debug, Clone)]
pub struct QueryOutcome {
    pub terminal: Terminal,
    /// Model iterations run.
    pub num_turns: u32,
    /// The final answer's text (empty for error terminals).
    pub result: String,
    pub errors: Vec<String>,
    pub stop_reason: Option<String>,
    pub usage: Usage,
    pub permission_denials: Vec<PermissionDenial>,
    /// Every transition taken, in order.
    pub transitions: Vec<Transition>,
    pub api_duration: Duration,
    pub messages: Vec<Message>,
}

/// The parts of one streamed response the loop needs after the stream.
struct Response {
    content: Vec<ContentBlock>,
    stop_reason: Option<String>,
    usage: Usage,
    executor: ToolExecutor,
    delivered: Vec<ToolCallResult>,
}

/// Runs the loop from `messages` until a terminal.
pub async fn query(
    model: &dyn Model,
    tools: Arc<dyn ToolRuntime>,
    config: &QueryConfig,
    messages: Vec<Message>,
    sink: &mut dyn EventSink,
) -> QueryOutcome {
    let tool_specs = tools.specs();
    let mut state = State::initial(messages);
    let mut usage = Usage::default();
    let mut denials = Vec::new();
    let mut transitions = Vec::new();
    let mut api_duration = Duration::ZERO;

    loop {
        if let Some(transition) = state.transition {
            transitions.push(transition);
        }
        let request = MessagesRequest {
            model: config.model.clone(),
            max_tokens: config.max_tokens,
            system: config.system_prompt.clone(),
            messages: state.messages.clone(),
            tools: tool_specs.clone(),
        };
        let started = Instant::now();
        let streamed = stream_response(model, &request, tools.clone(), sink).await;
        api_duration += started.elapsed();

        let mut response = match streamed {
            Ok(response) => response,
            Err(error) => {
                let terminal = match error {
                    ModelError::Http { .. }
                    | ModelError::Api { .. }
                    | ModelError::Connection(_) => Terminal::ApiError,
                    ModelError::MissingApiKey | ModelError::Stream(_) | ModelError::Replay(_) => {
                        Terminal::ModelError
                    }
                };
                let message = format!("API Error: {error}");
                sink.emit(AgentEvent::Error {
                    message: message.clone(),
                });
                return QueryOutcome {
                    terminal,
                    num_turns: state.turn_count,
                    result: String::new(),
                    errors: vec![message],
                    stop_reason: None,
                    usage,
                    permission_denials: denials,
                    transitions,
                    api_duration,
                    messages: state.messages,
                };
            }
        };
        usage.add(&response.usage);

        if response.executor.is_empty() {
            let result = final_text(&response.content);
            let mut messages = state.messages;
            messages.push(Message {
                role: Role::Assistant,
                content: response.content,
            });
            return QueryOutcome {
                terminal: Terminal::Completed,
                num_turns: state.turn_count,
                result,
                errors: Vec::new(),
                stop_reason: response.stop_reason,
                usage,
                permission_denials: denials,
                transitions,
                api_duration,
                messages,
            };
        }

        // The rest of the batch, then every result in one user message.
        let remaining = response.executor.drain().await;
        for result in &remaining {
            sink.emit(AgentEvent::ToolResult(result.clone()));
        }
        let mut results = std::mem::take(&mut response.delivered);
        results.extend(remaining);
        denials.extend(results.iter().filter_map(|r| r.denial.clone()));
        let appended = vec![
            Message {
                role: Role::Assistant,
                content: response.content,
            },
            Message {
                role: Role::User,
                content: results
                    .into_iter()
                    .map(|r| ContentBlock::ToolResult {
                        tool_use_id: r.tool_use_id,
                        content: r.content,
                        is_error: r.is_error,
                    })
                    .collect(),
            },
        ];

        if let Some(max_turns) = config.max_turns
            && state.turn_count + 1 > max_turns
        {
            let mut messages = state.messages;
            messages.extend(appended);
            return QueryOutcome {
                terminal: Terminal::MaxTurns,
                num_turns: state.turn_count,
                result: String::new(),
                errors: vec![format!("Reached maximum number of turns ({max_turns})")],
                stop_reason: response.stop_reason,
                usage,
                permission_denials: denials,
                transitions,
                api_duration,
                messages,
            };
        }
        state = state.next_turn(appended);
    }
}

/// Streams one response, starting each tool call as its block completes and
/// delivering results while the model still streams.
async fn stream_response(
    model: &dyn Model,
    request: &MessagesRequest,
    tools: Arc<dyn ToolRuntime>,
    sink: &mut dyn EventSink,
) -> Result<Response, ModelError> {
    let mut events = model.stream(request).await?;
    let mut assembler = ResponseAssembler::new();
    let mut executor = ToolExecutor::new(tools);
    let mut delivered = Vec::new();
    let mut message_id = String::new();
    let mut message_model = String::new();

    loop {
        tokio::select! {
            // Prefer the stream: a block's completion must reach the
            // executor before tool results are drained.
            biased;
            event = events.next() => {
                let Some(event) = event else { break };
                match assembler.push(event?)? {
                    Assembled::MessageStarted { id, model } => {
                        message_id = id;
                        message_model = model;
                    }
                    Assembled::BlockCompleted(completed) => {
                        sink.emit(AgentEvent::AssistantBlock {
                            message_id: message_id.clone(),
                            model: message_model.clone(),
                            block: completed.block.clone(),
                            usage: assembler.usage(),
                        });
                        if let ContentBlock::ToolUse { id, name, input } = completed.block {
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
        return Err(ModelError::Stream(
            "the stream ended before message_stop".into(),
        ));
    }
    Ok(Response {
        content: assembler.content(),
        stop_reason: assembler.stop_reason().map(str::to_string),
        usage: assembler.usage(),
        executor,
        delivered,
    })
}

fn deliver(
    executor: &mut ToolExecutor,
    delivered: &mut Vec<ToolCallResult>,
    sink: &mut dyn EventSink,
) {
    for result in executor.take_deliverable() {
        sink.emit(AgentEvent::ToolResult(result.clone()));
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
