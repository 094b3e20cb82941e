//! The proxy on loopback: a server of the test's own, the proxy on a
//! private socket, clients speaking HTTP CONNECT, plain HTTP and SOCKS5.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A loopback server answering every connection with `pong`, counting
/// connections.
async fn server() -> std::io::Result<(u16, Arc<AtomicUsize>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\npong")
                    .await;
            });
        }
    });
    Ok((port, seen))
}

fn proxy(dir: &Path, allowed: &[&str], denied: &[&str]) -> std::io::Result<EgressProxy> {
    let owned = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let rules = EgressRules::new(&owned(allowed), &owned(denied))
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    EgressProxy::start(&dir.join("egress.sock"), Arc::new(rules))
}

async fn exchange(proxy: &EgressProxy, bytes: &[u8]) -> std::io::Result<String> {
    let mut stream = UnixStream::connect(proxy.socket()).await?;
    stream.write_all(bytes).await?;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut out)).await;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[tokio::test]
async fn an_allowed_name_is_reached_and_every_other_spelling_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (port, seen) = server().await?;
    let p = proxy(dir.path(), &["localhost"], &[])?;
    // Allowed exactly: reached, through CONNECT and as a plain request.
    let tunnel = format!(
        "CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\nGET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
    );
    let said = exchange(&p, tunnel.as_bytes()).await?;
    assert!(
        said.contains("200 Connection established") && said.contains("pong"),
        "{said}"
    );
    let plain =
        format!("GET http://LOCALHOST.:{port}/x HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n");
    assert!(exchange(&p, plain.as_bytes()).await?.contains("pong"));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        2,
        "the control reached the server"
    );
    // The same server under every other spelling: refused, never reached.
    for host in [
        "127.0.0.1",
        "127.1",
        "0x7f.0.0.1",
        "2130706433",
        "0177.0.0.1",
        "[::ffff:127.0.0.1]",
        "[::1]",
    ] {
        let connect = format!("CONNECT {host}:{port} HTTP/1.1\r\n\r\n");
        let said = exchange(&p, connect.as_bytes()).await?;
        assert!(said.starts_with("HTTP/1.1 403"), "{host}: {said}");
        let plain = format!("GET http://{host}:{port}/ HTTP/1.1\r\nHost: {host}\r\n\r\n");
        assert!(
            exchange(&p, plain.as_bytes())
                .await?
                .starts_with("HTTP/1.1 403"),
            "{host}"
        );
    }
    assert_eq!(
        seen.load(Ordering::SeqCst),
        2,
        "no other spelling got through"
    );
    Ok(())
}

#[tokio::test]
async fn a_denied_name_is_never_resolved_or_connected_and_names_must_agree() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (port, seen) = server().await?;
    let p = proxy(
        dir.path(),
        &["localhost", "*.test"],
        &["localhost", "evil.test"],
    )?;
    for target in ["localhost", "LocalHost.", "evil.test"] {
        let said = exchange(
            &p,
            format!("CONNECT {target}:{port} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await?;
        assert!(said.contains("denied"), "{target}: {said}");
    }
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    // A plain request whose Host header names another host.
    let allowed = proxy(&dir.path().join("b").tap_dir()?, &["localhost"], &[])?;
    let lying = format!("GET http://localhost:{port}/ HTTP/1.1\r\nHost: evil.test\r\n\r\n");
    assert!(
        exchange(&allowed, lying.as_bytes())
            .await?
            .starts_with("HTTP/1.1 403")
    );
    // Through a tunnel, a request (or a TLS hello) naming another host.
    let tunnel = format!(
        "CONNECT localhost:{port} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n"
    );
    assert!(
        !exchange(&allowed, tunnel.as_bytes())
            .await?
            .contains("pong")
    );
    let hello = client_hello("evil.test");
    let mut bytes = format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n").into_bytes();
    bytes.extend_from_slice(&hello);
    assert!(!exchange(&allowed, &bytes).await?.contains("pong"));
    assert_eq!(seen.load(Ordering::SeqCst), 0, "nothing reached the server");
    assert_eq!(
        opening::client_hello_name(&client_hello("api.example.com")).map_err(|e| e.describe()),
        Ok(Some(Some("api.example.com".to_string())))
    );
    Ok(())
}

#[tokio::test]
async fn socks5_is_judged_the_same_way() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (port, seen) = server().await?;
    let p = proxy(dir.path(), &["localhost"], &[])?;
    let socks = |address: Vec<u8>| {
        let mut bytes = vec![5, 1, 0, 5, 1, 0];
        bytes.extend(address);
        bytes.extend(port.to_be_bytes());
        bytes.extend_from_slice(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
        bytes
    };
    let mut by_name = vec![3, 9];
    by_name.extend_from_slice(b"localhost");
    assert!(exchange(&p, &socks(by_name)).await?.contains("pong"));
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    let refused = exchange(&p, &socks(vec![1, 127, 0, 0, 1])).await?;
    assert_eq!(
        refused.as_bytes().get(3),
        Some(&2),
        "not allowed by the ruleset"
    );
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    Ok(())
}

/// A minimal TLS 1.2 ClientHello carrying `name` as its SNI.
fn client_hello(name: &str) -> Vec<u8> {
    let name = name.as_bytes();
    let mut sni_ext = vec![0, 0];
    let list_len = name.len() + 3;
    sni_ext.extend(u16::try_from(list_len + 2).unwrap_or(0).to_be_bytes());
    sni_ext.extend(u16::try_from(list_len).unwrap_or(0).to_be_bytes());
    sni_ext.push(0);
    sni_ext.extend(u16::try_from(name.len()).unwrap_or(0).to_be_bytes());
    sni_ext.extend_from_slice(name);
    let mut body = vec![3, 3];
    body.extend([0u8; 32]);
    body.push(0); // session id
    body.extend([0, 2, 0x13, 0x01]); // one cipher suite
    body.extend([1, 0]); // compression: null
    // signature_algorithms (ecdsa_secp256r1_sha256): rustls asks for it.
    let signatures = [0u8, 13, 0, 4, 0, 2, 4, 3];
    body.extend(
        u16::try_from(sni_ext.len() + signatures.len())
            .unwrap_or(0)
            .to_be_bytes(),
    );
    body.extend(sni_ext);
    body.extend(signatures);
    let mut handshake = vec![1];
    handshake.extend(&u32::try_from(body.len()).unwrap_or(0).to_be_bytes()[1..]);
    handshake.extend(body);
    let mut record = vec![0x16, 3, 1];
    record.extend(u16::try_from(handshake.len()).unwrap_or(0).to_be_bytes());
    record.extend(handshake);
    record
}

trait TapDir {
    fn tap_dir(self) -> std::io::Result<PathBuf>;
}

impl TapDir for PathBuf {
    fn tap_dir(self) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self)?;
        Ok(self)
    }
}

/// Answers every question with `answer`, counting them.
struct Answering {
    answer: bool,
    asked: std::sync::Mutex<Vec<String>>,
}

impl EgressAsker for Answering {
    fn allow_host<'a>(
        &'a self,
        host: &'a str,
    ) -> futures::future::BoxFuture<'a, super::super::HostAnswer> {
        Box::pin(async move {
            if let Ok(mut asked) = self.asked.lock() {
                asked.push(host.to_string());
            }
            match self.answer {
                true => super::super::HostAnswer::ForSession,
                false => super::super::HostAnswer::Refused,
            }
        })
    }
}

#[tokio::test]
async fn an_unlisted_host_is_asked_about_once_and_a_denied_one_never() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (port, seen) = server().await?;
    for answer in [true, false] {
        let p = proxy(dir.path(), &[], &["denied.invalid"])?;
        let asker = Arc::new(Answering {
            answer,
            asked: Default::default(),
        });
        let connect = format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n");
        // Before anyone can answer: refused, nothing asked.
        let said = exchange(&p, connect.as_bytes()).await?;
        assert!(said.starts_with("HTTP/1.1 403"), "{said}");
        p.set_asker(asker.clone());
        let before = seen.load(Ordering::SeqCst);
        for _ in 0..2 {
            let said = exchange(&p, connect.as_bytes()).await?;
            assert_eq!(said.contains("pong"), answer, "{said}");
        }
        let said = exchange(&p, b"CONNECT denied.invalid:443 HTTP/1.1\r\n\r\n").await?;
        assert!(said.starts_with("HTTP/1.1 403"), "{said}");
        let asked = asker.asked.lock().map(|a| a.clone()).unwrap_or_default();
        // An approval holds for the session; a refusal is asked again.
        let expected = if answer {
            vec!["localhost"]
        } else {
            vec!["localhost"; 2]
        };
        assert_eq!(asked, expected);
        assert_eq!(
            seen.load(Ordering::SeqCst) - before,
            if answer { 2 } else { 0 }
        );
    }
    Ok(())
}

#[tokio::test]
async fn the_users_own_proxy_judges_in_carapaces_place() -> TestResult {
    let dir = tempfile::tempdir()?;
    // The user's HTTP proxy: a loopback server of the test's own, which
    // answers whatever it is asked.
    let (users_proxy, seen) = server().await?;
    let p = proxy(dir.path(), &[], &[])?;
    let unlisted = b"CONNECT nowhere.invalid:443 HTTP/1.1\r\n\r\n";
    // Control: carapace's own judgement refuses the unlisted host.
    assert!(exchange(&p, unlisted).await?.starts_with("HTTP/1.1 403"));
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    p.set_upstream(crate::sandbox::egress::Upstream {
        http: Some(users_proxy),
        socks: None,
    });
    let said = exchange(&p, unlisted).await?;
    assert!(said.contains("pong"), "carried to the user's proxy: {said}");
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    // SOCKS5 has no proxy of the user's: still judged here (refused).
    let said = exchange(
        &p,
        &[
            5, 1, 0, 5, 1, 0, 3, 14, b'n', b'o', b'w', b'h', b'e', b'r', b'e', b'.', b'i', b'n',
            b'v', b'a', b'l', b'i', 1, 187,
        ],
    )
    .await?;
    assert_eq!(said.as_bytes().get(3), Some(&2), "not allowed: {said:?}");
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    Ok(())
}

/// A loopback server keeping what each connection sent (until it closes
/// its side, or 5 s), answering `pong` to a whole head.
async fn recording_server() -> std::io::Result<(u16, Arc<std::sync::Mutex<Vec<String>>>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\npong")
                    .await;
                let _ = stream.shutdown().await;
                // What else arrives before the peer closes, kept too.
                let _ = tokio::time::timeout(Duration::from_secs(5), async {
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        got.extend_from_slice(&buf[..n]);
                    }
                })
                .await;
                if let Ok(mut kept) = kept.lock() {
                    kept.push(String::from_utf8_lossy(&got).into_owned());
                }
            });
        }
    });
    Ok((port, seen))
}

/// `hello` (one record) as two records, its handshake split in the middle
/// of the server name.
fn split_records(hello: &[u8]) -> Vec<u8> {
    let handshake = &hello[5..];
    let (first, second) = handshake.split_at(handshake.len() - 4);
    let mut out = Vec::new();
    for part in [first, second] {
        out.extend([0x16, 3, 1]);
        out.extend(u16::try_from(part.len()).unwrap_or(0).to_be_bytes());
        out.extend_from_slice(part);
    }
    out
}

#[tokio::test]
async fn a_name_hidden_by_splitting_or_padding_the_first_message_is_still_judged() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (port, seen) = server().await?;
    let p = proxy(dir.path(), &["localhost"], &[])?;
    let connect = format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n");
    // The ClientHello over two records, naming another host: refused.
    let mut split = connect.clone().into_bytes();
    split.extend(split_records(&client_hello("evil.test")));
    assert!(!exchange(&p, &split).await?.contains("pong"));
    // A blank line before the request, the Host in a later line.
    for opening in [
        "\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
        "GET / HTTP/1.1\r\nX-Pad: 1\r\nHost: evil.test\r\n\r\n",
    ] {
        let said = exchange(&p, format!("{connect}{opening}").as_bytes()).await?;
        assert!(!said.contains("pong"), "{opening:?}: {said}");
    }
    assert_eq!(seen.load(Ordering::SeqCst), 0, "nothing reached the server");
    // The control: split the same way, naming the host asked for, it goes.
    let mut fine = connect.into_bytes();
    fine.extend(split_records(&client_hello("localhost")));
    exchange(&p, &fine).await?;
    assert_eq!(
        seen.load(Ordering::SeqCst),
        1,
        "a split hello naming the target is carried"
    );
    Ok(())
}

#[tokio::test]
async fn a_plain_request_goes_in_origin_form_and_alone() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (port, got) = recording_server().await?;
    let p = proxy(dir.path(), &["localhost"], &[])?;
    // A second request on the same connection, for another host.
    let both = format!(
        "GET http://localhost:{port}/a?b=1 HTTP/1.1\r\nHost: localhost:{port}\r\nProxy-Connection: keep-alive\r\n\r\nGET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n"
    );
    let said = exchange(&p, both.as_bytes()).await?;
    assert!(said.contains("pong"), "{said}");
    // The server keeps a connection's bytes once the proxy has closed it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while got.lock().map(|g| g.is_empty()).unwrap_or(true) && std::time::Instant::now() < deadline {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let seen = got.lock().map(|g| g.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let first = &seen[0];
    assert!(
        first.starts_with("GET /a?b=1 HTTP/1.1\r\n"),
        "origin form: {first:?}"
    );
    assert!(first.contains("Connection: close") && !first.contains("Proxy-Connection"));
    assert!(
        !first.contains("evil.test"),
        "the second request was carried: {first:?}"
    );
    // A chunked body is read to its end and carried, and what follows it
    // is not.
    let chunked = format!(
        "POST http://localhost:{port}/ HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET http://evil.test/ HTTP/1.1\r\n\r\n"
    );
    assert!(exchange(&p, chunked.as_bytes()).await?.contains("pong"));
    Ok(())
}
