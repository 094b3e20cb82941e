//! How one bridge instance reaches its server for its one operation: the
//! stdio connection the host lent, or Streamable HTTP — each message a
//! POST, what the server answers (one JSON message, or an SSE stream read
//! event by event) queued for the next read.

use crate::carapace::mcp::transport;
use crate::carapace::mcp::types::{HttpEndpoint, Session};
use crate::http;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::VecDeque;

/// How this instance reaches the server, for its one operation.
enum Link {
    /// Lines over the connection the host lent.
    Stdio,
    /// Streamable HTTP: each message is a POST; what the server answers
    /// (one JSON message, or an SSE stream of them) waits in `inbox`.
    Http {
        endpoint: HttpEndpoint,
        session: Option<String>,
        protocol: Option<String>,
        inbox: VecDeque<String>,
        /// SSE answers still open, oldest first.
        streams: VecDeque<http::EventStream>,
    },
}

thread_local! {
    static LINK: RefCell<Link> = const { RefCell::new(Link::Stdio) };
}

/// Uses `session`'s link (HTTP when it has an endpoint) for this operation.
pub fn use_session(session: &Session) {
    LINK.with(|link| {
        *link.borrow_mut() = match &session.endpoint {
            Some(endpoint) => Link::Http {
                endpoint: endpoint.clone(),
                session: session.http_session.clone(),
                protocol: Some(session.protocol_version.clone()),
                inbox: VecDeque::new(),
                streams: VecDeque::new(),
            },
            None => Link::Stdio,
        }
    });
}

pub fn send(message: &Value) -> Result<(), String> {
    let http = LINK.with(|link| match &*link.borrow() {
        Link::Stdio => None,
        Link::Http {
            endpoint,
            session,
            protocol,
            ..
        } => Some((endpoint.clone(), session.clone(), protocol.clone())),
    });
    let Some((endpoint, session, protocol)) = http else {
        return transport::send(&message.to_string())
            .map_err(|e| format!("cannot write to the server: {e}"));
    };
    let reply = http::post(&endpoint, session.as_deref(), protocol.as_deref(), message)?;
    LINK.with(|link| {
        if let Link::Http {
            session,
            inbox,
            streams,
            ..
        } = &mut *link.borrow_mut()
        {
            if reply.session.is_some() {
                *session = reply.session.clone();
            }
            inbox.extend(reply.messages);
            streams.extend(reply.stream);
        }
    });
    Ok(())
}

/// The next message from the server. Over HTTP, what a request brings
/// comes with its POST — whole, or as an SSE stream read event by event
/// (the host's deadline ends a stream that never does); an empty inbox
/// with no stream open is silence.
pub fn receive(timeout_ms: u32) -> Result<Option<String>, String> {
    if !is_http() {
        return transport::receive(timeout_ms);
    }
    loop {
        match next_over_http() {
            Next::Message(message) => return Ok(Some(message)),
            Next::Silence => return Ok(None),
            Next::Ended => continue,
            Next::Broken(e) => return Err(e),
        }
    }
}

/// What reading over HTTP found.
enum Next {
    Message(String),
    /// Nothing queued and no stream open.
    Silence,
    /// The oldest stream ended: the next one is read.
    Ended,
    Broken(String),
}

fn next_over_http() -> Next {
    LINK.with(|link| match &mut *link.borrow_mut() {
        Link::Stdio => Next::Silence,
        Link::Http { inbox, streams, .. } => {
            if let Some(message) = inbox.pop_front() {
                return Next::Message(message);
            }
            let Some(stream) = streams.front_mut() else {
                return Next::Silence;
            };
            match stream.next_event() {
                Ok(Some(message)) => Next::Message(message),
                Ok(None) => {
                    streams.pop_front();
                    Next::Ended
                }
                Err(e) => Next::Broken(e),
            }
        }
    })
}

pub fn is_http() -> bool {
    LINK.with(|link| matches!(&*link.borrow(), Link::Http { .. }))
}

/// The HTTP session id the server gave during this operation.
pub fn http_session() -> Option<String> {
    LINK.with(|link| match &*link.borrow() {
        Link::Http { session, .. } => session.clone(),
        Link::Stdio => None,
    })
}

pub fn set_protocol(version: &str) {
    LINK.with(|link| {
        if let Link::Http { protocol, .. } = &mut *link.borrow_mut() {
            *protocol = Some(version.to_string());
        }
    });
}

/// Requests name no revision in a header until one is agreed (the
/// handshake names it in its body).
pub fn forget_protocol() {
    LINK.with(|link| {
        if let Link::Http { protocol, .. } = &mut *link.borrow_mut() {
            *protocol = None;
        }
    });
}
