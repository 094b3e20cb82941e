//! A CONNECT tunnel the proxy terminates (`sandbox.network.tlsTerminate`):
//! the command's TLS ends at the proxy, which presents a certificate for
//! the host from the session's authority (trusted only inside the
//! sandbox), reads the request, puts each masked secret in place of its
//! stand-in when the host is one of the secret's injectHosts (refusing the
//! request when a stand-in is bound elsewhere), and sends it on over TLS
//! of its own to the real server, verified against the system's trust
//! store (`SSL_CERT_FILE` honoured). Every request on the connection is
//! read (`requests`), bodies included.

use super::super::authority::Termination;
use super::super::masks::Masks;
use super::error::ProxyError;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

/// A stream whose first bytes were already read (the ClientHello the proxy
/// looked at for its server name): they are read again first.
pub(super) struct Prefixed<S> {
    prefix: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    pub(super) fn new(prefix: Vec<u8>, inner: S) -> Self {
        Self {
            prefix,
            at: 0,
            inner,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.at < self.prefix.len() {
            let n = (self.prefix.len() - self.at).min(buf.remaining());
            let at = self.at;
            buf.put_slice(&self.prefix[at..at + n]);
            self.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Serves one terminated tunnel: `client` (its ClientHello in `opening`)
/// to `host`, reached by `upstream` once the request is judged.
pub(super) async fn serve<C, U>(
    termination: &Termination,
    masks: &Masks,
    target: &super::Target,
    client: Prefixed<C>,
    upstream: impl std::future::Future<Output = Result<U, ProxyError>>,
) -> Result<(), ProxyError>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let host = &target.host;
    let name = host.to_string();
    let server = termination
        .authority
        .server_for(&name)
        .map_err(|e| ProxyError::unreachable(format!("no certificate for {name}"), e))?;
    let mut inside = tokio_rustls::TlsAcceptor::from(server)
        .accept(client)
        .await
        .map_err(|e| ProxyError::Io {
            what: format!("the command's TLS to {name} failed"),
            source: e,
        })?;
    let (head, rest) = super::requests::first_head(&mut inside).await?;
    let outbound = masks.toward(host, false);
    // The first request is judged before the server is reached; every
    // request (this one again) gets its secrets as it goes.
    let judged = super::requests::names_only(&head, target)
        .and_then(|()| outbound.head(&head).map_err(ProxyError::Refused));
    if let Err(why) = judged {
        let why_text = why.describe();
        tracing::warn!(host = %name, "egress: {why_text}");
        let body = format!("carapace's proxy refused the request: {why_text}\n");
        let answer = format!(
            "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = inside.write_all(answer.as_bytes()).await;
        let _ = inside.shutdown().await;
        return Err(why);
    }
    let tcp = upstream.await?;
    let server_name = rustls::pki_types::ServerName::try_from(name.clone())
        .map_err(|e| ProxyError::Refused(format!("{name} is not a server name: {e}")))?;
    let outside = tokio_rustls::TlsConnector::from(termination.upstream.clone())
        .connect(server_name, tcp)
        .await
        .map_err(|e| {
            ProxyError::unreachable(
                format!("{name} could not be verified or reached over TLS"),
                e,
            )
        })?;
    let mut already = head;
    already.extend_from_slice(&rest);
    super::requests::carry(inside, outside, already, masks, target, false).await
}
