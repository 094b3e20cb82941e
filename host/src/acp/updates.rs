//! A session's events as ACP `session/update` notifications: text and
//! thinking as they stream, each tool call when the model has written it
//! (kind, title, location, raw input — as its tool's presentation says),
//! then its outcome (an edit as a diff, anything else as text), a task
//! list as a plan. The end of
//! each turn goes to the prompt that waits for it.

use crate::agent::{AgentEvent, EventSink, QueryOutcome, Terminal};
use crate::model::{ContentBlock as ModelBlock, Message, Role, StreamEvent};
use crate::output::RunOutput;
use crate::tools::{CallView, Todo};
use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionNotification, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// How a turn ended, for the prompt that started it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    pub terminal: Terminal,
    /// The failure's words, when the turn failed.
    pub error: Option<String>,
}

/// Where the turn's end goes: the waiting prompt, once.
pub type TurnWaiter = Arc<Mutex<Option<oneshot::Sender<TurnEnd>>>>;

/// One session's events, sent to its client.
#[derive(Clone)]
pub struct AcpOutput {
    pub connection: ConnectionTo<Client>,
    pub session_id: String,
    pub waiter: TurnWaiter,
    /// The calls written so far, as shown, for their outcomes.
    calls: Arc<Mutex<HashMap<String, CallView>>>,
    /// The session's tools, for how each call is shown.
    pipeline: Arc<crate::tools::ToolPipeline>,
}

impl AcpOutput {
    pub fn new(
        connection: ConnectionTo<Client>,
        session_id: String,
        waiter: TurnWaiter,
        pipeline: Arc<crate::tools::ToolPipeline>,
    ) -> Self {
        Self {
            connection,
            session_id,
            waiter,
            calls: Arc::default(),
            pipeline,
        }
    }

    pub fn send(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.session_id.clone(), update);
        if let Err(e) = self.connection.send_notification(notification) {
            tracing::debug!("a session update was not sent: {e}");
        }
    }

    fn text(&self, thought: bool, text: String) {
        let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
        self.send(match thought {
            true => SessionUpdate::AgentThoughtChunk(chunk),
            false => SessionUpdate::AgentMessageChunk(chunk),
        });
    }

    fn streamed(&self, event: &StreamEvent) {
        let StreamEvent::ContentBlockDelta { delta, .. } = event else {
            return;
        };
        match delta["type"].as_str() {
            Some("text_delta") => self.text(false, string(&delta["text"])),
            Some("thinking_delta") => self.text(true, string(&delta["thinking"])),
            _ => {}
        }
    }

    fn written(&self, id: &str, name: &str, input: &Value) {
        let view = self.pipeline.presentation_of(name).view(name, input);
        let call = ToolCall::new(id.to_string(), view.title.clone())
            .kind(kind(view.kind))
            .status(ToolCallStatus::Pending)
            .locations(view.location.iter().map(ToolCallLocation::new).collect())
            .raw_input(input.clone());
        self.send(SessionUpdate::ToolCall(call));
        if !view.todos.is_empty() {
            self.send(SessionUpdate::Plan(Plan::new(plan(&view.todos))));
        }
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(id.to_string(), view);
        }
    }

    /// A running call's progress, as its server reports it: the call in
    /// progress, with how far it has got.
    fn progressed(&self, id: &str, progress: f64, total: Option<f64>, message: Option<String>) {
        let text = crate::agent::progress_text(progress, total, message.as_deref());
        let fields = ToolCallUpdateFields::new()
            .status(ToolCallStatus::InProgress)
            .content(vec![ContentBlock::Text(TextContent::new(text)).into()]);
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_string(),
            fields,
        )));
    }

    fn finished(&self, id: &str, failed: bool, text: String, structured: Option<Value>) {
        let call = self.calls.lock().ok().and_then(|mut c| c.remove(id));
        // An edit that happened is shown as its diff.
        let change = call.and_then(|view| view.change).filter(|_| !failed);
        let content = match change {
            None => ContentBlock::Text(TextContent::new(text)).into(),
            Some(change) => {
                ToolCallContent::from(Diff::new(change.path, change.new).old_text(change.old))
            }
        };
        let fields = ToolCallUpdateFields::new()
            .status(match failed {
                true => ToolCallStatus::Failed,
                false => ToolCallStatus::Completed,
            })
            .content(vec![content])
            .raw_output(structured);
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_string(),
            fields,
        )));
    }
}

impl AcpOutput {
    /// A resumed session's history, told as updates (`session/load`):
    /// what the user and the model said, each tool call and its outcome.
    /// The context reminders carapace adds are not the user's words.
    pub fn replay(&self, history: &[Message]) {
        for message in history {
            for block in &message.content {
                match (message.role, block) {
                    (Role::User, ModelBlock::Text { text })
                        if !text.starts_with("<system-reminder>") =>
                    {
                        let chunk =
                            ContentChunk::new(ContentBlock::Text(TextContent::new(text.clone())));
                        self.send(SessionUpdate::UserMessageChunk(chunk));
                    }
                    (Role::Assistant, ModelBlock::Text { text }) => self.text(false, text.clone()),
                    (Role::Assistant, ModelBlock::Thinking { thinking, .. }) => {
                        self.text(true, thinking.clone())
                    }
                    (_, ModelBlock::ToolUse { id, name, input }) => self.written(id, name, input),
                    (
                        _,
                        ModelBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        },
                    ) => self.finished(tool_use_id, *is_error, content.text(), None),
                    _ => {}
                }
            }
        }
    }
}

impl EventSink for AcpOutput {
    fn emit(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::Partial(event) => self.streamed(&event),
            AgentEvent::AssistantBlock {
                block: ModelBlock::ToolUse { id, name, input },
                ..
            } => self.written(&id, &name, &input),
            AgentEvent::ToolResult(result) => self.finished(
                &result.tool_use_id,
                result.is_error,
                result.content.text(),
                result.structured,
            ),
            AgentEvent::Tombstone { tool_use_ids, .. } => {
                for id in tool_use_ids {
                    self.finished(
                        &id,
                        true,
                        "The call was void: the response broke off.".into(),
                        None,
                    );
                }
            }
            AgentEvent::ToolProgress {
                tool_use_id,
                progress,
                total,
                message,
            } => self.progressed(&tool_use_id, progress, total, message),
            AgentEvent::LocalAnswer { text } => self.text(false, text),
            AgentEvent::Informational { content, .. } => self.text(false, content),
            _ => {}
        }
    }
}

impl RunOutput for AcpOutput {
    fn start(&self) {}

    fn finish(&self, outcome: &QueryOutcome) {
        let error = outcome.is_error().then(|| {
            outcome
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_else(|| outcome.result.clone())
        });
        let waiting = self.waiter.lock().ok().and_then(|mut w| w.take());
        if let Some(waiting) = waiting {
            let _ = waiting.send(TurnEnd {
                terminal: outcome.terminal,
                error,
            });
        }
    }
}

fn string(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

/// What kind of call it is, for the client's icon and grouping: as the
/// tool was registered.
pub(super) fn kind(kind: crate::tools::ToolKind) -> ToolKind {
    use crate::tools::ToolKind as Kind;
    match kind {
        Kind::Read => ToolKind::Read,
        Kind::Edit => ToolKind::Edit,
        Kind::Execute => ToolKind::Execute,
        Kind::Search => ToolKind::Search,
        Kind::Fetch => ToolKind::Fetch,
        Kind::Think => ToolKind::Think,
        Kind::SwitchMode => ToolKind::SwitchMode,
        Kind::Other => ToolKind::Other,
    }
}

/// A task list as plan entries.
fn plan(todos: &[Todo]) -> Vec<PlanEntry> {
    todos
        .iter()
        .map(|todo| {
            let status = match todo.status.as_str() {
                "completed" => PlanEntryStatus::Completed,
                "in_progress" => PlanEntryStatus::InProgress,
                _ => PlanEntryStatus::Pending,
            };
            PlanEntry::new(todo.content.clone(), PlanEntryPriority::Medium, status)
        })
        .collect()
}
