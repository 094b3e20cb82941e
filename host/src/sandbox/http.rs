//! Outgoing HTTP for guests (`wasi:http`), gated by the call's grant.
//!
//! A request goes out only if its host and port match a granted host
//! pattern. A host *name* is resolved here and every address it resolves to
//! is vetted: loopback, private, link-local, unspecified, IPv4-mapped
//! versions of those, and this machine's own addresses are refused — as
//! names and as IP literals, whatever the mode — so neither DNS nor a
//! model-chosen URL turns a grant into a way into the local network. The
//! connection is made to the vetted address, not resolved again, with TLS
//! verified against the name. An internal address is reached only through
//! a pattern the grant marks internal: one the user's own settings list, or
//! an MCP server the user configured.

use super::hosts::{HostPattern, is_off_limits};
use bytes::Bytes;
use http_body_util::BodyExt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// What a world that links `wasi:http` keeps in its context: the WASI HTTP
/// state and the gate that refuses whatever the grant does not name.
pub(crate) struct HttpParts {
    pub(crate) ctx: wasmtime_wasi_http::WasiHttpCtx,
    pub(crate) gate: HttpGate,
}

impl HttpParts {
    /// HTTP to exactly the hosts `grant` names.
    pub(crate) fn for_grant(grant: &super::Grant) -> Self {
        Self {
            ctx: wasmtime_wasi_http::WasiHttpCtx::new(),
            gate: HttpGate::new(grant.http_hosts(), grant.internal_http_hosts()),
        }
    }
}

/// The `wasi:http` hooks of one call's store.
pub(crate) struct HttpGate {
    allowed: Vec<HostPattern>,
    /// Of `allowed`, the patterns that may reach internal addresses.
    internal: Vec<HostPattern>,
}

impl HttpGate {
    pub(crate) fn new(allowed: &[HostPattern], internal: &[HostPattern]) -> Self {
        Self {
            allowed: allowed.to_vec(),
            internal: internal.to_vec(),
        }
    }
}

type ResponseFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> ResponseFuture {
        let allowed = self.allowed.clone();
        let internal = self.internal.clone();
        Box::new(async move {
            let target = Target::of(&request, &allowed, &internal)?;
            send(request, options, target).await
        })
    }
}

/// Where a permitted request goes.
struct Target {
    host: String,
    port: u16,
    tls: bool,
    /// The grant lets this host reach an internal address.
    internal_ok: bool,
}

impl Target {
    fn of(
        request: &http::Request<WasiBody>,
        allowed: &[HostPattern],
        internal: &[HostPattern],
    ) -> Result<Self, HttpError> {
        let uri = request.uri();
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(HttpError::HttpRequestUriInvalid),
        };
        let authority = uri.authority().ok_or(HttpError::HttpRequestUriInvalid)?;
        let default_port = if tls { 443 } else { 80 };
        let port = authority.port_u16().unwrap_or(default_port);
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        if !allowed.iter().any(|p| p.matches(&host, port, default_port)) {
            tracing::debug!(%host, port, "outgoing HTTP refused: host not granted");
            return Err(HttpError::HttpRequestDenied);
        }
        Ok(Self {
            internal_ok: internal
                .iter()
                .any(|p| p.matches(&host, port, default_port)),
            host,
            port,
            tls,
        })
    }

    async fn address(&self) -> Result<SocketAddr, HttpError> {
        if let Ok(ip) = self.host.parse::<std::net::IpAddr>() {
            if is_off_limits(ip) && !self.internal_ok {
                tracing::debug!(%ip, "outgoing HTTP refused: an internal address");
                return Err(HttpError::DestinationIpProhibited);
            }
            return Ok(SocketAddr::new(ip, self.port));
        }
        let resolved: Vec<SocketAddr> = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|_| HttpError::DestinationNotFound)?
            .collect();
        if resolved.is_empty() {
            return Err(HttpError::DestinationNotFound);
        }
        // Every address must be public: a name that also resolves inside
        // could be steered there on the next lookup.
        if !self.internal_ok && resolved.iter().any(|a| is_off_limits(a.ip())) {
            tracing::debug!(host = %self.host, ?resolved, "outgoing HTTP refused: the name resolves to an internal address");
            return Err(HttpError::DestinationIpProhibited);
        }
        Ok(resolved[0])
    }
}

trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Io for T {}

async fn send(
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    target: Target,
) -> Result<
    (
        http::Response<WasiBody>,
        Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ),
    HttpError,
> {
    let connect_timeout = options
        .and_then(|o| o.connect_timeout)
        .unwrap_or(Duration::from_secs(30));
    let first_byte_timeout = options
        .and_then(|o| o.first_byte_timeout)
        .unwrap_or(Duration::from_secs(60));
    let address = target.address().await?;
    let tcp = tokio::time::timeout(connect_timeout, tokio::net::TcpStream::connect(address))
        .await
        .map_err(|_| HttpError::ConnectionTimeout)?
        .map_err(|_| HttpError::ConnectionRefused)?;
    let stream: Box<dyn Io> = if target.tls {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        };
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|_| HttpError::TlsProtocolError)?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(target.host.clone())
            .map_err(|_| HttpError::HttpRequestUriInvalid)?;
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|_| HttpError::TlsCertificateError)?;
        Box::new(tls)
    } else {
        Box::new(tcp)
    };
    let (mut sender, connection) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)),
    )
    .await
    .map_err(|_| HttpError::ConnectionTimeout)?
    .map_err(|_| HttpError::ConnectionRefused)?;
    // The request line carries the path only; the Host header carries the
    // name.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    *request.uri_mut() = path.parse().map_err(|_| HttpError::HttpRequestUriInvalid)?;
    let connection: Pin<Box<dyn Future<Output = Result<(), HttpError>> + Send>> =
        Box::pin(async move {
            connection
                .await
                .map_err(|_| HttpError::ConnectionTerminated)
        });
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let _ = done_tx.send(connection.await);
    });
    let response = tokio::time::timeout(first_byte_timeout, sender.send_request(request))
        .await
        .map_err(|_| HttpError::ConnectionReadTimeout)?
        .map_err(|_| HttpError::HttpProtocolError)?;
    let response = response.map(|body| {
        body.map_frame(|frame| frame.map_data(Bytes::from))
            .map_err(|_| HttpError::HttpProtocolError)
            .boxed_unsync()
    });
    let io: Box<dyn Future<Output = Result<(), HttpError>> + Send> = Box::new(async move {
        done_rx
            .await
            .unwrap_or(Err(HttpError::ConnectionTerminated))
    });
    Ok((response, io))
}
