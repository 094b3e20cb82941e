//! What the loop reports while it runs: one [`AgentEvent`] per thing the
//! output layer (stream-json, a test) may show, in the order it happened.
//!
//! Events describe; they never steer the loop. A sink that drops them all
//! leaves the run unchanged.

use super::tools::{PermissionDenial, ToolCallResult};
use crate::model::{ContentBlock, FailureKind, Usage};
use std::time::Duration;

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
    /// One event of the response as it streams (printed with
    /// `--include-partial-messages`).
    Partial(crate::model::StreamEvent),
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
        /// The hook's `statusMessage`, shown while it runs (the screen's
        /// status line; never printed).
        status_message: Option<String>,
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
    /// A user message from stdin, as it is taken (printed with
    /// `--replay-user-messages`).
    UserReplay {
        uuid: String,
        text: String,
    },
    /// The history was compacted: what follows is the new history.
    CompactBoundary {
        trigger: super::loop_hooks::CompactTrigger,
        /// The estimated size of the history before and after.
        pre_tokens: u64,
        post_tokens: u64,
        /// How long the compaction took (the summary request, mostly).
        duration: Duration,
    },
    /// The auto mode's classifier judged a call the rules would ask
    /// about (`system`/`auto_mode_decision`).
    AutoModeDecision {
        tool_use_id: String,
        tool_name: String,
        /// `allow`, `ask` or `deny`.
        decision: &'static str,
        reason: String,
        /// The model that judged.
        model: String,
    },
    /// A running call's progress, as its MCP server reports it.
    ToolProgress {
        tool_use_id: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// A background agent started (`system`/`task_started`).
    TaskStarted {
        task_id: String,
        description: String,
        tool_use_id: String,
    },
    /// A background agent finished a tool call (`system`/`task_progress`).
    TaskProgress {
        task_id: String,
        tool_use_id: String,
        description: String,
        subagent_type: String,
        /// The child's last response: its context, in tokens.
        total_tokens: u64,
        tool_uses: u64,
        duration_ms: u64,
        last_tool_name: String,
    },
    /// A background agent ended; its report follows as a queued message
    /// (`system`/`task_notification`).
    TaskNotification {
        task_id: String,
        /// `completed` or `failed`.
        status: &'static str,
        output_file: String,
        summary: String,
        tool_use_id: String,
    },
    /// An event of a child loop (a subagent), shown as belonging to the
    /// parent's Agent call.
    Child {
        parent_tool_use_id: String,
        event: Box<AgentEvent>,
    },
    /// An answer given without asking the model (an unknown `/command`),
    /// shown as an assistant message.
    LocalAnswer {
        text: String,
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

/// A server's progress in a few words: `3/10 shelf 3`.
pub fn progress_text(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let count = match total {
        Some(total) => format!("{progress}/{total}"),
        None => format!("{progress}"),
    };
    match message {
        Some(message) => format!("{count} {message}"),
        None => count,
    }
}

/// Where a session's events go before and after it has an output: made
/// with the session and handed to everything that reports (hooks,
/// subagents), attached to the output when the session starts. Events
/// before that, or after the output is gone, are dropped. Clones share the
/// output.
#[derive(Clone, Default)]
pub struct EventRelay(std::sync::Arc<std::sync::Mutex<Option<Box<dyn EventSink>>>>);

impl EventRelay {
    /// From now on, events go to `sink` (instead of any earlier one).
    pub fn attach(&self, sink: Box<dyn EventSink>) {
        if let Ok(mut held) = self.0.lock() {
            *held = Some(sink);
        }
    }

    /// Emits `event` to the output, if there is one.
    pub fn send(&self, event: AgentEvent) {
        self.send_all([event]);
    }

    /// Emits `events` together: nothing another thread emits comes
    /// between them.
    pub fn send_all(&self, events: impl IntoIterator<Item = AgentEvent>) {
        if let Ok(mut held) = self.0.lock()
            && let Some(sink) = held.as_mut()
        {
            for event in events {
                sink.emit(event);
            }
        }
    }
}

impl EventSink for EventRelay {
    fn emit(&mut self, event: AgentEvent) {
        self.send(event);
    }
}
