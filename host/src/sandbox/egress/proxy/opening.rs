//! What a client says first, read whole before anything is connected: a
//! TLS ClientHello (however many records it spans, parsed by rustls's own
//! `Acceptor`) for its server name, an HTTP request head (parsed by
//! httparse, leading blank lines and all) for its `Host`; and a plain
//! request rewritten for the origin server (origin form, one request per
//! connection).

use super::error::ProxyError;
use tokio::io::AsyncReadExt;
use tokio::net::UnixStream;

/// The longest opening read before it is judged.
pub(super) const MAX_OPENING: usize = 64 * 1024;
/// How long a client may take to say enough.
pub(super) const HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(10);

/// One more read from the client onto `into`, within the handshake's time;
/// an end of stream is an error: the client left before saying enough.
pub(super) async fn read_more(
    client: &mut UnixStream,
    into: &mut Vec<u8>,
    buf: &mut [u8],
    silent: &str,
) -> Result<(), ProxyError> {
    let n = tokio::time::timeout(HANDSHAKE, client.read(buf))
        .await
        .map_err(|_| ProxyError::Left(silent.to_string()))?
        .map_err(ProxyError::io("reading from the client"))?;
    if n == 0 {
        return Err(ProxyError::Left(
            "the client closed the connection before saying where it goes".into(),
        ));
    }
    into.extend_from_slice(&buf[..n]);
    Ok(())
}

/// What the client sends first through a tunnel (beginning with `already`,
/// what came after its CONNECT), read until it can be judged, and the host
/// it names inside: a ClientHello's SNI, an HTTP request's `Host`; `None`
/// for a ClientHello without one, or another protocol. A ClientHello or an
/// HTTP head that cannot be read whole is refused.
pub(super) async fn tunnel_opening(
    client: &mut UnixStream,
    already: Vec<u8>,
) -> Result<(Vec<u8>, Option<String>), ProxyError> {
    let mut opening = already;
    let mut buf = [0u8; 4096];
    loop {
        let judged = match opening.first() {
            None => None,
            Some(0x16) => client_hello_name(&opening)?,
            Some(_) => http_host(&opening),
        };
        if let Some(name) = judged {
            return Ok((opening, name));
        }
        if opening.len() >= MAX_OPENING {
            return Err(ProxyError::Refused(
                "the connection's first message is too long to be judged; refused".into(),
            ));
        }
        read_more(
            client,
            &mut opening,
            &mut buf,
            "the client sent nothing judgeable through the tunnel",
        )
        .await?;
    }
}

/// `Some(name)` once `bytes` hold a whole ClientHello (`None` inside when
/// it names no server); `None` while more is needed.
pub(super) fn client_hello_name(bytes: &[u8]) -> Result<Option<Option<String>>, ProxyError> {
    let unreadable = |e: rustls::Error| {
        ProxyError::Unreadable(format!("the TLS ClientHello cannot be read ({e}); refused"))
    };
    let mut acceptor = rustls::server::Acceptor::default();
    let mut cursor = std::io::Cursor::new(bytes);
    while usize::try_from(cursor.position()).unwrap_or(usize::MAX) < bytes.len() {
        match acceptor.read_tls(&mut cursor) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                return Err(ProxyError::Unreadable(format!(
                    "the TLS ClientHello cannot be read ({e}); refused"
                )));
            }
        }
    }
    match acceptor.accept() {
        Ok(Some(accepted)) => Ok(Some(
            accepted.client_hello().server_name().map(str::to_string),
        )),
        Ok(None) => Ok(None),
        Err((e, _)) => Err(unreadable(e)),
    }
}

/// `Some(host)` once `bytes` hold a whole HTTP request head (`None`
/// inside when it has no `Host`), or at once `Some(None)` when they are not
/// HTTP at all (another protocol, judged by its target alone); `None`
/// while a head is still coming.
fn http_host(bytes: &[u8]) -> Option<Option<String>> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => Some(
            request
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("host"))
                .map(|h| String::from_utf8_lossy(h.value).trim().to_string()),
        ),
        Ok(httparse::Status::Partial) => None,
        Err(_) => Some(None),
    }
}

/// A plain proxy request (its whole head, absolute form) as the origin
/// server takes it: origin form, the proxy's own headers dropped, and
/// `Connection: close` — one request per connection, so a second request
/// on it is never carried unjudged.
pub(super) fn origin_form(head: &[u8]) -> Result<Vec<u8>, ProxyError> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => {
            return Err(ProxyError::Unreadable(
                "the request head cannot be read".into(),
            ));
        }
    }
    let (Some(method), Some(uri)) = (request.method, request.path) else {
        return Err(ProxyError::Unreadable(
            "the request has no method or target".into(),
        ));
    };
    let after_scheme = uri.strip_prefix("http://").unwrap_or(uri);
    let path = match after_scheme.find(['/', '?']) {
        Some(at) if uri.starts_with("http://") => &after_scheme[at..],
        None if uri.starts_with("http://") => "/",
        _ => uri,
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    let mut out = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
    for header in request.headers.iter() {
        let hop = [
            "connection",
            "proxy-connection",
            "keep-alive",
            "proxy-authorization",
        ]
        .iter()
        .any(|h| header.name.eq_ignore_ascii_case(h));
        if !hop {
            out.extend_from_slice(header.name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(header.value);
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(out)
}
