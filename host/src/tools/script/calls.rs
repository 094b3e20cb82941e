//! A script's tool calls, each passed to the session's tool pipeline as
//! if the model had made it — lookup, validation, PreToolUse hooks, the
//! permission decision (a question when one is due), the per-call grant,
//! the sandboxed call, PostToolUse hooks — and scheduled as the loop
//! schedules a batch: concurrency-safe calls overlap, a call that is not
//! waits for every call before it and holds back every call after it.
//!
//! Each call is told as a sub-call of the script (stream lines parented
//! to the Script call) and kept in the transcript (a `script_call` line).

use crate::agent::{
    AgentEvent, DecisionLog, EventRelay, Preparation, ReadyCall, ToolCall, ToolCallResult,
    ToolRuntime,
};
use crate::model::{ContentBlock, ToolResultBlock, ToolResultContent, Usage};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Weak};

/// How a call ended, as the script receives it.
pub(super) struct CallEnd {
    pub id: u32,
    pub text: String,
    pub blocks: bool,
    pub is_error: bool,
    pub denied: bool,
}

/// Where a script's calls are told.
#[derive(Clone, Default)]
pub struct CallWitness {
    pub output: Option<EventRelay>,
    pub log: Option<Weak<dyn DecisionLog>>,
}

/// One call started by the script.
struct Started {
    id: u32,
    call: ToolCall,
}

/// A call prepared and waiting its turn to run.
struct Queued {
    started: Started,
    ready: Box<dyn ReadyCall>,
}

type Running = BoxFuture<'static, (Started, bool, ToolCallResult)>;

/// The calls of one script.
pub struct NestedCalls {
    runtime: Arc<dyn ToolRuntime>,
    /// The Script call's id: each call's id is `<parent>.<n>`.
    parent: String,
    /// The tools the script may call.
    offered: Vec<String>,
    max_calls: u32,
    made: u32,
    queue: VecDeque<Queued>,
    running: FuturesUnordered<Running>,
    /// A call that is not concurrency-safe is running.
    exclusive: bool,
    /// Calls that failed before they could run (unknown input, the tool's
    /// own validation): their results, in order.
    failed: VecDeque<(Started, ToolCallResult)>,
    witness: CallWitness,
}

impl NestedCalls {
    pub fn new(
        runtime: Arc<dyn ToolRuntime>,
        parent: &str,
        offered: Vec<String>,
        (max_calls, witness): (u32, CallWitness),
    ) -> Self {
        Self {
            runtime,
            parent: parent.to_string(),
            offered,
            max_calls,
            made: 0,
            queue: VecDeque::new(),
            running: FuturesUnordered::new(),
            exclusive: false,
            failed: VecDeque::new(),
            witness,
        }
    }

    /// Prepares a call of `tool` and queues it; its id.
    pub(super) async fn start(&mut self, tool: &str, input: &str) -> Result<u32, String> {
        if self.made >= self.max_calls {
            return Err(format!(
                "the script may make at most {} tool calls, and has made them",
                self.max_calls
            ));
        }
        if !self.offered.iter().any(|t| t == tool) {
            return Err(format!("no tool called `{tool}` is offered to scripts"));
        }
        let input: Value =
            serde_json::from_str(input).map_err(|e| format!("the input is not JSON: {e}"))?;
        self.made += 1;
        let id = self.made;
        let call = ToolCall {
            id: format!("{}.{id}", self.parent),
            name: tool.to_string(),
            input,
            invalid_input: None,
        };
        self.tell_start(&call);
        let started = Started {
            id,
            call: call.clone(),
        };
        match self.runtime.clone().prepare(call).await {
            Preparation::Ready(ready) => self.queue.push_back(Queued { started, ready }),
            Preparation::Failed(result) => self.failed.push_back((started, *result)),
        }
        Ok(id)
    }

    /// The next call to end; none when no call is pending.
    pub(super) async fn wait_any(&mut self) -> Option<CallEnd> {
        if let Some((started, result)) = self.failed.pop_front() {
            return Some(self.finish(started, result));
        }
        self.launch();
        let (started, safe, result) = self.running.next().await?;
        if !safe {
            self.exclusive = false;
        }
        Some(self.finish(started, result))
    }

    /// Starts what may start: safe calls while nothing exclusive runs; an
    /// unsafe call once nothing runs.
    fn launch(&mut self) {
        while let Some(next) = self.queue.front() {
            let safe = next.ready.concurrency_safe();
            let may = match safe {
                true => !self.exclusive,
                false => self.running.is_empty(),
            };
            if !may {
                break;
            }
            let Some(Queued { started, ready }) = self.queue.pop_front() else {
                break;
            };
            self.exclusive = !safe;
            self.running
                .push(Box::pin(async move { (started, safe, ready.run().await) }));
            if !safe {
                break;
            }
        }
    }

    fn tell_start(&self, call: &ToolCall) {
        if let Some(output) = &self.witness.output {
            output.send(AgentEvent::Child {
                parent_tool_use_id: self.parent.clone(),
                event: Box::new(AgentEvent::AssistantBlock {
                    message_id: format!("{}.script", self.parent),
                    model: "script".into(),
                    block: ContentBlock::ToolUse {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        input: call.input.clone(),
                    },
                    usage: Usage::default(),
                }),
            });
        }
    }

    /// Tells the call's end and makes what the script receives.
    fn finish(&self, started: Started, result: ToolCallResult) -> CallEnd {
        let (mut text, blocks) = result_text(&result.content);
        if let Some(log) = self.witness.log.as_ref().and_then(Weak::upgrade) {
            log.decided(json!({
                "type": "script_call",
                "parent_tool_use_id": self.parent,
                "tool_use_id": started.call.id,
                "tool_name": started.call.name,
                "input": started.call.input,
                "is_error": result.is_error,
                "denied": result.denial.is_some(),
                "content": text,
            }));
        }
        let (denied, is_error) = (result.denial.is_some(), result.is_error);
        if let Some(output) = &self.witness.output {
            let child = |event| AgentEvent::Child {
                parent_tool_use_id: self.parent.clone(),
                event: Box::new(event),
            };
            let denial = (result.denial.clone()).map(|d| child(AgentEvent::PermissionDenied(*d)));
            output.send_all(std::iter::once(child(AgentEvent::ToolResult(result))).chain(denial));
        }
        // The script's Error says what went wrong, without the wrapper
        // the model reads.
        if is_error {
            text = unwrapped(&text).to_string();
        }
        CallEnd {
            id: started.id,
            text,
            blocks,
            is_error,
            denied,
        }
    }
}

/// An error result's message without its `<tool_use_error>` tags.
fn unwrapped(text: &str) -> &str {
    text.strip_prefix("<tool_use_error>")
        .and_then(|t| t.strip_suffix("</tool_use_error>"))
        .unwrap_or(text)
}

/// A result's text; a result with an image is its content blocks as JSON.
fn result_text(content: &ToolResultContent) -> (String, bool) {
    match content {
        ToolResultContent::Text(text) => (text.clone(), false),
        ToolResultContent::Blocks(blocks)
            if blocks
                .iter()
                .all(|b| matches!(b, ToolResultBlock::Text { .. })) =>
        {
            (content.text(), false)
        }
        ToolResultContent::Blocks(blocks) => (
            serde_json::to_string(blocks).unwrap_or_else(|_| content.text()),
            true,
        ),
    }
}
