//! The stream-json lines of the loop's events, one function per family of
//! events, in Claude Code's shapes.

use super::{Printer, new_uuid, usage_json};
use crate::agent::AgentEvent;
use crate::model::{ContentBlock, ToolResultContent};
use serde_json::{Value, json};
use std::io::Write;

impl<W: Write + Send> Printer<W> {
    /// A background agent's lines: started, its progress, its notification.
    pub(super) fn task_line(&self, event: AgentEvent) -> Option<Value> {
        let line = match event {
            AgentEvent::TaskStarted {
                task_id,
                description,
                tool_use_id,
            } => json!({
                "type": "system",
                "subtype": "task_started",
                "task_id": task_id,
                "description": description,
                "task_type": "local_agent",
                "tool_use_id": tool_use_id,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::TaskProgress {
                task_id,
                tool_use_id,
                description,
                subagent_type,
                total_tokens,
                tool_uses,
                duration_ms,
                last_tool_name,
            } => json!({
                "type": "system",
                "subtype": "task_progress",
                "task_id": task_id,
                "tool_use_id": tool_use_id,
                "description": description,
                "subagent_type": subagent_type,
                "usage": {
                    "total_tokens": total_tokens,
                    "tool_uses": tool_uses,
                    "duration_ms": duration_ms,
                },
                "last_tool_name": last_tool_name,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::TaskNotification {
                task_id,
                status,
                output_file,
                summary,
                tool_use_id,
            } => json!({
                "type": "system",
                "subtype": "task_notification",
                "task_id": task_id,
                "status": status,
                "output_file": output_file,
                "summary": summary,
                "tool_use_id": tool_use_id,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            // Not this family: `line_for` sends each event to its own.
            _ => return None,
        };
        Some(line)
    }

    /// The conversation's lines: the model's blocks, tool results, the user's messages as replayed or added, stream events, local answers and errors.
    pub(super) fn message_line(&self, event: AgentEvent) -> Option<Value> {
        let line = match event {
            AgentEvent::AssistantBlock {
                message_id,
                model,
                block,
                usage,
            } => json!({
                "type": "assistant",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [block],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": usage_json(&usage),
                },
                "parent_tool_use_id": null,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::ToolResult(result) => {
                let block = ContentBlock::ToolResult {
                    tool_use_id: result.tool_use_id.clone(),
                    content: result.content.clone(),
                    is_error: result.is_error,
                };
                json!({
                    "type": "user",
                    "message": {"role": "user", "content": [block]},
                    "parent_tool_use_id": null,
                    "session_id": self.info.session_id,
                    "uuid": new_uuid(),
                    "tool_use_result": match (&result.structured, &result.content) {
                        (Some(structured), _) => structured.clone(),
                        (None, ToolResultContent::Text(text)) => json!(text),
                        (None, blocks) => json!(blocks),
                    },
                })
            }
            AgentEvent::SyntheticUser { text } => json!({
                "type": "user",
                "message": {"role": "user", "content": [{"type": "text", "text": text}]},
                "parent_tool_use_id": null,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
                "isSynthetic": true,
            }),
            AgentEvent::UserReplay { uuid, text } => {
                if !self.replay_user_messages {
                    return None;
                }
                json!({
                    "type": "user",
                    "message": {"role": "user", "content": text},
                    "session_id": self.info.session_id,
                    "parent_tool_use_id": null,
                    "uuid": uuid,
                    "isReplay": true,
                })
            }
            AgentEvent::Partial(event) => {
                if !self.partial_messages {
                    return None;
                }
                json!({
                    "type": "stream_event",
                    "event": event,
                    "session_id": self.info.session_id,
                    "parent_tool_use_id": null,
                    "uuid": new_uuid(),
                })
            }
            AgentEvent::LocalAnswer { text } => self.synthetic_assistant(&text),
            AgentEvent::Error { message, kind } => {
                let mut line = self.synthetic_assistant(&message);
                line["error"] = json!(kind);
                line
            }
            // Not this family: `line_for` sends each event to its own.
            _ => return None,
        };
        Some(line)
    }

    /// What the loop did besides the conversation: denials, retries, fallbacks, tombstones, compactions, a queued message's lifecycle.
    pub(super) fn loop_line(&self, event: AgentEvent) -> Option<Value> {
        let line = match event {
            AgentEvent::PermissionDenied(denial) => json!({
                "type": "system",
                "subtype": "permission_denied",
                "tool_name": denial.tool_name,
                "tool_use_id": denial.tool_use_id,
                "reason": denial.reason,
                "decided_by": denial.source.as_ref().map(|s| s.decided_by.clone()),
                "rule": denial.source.as_ref().and_then(|s| s.rule.clone()),
                "source": denial.source.as_ref().and_then(|s| s.source.clone()),
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::AutoModeDecision {
                tool_use_id,
                tool_name,
                decision,
                reason,
                model,
            } => json!({
                "type": "system",
                "subtype": "auto_mode_decision",
                "tool_name": tool_name,
                "tool_use_id": tool_use_id,
                "decision": decision,
                "reason": reason,
                "model": model,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::ApiRetry {
                attempt,
                max_retries,
                delay,
                error_status,
                error,
            } => json!({
                "type": "system",
                "subtype": "api_retry",
                "attempt": attempt,
                "max_retries": max_retries,
                "retry_delay_ms": delay.as_secs_f64() * 1000.0,
                "error_status": error_status,
                "error": error.as_str(),
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::ModelFallback { trigger, from, to } => json!({
                "type": "system",
                "subtype": "model_fallback",
                "trigger": trigger.as_str(),
                "original_model": from,
                "fallback_model": to,
                "content": format!("Switched to {to} after {from} failed ({})", trigger.as_str()),
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::Tombstone {
                message_id,
                tool_use_ids,
                reason,
            } => json!({
                "type": "system",
                "subtype": "tombstone",
                "message_id": message_id,
                "tool_use_ids": tool_use_ids,
                "reason": reason,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::CompactBoundary {
                trigger,
                pre_tokens,
                post_tokens,
                duration,
            } => json!({
                "type": "system",
                "subtype": "compact_boundary",
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
                "compact_metadata": {
                    "trigger": trigger.as_str(),
                    "pre_tokens": pre_tokens,
                    "post_tokens": post_tokens,
                    "duration_ms": duration.as_millis() as u64,
                },
            }),
            AgentEvent::CommandLifecycle { uuid, state } => json!({
                "type": "system",
                "subtype": "command_lifecycle",
                "command_uuid": uuid,
                "state": state.as_str(),
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            // Not this family: `line_for` sends each event to its own.
            _ => return None,
        };
        Some(line)
    }

    /// Notices for the user: warnings, informational messages, hook lines.
    pub(super) fn notice_line(&self, event: AgentEvent) -> Option<Value> {
        let line = match event {
            AgentEvent::Warning { message } => json!({
                "type": "system",
                "subtype": "warning",
                "message": message,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::Informational {
                content,
                level,
                prevent_continuation,
            } => json!({
                "type": "system",
                "subtype": "informational",
                "content": content,
                "level": level,
                "prevent_continuation": prevent_continuation,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::HookStarted {
                hook_id,
                hook_name,
                hook_event,
                ..
            } => {
                if !self.include_hook_events {
                    return None;
                }
                json!({
                    "type": "system",
                    "subtype": "hook_started",
                    "hook_id": hook_id,
                    "hook_name": hook_name,
                    "hook_event": hook_event,
                    "session_id": self.info.session_id,
                    "uuid": new_uuid(),
                })
            }
            AgentEvent::HookResponse {
                hook_id,
                hook_name,
                hook_event,
                output,
                stdout,
                stderr,
                exit_code,
                outcome,
            } => {
                if !self.include_hook_events {
                    return None;
                }
                json!({
                    "type": "system",
                    "subtype": "hook_response",
                    "hook_id": hook_id,
                    "hook_name": hook_name,
                    "hook_event": hook_event,
                    "output": output,
                    "stdout": stdout,
                    "stderr": stderr,
                    "exit_code": exit_code,
                    "outcome": outcome,
                    "session_id": self.info.session_id,
                    "uuid": new_uuid(),
                })
            }
            // Not this family: `line_for` sends each event to its own.
            _ => return None,
        };
        Some(line)
    }
}
