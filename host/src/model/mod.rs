//! The model: the Messages API client over SSE, the assembly of a streamed
//! response, and the replay provider for demos and offline runs.
//!
//! The loop sees only [`Model`]: send a request, get a stream of events. A
//! provider never retries on its own; retry and fallback belong to the loop,
//! which must discard a partial response before asking again.
//!
//! Imports nothing of carapace's: a leaf every folder above may use.

mod alias;
mod anthropic;
mod effort;
mod messages;
mod pricing;
mod replay;
mod retry;
mod sse;
mod stream;
mod thinking;
mod whole;

pub use alias::{DEFAULT_MODEL, caveat, resolve_model};
pub use anthropic::AnthropicModel;
pub use effort::{EFFORT_BETA, Effort};
pub use messages::{
    ContentBlock, ImageError, ImageSource, Message, MessagesRequest, Role, ToolResultBlock,
    ToolResultContent, ToolSpec, Usage, tool_use_ids,
};
pub use pricing::{Price, cost_usd, price};
pub use replay::ReplayModel;
pub use retry::{FailureKind, RetryPolicy};
pub use sse::{SseDecoder, SseError, SseEvent};
pub use stream::{Assembled, CompletedBlock, InvalidToolInput, ResponseAssembler, StreamEvent};
pub use thinking::{THINKING_BETAS, Thinking, ThinkingChoice, ThinkingSupport, default_max_tokens};
pub use whole::whole_response;

use futures::Stream;
use futures::future::BoxFuture;
use std::pin::Pin;
use std::time::Duration;

/// The events of one streamed response.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ModelError>> + Send>>;

/// Something that answers Messages requests with a stream of events.
pub trait Model: Send + Sync {
    fn stream<'a>(
        &'a self,
        request: &'a MessagesRequest,
    ) -> BoxFuture<'a, Result<EventStream, ModelError>>;
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("no API key: set ANTHROPIC_API_KEY (or use --model replay:FILE)")]
    MissingApiKey,
    #[error("API error {status}: {message}")]
    Http {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("connection error: {0}")]
    Connection(String),
    #[error("the response stream broke: {0}")]
    Stream(String),
    #[error("API error ({kind}): {message}")]
    Api { kind: String, message: String },
    #[error("replay: {0}")]
    Replay(String),
    /// The server sent something no Messages API stream holds (an event
    /// past the size cap, bytes that are not text): retrying will not help.
    #[error("the response stream is not a Messages API stream: {0}")]
    Garbage(String),
}
