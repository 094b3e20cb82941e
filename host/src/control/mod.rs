//! The stream-json control protocol, as the Agent SDKs speak it: with
//! `--input-format stream-json`, `control_request` lines travel both ways
//! on stdin/stdout, each answered by one `control_response` carrying the
//! same `request_id`. The SDK asks carapace (`initialize`, `interrupt`,
//! `set_permission_mode`, `set_model`, `mcp_status`); carapace asks the SDK
//! (`can_use_tool`). Requests in both directions may be in flight at once.
//! A request nobody here knows is answered with an error, never left
//! hanging; a request carapace sent fails when stdin closes.
//!
//! Imports: `checkpoints`, `hooks`, `mcp`, `model`, `policy`, `sandbox`,
//! `tools` — folders below it; nothing that imports it.

mod flag_rules;
mod mcp;
pub mod mcp_servers;
mod model_switch;
mod prompt;
mod request_error;
mod session;
pub mod start;
pub mod turn;
pub mod usage;

pub use mcp::SdkMcpLine;
pub use prompt::{NETWORK_ACCESS, SdkPrompter};
pub use request_error::RequestError;
pub use session::{
    AgentAdder, SessionControl, SkillsControl, TaskStopper, TurnSlot, mode_status_line,
};

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Both directions of the protocol for one session.
pub struct Controller {
    pub channel: Arc<ControlChannel>,
    pub session: SessionControl,
}

impl Controller {
    /// Handles a stdin line that belongs to the protocol; false for any
    /// other line (a user message).
    pub fn take(&self, line: &Value) -> bool {
        match line["type"].as_str() {
            Some("control_request") => {
                let Some(request_id) = line["request_id"].as_str() else {
                    tracing::warn!("a control_request without a request_id: {line}");
                    return true;
                };
                // Starting servers takes its time: answered when done, while
                // other lines (the SDK's answers to its servers' messages
                // among them) keep being read.
                if let Some(answer) = self.session.handle_later(&line["request"]) {
                    let (channel, request_id) = (self.channel.clone(), request_id.to_string());
                    // The turns of messages after it wait until it is
                    // answered (and so does the session's end).
                    let mark = self.session.overrides.hold();
                    tokio::spawn(async move {
                        channel.respond(&request_id, answer.await);
                        drop(mark);
                    });
                    return true;
                }
                let answer = self.session.handle(&line["request"], &self.channel);
                self.channel
                    .respond(request_id, answer.map_err(ErrorAnswer::from));
                true
            }
            Some("control_response") => {
                self.channel.answered(line);
                true
            }
            // carapace has no request the SDK could cancel this way: the
            // turn's own interrupt ends whatever waits.
            Some("control_cancel_request") => true,
            _ => false,
        }
    }
}

/// An error answer to the SDK: its message, and fields that go beside it
/// (`error_code`, …).
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorAnswer {
    pub message: String,
    pub fields: serde_json::Map<String, Value>,
}

impl From<String> for ErrorAnswer {
    fn from(message: String) -> Self {
        Self {
            message,
            fields: serde_json::Map::new(),
        }
    }
}

/// SDK hook callbacks are `hook_callback` requests.
impl crate::hooks::HookCallbacks for ControlChannel {
    fn call(
        &self,
        id: String,
        input: Value,
        tool_use_id: Option<String>,
    ) -> futures::future::BoxFuture<'_, Result<Value, String>> {
        Box::pin(async move {
            self.request(json!({
                "subtype": "hook_callback",
                "callback_id": id,
                "input": input,
                "tool_use_id": tool_use_id,
            }))
            .await
            .map_err(|e| e.to_string())
        })
    }
}

/// Where protocol lines go (stdout, shared with the run's own lines).
pub trait LineOut: Send + Sync {
    fn line(&self, value: Value);
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ControlError {
    #[error("the SDK answered with an error: {0}")]
    Refused(String),
    #[error("the SDK's stdin closed before it answered")]
    Closed,
}

/// Requests carapace sends, waiting for their answers.
pub struct ControlChannel {
    out: Box<dyn LineOut>,
    pending: Mutex<HashMap<String, oneshot::Sender<Result<Value, String>>>>,
    counter: AtomicU64,
    closed: AtomicBool,
}

impl ControlChannel {
    pub fn new(out: Box<dyn LineOut>) -> Self {
        Self {
            out,
            pending: Mutex::default(),
            counter: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Sends `request` (its `subtype` and fields) and waits for the answer.
    pub async fn request(&self, request: Value) -> Result<Value, ControlError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(ControlError::Closed);
        }
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let request_id = format!(
            "carapace_{n}_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let (send, receive) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(request_id.clone(), send);
        }
        self.out.line(json!({
            "type": "control_request",
            "request_id": request_id,
            "request": request,
        }));
        // Closed between the check and the insert: nobody will answer.
        if self.closed.load(Ordering::Acquire) {
            self.fail_pending();
        }
        match receive.await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(ControlError::Refused(error)),
            Err(_) => Err(ControlError::Closed),
        }
    }

    /// A `control_response` line from stdin: the answer to one of ours.
    pub fn answered(&self, line: &Value) {
        let response = &line["response"];
        let Some(request_id) = response["request_id"].as_str() else {
            tracing::warn!("a control_response without a request_id: {line}");
            return;
        };
        let Some(waiting) = self
            .pending
            .lock()
            .ok()
            .and_then(|mut pending| pending.remove(request_id))
        else {
            tracing::warn!(request_id, "a control_response nobody is waiting for");
            return;
        };
        let answer = if response["subtype"] == "error" {
            Err(response["error"]
                .as_str()
                .unwrap_or("an error without a message")
                .to_string())
        } else {
            Ok(response["response"].clone())
        };
        let _ = waiting.send(answer);
    }

    /// Answers a request the SDK sent.
    pub fn respond(&self, request_id: &str, answer: Result<Value, ErrorAnswer>) {
        let response = match answer {
            Ok(Value::Null) => json!({"subtype": "success", "request_id": request_id}),
            Ok(response) => {
                json!({"subtype": "success", "request_id": request_id, "response": response})
            }
            Err(error) => {
                let mut response =
                    json!({"subtype": "error", "request_id": request_id, "error": error.message});
                if let Some(object) = response.as_object_mut() {
                    object.extend(error.fields);
                }
                response
            }
        };
        self.out
            .line(json!({"type": "control_response", "response": response}));
    }

    /// Writes a line of the run (a status line after a control request).
    pub fn line(&self, value: Value) {
        self.out.line(value);
    }

    /// stdin closed: no answer will come to what is still pending.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.fail_pending();
    }

    fn fail_pending(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<Value>>>);

    impl LineOut for Lines {
        fn line(&self, value: Value) {
            if let Ok(mut lines) = self.0.lock() {
                lines.push(value);
            }
        }
    }

    impl Lines {
        fn last(&self) -> Value {
            self.0
                .lock()
                .ok()
                .and_then(|l| l.last().cloned())
                .unwrap_or_default()
        }
    }

    #[tokio::test]
    async fn answers_are_matched_by_request_id_in_any_order() {
        let lines = Lines::default();
        let channel = Arc::new(ControlChannel::new(Box::new(lines.clone())));
        let first = tokio::spawn({
            let channel = channel.clone();
            async move {
                channel
                    .request(json!({"subtype": "can_use_tool", "n": 1}))
                    .await
            }
        });
        tokio::task::yield_now().await;
        let first_id = lines.last()["request_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let second = tokio::spawn({
            let channel = channel.clone();
            async move {
                channel
                    .request(json!({"subtype": "can_use_tool", "n": 2}))
                    .await
            }
        });
        tokio::task::yield_now().await;
        let second_id = lines.last()["request_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert_ne!(first_id, second_id);
        channel.answered(&json!({"type": "control_response", "response": {
            "subtype": "error", "request_id": second_id, "error": "no"}}));
        channel.answered(&json!({"type": "control_response", "response": {
            "subtype": "success", "request_id": first_id, "response": {"behavior": "allow"}}}));
        assert_eq!(first.await.ok(), Some(Ok(json!({"behavior": "allow"}))));
        assert_eq!(
            second.await.ok(),
            Some(Err(ControlError::Refused("no".into())))
        );
    }

    #[tokio::test]
    async fn a_closed_stdin_fails_what_is_pending_and_what_comes() {
        let lines = Lines::default();
        let channel = Arc::new(ControlChannel::new(Box::new(lines)));
        let waiting = tokio::spawn({
            let channel = channel.clone();
            async move { channel.request(json!({"subtype": "can_use_tool"})).await }
        });
        tokio::task::yield_now().await;
        channel.close();
        assert_eq!(waiting.await.ok(), Some(Err(ControlError::Closed)));
        assert_eq!(
            channel.request(json!({"subtype": "x"})).await,
            Err(ControlError::Closed)
        );
    }
}
