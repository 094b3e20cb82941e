//! The requests of a connection the proxy reads (a plain request, or the
//! inside of a TLS tunnel it terminated), one after another: each head is
//! judged and given its secrets ([`Outbound::head`]), and each body is
//! read by its framing — a `Content-Length` up to [`BUFFERED_BODY`] whole
//! (its length set again when a secret went in), a chunked one chunk by
//! chunk — so a stand-in is found wherever it is, on the way to its hosts
//! replaced, anywhere else refused. The answers come back untouched.

use super::super::masks::{Masks, Outbound, STAND_IN_LEN};
use super::Target;
use super::error::ProxyError;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The longest request head (or chunk-size line) read.
const MAX_HEAD: usize = 64 * 1024;
/// A body with a `Content-Length` up to this is read whole before it goes
/// on, so a secret put into it can change its length. A longer one goes on
/// as it comes, and a stand-in in it is refused.
const BUFFERED_BODY: u64 = 1 << 20;
/// What is read from the command at a time.
const PIECE: usize = 64 * 1024;

/// Carries `client`'s requests to `target` (the first bytes already read
/// in `already`) over `upstream`, and the answers back. `plain`: a plain
/// request through the proxy — only the first is carried (the next one
/// may name another host) — else the inside of a terminated tunnel.
pub(super) async fn carry<C, U>(
    client: C,
    upstream: U,
    already: Vec<u8>,
    masks: &Masks,
    target: &Target,
    plain: bool,
) -> Result<(), ProxyError>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let (client_in, mut client_out) = tokio::io::split(client);
    let (mut upstream_in, mut upstream_out) = tokio::io::split(upstream);
    let mut answers = Box::pin(tokio::io::copy(&mut upstream_in, &mut client_out));
    let requests = async {
        let mut reader = Reader {
            stream: client_in,
            buf: already,
        };
        let outbound = masks.toward(&target.host, plain);
        let sent = relay(&mut reader, &mut upstream_out, &outbound, target, plain).await;
        if sent.is_ok() && !plain {
            // The command has no more to send: the server sees the end too.
            let _ = upstream_out.shutdown().await;
        }
        sent
    };
    tokio::pin!(requests);
    enum First {
        Sent(Result<(), ProxyError>),
        Answered(std::io::Result<u64>),
    }
    let first = tokio::select! {
        sent = &mut requests => First::Sent(sent),
        answered = &mut answers => First::Answered(answered),
    };
    let ended = match first {
        First::Sent(Ok(())) => answers
            .await
            .map(drop)
            .map_err(ProxyError::io("carrying the answer")),
        First::Answered(answered) => {
            drop(answers);
            answered
                .map(drop)
                .map_err(ProxyError::io("carrying the answer"))
        }
        First::Sent(Err(why)) => {
            drop(answers);
            let why_text = why.describe();
            tracing::warn!("egress: {why_text}");
            let body = format!("carapace's proxy refused the request: {why_text}\n");
            let answer = format!(
                "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = client_out.write_all(answer.as_bytes()).await;
            let _ = client_out.shutdown().await;
            return Err(why);
        }
    };
    let _ = client_out.shutdown().await;
    ended
}

/// How a request's body ends.
enum Framing {
    None,
    Length {
        bytes: u64,
        waits_for_continue: bool,
    },
    Chunked,
    /// After an upgrade (`Upgrade:`, `CONNECT`) the bytes are another
    /// protocol's until the end.
    Raw,
}

impl Framing {
    /// How the body of the request `head` ends; a request naming another
    /// host than the connection's `target` is refused (a front end shared
    /// by many sites routes by that name: the secret would go there).
    fn of(head: &[u8], target: &Target) -> Result<Self, ProxyError> {
        names_only(head, target)?;
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(head) {
            Ok(httparse::Status::Complete(_)) => {}
            _ => return Err(unreadable_head()),
        }
        let header = |name: &str| {
            request
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
        };
        if header("upgrade").is_some() || request.method == Some("CONNECT") {
            return Ok(Self::Raw);
        }
        if header("transfer-encoding").is_some_and(|t| t.ends_with("chunked")) {
            return Ok(Self::Chunked);
        }
        match header("content-length") {
            Some(length) => Ok(Self::Length {
                bytes: length.parse().map_err(|_| {
                    ProxyError::Unreadable(format!("Content-Length `{length}` is not a number"))
                })?,
                waits_for_continue: header("expect").is_some_and(|e| e == "100-continue"),
            }),
            None => Ok(Self::None),
        }
    }
}

/// Refuses a request head that names another host than `target`, in its
/// `Host` or its absolute-form target.
pub(super) fn names_only(head: &[u8], target: &Target) -> Result<(), ProxyError> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut request = httparse::Request::new(&mut headers);
    if !matches!(request.parse(head), Ok(httparse::Status::Complete(_))) {
        return Err(unreadable_head());
    }
    let host = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| String::from_utf8_lossy(h.value).trim().to_string());
    let named = request.path.and_then(absolute_authority);
    for name in named.into_iter().chain(host) {
        if !super::same_host(&name, target) {
            return Err(ProxyError::Refused(format!(
                "a request on the connection to {} names {name}; refused",
                target.host
            )));
        }
    }
    Ok(())
}

/// The host (and port) an absolute-form request target names: a server
/// goes by it rather than by `Host`.
fn absolute_authority(uri: &str) -> Option<String> {
    let (scheme, rest) = uri.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    authority.rsplit('@').next().map(str::to_string)
}

async fn relay<R, W>(
    reader: &mut Reader<R>,
    upstream: &mut W,
    outbound: &Outbound<'_>,
    target: &Target,
    once: bool,
) -> Result<(), ProxyError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let io = ProxyError::io("sending the request on");
    while let Some(head) = reader.head().await? {
        let framing = Framing::of(&head, target)?;
        let head = outbound
            .head(&head)
            .map_err(ProxyError::Refused)?
            .unwrap_or(head);
        match framing {
            Framing::None => upstream.write_all(&head).await.map_err(io)?,
            Framing::Length {
                bytes,
                waits_for_continue: false,
            } if bytes <= BUFFERED_BODY => {
                let body = reader.exactly(bytes).await?;
                match outbound.bytes(&body).map_err(ProxyError::Refused)? {
                    Some(injected) => {
                        upstream
                            .write_all(&with_length(&head, injected.len()))
                            .await
                            .map_err(io)?;
                        upstream.write_all(&injected).await.map_err(io)?;
                    }
                    None => {
                        upstream.write_all(&head).await.map_err(io)?;
                        upstream.write_all(&body).await.map_err(io)?;
                    }
                }
            }
            Framing::Length { bytes, .. } => {
                upstream.write_all(&head).await.map_err(io)?;
                let mut scan = Scan::new(outbound, false);
                let mut left = bytes;
                while left > 0 {
                    let piece = reader.some(left).await?;
                    left -= piece.len() as u64;
                    upstream.write_all(&scan.push(&piece)?).await.map_err(io)?;
                }
                upstream.write_all(&scan.held).await.map_err(io)?;
            }
            Framing::Chunked => {
                upstream.write_all(&head).await.map_err(io)?;
                chunked(reader, upstream, outbound).await?;
            }
            Framing::Raw => {
                upstream.write_all(&head).await.map_err(io)?;
                let mut scan = Scan::new(outbound, false);
                while let Some(piece) = reader.any().await? {
                    upstream.write_all(&scan.push(&piece)?).await.map_err(io)?;
                }
                return upstream.write_all(&scan.held).await.map_err(io);
            }
        }
        upstream.flush().await.map_err(io)?;
        if once {
            break;
        }
    }
    Ok(())
}

/// A chunked body, chunk by chunk through a [`Scan`] that may put secrets
/// in (each chunk says its own length), then its trailers.
async fn chunked<R, W>(
    reader: &mut Reader<R>,
    upstream: &mut W,
    outbound: &Outbound<'_>,
) -> Result<(), ProxyError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let io = ProxyError::io("sending the request on");
    let mut scan = Scan::new(outbound, true);
    loop {
        let line = reader.line().await?;
        let text = String::from_utf8_lossy(&line);
        let size = text.split(';').next().unwrap_or_default().trim();
        let size = u64::from_str_radix(size, 16).map_err(|_| {
            ProxyError::Unreadable(format!("`{}` is not a chunk size", text.trim()))
        })?;
        if size == 0 {
            break;
        }
        let mut left = size;
        while left > 0 {
            let piece = reader.some(left).await?;
            left -= piece.len() as u64;
            write_chunk(upstream, &scan.push(&piece)?).await?;
        }
        if !reader.line().await?.is_empty() {
            return Err(ProxyError::Unreadable(
                "a chunk does not end where its size says".into(),
            ));
        }
    }
    write_chunk(upstream, &std::mem::take(&mut scan.held)).await?;
    let mut trailers = b"0\r\n".to_vec();
    loop {
        let line = reader.line().await?;
        let line = outbound
            .bytes(&line)
            .map_err(ProxyError::Refused)?
            .unwrap_or(line);
        trailers.extend_from_slice(&line);
        trailers.extend_from_slice(b"\r\n");
        if line.is_empty() {
            break;
        }
    }
    upstream.write_all(&trailers).await.map_err(io)
}

async fn write_chunk(
    upstream: &mut (impl AsyncWrite + Unpin),
    data: &[u8],
) -> Result<(), ProxyError> {
    if data.is_empty() {
        return Ok(());
    }
    let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
    chunk.extend_from_slice(data);
    chunk.extend_from_slice(b"\r\n");
    upstream
        .write_all(&chunk)
        .await
        .map_err(ProxyError::io("sending the request on"))
}

/// `head` with its `Content-Length` set to `length`.
fn with_length(head: &[u8], length: usize) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive("\r\n") {
        let is_length = line
            .split_once(':')
            .is_some_and(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"));
        if is_length {
            out.push_str(&format!("Content-Length: {length}\r\n"));
        } else {
            out.push_str(line);
        }
    }
    out.into_bytes()
}

/// A body read as it comes: what goes on is all but the last
/// `STAND_IN_LEN - 1` bytes, which may be the start of a stand-in the
/// next read completes.
struct Scan<'a> {
    outbound: &'a Outbound<'a>,
    /// Whether a secret may go in (the length may change).
    rewrite: bool,
    held: Vec<u8>,
}

impl<'a> Scan<'a> {
    fn new(outbound: &'a Outbound<'a>, rewrite: bool) -> Self {
        Self {
            outbound,
            rewrite,
            held: Vec::new(),
        }
    }

    fn push(&mut self, data: &[u8]) -> Result<Vec<u8>, ProxyError> {
        self.held.extend_from_slice(data);
        let injected = self
            .outbound
            .bytes(&self.held)
            .map_err(ProxyError::Refused)?;
        if let Some(injected) = injected {
            if !self.rewrite {
                return Err(ProxyError::Refused(format!(
                    "the request carries a stand-in in a body the proxy cannot change (over {} KiB with a Content-Length, sent after `Expect: 100-continue`, or after a protocol upgrade); send it with a shorter body or chunked",
                    BUFFERED_BODY / 1024
                )));
            }
            self.held = injected;
        }
        let cut = self.held.len().saturating_sub(STAND_IN_LEN - 1);
        Ok(self.held.drain(..cut).collect())
    }
}

/// The command's side of the connection, with what was read ahead.
struct Reader<R> {
    stream: R,
    buf: Vec<u8>,
}

/// The first request head on `stream` (through its blank line) and what
/// was read after it: read before the server is reached, to be judged.
pub(super) async fn first_head<R: AsyncRead + Unpin>(
    stream: R,
) -> Result<(Vec<u8>, Vec<u8>), ProxyError> {
    let mut reader = Reader {
        stream,
        buf: Vec::new(),
    };
    match reader.head().await? {
        Some(head) => Ok((head, reader.buf)),
        None => Err(ProxyError::Left(
            "the command closed the tunnel before its request".into(),
        )),
    }
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// Reads more into the buffer; `false` at the end.
    async fn fill(&mut self) -> Result<bool, ProxyError> {
        let mut piece = vec![0u8; PIECE];
        let n = self
            .stream
            .read(&mut piece)
            .await
            .map_err(ProxyError::io("reading the request"))?;
        self.buf.extend_from_slice(&piece[..n]);
        Ok(n > 0)
    }

    /// The next request head, through its blank line; `None` when the
    /// command closed the connection between requests.
    async fn head(&mut self) -> Result<Option<Vec<u8>>, ProxyError> {
        loop {
            if let Some(end) = memchr::memmem::find(&self.buf, b"\r\n\r\n") {
                let rest = self.buf.split_off(end + 4);
                return Ok(Some(std::mem::replace(&mut self.buf, rest)));
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ProxyError::Unreadable(format!(
                    "a request head is over {MAX_HEAD} bytes"
                )));
            }
            if !self.fill().await? {
                return match self.buf.is_empty() {
                    true => Ok(None),
                    false => Err(ProxyError::Left(
                        "the command closed the connection inside a request head".into(),
                    )),
                };
            }
        }
    }

    /// One line without its `\r\n`.
    async fn line(&mut self) -> Result<Vec<u8>, ProxyError> {
        loop {
            if let Some(end) = memchr::memmem::find(&self.buf, b"\r\n") {
                let rest = self.buf.split_off(end + 2);
                let mut line = std::mem::replace(&mut self.buf, rest);
                line.truncate(end);
                return Ok(line);
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ProxyError::Unreadable(
                    "a chunked body's line is too long".into(),
                ));
            }
            if !self.fill().await? {
                return Err(ProxyError::Left(
                    "the command closed the connection inside a chunked body".into(),
                ));
            }
        }
    }

    /// Exactly `bytes` (at most [`BUFFERED_BODY`]).
    async fn exactly(&mut self, bytes: u64) -> Result<Vec<u8>, ProxyError> {
        // At most `BUFFERED_BODY`: it fits.
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        while self.buf.len() < bytes {
            if !self.fill().await? {
                return Err(body_left());
            }
        }
        let rest = self.buf.split_off(bytes);
        Ok(std::mem::replace(&mut self.buf, rest))
    }

    /// Between 1 and `most` bytes.
    async fn some(&mut self, most: u64) -> Result<Vec<u8>, ProxyError> {
        if self.buf.is_empty() && !self.fill().await? {
            return Err(body_left());
        }
        let take = usize::try_from(most)
            .unwrap_or(usize::MAX)
            .min(self.buf.len());
        let rest = self.buf.split_off(take);
        Ok(std::mem::replace(&mut self.buf, rest))
    }

    /// Whatever comes next; `None` at the end.
    async fn any(&mut self) -> Result<Option<Vec<u8>>, ProxyError> {
        if self.buf.is_empty() && !self.fill().await? {
            return Ok(None);
        }
        Ok(Some(std::mem::take(&mut self.buf)))
    }
}

fn unreadable_head() -> ProxyError {
    ProxyError::Unreadable("a request head cannot be read".into())
}

fn body_left() -> ProxyError {
    ProxyError::Left("the command closed the connection inside a request body".into())
}

#[cfg(test)]
mod tests {
    use super::super::super::host::{EgressPattern, canonical};
    use super::super::super::masks::{Mask, Masks};
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn masks() -> Result<(Masks, String), Box<dyn std::error::Error>> {
        let hosts = vec![EgressPattern::parse("api.example.com")?];
        let mask = Mask::new("TOKEN", "the-real-value".into(), hosts);
        let sentinel = mask.sentinel.clone();
        Ok((Masks::new(vec![mask], false), sentinel))
    }

    /// What the server receives when the command sends `sent` to `host`
    /// (then closes its side), what the command is answered, and how the
    /// carrying ended.
    async fn through(
        masks: Masks,
        host: &str,
        sent: String,
    ) -> Result<(String, String, Result<(), String>), Box<dyn std::error::Error>> {
        let host = canonical(host)?;
        let (mut command, client) = tokio::io::duplex(1 << 16);
        let (upstream, mut server) = tokio::io::duplex(1 << 16);
        let target = Target { host, port: 443 };
        let carried = tokio::spawn(async move {
            carry(client, upstream, Vec::new(), &masks, &target, false).await
        });
        command.write_all(sent.as_bytes()).await?;
        command.shutdown().await?;
        let mut received = Vec::new();
        server.read_to_end(&mut received).await?;
        server.shutdown().await?;
        let outcome = carried.await?.map_err(|e| e.describe());
        let mut answered = Vec::new();
        command.read_to_end(&mut answered).await?;
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        Ok((text(received), text(answered), outcome))
    }

    #[tokio::test]
    async fn a_body_gets_its_secret_and_its_length_on_a_kept_connection() -> TestResult {
        let (masks, sentinel) = masks()?;
        let body = format!("{{\"token\":\"{sentinel}\"}}");
        let sent = format!(
            "GET /a HTTP/1.1\r\nHost: api.example.com\r\n\r\nPOST /b HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (received, _, outcome) = through(masks, "api.example.com", sent).await?;
        assert_eq!(outcome, Ok(()));
        assert_eq!(
            received,
            "GET /a HTTP/1.1\r\nHost: api.example.com\r\n\r\nPOST /b HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 26\r\n\r\n{\"token\":\"the-real-value\"}"
        );
        Ok(())
    }

    #[tokio::test]
    async fn a_stand_in_split_across_chunks_is_found() -> TestResult {
        let (masks, sentinel) = masks()?;
        let (a, b) = sentinel.split_at(10);
        let sent = format!(
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\nk={a}\r\n{:x}\r\n{b}&\r\n0\r\n\r\n",
            a.len() + 2,
            b.len() + 1
        );
        let (received, _, outcome) = through(masks, "api.example.com", sent).await?;
        assert_eq!(outcome, Ok(()));
        let (_, body) = received.split_once("\r\n\r\n").unwrap_or_default();
        assert_eq!(body, "11\r\nk=the-real-value&\r\n0\r\n\r\n");
        Ok(())
    }

    /// The second request on a kept connection carries the stand-in in its
    /// body, to a host it is not bound to: refused, and the server gets
    /// only the first.
    #[tokio::test]
    async fn a_stand_in_in_a_later_body_elsewhere_is_refused() -> TestResult {
        let (masks, sentinel) = masks()?;
        let sent = format!(
            "GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: {}\r\n\r\n{sentinel}",
            sentinel.len()
        );
        let (received, answered, outcome) = through(masks, "evil.example.net", sent).await?;
        assert_eq!(received, "GET /a HTTP/1.1\r\n\r\n");
        assert!(answered.starts_with("HTTP/1.1 403"), "{answered}");
        assert!(outcome.is_err_and(|e| e.contains("may be sent only to api.example.com")));
        // Control: the same bytes without the stand-in all go through.
        let (masks, _) = self::masks()?;
        let plain = "GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
        let (received, _, outcome) = through(masks, "evil.example.net", plain.into()).await?;
        assert_eq!((received.as_str(), outcome), (plain, Ok(())));
        Ok(())
    }

    /// A front end shared by many sites routes by the name in the request:
    /// inside the tunnel to the secret's host, a request naming another
    /// (in `Host`, or an absolute target) is refused before it is sent.
    #[tokio::test]
    async fn a_request_naming_another_host_inside_the_tunnel_is_refused() -> TestResult {
        for (second, goes) in [
            ("Host: evil.example.net", false),
            ("Host: evil.example.net:443", false),
            ("Host: [::1]", false),
            // Controls: the same host under another spelling, or no name.
            ("Host: API.Example.com.:443", true),
            ("X: y", true),
        ] {
            let (masks, sentinel) = masks()?;
            let first = "GET /a HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
            let sent =
                format!("{first}GET /b HTTP/1.1\r\n{second}\r\nAuthorization: {sentinel}\r\n\r\n");
            let (received, answered, outcome) = through(masks, "api.example.com", sent).await?;
            if goes {
                assert!(received.contains("the-real-value"), "{second}: {received}");
                continue;
            }
            assert_eq!(received, first, "{second}");
            assert!(answered.starts_with("HTTP/1.1 403"), "{answered}");
            assert!(outcome.is_err_and(|e| e.contains("names")));
        }
        let (masks, sentinel) = masks()?;
        let absolute = format!(
            "GET https://evil.example.net/x HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: {sentinel}\r\n\r\n"
        );
        let (received, _, outcome) = through(masks, "api.example.com", absolute).await?;
        assert!(received.is_empty() && outcome.is_err(), "{received}");
        Ok(())
    }
}
