//! How a background task (an agent started with `run_in_background`, a
//! script run in the background) ended, told the two ways every such task
//! is told: the `system`/`task_notification` line, and the
//! `<task-notification>` message the model reads as its next input.

use super::events::AgentEvent;
use super::input::QueuedInput;

pub struct TaskEnd {
    pub task_id: String,
    /// The call that started it.
    pub tool_use_id: String,
    /// `completed`, `failed` or `stopped`.
    pub status: &'static str,
    pub summary: String,
    /// Where its whole result is kept.
    pub output_file: String,
    pub result: String,
}

impl TaskEnd {
    pub fn event(&self) -> AgentEvent {
        AgentEvent::TaskNotification {
            task_id: self.task_id.clone(),
            status: self.status,
            output_file: self.output_file.clone(),
            summary: self.summary.clone(),
            tool_use_id: self.tool_use_id.clone(),
        }
    }

    pub fn message(&self) -> QueuedInput {
        let TaskEnd {
            task_id,
            status,
            summary,
            result,
            ..
        } = self;
        QueuedInput::text(
            task_id.clone(),
            format!(
                "<task-notification>\n<task-id>{task_id}</task-id>\n<status>{status}</status>\n<summary>{summary}</summary>\n<result>{result}</result>\n</task-notification>"
            ),
        )
    }
}
