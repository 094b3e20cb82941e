//! WebFetch.

use super::*;

/// A loopback server: `/page` is HTML, `/moved` redirects to `/page`,
/// `/away` redirects to another host.
fn web_server() -> Result<u16, BoxError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let n = stream.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]).to_string();
            let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
            let response = match path.as_str() {
                "/page" => {
                    let body = "<html><body><h1>Carapace</h1><p>The <b>port</b> is 9090.</p></body></html>";
                    format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
                }
                "/moved" => "HTTP/1.1 301 Moved\r\nlocation: /page\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string(),
                _ => format!("HTTP/1.1 302 Found\r\nlocation: http://localhost:{port}/page\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"),
            };
            let _ = stream.write_all(response.as_bytes());
        }
    });
    Ok(port)
}

#[tokio::test]
async fn webfetch_returns_markdown_and_respects_the_grant_through_redirects() -> TestResult {
    let port = web_server()?;
    let local = || HostPattern::parse(&format!("127.0.0.1:{port}"));
    // Even in bypass mode, a URL the model chose does not reach this
    // machine unless the user's settings list the address.
    let unlisted = bench(PermissionMode::BypassPermissions, &[]).await?;
    let refused = unlisted
        .call(
            "WebFetch",
            json!({"url": format!("http://127.0.0.1:{port}/page"), "prompt": "x"}),
        )
        .await;
    assert!(
        refused.is_error && !text(&refused).contains("9090"),
        "{refused:?}"
    );
    let b = bench_reaching(PermissionMode::BypassPermissions, &[], vec![local()?]).await?;
    let page = ok_text(
        &b.call(
            "WebFetch",
            json!({"url": format!("http://127.0.0.1:{port}/page"), "prompt": "the port"}),
        )
        .await,
    );
    assert!(
        page.contains("# Carapace") && page.contains("**port**") && page.contains("9090"),
        "{page}"
    );
    let moved = ok_text(
        &b.call(
            "WebFetch",
            json!({"url": format!("http://127.0.0.1:{port}/moved"), "prompt": "x"}),
        )
        .await,
    );
    assert!(
        moved.contains("9090"),
        "a redirect on the same host is followed: {moved}"
    );
    let away = ok_text(
        &b.call(
            "WebFetch",
            json!({"url": format!("http://127.0.0.1:{port}/away"), "prompt": "x"}),
        )
        .await,
    );
    assert!(
        away.contains("different host") && !away.contains("9090"),
        "{away}"
    );

    // Default mode: a host not allowed by a rule is not reached.
    let default = bench(PermissionMode::Default, &[]).await?;
    let denied = default
        .call(
            "WebFetch",
            json!({"url": format!("http://127.0.0.1:{port}/page"), "prompt": "x"}),
        )
        .await;
    assert!(denied.is_error && denied.denial.is_some());
    let allowed = bench_reaching(
        PermissionMode::Default,
        &[(RuleKind::Allow, "WebFetch(domain:127.0.0.1)")],
        vec![local()?],
    )
    .await?;
    assert!(
        ok_text(
            &allowed
                .call(
                    "WebFetch",
                    json!({"url": format!("http://127.0.0.1:{port}/page"), "prompt": "x"})
                )
                .await
        )
        .contains("9090")
    );
    let bad = b
        .call(
            "WebFetch",
            json!({"url": "ftp://example.com/x", "prompt": "x"}),
        )
        .await;
    assert!(bad.is_error);
    Ok(())
}
