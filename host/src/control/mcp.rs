//! The Agent SDK's in-process MCP servers (`"type": "sdk"` in
//! `--mcp-config`): the bridge speaks JSON-RPC to them as to any server,
//! each message carried by an `mcp_message` control request and each
//! answer coming back in its response.

use super::ControlChannel;
use crate::mcp::channel::McpLine;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

pub struct SdkMcpLine {
    server: String,
    channel: Arc<ControlChannel>,
    answers: mpsc::UnboundedSender<String>,
    inbox: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
}

impl SdkMcpLine {
    pub fn new(server: &str, channel: Arc<ControlChannel>) -> Self {
        let (answers, inbox) = mpsc::unbounded_channel();
        Self {
            server: server.to_string(),
            channel,
            answers,
            inbox: tokio::sync::Mutex::new(inbox),
        }
    }
}

impl McpLine for SdkMcpLine {
    fn send<'a>(&'a self, message: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let message: Value = serde_json::from_str(message)
                .map_err(|e| format!("the bridge sent a message that is not JSON: {e}"))?;
            // Requests get their answer back; notifications only an ack.
            let expects_answer = message.get("id").is_some() && message.get("method").is_some();
            let response = self
                .channel
                .request(json!({
                    "subtype": "mcp_message",
                    "server_name": self.server,
                    "message": message,
                }))
                .await
                .map_err(|e| format!("SDK MCP server `{}`: {e}", self.server))?;
            if expects_answer {
                let answer = response.get("mcp_response").cloned().ok_or_else(|| {
                    format!(
                        "SDK MCP server `{}` answered without an mcp_response",
                        self.server
                    )
                })?;
                let _ = self.answers.send(answer.to_string());
            }
            Ok(())
        })
    }

    fn receive(&self, timeout: Duration) -> BoxFuture<'_, Result<Option<String>, String>> {
        Box::pin(async move {
            let mut inbox = self.inbox.lock().await;
            if timeout.is_zero() {
                return Ok(inbox.try_recv().ok());
            }
            match tokio::time::timeout(timeout, inbox.recv()).await {
                Ok(Some(message)) => Ok(Some(message)),
                Ok(None) => Err(format!("SDK MCP server `{}` is gone", self.server)),
                Err(_) => Ok(None),
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        // The server lives and ends with the SDK's process.
        Box::pin(async {})
    }
}
