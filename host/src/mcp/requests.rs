//! What a server asks or tells while one of the session's operations on it
//! runs — its progress, its questions for the user — and the seam through
//! which the session answers ([`ServerRequests`]). The bridge reads the
//! server's messages; these are the records it hands over.

use futures::future::BoxFuture;
use serde_json::Value;

/// A server's progress on the request in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct McpProgress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// A server's question for the user (`elicitation/create`).
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitRequest {
    /// The server that asks, by its configured name.
    pub server: String,
    pub message: String,
    /// URL mode: the page the user is sent to.
    pub url: Option<String>,
    pub elicitation_id: Option<String>,
    /// Form mode: the schema the answer must fit (flat properties).
    pub requested_schema: Option<Value>,
}

impl ElicitRequest {
    /// `form` or `url`, as the protocol and Claude Code's hooks name them.
    pub fn mode(&self) -> &'static str {
        if self.url.is_some() { "url" } else { "form" }
    }
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// Form mode: the content, a JSON object.
    Accept(Option<Value>),
    Decline,
    Cancel,
}

impl ElicitAnswer {
    pub fn action(&self) -> &'static str {
        match self {
            ElicitAnswer::Accept(_) => "accept",
            ElicitAnswer::Decline => "decline",
            ElicitAnswer::Cancel => "cancel",
        }
    }

    /// From an action and its content, as hooks and the SDK write them; an
    /// action that is none of the three cancels.
    pub fn from_action(action: &str, content: Option<Value>) -> Self {
        match action {
            "accept" => ElicitAnswer::Accept(content.filter(Value::is_object)),
            "decline" => ElicitAnswer::Decline,
            _ => ElicitAnswer::Cancel,
        }
    }
}

/// Who hears a server's progress and answers its questions while one
/// operation runs (a tool call: the pipeline, for that call).
pub trait ServerRequests: Send + Sync {
    fn progress(&self, update: McpProgress);
    fn elicit(&self, request: ElicitRequest) -> BoxFuture<'_, ElicitAnswer>;
}
