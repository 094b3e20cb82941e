//! What a command's connection pays for going through carapace's egress
//! proxy (judge, resolve, connect, splice), beside the same request made
//! directly, in the same run: a loopback server answering `pong`.

use super::{BenchResult, report, time_async};
use carapace::sandbox::egress::{EgressProxy, EgressRules};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub async fn egress_benches() -> BenchResult {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf).await;
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\npong",
                    )
                    .await;
            });
        }
    });
    let rules = EgressRules::new(
        &["localhost".into(), "*.example.com".into()],
        &["evil.example.com".into()],
    )?;
    let proxy = Arc::new(EgressProxy::start_private(Arc::new(rules))?);
    let request = format!("GET / HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n");
    let samples = time_async(500, |_| {
        let request = request.clone();
        async move {
            let stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
            exchange(stream, request.as_bytes()).await
        }
    })
    .await?;
    report(
        "egress: a request straight to a loopback server (no proxy)",
        &samples,
        "the floor",
    );
    let samples = time_async(500, |_| {
        let (proxy, request) = (proxy.clone(), request.clone());
        async move {
            let stream = tokio::net::UnixStream::connect(proxy.socket()).await?;
            let connect = format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n{request}");
            exchange(stream, connect.as_bytes()).await
        }
    })
    .await?;
    report(
        "egress: the same through the proxy (CONNECT, judged, resolved, spliced)",
        &samples,
        "what each connection of a command adds, beside the bridge in its namespace",
    );
    let samples = time_async(500, |_| {
        let proxy = proxy.clone();
        async move {
            let stream = tokio::net::UnixStream::connect(proxy.socket()).await?;
            let plain =
                format!("GET http://localhost:{port}/ HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n");
            exchange(stream, plain.as_bytes()).await
        }
    })
    .await?;
    report(
        "egress: a plain request through the proxy (head parsed, origin form, one per connection)",
        &samples,
        "what a plain-HTTP download adds",
    );
    tls_benches().await
}

/// What ending TLS at the proxy (`tlsTerminate`) adds to an HTTPS request:
/// a loopback HTTPS server with a certificate from an authority of the
/// bench's own, reached straight, through the proxy's plain tunnel, and
/// through the terminating proxy (its certificate from the session's
/// authority, the request read, TLS of its own to the server).
async fn tls_benches() -> BenchResult {
    use carapace::sandbox::egress::authority::SessionAuthority;
    let server_authority = SessionAuthority::new()?;
    // A GET's request is its head.
    let port = pong_server(&server_authority, |got| {
        got.windows(4).any(|w| w == b"\r\n\r\n")
    })
    .await?;
    let rules = EgressRules::new(&["localhost".into()], &[])?;
    let plain_proxy = Arc::new(EgressProxy::start_private(Arc::new(rules.clone()))?);
    let terminating = Arc::new(EgressProxy::start_private(Arc::new(rules))?);
    let mut server_roots = rustls::RootCertStore::empty();
    server_roots.add(server_authority.certificate_der())?;
    let session = Arc::new(SessionAuthority::new()?);
    terminating.terminate_tls(session.clone(), server_roots.clone())?;
    let mut session_roots = rustls::RootCertStore::empty();
    session_roots.add(session.certificate_der())?;
    let request = format!("GET / HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n");
    let straight = client(server_roots.clone())?;
    let samples = time_async(300, |_| {
        let (connector, request) = (straight.clone(), request.clone());
        async move {
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
            let tls = connector.connect("localhost".try_into()?, tcp).await?;
            exchange(tls, request.as_bytes()).await
        }
    })
    .await?;
    report(
        "egress: an HTTPS request straight to a loopback server",
        &samples,
        "the floor",
    );
    for (name, proxy, roots, note) in [
        (
            "egress: the same through the proxy's tunnel (TLS spliced, unread)",
            plain_proxy,
            server_roots,
            "without tlsTerminate",
        ),
        (
            "egress: the same through the terminating proxy (tlsTerminate)",
            terminating,
            session_roots,
            "a certificate per host, made once; the request read; TLS of the proxy's own to the server",
        ),
    ] {
        let connector = client(roots)?;
        let samples = time_async(300, |_| {
            let (proxy, connector, request) = (proxy.clone(), connector.clone(), request.clone());
            async move { through_tunnel(&proxy, &connector, port, request.as_bytes()).await }
        })
        .await?;
        report(name, &samples, note);
    }
    body_benches(&server_authority).await
}

/// What reading a request's body costs the terminating proxy: a 64 KiB
/// POST whose body holds a masked secret's stand-in (read whole, the
/// secret put in, its length set again), beside the same POST without one.
async fn body_benches(
    server_authority: &carapace::sandbox::egress::authority::SessionAuthority,
) -> BenchResult {
    use carapace::sandbox::egress::authority::SessionAuthority;
    use carapace::sandbox::egress::{EgressPattern, Mask, Masks};
    // The whole request: its body ends in `END`.
    let port = pong_server(server_authority, |got| got.ends_with(b"END")).await?;
    let rules = EgressRules::new(&["localhost".into()], &[])?;
    let proxy = Arc::new(EgressProxy::start_private(Arc::new(rules))?);
    let mut server_roots = rustls::RootCertStore::empty();
    server_roots.add(server_authority.certificate_der())?;
    let session = Arc::new(SessionAuthority::new()?);
    proxy.terminate_tls(session.clone(), server_roots)?;
    let mask = Mask::new(
        "TOKEN",
        "the-real-secret-value".into(),
        vec![EgressPattern::parse("localhost")?],
    );
    let sentinel = mask.sentinel.clone();
    proxy.set_masks(Arc::new(Masks::new(vec![mask], false)));
    let mut session_roots = rustls::RootCertStore::empty();
    session_roots.add(session.certificate_der())?;
    let connector = client(session_roots)?;
    for (name, token, note) in [
        (
            "egress: a 64 KiB POST through the terminating proxy, no stand-in in it",
            "no-stand-in-here",
            "the body read whole and searched",
        ),
        (
            "egress: the same with a masked secret's stand-in in its body",
            sentinel.as_str(),
            "the body read whole, searched, the secret put in, its length set again",
        ),
    ] {
        let mut body = format!("token={token}&data=").into_bytes();
        body.resize(64 * 1024 - 3, b'x');
        body.extend_from_slice(b"END");
        let mut request = format!(
            "POST / HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(&body);
        let samples = time_async(300, |_| {
            let (proxy, connector, request) = (proxy.clone(), connector.clone(), request.clone());
            async move { through_tunnel(&proxy, &connector, port, &request).await }
        })
        .await?;
        report(name, &samples, note);
    }
    Ok(())
}

/// A loopback HTTPS server for `localhost` (its certificate from
/// `authority`) that reads each request until `whole` says it has it all,
/// then answers `pong`; its port.
async fn pong_server(
    authority: &carapace::sandbox::egress::authority::SessionAuthority,
    whole: fn(&[u8]) -> bool,
) -> Result<u16, Box<dyn std::error::Error>> {
    let acceptor = tokio_rustls::TlsAcceptor::from(authority.server_for("localhost")?);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let mut got = Vec::new();
                let mut buf = [0u8; 16384];
                while !whole(&got) {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tls
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\npong",
                    )
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    Ok(port)
}

/// `request` over TLS (trusting what `connector` trusts) through a CONNECT
/// tunnel of `proxy` to `localhost:port`, its answer read to the end.
async fn through_tunnel(
    proxy: &EgressProxy,
    connector: &tokio_rustls::TlsConnector,
    port: u16,
    request: &[u8],
) -> Result<(), Box<dyn std::error::Error>> {
    let mut stream = tokio::net::UnixStream::connect(proxy.socket()).await?;
    stream
        .write_all(format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .await?;
    let mut established = [0u8; 39];
    stream.read_exact(&mut established).await?;
    let tls = connector.connect("localhost".try_into()?, stream).await?;
    exchange(tls, request).await
}

/// A TLS client trusting `roots` only.
fn client(roots: rustls::RootCertStore) -> Result<tokio_rustls::TlsConnector, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// Sends `bytes` and reads the answer to its end.
async fn exchange(
    mut stream: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    bytes: &[u8],
) -> Result<(), Box<dyn std::error::Error>> {
    stream.write_all(bytes).await?;
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await?;
    std::hint::black_box(out);
    Ok(())
}
