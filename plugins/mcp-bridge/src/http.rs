//! One Streamable HTTP POST through `wasi:http`. A JSON answer is read
//! whole; an SSE answer is read event by event as the bridge asks for the
//! next message, so a request the server makes in the middle of its
//! answer (an elicitation, a ping) is answered at once rather than after
//! a stream that waits for it.

use super::HttpEndpoint;
use serde_json::Value;
use wasi::http::outgoing_handler;
use wasi::http::types::{
    Fields, IncomingBody, IncomingResponse, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasi::io::streams::{InputStream, StreamError};

/// The most a response may bring.
const MAX_BODY_BYTES: usize = 16 << 20;

pub(super) struct Reply {
    pub(super) session: Option<String>,
    pub(super) messages: Vec<String>,
    /// An SSE answer, still open: its events are read as they come.
    pub(super) stream: Option<EventStream>,
}

/// An SSE response being read. The fields drop in order: the stream
/// before the body it reads, the body before the response it came with.
pub(super) struct EventStream {
    stream: InputStream,
    _body: IncomingBody,
    _response: IncomingResponse,
    buffer: Vec<u8>,
    received: usize,
}

impl EventStream {
    /// The next event's data; `None` once the stream has ended.
    pub(super) fn next_event(&mut self) -> Result<Option<String>, String> {
        loop {
            while let Some(block) = self.take_block() {
                if let Some(data) = event_data(&block) {
                    return Ok(Some(data));
                }
            }
            match self.stream.blocking_read(64 * 1024) {
                Ok(chunk) => {
                    self.received += chunk.len();
                    if self.received > MAX_BODY_BYTES {
                        return Err(format!(
                            "the server's answer is larger than {MAX_BODY_BYTES} bytes"
                        ));
                    }
                    self.buffer.extend(chunk);
                }
                Err(StreamError::Closed) => {
                    // What is left is the last event, unterminated.
                    let rest =
                        String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).into_owned();
                    return Ok(event_data(&rest));
                }
                Err(e) => return Err(format!("reading the answer failed: {e:?}")),
            }
        }
    }

    /// The first whole event block in the buffer, taken out of it.
    fn take_block(&mut self) -> Option<String> {
        let text = &self.buffer;
        let end = text.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
        let crlf = text
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|i| (i, 4));
        let (at, len) = match (end, crlf) {
            (Some(a), Some(b)) => {
                if a.0 <= b.0 {
                    a
                } else {
                    b
                }
            }
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => return None,
        };
        let block: Vec<u8> = self.buffer.drain(..at + len).collect();
        Some(String::from_utf8_lossy(&block[..at]).into_owned())
    }
}

/// The `data` of one SSE event block; `None` for a block without any (a
/// comment, a keep-alive, an `id:` or `retry:` alone).
fn event_data(block: &str) -> Option<String> {
    let data: Vec<&str> = block
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|value| value.strip_prefix(' ').unwrap_or(value))
        .collect();
    (!data.is_empty()).then(|| data.join("\n"))
}

pub(super) fn post(
    endpoint: &HttpEndpoint,
    session: Option<&str>,
    protocol: Option<&str>,
    message: &Value,
) -> Result<Reply, String> {
    let (scheme, authority, path) = url_parts(&endpoint.url)?;
    let headers = request_headers(endpoint, session, protocol, message)?;
    let request = OutgoingRequest::new(headers);
    request
        .set_method(&Method::Post)
        .map_err(|()| "invalid method")?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| "invalid scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| format!("invalid host `{authority}`"))?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| format!("invalid path `{path}`"))?;
    let body = request.body().map_err(|()| "no request body")?;
    {
        let stream = body.write().map_err(|()| "no request body stream")?;
        let bytes = message.to_string().into_bytes();
        for chunk in bytes.chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| format!("sending the request failed: {e:?}"))?;
        }
    }
    let pending = outgoing_handler::handle(request, None)
        .map_err(|e| format!("the request to {authority} was refused: {e:?}"))?;
    OutgoingBody::finish(body, None).map_err(|e| format!("sending the request failed: {e:?}"))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or("no response")?
        .map_err(|()| "the response was taken twice")?
        .map_err(|e| format!("the request to {} failed: {e:?}", endpoint.url))?;
    let status = response.status();
    let headers = response.headers();
    let header = |name: &str| {
        headers
            .get(name)
            .first()
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let session = header("mcp-session-id");
    let content_type = header("content-type")
        .unwrap_or_default()
        .to_ascii_lowercase();
    drop(headers);
    let body = response.consume().map_err(|()| "no body")?;
    let stream = body.stream().map_err(|()| "no body stream")?;
    if (200..300).contains(&status) && content_type.starts_with("text/event-stream") {
        return Ok(Reply {
            session,
            messages: Vec::new(),
            stream: Some(EventStream {
                stream,
                _body: body,
                _response: response,
                buffer: Vec::new(),
                received: 0,
            }),
        });
    }
    let text = read_body(&stream)?;
    drop(stream);
    reply(status, &content_type, session, text)
}

/// An http(s) URL's scheme, authority and path.
fn url_parts(url: &str) -> Result<(Scheme, &str, &str), String> {
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else {
        return Err(format!("`{url}` is not an http(s) URL"));
    };
    Ok(match rest.find('/') {
        Some(i) => (scheme, &rest[..i], &rest[i..]),
        None => (scheme, rest, "/"),
    })
}

/// A request's headers: JSON in, JSON or SSE out, the configured ones,
/// the session and the protocol revision (the current one names the
/// method and the tool too, so that proxies can route without the body).
fn request_headers(
    endpoint: &HttpEndpoint,
    session: Option<&str>,
    protocol: Option<&str>,
    message: &Value,
) -> Result<Fields, String> {
    let headers = Fields::new();
    let set = |name: &str, value: &str| {
        headers
            .append(name, value.as_bytes())
            .map_err(|e| format!("header `{name}`: {e:?}"))
    };
    set("content-type", "application/json")?;
    set("accept", "application/json, text/event-stream")?;
    for (name, value) in &endpoint.headers {
        set(name, value)?;
    }
    if let Some(session) = session {
        set("mcp-session-id", session)?;
    }
    if let Some(protocol) = protocol {
        set("mcp-protocol-version", protocol)?;
        if protocol == super::MODERN {
            if let Some(method) = message.get("method").and_then(Value::as_str) {
                set("mcp-method", method)?;
            }
            // What the request names, for routing: a tool's or a
            // prompt's `name`, a resource's `uri`.
            let named = message
                .pointer("/params/name")
                .or_else(|| message.pointer("/params/uri"))
                .and_then(Value::as_str);
            if let Some(name) = named {
                set("mcp-name", name)?;
            }
        }
    }
    Ok(headers)
}

/// A response body, whole, within `MAX_BODY_BYTES`.
fn read_body(stream: &wasi::io::streams::InputStream) -> Result<String, String> {
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                bytes.extend(chunk);
                if bytes.len() > MAX_BODY_BYTES {
                    return Err(format!(
                        "the server's answer is larger than {MAX_BODY_BYTES} bytes"
                    ));
                }
            }
            Err(wasi::io::streams::StreamError::Closed) => break,
            Err(e) => return Err(format!("reading the answer failed: {e:?}")),
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The messages of a whole response: a JSON body, or none (a
/// notification's 202). An error status is an answer only when it carries
/// a JSON-RPC message; 401 says that the server wants the user signed in.
fn reply(
    status: u16,
    content_type: &str,
    session: Option<String>,
    text: String,
) -> Result<Reply, String> {
    let json_rpc = content_type.starts_with("application/json")
        && serde_json::from_str::<Value>(&text).is_ok_and(|v| v.get("jsonrpc").is_some());
    if status == 401 {
        return Err(
            "the server answered HTTP 401: log in — it wants an authorization this configuration does not give (an `Authorization` header in the server's `headers`)"
                .into(),
        );
    }
    if !(200..300).contains(&status) && !json_rpc {
        return Err(format!(
            "the server answered HTTP {status}: {}",
            super::preview(&text)
        ));
    }
    let messages = if text.trim().is_empty() {
        Vec::new() // 202 Accepted for a notification
    } else {
        vec![text]
    };
    Ok(Reply {
        session,
        messages,
        stream: None,
    })
}
