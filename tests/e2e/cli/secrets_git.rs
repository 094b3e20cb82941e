//! `git push` over HTTPS with a masked token: the command's remote URL
//! holds only the stand-in, git sends it base64-encoded in `Basic`
//! credentials, and the terminating proxy puts the real token in on the
//! way to the git server — which `git http-backend` behind a loopback TLS
//! server of the test's own plays, accepting only the real token.

use super::*;
use base64::Engine as _;
use std::io::{Read, Write};
use std::path::Path;

const TOKEN: &str = "ghp-real-git-token-5a7c93e1d4";

/// A smart-HTTP git server on loopback over TLS (`localhost` and
/// 127.0.0.1), serving the bare repositories under `root` through
/// `git http-backend`. Each request's head is kept with the host it named.
/// Requests without the real token's `Basic` credentials are answered 401.
fn git_server(
    dir: &Path,
    root: PathBuf,
) -> Result<(u16, Heads, PathBuf), Box<dyn std::error::Error>> {
    let (config, ca_file) = super::test_tls(dir)?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let heads = Heads::default();
    let kept = heads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let Ok(connection) = rustls::ServerConnection::new(config.clone()) else {
                continue;
            };
            let mut tls = rustls::StreamOwned::new(connection, stream);
            if let Some((head, answer)) = answer_one(&mut tls, &root) {
                let _ = tls.write_all(&answer);
                tls.conn.send_close_notify();
                let _ = tls.flush();
                if let Ok(mut all) = kept.lock() {
                    all.push(head);
                }
            }
        }
    });
    Ok((port, heads, ca_file))
}

/// Reads one request and makes its answer (`None`: it could not be read).
fn answer_one(stream: &mut impl Read, root: &Path) -> Option<(String, Vec<u8>)> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    let end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
        bytes.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let mut body = bytes[end..].to_vec();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    };
    if let Some(length) = header("content-length").and_then(|l| l.parse::<usize>().ok()) {
        while body.len() < length {
            let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
            body.extend_from_slice(&buf[..n]);
        }
    } else if header("transfer-encoding").is_some() {
        body = dechunked(stream, body)?;
    }
    let expected =
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{TOKEN}"));
    if header("authorization") != Some(format!("Basic {expected}")) {
        let answer = "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Basic realm=\"git\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        return Some((head, answer.as_bytes().to_vec()));
    }
    let answer = http_backend(&head, &body, header("content-type"), root)?;
    Some((head, answer))
}

/// A chunked body, `already` being its first bytes.
fn dechunked(stream: &mut impl Read, already: Vec<u8>) -> Option<Vec<u8>> {
    let mut raw = already;
    let mut buf = [0u8; 8192];
    loop {
        if raw.ends_with(b"\r\n0\r\n\r\n") || raw.starts_with(b"0\r\n\r\n") {
            break;
        }
        let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
        raw.extend_from_slice(&buf[..n]);
    }
    let mut body = Vec::new();
    let mut rest = &raw[..];
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).ok()?, 16).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(line_end + 2..line_end + 2 + size)?);
        rest = rest.get(line_end + 4 + size..)?;
    }
}

/// `git http-backend` run as a CGI program for one request.
fn http_backend(
    head: &str,
    body: &[u8],
    content_type: Option<String>,
    root: &Path,
) -> Option<Vec<u8>> {
    let mut words = head.lines().next()?.split_whitespace();
    let (method, target) = (words.next()?, words.next()?);
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut child = std::process::Command::new("git")
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", content_type.unwrap_or_default())
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_USER", "x-access-token")
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(body).ok()?;
    let out = child.wait_with_output().ok()?.stdout;
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| (at, 4));
    let split = split.or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|at| (at, 2)));
    let (at, gap) = split?;
    let cgi_head = String::from_utf8_lossy(&out[..at]).into_owned();
    let payload = &out[at + gap..];
    let mut status = "200 OK".to_string();
    let mut answer = String::new();
    for line in cgi_head.lines() {
        match line.split_once(':') {
            Some((key, value)) if key.eq_ignore_ascii_case("status") => {
                status = value.trim().to_string();
            }
            Some(_) => answer.push_str(&format!("{}\r\n", line.trim_end())),
            None => {}
        }
    }
    let mut bytes = format!(
        "HTTP/1.1 {status}\r\n{answer}content-length: {}\r\nconnection: close\r\n\r\n",
        payload.len()
    )
    .into_bytes();
    bytes.extend_from_slice(payload);
    Some(bytes)
}

fn git(dir: &Path, args: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
    let output = std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()?;
    if !output.status.success() {
        return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// A command pushes with a remote URL holding only the stand-in: the git
/// server (which accepts nothing but the real token) takes the push, the
/// command and the model never see the token; pushing the same way to
/// another allowed host is refused by the proxy, and that server receives
/// no credentials at all.
#[test]
fn git_push_over_https_with_a_masked_token() -> TestResult {
    let home = Home::new()?;
    let root = home.home.join("git-root");
    std::fs::create_dir_all(&root)?;
    git(&root, &["init", "-q", "--bare", "repo.git"])?;
    git(
        &root.join("repo.git"),
        &["config", "http.receivepack", "true"],
    )?;
    let (port, heads, ca_file) = git_server(&home.home, root.clone())?;
    git(&home.ws, &["init", "-q", "-b", "work"])?;
    git(&home.ws, &["add", "app.py"])?;
    git(&home.ws, &["commit", "-q", "-m", "first"])?;
    let commit = git(&home.ws, &["rev-parse", "HEAD"])?;
    let settings = json!({"sandbox": {
        "network": {"allowedDomains": ["localhost", "127.0.0.1"], "tlsTerminate": true},
        "credentials": {"envVars": [
            {"name": "GIT_TOKEN", "mode": "mask", "injectHosts": ["localhost"]}]}}});
    let push = |host: &str| {
        format!(
            "git push https://x-access-token:$GIT_TOKEN@{host}:{port}/repo.git HEAD:refs/heads/main 2>&1; echo pushed=$?"
        )
    };
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_push",
            "Bash",
            json!({"command": push("localhost")}),
        )]),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_elsewhere",
            "Bash",
            json!({"command": push("127.0.0.1")}),
        )]),
        Reply::text("done"),
    ])?;
    let output = home
        .command(&server)
        .env("GIT_TOKEN", TOKEN)
        .env("SSL_CERT_FILE", &ca_file)
        .args(["--permission-mode", "bypassPermissions"])
        .args(["--settings", &settings.to_string()])
        .output()?;
    let run = support::Run::from_output(output)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let pushed = result_of(&server, "toolu_push");
    assert!(pushed.contains("pushed=0"), "{pushed}");
    let landed = git(&root.join("repo.git"), &["rev-parse", "refs/heads/main"])?;
    assert_eq!(landed, commit, "{pushed}");
    let received = heads.lock().map(|h| h.clone()).unwrap_or_default();
    let with_credentials: Vec<&String> = received
        .iter()
        .filter(|h| h.to_ascii_lowercase().contains("authorization:"))
        .collect();
    assert!(!with_credentials.is_empty(), "{received:?}");
    let expected =
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{TOKEN}"));
    for head in &with_credentials {
        assert!(head.contains(&expected), "{head}");
        assert!(head.contains(&format!("localhost:{port}")), "{head}");
    }
    // The same push to another allowed host: refused at the proxy, the
    // server there is sent no credentials (the stand-in included).
    let refused = result_of(&server, "toolu_elsewhere");
    assert!(
        refused.contains("403") && !refused.contains("pushed=0"),
        "{refused}"
    );
    assert!(!pushed.contains(TOKEN) && !seen(&server, &run).contains(TOKEN));
    Ok(())
}
