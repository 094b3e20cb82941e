//! The test model: a scripted Messages API server on loopback.
//!
//! Each `POST /v1/messages` gets the next scripted [`Reply`]: a message
//! streamed as SSE, raw events with pauses and gates (to hold a stream open
//! until a tool's effect is visible), an HTTP error, or a stream cut in the
//! middle. Every request is recorded (headers and JSON body) so tests can
//! assert on exactly what was sent.
//!
//! The server runs on its own thread and runtime, so plain `#[test]`s that
//! spawn the `carapace` binary can use it.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    /// When the request's body had arrived.
    pub received_at: Instant,
}

/// A condition a stream waits for before going on.
pub type Gate = Arc<dyn Fn() -> bool + Send + Sync>;

/// Makes a reply from a request's body, once the scripted replies run out:
/// for many sessions at once, whose requests arrive in no fixed order.
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// One step of a scripted stream.
#[derive(Clone)]
pub enum Step {
    /// An SSE event; the event name is the data's `type`.
    Event(Value),
    Pause(Duration),
    /// Waits until the gate opens or the timeout passes; records which.
    WaitUntil {
        gate: Gate,
        timeout: Duration,
        label: String,
    },
    /// Breaks the connection here.
    Cut,
    /// Raw bytes, sent `chunk` bytes at a time with `pause` between chunks
    /// (a misbehaving server: a huge line, a stream that trickles).
    Raw {
        bytes: Vec<u8>,
        chunk: usize,
        pause: Duration,
    },
}

/// A content block of a scripted message.
#[derive(Debug, Clone)]
pub enum Block {
    Text(String),
    Thinking(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// A tool_use whose streamed input is this raw (possibly invalid) JSON.
    RawToolUse {
        id: String,
        name: String,
        json: String,
    },
}

impl Block {
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text(text.into())
    }

    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}

/// What the server answers one request with.
#[derive(Clone)]
pub enum Reply {
    /// A streamed message.
    Message {
        blocks: Vec<Block>,
        stop_reason: String,
        /// Steps inserted right after the block with this index stops.
        after_block: Vec<(usize, Step)>,
        /// What `message_start`'s usage says the request held (10 unless
        /// set: a test makes the context look as full as it needs).
        input_tokens: u64,
    },
    /// Exactly these steps.
    Events(Vec<Step>),
    /// An HTTP error with a JSON error body.
    Status {
        status: u16,
        error_type: String,
        message: String,
        headers: Vec<(String, String)>,
    },
}

impl Reply {
    /// A final answer (`end_turn`).
    pub fn text(text: impl Into<String>) -> Self {
        Self::message(vec![Block::text(text)], "end_turn")
    }

    /// A response with blocks and a stop reason.
    pub fn message(blocks: Vec<Block>, stop_reason: &str) -> Self {
        Reply::Message {
            blocks,
            stop_reason: stop_reason.into(),
            after_block: Vec::new(),
            input_tokens: 10,
        }
    }

    /// Says the request held `tokens` input tokens.
    pub fn input_tokens(mut self, tokens: u64) -> Self {
        if let Reply::Message { input_tokens, .. } = &mut self {
            *input_tokens = tokens;
        }
        self
    }

    /// Tool calls (`tool_use`).
    pub fn tool_uses(blocks: Vec<Block>) -> Self {
        Self::message(blocks, "tool_use")
    }

    /// Inserts `step` after block `index` stops (e.g. wait until a tool ran,
    /// before `message_stop`).
    pub fn after_block(mut self, index: usize, step: Step) -> Self {
        if let Reply::Message { after_block, .. } = &mut self {
            after_block.push((index, step));
        }
        self
    }

    pub fn status(status: u16, error_type: &str, message: &str) -> Self {
        Reply::Status {
            status,
            error_type: error_type.into(),
            message: message.into(),
            headers: Vec::new(),
        }
    }

    /// Adds a `retry-after` header (seconds) to a status reply.
    pub fn retry_after(mut self, seconds: &str) -> Self {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push(("retry-after".into(), seconds.into()));
        }
        self
    }

    /// A reply from its JSON form (the `serve` example's script format, and
    /// the Claude Code recordings'): `{"blocks": [...], "stop_reason"}`,
    /// `{"status", "type", "message", "retry_after"?}` or
    /// `{"events": [SSE data | {"pause_ms"} | {"cut": true}]}`.
    pub fn from_script(value: &Value) -> Result<Reply, String> {
        if let Some(status) = value.get("status").and_then(Value::as_u64) {
            let mut reply = Reply::status(
                status as u16,
                value["type"].as_str().unwrap_or("api_error"),
                value["message"].as_str().unwrap_or("scripted error"),
            );
            if let (Reply::Status { headers, .. }, Some(after)) =
                (&mut reply, value["retry_after"].as_str())
            {
                headers.push(("retry-after".into(), after.into()));
            }
            return Ok(reply);
        }
        if let Some(events) = value.get("events").and_then(Value::as_array) {
            let steps = events
                .iter()
                .map(|e| {
                    if let Some(ms) = e.get("pause_ms").and_then(Value::as_u64) {
                        Step::Pause(Duration::from_millis(ms))
                    } else if e.get("cut").is_some() {
                        Step::Cut
                    } else {
                        Step::Event(e.clone())
                    }
                })
                .collect();
            return Ok(Reply::Events(steps));
        }
        let blocks = value["blocks"]
            .as_array()
            .ok_or_else(|| format!("reply without blocks, status or events: {value}"))?
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => Ok(Block::text(b["text"].as_str().unwrap_or_default())),
                Some("thinking") => Ok(Block::Thinking(
                    b["thinking"].as_str().unwrap_or_default().into(),
                )),
                Some("tool_use") => Ok(Block::tool_use(
                    b["id"].as_str().unwrap_or("toolu_x"),
                    b["name"].as_str().unwrap_or_default(),
                    b["input"].clone(),
                )),
                Some("raw_tool_use") => Ok(Block::RawToolUse {
                    id: b["id"].as_str().unwrap_or("toolu_x").into(),
                    name: b["name"].as_str().unwrap_or_default().into(),
                    json: b["json"].as_str().unwrap_or_default().into(),
                }),
                _ => Err(format!("unknown block {b}")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let reply = Reply::message(blocks, value["stop_reason"].as_str().unwrap_or("end_turn"));
        Ok(match value["input_tokens"].as_u64() {
            Some(tokens) => reply.input_tokens(tokens),
            None => reply,
        })
    }

    fn into_steps(self, n: usize) -> Vec<Step> {
        match self {
            Reply::Events(steps) => steps,
            Reply::Status { .. } => Vec::new(),
            Reply::Message {
                blocks,
                stop_reason,
                after_block,
                input_tokens,
            } => {
                let mut steps = vec![Step::Event(json!({
                    "type": "message_start",
                    "message": {
                        "id": format!("msg_scripted_{n}"),
                        "type": "message",
                        "role": "assistant",
                        "model": "scripted-model",
                        "content": [],
                        "stop_reason": null,
                        "stop_sequence": null,
                        "usage": {"input_tokens": input_tokens, "output_tokens": 1}
                    }
                }))];
                for (index, block) in blocks.into_iter().enumerate() {
                    steps.extend(block_events(index, block).into_iter().map(Step::Event));
                    for (_, step) in after_block.iter().filter(|(i, _)| *i == index) {
                        steps.push(step.clone());
                    }
                }
                steps.push(Step::Event(json!({
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                    "usage": {"output_tokens": 5}
                })));
                steps.push(Step::Event(json!({"type": "message_stop"})));
                steps
            }
        }
    }
}

/// The SSE events of one block, starting at `content_block_start` and
/// ending at `content_block_stop`.
pub fn block_events(index: usize, block: Block) -> Vec<Value> {
    let (start, deltas) = match block {
        Block::Text(text) => (
            json!({"type": "text", "text": ""}),
            vec![json!({"type": "text_delta", "text": text})],
        ),
        Block::Thinking(thinking) => (
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            vec![
                json!({"type": "thinking_delta", "thinking": thinking}),
                json!({"type": "signature_delta", "signature": "c2lnbmF0dXJl"}),
            ],
        ),
        Block::ToolUse { id, name, input } => (
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            split_json(&input.to_string()),
        ),
        Block::RawToolUse { id, name, json } => (
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            split_json(&json),
        ),
    };
    let mut events =
        vec![json!({"type": "content_block_start", "index": index, "content_block": start})];
    events.extend(
        deltas
            .into_iter()
            .map(|delta| json!({"type": "content_block_delta", "index": index, "delta": delta})),
    );
    events.push(json!({"type": "content_block_stop", "index": index}));
    events
}

/// Tool input in two fragments, as the API streams it.
fn split_json(json: &str) -> Vec<Value> {
    let cut = json
        .char_indices()
        .nth(json.chars().count() / 2)
        .map_or(json.len(), |(i, _)| i);
    vec![
        json!({"type": "input_json_delta", "partial_json": &json[..cut]}),
        json!({"type": "input_json_delta", "partial_json": &json[cut..]}),
    ]
}

#[derive(Default)]
struct Shared {
    replies: VecDeque<Reply>,
    responder: Option<Responder>,
    requests: Vec<RecordedRequest>,
    messages_requests: usize,
    /// Gates passed (`true`) or timed out (`false`), by label.
    gates: Vec<(String, bool)>,
    /// Static files served on `GET /files/NAME` (plugin downloads).
    files: BTreeMap<String, Vec<u8>>,
    /// Messages requests (numbered from 1) whose scripted stream ran to
    /// its last step: every pause waited out, every event sent.
    finished: Vec<usize>,
}

/// How many Messages requests a server has received, readable while the
/// server is owned elsewhere: the event a test waits on, not a guessed
/// delay.
#[derive(Clone)]
pub struct RequestCounter(Arc<Mutex<Shared>>);

impl RequestCounter {
    pub fn messages(&self) -> usize {
        self.0.lock().map_or(0, |s| s.messages_requests)
    }

    /// Waits (up to 30 s) until at least `n` Messages requests arrived.
    pub async fn wait_for(&self, n: usize) -> bool {
        for _ in 0..3000 {
            if self.messages() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

/// A running scripted server. Stops when dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

impl ScriptedServer {
    /// Starts a server that answers with `replies`, in order.
    pub fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        let shared = Arc::new(Mutex::new(Shared {
            replies: replies.into(),
            ..Shared::default()
        }));
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let state = shared.clone();
        std::thread::Builder::new()
            .name("scripted-server".into())
            .spawn(move || runtime.block_on(serve(listener, state, shutdown_rx)))?;
        Ok(Self {
            addr,
            shared,
            _shutdown: shutdown_tx,
        })
    }

    /// Starts a server that answers each Messages request with what
    /// `responder` makes of it.
    pub fn start_responding(responder: Responder) -> std::io::Result<Self> {
        let server = Self::start(Vec::new())?;
        if let Ok(mut state) = server.shared.lock() {
            state.responder = Some(responder);
        }
        Ok(server)
    }

    pub fn counter(&self) -> RequestCounter {
        RequestCounter(self.shared.clone())
    }

    /// The base URL to put in `ANTHROPIC_BASE_URL`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every Messages request (`POST /v1/messages`) received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.all_requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path == "/v1/messages")
            .collect()
    }

    /// Every request received so far, whatever its path.
    pub fn all_requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    /// Gates the streams went through: `(label, opened_before_timeout)`.
    pub fn gates(&self) -> Vec<(String, bool)> {
        self.shared
            .lock()
            .map(|s| s.gates.clone())
            .unwrap_or_default()
    }

    /// Serves `bytes` on `GET /files/NAME`; returns its URL.
    pub fn serve_file(&self, name: &str, bytes: Vec<u8>) -> String {
        if let Ok(mut state) = self.shared.lock() {
            state.files.insert(name.to_string(), bytes);
        }
        format!("{}/files/{name}", self.url())
    }

    /// The Messages requests (numbered from 1) whose response stream ran
    /// to its end (an error status is over at once). A client that stopped
    /// waiting ended the stream early: a
    /// pause it did not wait out leaves its request off this list — how a
    /// test tells "ended while the stream still paused" without a clock.
    pub fn finished_streams(&self) -> Vec<usize> {
        self.shared
            .lock()
            .map(|s| s.finished.clone())
            .unwrap_or_default()
    }

    /// Replies not yet used.
    pub fn remaining(&self) -> usize {
        self.shared
            .lock()
            .map(|s| s.replies.len())
            .unwrap_or_default()
    }
}

async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Mutex<Shared>>,
    mut shutdown: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut shutdown => return,
        };
        let Ok((stream, _)) = accepted else { continue };
        // Events are small writes: without this, Nagle holds each behind
        // the client's delayed ACK (~40 ms per request on a kept-alive
        // connection), which no real API server does.
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(request, shared.clone()));
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

type Body = BoxBody<Bytes, std::io::Error>;

async fn handle(
    request: Request<Incoming>,
    shared: Arc<Mutex<Shared>>,
) -> Result<Response<Body>, std::io::Error> {
    let method = request.method().to_string();
    let path = request.uri().path().to_string();
    let headers = request
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let bytes = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    let (n, reply) = {
        let Ok(mut state) = shared.lock() else {
            return Ok(error_response(
                500,
                "api_error",
                "scripted server state poisoned",
                &[],
            ));
        };
        state.requests.push(RecordedRequest {
            method: method.clone(),
            path: path.clone(),
            headers,
            body,
            received_at: Instant::now(),
        });
        if method == "GET"
            && let Some(file) = path
                .strip_prefix("/files/")
                .and_then(|name| state.files.get(name))
        {
            let body = Full::new(Bytes::from(file.clone()))
                .map_err(|never| match never {})
                .boxed();
            return Response::builder()
                .status(200)
                .header("content-type", "application/wasm")
                .body(body)
                .map_err(std::io::Error::other);
        }
        if method != "POST" || path != "/v1/messages" {
            // Only Messages requests consume replies: clients also probe `/`.
            return Ok(error_response(
                404,
                "not_found_error",
                &format!("no route {method} {path}"),
                &[],
            ));
        }
        state.messages_requests += 1;
        let reply = state.replies.pop_front().or_else(|| {
            let responder = state.responder.clone()?;
            Some(responder(&state.requests.last()?.body))
        });
        (state.messages_requests, reply)
    };
    let Some(reply) = reply else {
        return Ok(error_response(
            500,
            "api_error",
            &format!("scripted server: no reply left for request {n}"),
            &[],
        ));
    };
    if let Reply::Status {
        status,
        error_type,
        message,
        headers,
    } = &reply
    {
        // An error answers at once: its stream, such as it is, is over.
        if let Ok(mut state) = shared.lock() {
            state.finished.push(n);
        }
        return Ok(error_response(*status, error_type, message, headers));
    }

    let steps = reply.into_steps(n);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(16);
    tokio::spawn(async move {
        for step in steps {
            match step {
                Step::Event(data) => {
                    let name = data["type"].as_str().unwrap_or("message").to_string();
                    let frame =
                        Frame::data(Bytes::from(format!("event: {name}\ndata: {data}\n\n")));
                    if tx.send(Ok(frame)).await.is_err() {
                        return;
                    }
                }
                Step::Pause(duration) => tokio::time::sleep(duration).await,
                Step::WaitUntil {
                    gate,
                    timeout,
                    label,
                } => {
                    let deadline = Instant::now() + timeout;
                    let opened = loop {
                        if gate() {
                            break true;
                        }
                        if Instant::now() >= deadline {
                            break false;
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    };
                    if let Ok(mut state) = shared.lock() {
                        state.gates.push((label, opened));
                    }
                }
                Step::Raw {
                    bytes,
                    chunk,
                    pause,
                } => {
                    for piece in bytes.chunks(chunk.max(1)) {
                        let frame = Frame::data(Bytes::copy_from_slice(piece));
                        if tx.send(Ok(frame)).await.is_err() {
                            return;
                        }
                        if !pause.is_zero() {
                            tokio::time::sleep(pause).await;
                        }
                    }
                }
                Step::Cut => {
                    let _ = tx
                        .send(Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            "scripted cut",
                        )))
                        .await;
                    return;
                }
            }
        }
        if let Ok(mut state) = shared.lock() {
            state.finished.push(n);
        }
    });
    let stream = futures_stream(rx);
    let body = BodyExt::boxed(StreamBody::new(stream));
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .unwrap_or_else(|_| Response::new(empty())))
}

fn futures_stream(
    mut rx: tokio::sync::mpsc::Receiver<Result<Frame<Bytes>, std::io::Error>>,
) -> impl futures::Stream<Item = Result<Frame<Bytes>, std::io::Error>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

fn empty() -> Body {
    BodyExt::boxed(Full::new(Bytes::new()).map_err(|never| match never {}))
}

fn error_response(
    status: u16,
    error_type: &str,
    message: &str,
    headers: &[(String, String)],
) -> Response<Body> {
    let body =
        json!({"type": "error", "error": {"type": error_type, "message": message}}).to_string();
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    builder
        .body(BodyExt::boxed(
            Full::new(Bytes::from(body)).map_err(|never| match never {}),
        ))
        .unwrap_or_else(|_| Response::new(empty()))
}
