//! The Anthropic Messages API over HTTPS and server-sent events.

use super::sse::{SseDecoder, SseError};
use super::{EventStream, MessagesRequest, Model, ModelError, StreamEvent};
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use std::collections::VecDeque;
use std::time::Duration;

const API_VERSION: &str = "2023-06-01";
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// How long the response may send nothing — before its headers, or between
/// two chunks — before the attempt fails (and is retried): Claude Code's
/// event-level watchdog default. `CLAUDE_STREAM_IDLE_TIMEOUT_MS` changes it.
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// No Messages API event comes near this; a server that sends one is not
/// speaking the API.
const MAX_EVENT_BYTES: usize = 16 << 20;

/// How the client authenticates.
#[derive(Clone)]
enum Credential {
    ApiKey(String),
    BearerToken(String),
}

/// The beta `output_config.task_budget` needs.
const TASK_BUDGET_BETA: &str = "task-budgets-2026-03-13";

#[derive(Clone)]
pub struct AnthropicModel {
    client: reqwest::Client,
    endpoint: String,
    credential: Credential,
    idle_timeout: Duration,
    /// `anthropic-beta` header values (`--betas`).
    betas: Vec<String>,
}

impl std::fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the credential.
        f.debug_struct("AnthropicModel")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl AnthropicModel {
    /// From `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` (or
    /// `ANTHROPIC_AUTH_TOKEN`, sent as a bearer token).
    pub fn from_env() -> Result<Self, ModelError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through
    /// `lookup` (settings layered over the process environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ModelError> {
        let base = lookup("ANTHROPIC_BASE_URL")
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let credential = match (
            lookup("ANTHROPIC_API_KEY").filter(|k| !k.is_empty()),
            lookup("ANTHROPIC_AUTH_TOKEN").filter(|k| !k.is_empty()),
        ) {
            (Some(key), _) => Credential::ApiKey(key),
            (None, Some(token)) => Credential::BearerToken(token),
            (None, None) => return Err(ModelError::MissingApiKey),
        };
        let mut model = Self::new(&base, credential)?;
        if let Some(ms) = lookup("CLAUDE_STREAM_IDLE_TIMEOUT_MS").filter(|v| !v.is_empty()) {
            let ms: u64 = ms.trim().parse().map_err(|_| {
                ModelError::Connection(format!(
                    "CLAUDE_STREAM_IDLE_TIMEOUT_MS must be milliseconds, got `{ms}`"
                ))
            })?;
            model.idle_timeout = Duration::from_millis(ms.max(1));
        }
        Ok(model)
    }

    /// The same client with another idle timeout.
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// A client for `base_url` (e.g. `https://api.anthropic.com`) sending
    /// `api_key` as `x-api-key`.
    pub fn with_api_key(base_url: &str, api_key: &str) -> Result<Self, ModelError> {
        Self::new(base_url, Credential::ApiKey(api_key.to_string()))
    }

    fn new(base_url: &str, credential: Credential) -> Result<Self, ModelError> {
        let client = reqwest::Client::builder()
            .user_agent(concat!("carapace/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ModelError::Connection(format!("building the HTTP client: {e}")))?;
        Ok(Self {
            client,
            endpoint: format!("{}/v1/messages", base_url.trim_end_matches('/')),
            credential,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            betas: Vec::new(),
        })
    }

    /// Sends these beta flags with every request (`anthropic-beta`).
    pub fn with_betas(mut self, betas: Vec<String>) -> Self {
        self.betas = betas;
        self
    }

    async fn open(&self, request: &MessagesRequest) -> Result<EventStream, ModelError> {
        let mut http = self
            .client
            .post(&self.endpoint)
            .header("anthropic-version", API_VERSION)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(self.without_credential(request.body_text()));
        let mut betas = self.betas.clone();
        if request.task_budget.is_some() && !betas.iter().any(|b| b == TASK_BUDGET_BETA) {
            betas.push(TASK_BUDGET_BETA.to_string());
        }
        if request.effort.is_some() && !betas.iter().any(|b| b == super::EFFORT_BETA) {
            betas.push(super::EFFORT_BETA.to_string());
        }
        if request.thinking.is_some() {
            for beta in super::THINKING_BETAS {
                if !betas.iter().any(|b| b == beta) {
                    betas.push(beta.to_string());
                }
            }
        }
        if !betas.is_empty() {
            http = http.header("anthropic-beta", betas.join(","));
        }
        http = match &self.credential {
            Credential::ApiKey(key) => http.header("x-api-key", key),
            Credential::BearerToken(token) => http.bearer_auth(token),
        };
        let response = tokio::time::timeout(self.idle_timeout, http.send())
            .await
            .map_err(|_| ModelError::Stream("Stream idle timeout - no response received".into()))?
            .map_err(|e| ModelError::Connection(error_chain(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64);
            let body = response.text().await.unwrap_or_default();
            return Err(ModelError::Http {
                status: status.as_u16(),
                message: api_error_message(&body),
                retry_after,
            });
        }
        Ok(Box::pin(events(response.bytes_stream(), self.idle_timeout)))
    }
}

/// The events of a response body, decoded as they arrive. The watchdog is
/// per event, not per chunk: a server that trickles bytes without ever
/// completing an event (a slowloris) is cut off `idle` after its last
/// event, however often it sends something.
fn events<B>(body: B, idle: Duration) -> impl Stream<Item = Result<StreamEvent, ModelError>> + Send
where
    B: Stream<Item = reqwest::Result<bytes::Bytes>> + Send + Unpin + 'static,
{
    struct State<B> {
        body: B,
        decoder: SseDecoder,
        ready: VecDeque<Result<StreamEvent, ModelError>>,
        received: bool,
        ended: bool,
        /// When the watchdog fires unless an event completes first.
        deadline: tokio::time::Instant,
    }
    let state = State {
        body,
        decoder: SseDecoder::new(MAX_EVENT_BYTES),
        ready: VecDeque::new(),
        received: false,
        ended: false,
        deadline: tokio::time::Instant::now() + idle,
    };
    futures::stream::unfold(state, move |mut state| async move {
        loop {
            if let Some(item) = state.ready.pop_front() {
                return Some((item, state));
            }
            if state.ended {
                return None;
            }
            let fail = |state: &mut State<B>, error: ModelError| {
                state.ended = true;
                state.ready.push_back(Err(error));
            };
            match tokio::time::timeout_at(state.deadline, state.body.next()).await {
                Err(_) => {
                    let which = if state.received {
                        "partial response received"
                    } else {
                        "no chunks received"
                    };
                    fail(
                        &mut state,
                        ModelError::Stream(format!("Stream idle timeout - {which}")),
                    );
                }
                Ok(None) => state.ended = true,
                Ok(Some(Err(e))) => fail(&mut state, ModelError::Stream(error_chain(&e))),
                Ok(Some(Ok(chunk))) => {
                    state.received = true;
                    match state.decoder.feed(&chunk) {
                        Err(e @ (SseError::TooLarge { .. } | SseError::NotUtf8)) => {
                            fail(&mut state, ModelError::Garbage(e.to_string()));
                        }
                        Ok(decoded) => {
                            if !decoded.is_empty() {
                                state.deadline = tokio::time::Instant::now() + idle;
                            }
                            for event in decoded {
                                if let Some(item) =
                                    StreamEvent::parse(&event.event, &event.data).transpose()
                                {
                                    state.ready.push_back(item);
                                }
                            }
                        }
                    }
                }
            }
        }
    })
}

impl AnthropicModel {
    /// The request's body with the client's own credential replaced: it
    /// belongs in the header, and a body holding it (a tool's result, a
    /// prompt) must not carry it to the model.
    fn without_credential(&self, body: String) -> String {
        let (name, value) = match &self.credential {
            Credential::ApiKey(key) => ("ANTHROPIC_API_KEY", key),
            Credential::BearerToken(token) => ("ANTHROPIC_AUTH_TOKEN", token),
        };
        let mut redactor = crate::secrets::Redactor::clone(&crate::secrets::own_credentials());
        redactor.add(name, value.clone());
        match redactor.redact(&body) {
            Some((clean, found)) => {
                tracing::warn!(?found, "a secret was replaced in a request's body");
                clean
            }
            None => body,
        }
    }
}

impl Model for AnthropicModel {
    fn stream<'a>(
        &'a self,
        request: &'a MessagesRequest,
    ) -> BoxFuture<'a, Result<EventStream, ModelError>> {
        self.open(request).boxed()
    }
}

/// The `error.message` of an API error body, or the body itself.
fn api_error_message(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| body.chars().take(500).collect())
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
