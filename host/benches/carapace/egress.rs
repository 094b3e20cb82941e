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
    Ok(())
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
