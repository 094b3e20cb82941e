//! One Streamable HTTP POST through `wasi:http`.

use super::HttpEndpoint;
use serde_json::Value;
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};

/// The most a response may bring.
const MAX_BODY_BYTES: usize = 16 << 20;

pub(super) struct Reply {
    pub(super) session: Option<String>,
    pub(super) messages: Vec<String>,
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
    let text = read_body(&body.stream().map_err(|()| "no body stream")?)?;
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

/// The messages of a response: a JSON body, an SSE stream's events, or
/// none (a notification's 202); an error status is an answer only when it
/// carries a JSON-RPC error.
fn reply(
    status: u16,
    content_type: &str,
    session: Option<String>,
    text: String,
) -> Result<Reply, String> {
    if !(200..300).contains(&status) {
        if content_type.starts_with("application/json") && !text.trim().is_empty() {
            return Ok(Reply {
                session,
                messages: vec![text],
            });
        }
        return Err(format!(
            "the server answered HTTP {status}: {}",
            super::preview(&text)
        ));
    }
    let messages = if content_type.starts_with("text/event-stream") {
        sse_data(&text)
    } else if text.trim().is_empty() {
        Vec::new() // 202 Accepted for a notification
    } else {
        vec![text]
    };
    Ok(Reply { session, messages })
}

/// The `data` of each event of an SSE body.
fn sse_data(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut data: Vec<&str> = Vec::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                out.push(data.join("\n"));
                data.clear();
            }
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    out
}
