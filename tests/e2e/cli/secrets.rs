//! Credential files are withheld from every tool in every mode: a project
//! with a `.env`, an `.npmrc` token and a private key by content, a home
//! with `~/.aws/credentials` and `~/.ssh/id_ed25519`, replayed turns trying
//! each path through Read, Grep, Edit and commands. Nothing of them reaches
//! the model with no settings; an allow rule naming the file in the user's
//! settings (never the project's) makes one readable again.

use super::*;
use std::path::PathBuf;

/// Each secret and the file that holds it, relative to the workspace
/// (`~/` for the home directory).
const SECRETS: &[(&str, &str)] = &[
    (".env", "TOKEN=env-secret-111\n"),
    (
        ".npmrc",
        "//registry.npmjs.org/:_authToken=npm-secret-222\n",
    ),
    (
        "deploy/service.json",
        "{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\nkey-secret-555\\n-----END PRIVATE KEY-----\"}\n",
    ),
    (
        "~/.aws/credentials",
        "[default]\naws_secret_access_key = aws-secret-333\n",
    ),
    ("~/proj2/.env", "TOKEN=other-secret-666\n"),
    (
        "~/.ssh/id_ed25519",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nssh-secret-444\n-----END OPENSSH PRIVATE KEY-----\n",
    ),
];

const VALUES: &[&str] = &[
    "env-secret-111",
    "npm-secret-222",
    "aws-secret-333",
    "ssh-secret-444",
    "key-secret-555",
    "other-secret-666",
];

struct Home {
    _dirs: [tempfile::TempDir; 2],
    ws: PathBuf,
    home: PathBuf,
}

impl Home {
    fn new() -> Result<Self, Box<dyn std::error::Error>> {
        let dirs = [tempfile::tempdir()?, tempfile::tempdir()?];
        let ws = std::fs::canonicalize(dirs[0].path())?;
        let home = std::fs::canonicalize(dirs[1].path())?;
        for (path, text) in SECRETS {
            let at = match path.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None => ws.join(path),
            };
            if let Some(parent) = at.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(at, text)?;
        }
        std::fs::write(ws.join(".env.example"), "TOKEN=put-yours-here\n")?;
        std::fs::write(ws.join("app.py"), "TOKEN = read_env('TOKEN')\n")?;
        Ok(Home {
            _dirs: dirs,
            ws,
            home,
        })
    }

    fn path(&self, path: &str) -> String {
        match path.strip_prefix("~/") {
            Some(rest) => self.home.join(rest),
            None => self.ws.join(path),
        }
        .display()
        .to_string()
    }

    fn settings(&self, user: Value, project: Value) -> Result<(), Box<dyn std::error::Error>> {
        for (dir, value) in [
            (self.home.join(".claude"), user),
            (self.ws.join(".claude"), project),
        ] {
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("settings.json"), value.to_string())?;
        }
        Ok(())
    }

    fn run(
        &self,
        replies: Vec<Reply>,
        args: &[&str],
    ) -> Result<(ScriptedServer, support::Run), Box<dyn std::error::Error>> {
        let server = ScriptedServer::start(replies)?;
        let output = self.command(&server).args(args).output()?;
        Ok((server, support::Run::from_output(output)?))
    }

    /// `carapace -p hello` in stream-json against `server`, with this home,
    /// the workspace trusted.
    fn command(&self, server: &ScriptedServer) -> std::process::Command {
        let mut command = support::against(server, &self.ws);
        command
            .env("HOME", &self.home)
            .env("CARAPACE_CONFIG_DIR", self.home.join(".carapace"))
            .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
            .arg("--trust-workspace");
        command
    }
}

fn read(id: &str, path: String) -> Block {
    Block::tool_use(id, "Read", json!({"file_path": path}))
}

/// Everything the model was sent, and everything printed.
fn seen(server: &ScriptedServer, run: &support::Run) -> String {
    let sent: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body["messages"].to_string())
        .collect();
    format!("{}\n{}", sent.join("\n"), run.stdout)
}

/// The tool result the model was sent for `id`.
fn result_of(server: &ScriptedServer, id: &str) -> String {
    for request in server.requests() {
        for message in request.body["messages"].as_array().into_iter().flatten() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["tool_use_id"] == id {
                    return block["content"].to_string();
                }
            }
        }
    }
    String::new()
}

#[test]
fn credential_files_are_withheld_from_every_tool_in_every_mode() -> TestResult {
    for mode in ["default", "acceptEdits", "bypassPermissions"] {
        let home = Home::new()?;
        let mut calls: Vec<Block> = SECRETS
            .iter()
            .enumerate()
            .map(|(i, (path, _))| read(&format!("toolu_read{i}"), home.path(path)))
            .collect();
        calls.push(Block::tool_use(
            "toolu_grep",
            "Grep",
            json!({"pattern": "secret|put-yours|read_env", "path": home.ws.display().to_string(),
                   "output_mode": "content"}),
        ));
        calls.push(Block::tool_use(
            "toolu_edit",
            "Write",
            json!({"file_path": home.path(".env"), "content": "TOKEN=overwritten\n"}),
        ));
        calls.push(Block::tool_use(
            "toolu_cat",
            "Bash",
            json!({"command": "cat .env ~/.aws/credentials"}),
        ));
        // A key a name does not give away, named on a command line.
        calls.push(Block::tool_use(
            "toolu_cat_key",
            "Bash",
            json!({"command": "head -c 200 deploy/service.json"}),
        ));
        // Outside the working directory, where no stand-in covers it.
        calls.push(Block::tool_use(
            "toolu_cat_other",
            "Bash",
            json!({"command": format!("cat < {}", home.path("~/proj2/.env"))}),
        ));
        let (server, run) = home.run(
            vec![Reply::tool_uses(calls), Reply::text("done")],
            &["--permission-mode", mode],
        )?;
        assert_eq!(run.status, Some(0), "{mode}: {}", run.stderr);
        let all = seen(&server, &run);
        for value in VALUES {
            assert!(!all.contains(value), "{mode}: {value} leaked");
        }
        for i in 0..SECRETS.len() {
            let told = result_of(&server, &format!("toolu_read{i}"));
            assert!(
                told.contains("is withheld because it holds"),
                "{mode}: {told}"
            );
        }
        let told = result_of(&server, "toolu_read0");
        assert!(
            told.contains(&format!("Read(/{})", home.path(".env"))),
            "{told}"
        );
        let grep = result_of(&server, "toolu_grep");
        assert!(
            grep.contains("not searched") && grep.contains(".npmrc"),
            "{grep}"
        );
        assert!(grep.contains("service.json"), "found by content: {grep}");
        // The control: what is not a credential is found as ever.
        assert!(
            grep.contains("put-yours-here") && grep.contains("read_env"),
            "{grep}"
        );
        let key = result_of(&server, "toolu_cat_key");
        assert!(key.contains("holds a private key"), "{mode}: {key}");
        let other = result_of(&server, "toolu_cat_other");
        assert!(
            other.contains("is withheld because it holds"),
            "{mode}: {other}"
        );
        let edit = result_of(&server, "toolu_edit");
        assert!(edit.contains("may not write"), "{mode}: {edit}");
        assert_eq!(
            std::fs::read_to_string(home.ws.join(".env"))?,
            "TOKEN=env-secret-111\n"
        );
    }
    Ok(())
}

/// A command the analysis cannot follow (an interpreter) reads the
/// credential files as empty stand-ins (a withheld folder is empty), in
/// bypassPermissions too; the control — the same command reading a
/// template beside them — prints it.
#[test]
fn a_command_sees_empty_stand_ins_for_credential_files() -> TestResult {
    let home = Home::new()?;
    // The command names none of them (a script reads a list), so only the
    // sandbox's stand-ins stand between it and the files.
    let targets = [
        ".env".to_string(),
        ".npmrc".to_string(),
        home.path("~/.aws/credentials"),
        home.path("~/.ssh/id_ed25519"),
        ".env.example".to_string(),
    ];
    std::fs::write(home.ws.join("targets.txt"), targets.join("\n"))?;
    std::fs::write(
        home.ws.join("probe.py"),
        "for p in open('targets.txt').read().split():\n    try: print(p, repr(open(p).read()))\n    except OSError as e: print(p, 'unreadable', e.errno)\n",
    )?;
    let command = "python3 probe.py".to_string();
    let (server, run) = home.run(
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_py",
                "Bash",
                json!({"command": command}),
            )]),
            Reply::text("done"),
        ],
        &["--permission-mode", "bypassPermissions"],
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let told = result_of(&server, "toolu_py");
    assert!(told.contains(".env ''"), "{told}");
    // A folder withheld whole is an empty one: nothing is in it.
    assert!(told.contains("credentials unreadable 2"), "{told}");
    assert!(told.contains("id_ed25519 unreadable 2"), "{told}");
    assert!(
        told.contains("put-yours-here"),
        "a template is not withheld: {told}"
    );
    for value in VALUES {
        assert!(
            !seen(&server, &run).contains(value),
            "{value} leaked: {told}"
        );
    }
    Ok(())
}

/// An allow rule naming the file in the user's settings (or on the command
/// line) makes it readable — by Read and by a command; the same rule in the
/// project's settings does not.
#[test]
fn an_allow_rule_of_the_users_own_names_a_credential_file_readable() -> TestResult {
    for (user, project, flag, readable) in [
        (json!({}), json!({}), None, false),
        (
            json!({}),
            json!({"permissions": {"allow": ["Read(./.env)", "Read(~/.aws/**)"]}}),
            None,
            false,
        ),
        (
            json!({"permissions": {"allow": ["Read(./.env)", "Read(~/.aws/**)"]}}),
            json!({}),
            None,
            true,
        ),
        (
            json!({}),
            json!({}),
            Some("Read(./.env),Read(~/.aws/**)"),
            true,
        ),
    ] {
        let home = Home::new()?;
        home.settings(user.clone(), project.clone())?;
        let calls = vec![
            read("toolu_env", home.path(".env")),
            read("toolu_aws", home.path("~/.aws/credentials")),
            read("toolu_npm", home.path(".npmrc")),
            Block::tool_use(
                "toolu_py",
                "Bash",
                json!({"command": "python3 -c \"print(open('.env').read())\""}),
            ),
        ];
        let mut args = vec!["--permission-mode", "bypassPermissions"];
        if let Some(flag) = flag {
            args.extend(["--allowedTools", flag]);
        }
        let (server, run) = home.run(vec![Reply::tool_uses(calls), Reply::text("done")], &args)?;
        assert_eq!(run.status, Some(0), "{}", run.stderr);
        let shown = |id| result_of(&server, id);
        let case = format!("user {user}, project {project}, flag {flag:?}");
        assert_eq!(
            shown("toolu_env").contains("env-secret-111"),
            readable,
            "{case}"
        );
        assert_eq!(
            shown("toolu_aws").contains("aws-secret-333"),
            readable,
            "{case}"
        );
        assert!(
            !shown("toolu_npm").contains("npm-secret-222"),
            "not named: {case}"
        );
    }
    Ok(())
}

/// carapace's own API key, met in a file the model reads, a command's
/// output and a hook's words, is replaced by a marker naming it before the
/// model, the stream or the transcript sees it; a value of the same shape
/// that is no secret of carapace's (the control) passes untouched.
#[test]
fn the_api_key_is_redacted_wherever_it_would_reach_the_model_or_the_disk() -> TestResult {
    const KEY: &str = "sk-ant-redact-test-0123456789";
    const OTHER: &str = "sk-ant-other-9876543210";
    let home = Home::new()?;
    std::fs::write(
        home.ws.join("notes.sh"),
        format!("export ANTHROPIC_API_KEY={KEY}\nexport OTHER={OTHER}\n"),
    )?;
    let hook = format!(
        "echo '{{\"hookSpecificOutput\": {{\"hookEventName\": \"UserPromptSubmit\", \"additionalContext\": \"the key is {KEY}\"}}}}'"
    );
    home.settings(
        json!({}),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook}]}]}}),
    )?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![
            read("toolu_read", home.path("notes.sh")),
            Block::tool_use("toolu_cat", "Bash", json!({"command": "cat notes.sh"})),
        ]),
        Reply::text("done"),
    ])?;
    let output = home
        .command(&server)
        .env("ANTHROPIC_API_KEY", KEY)
        .args([
            "--permission-mode",
            "bypassPermissions",
            "--include-hook-events",
        ])
        .output()?;
    let run = support::Run::from_output(output)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let all = seen(&server, &run);
    assert!(!all.contains(KEY), "the key leaked: {all}");
    assert!(all.contains(OTHER), "the control was changed: {all}");
    for id in ["toolu_read", "toolu_cat"] {
        let told = result_of(&server, id);
        assert!(
            told.contains("[REDACTED: ANTHROPIC_API_KEY]"),
            "{id}: {told}"
        );
    }
    let first = server.requests()[0].body["messages"].to_string();
    assert!(
        first.contains("the key is [REDACTED: ANTHROPIC_API_KEY]"),
        "{first}"
    );
    let mut stack = vec![home.home.join(".carapace")];
    let mut transcripts = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                let text = std::fs::read_to_string(&path)?;
                assert!(!text.contains(KEY), "{}: {text}", path.display());
                if text.contains("toolu_read") && path.to_string_lossy().contains("projects") {
                    transcripts += 1;
                    assert!(text.contains(OTHER), "the control: {}", path.display());
                }
            }
        }
    }
    assert!(transcripts > 0, "no transcript was written");
    Ok(())
}

/// The rule a refusal names is the one that lifts it: taken from the
/// message of a first run, and given back on the command line, it makes
/// that very file readable (and no other).
#[test]
fn the_rule_a_refusal_names_lifts_it() -> TestResult {
    for (path, value) in [
        (".env", "env-secret-111"),
        ("~/.aws/credentials", "aws-secret-333"),
        ("deploy/service.json", "key-secret-555"),
    ] {
        let home = Home::new()?;
        let calls = || {
            vec![
                read("toolu_one", home.path(path)),
                read("toolu_other", home.path(".npmrc")),
            ]
        };
        let (server, run) = home.run(vec![Reply::tool_uses(calls()), Reply::text("done")], &[])?;
        assert_eq!(run.status, Some(0), "{}", run.stderr);
        let refusal = result_of(&server, "toolu_one");
        let rule = refusal
            .split('`')
            .find(|part| part.starts_with("Read("))
            .ok_or(format!("{path}: no rule named: {refusal}"))?
            .to_string();
        let (server, run) = home.run(
            vec![Reply::tool_uses(calls()), Reply::text("done")],
            &["--allowedTools", &rule],
        )?;
        assert_eq!(run.status, Some(0), "{}", run.stderr);
        let one = result_of(&server, "toolu_one");
        assert!(one.contains(value), "{path} with {rule}: {one}");
        let other = result_of(&server, "toolu_other");
        assert!(!other.contains("npm-secret-222"), "{rule}: {other}");
    }
    Ok(())
}

/// The request heads a test server was sent.
type Heads = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A loopback HTTP server that keeps each request head it is sent and
/// answers with it (an echo, as httpbin's `/headers` does).
fn echo_server() -> Result<(u16, Heads), std::io::Error> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let heads = Heads::default();
    let kept = heads.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = vec![0u8; 8192];
            let n = std::io::Read::read(&mut stream, &mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{head}",
                head.len()
            );
            let _ = std::io::Write::write_all(&mut stream, answer.as_bytes());
            if let Ok(mut all) = kept.lock() {
                all.push(head);
            }
        }
    });
    Ok((port, heads))
}

/// A masked variable: the command holds a stand-in; on the way to its
/// injectHosts the proxy puts the real value in (the server receives it),
/// to another allowed host the stand-in is refused (the server receives
/// nothing) — and the value the server echoes back reaches neither the
/// model nor the transcript.
#[test]
fn a_masked_variable_reaches_only_its_hosts_and_never_the_model() -> TestResult {
    const TOKEN: &str = "real-token-4f9a2c71e0b3";
    let (port, heads) = echo_server()?;
    let home = Home::new()?;
    let settings = json!({"sandbox": {
        "network": {"allowedDomains": ["localhost", "127.0.0.1"]},
        "credentials": {"allowPlaintextInject": true, "envVars": [
            {"name": "SERVICE_TOKEN", "mode": "mask", "injectHosts": ["localhost"]}]}}});
    let curl = |id: &str, host: &str| {
        Block::tool_use(
            id,
            "Bash",
            json!({"command": format!(
                "echo \"held: $SERVICE_TOKEN\"; curl -s -m 5 -H \"Authorization: Bearer $SERVICE_TOKEN\" http://{host}:{port}/ || echo failed"
            )}),
        )
    };
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![curl("toolu_inject", "localhost")]),
        Reply::tool_uses(vec![curl("toolu_other", "127.0.0.1")]),
        Reply::text("done"),
    ])?;
    let output = home
        .command(&server)
        .env("SERVICE_TOKEN", TOKEN)
        .args(["--permission-mode", "bypassPermissions"])
        .args(["--settings", &settings.to_string()])
        .output()?;
    let run = support::Run::from_output(output)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let received = heads.lock().map(|h| h.clone()).unwrap_or_default();
    assert_eq!(
        received.len(),
        1,
        "only the injected request arrives: {received:?}"
    );
    assert!(
        received[0].contains(&format!("Bearer {TOKEN}")),
        "{received:?}"
    );
    let injected = result_of(&server, "toolu_inject");
    assert!(injected.contains("held: CARAPACE_MASKED_"), "{injected}");
    assert!(
        injected.contains("Bearer [REDACTED: SERVICE_TOKEN]"),
        "the echo comes back redacted: {injected}"
    );
    let other = result_of(&server, "toolu_other");
    assert!(other.contains("may be sent only to localhost"), "{other}");
    assert!(!seen(&server, &run).contains(TOKEN), "the token leaked");
    Ok(())
}

/// A server configuration with a certificate for `localhost` and
/// 127.0.0.1 from an authority of the test's own, whose certificate is
/// written in `dir` (the returned path) for carapace to trust.
fn test_tls(
    dir: &std::path::Path,
) -> Result<(std::sync::Arc<rustls::ServerConfig>, PathBuf), Box<dyn std::error::Error>> {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
    let leaf_key = KeyPair::generate()?;
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let leaf = CertificateParams::new(names)?.signed_by(&leaf_key, &ca)?;
    let ca_file = dir.join("test-ca.pem");
    std::fs::write(&ca_file, ca.pem())?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone()], key)?,
    );
    Ok((config, ca_file))
}

/// A loopback HTTPS server for `localhost` with a certificate from an
/// authority of the test's own (written to a file carapace is told to
/// trust through `SSL_CERT_FILE`), keeping each request head it is sent.
fn tls_echo_server(
    dir: &std::path::Path,
) -> Result<(u16, Heads, std::path::PathBuf), Box<dyn std::error::Error>> {
    let (config, ca_file) = test_tls(dir)?;
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
            let mut buf = vec![0u8; 8192];
            let n = std::io::Read::read(&mut tls, &mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
            let _ = std::io::Write::write_all(&mut tls, answer);
            tls.conn.send_close_notify();
            let _ = std::io::Write::flush(&mut tls);
            if let Ok(mut all) = kept.lock() {
                all.push(head);
            }
        }
    });
    Ok((port, heads, ca_file))
}

/// With `tlsTerminate`, a masked variable reaches an HTTPS host among its
/// injectHosts (the server, verified by the proxy against the authority
/// carapace trusts, receives the real value), while the command trusts
/// the proxy's certificate and only ever holds the stand-in; to another
/// allowed host over HTTPS the stand-in is refused.
#[test]
fn a_masked_variable_reaches_its_https_host_through_the_terminating_proxy() -> TestResult {
    const TOKEN: &str = "real-tls-token-8d2e61c0a9";
    let home = Home::new()?;
    let (port, heads, ca_file) = tls_echo_server(&home.home)?;
    let settings = json!({"sandbox": {
        "network": {"allowedDomains": ["localhost", "127.0.0.1"], "tlsTerminate": true},
        "credentials": {"envVars": [
            {"name": "SERVICE_TOKEN", "mode": "mask", "injectHosts": ["localhost"]}]}}});
    let command = format!(
        "curl -sS -m 10 -H \"Authorization: Bearer $SERVICE_TOKEN\" https://localhost:{port}/ || echo failed"
    );
    let elsewhere = format!(
        "curl -sS -m 10 -H \"Authorization: Bearer $SERVICE_TOKEN\" https://127.0.0.1:{port}/ || echo failed"
    );
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_tls",
            "Bash",
            json!({"command": command}),
        )]),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_elsewhere",
            "Bash",
            json!({"command": elsewhere}),
        )]),
        // Inside the tunnel to the secret's host, a request naming
        // another (a front end shared by many sites routes by it).
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_fronted",
            "Bash",
            json!({"command": format!("curl -sS -m 10 -H 'Host: 127.0.0.1' -H \"Authorization: Bearer $SERVICE_TOKEN\" https://localhost:{port}/ || echo failed")}),
        )]),
        // Told nothing by the variables, curl reads the system's store:
        // inside the sandbox it holds the session's authority too.
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_store",
            "Bash",
            json!({"command": format!("env -u SSL_CERT_FILE -u CURL_CA_BUNDLE curl -sS -m 10 https://localhost:{port}/ || echo failed")}),
        )]),
        Reply::text("done"),
    ])?;
    let output = home
        .command(&server)
        .env("SERVICE_TOKEN", TOKEN)
        .env("SSL_CERT_FILE", &ca_file)
        .args(["--permission-mode", "bypassPermissions"])
        .args(["--settings", &settings.to_string()])
        .output()?;
    let run = support::Run::from_output(output)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let told = result_of(&server, "toolu_tls");
    let received = heads.lock().map(|h| h.clone()).unwrap_or_default();
    let refused = result_of(&server, "toolu_elsewhere");
    // The injected request, and the one trusting the system's store.
    assert_eq!(received.len(), 2, "{told} {refused} {received:?}");
    assert!(
        received[0].contains(&format!("Bearer {TOKEN}")),
        "{received:?}"
    );
    assert!(told.contains("ok"), "{told}");
    // Another allowed host, over HTTPS too: the stand-in is refused there,
    // and the server receives nothing of it.
    assert!(
        refused.contains("may be sent only to localhost"),
        "{refused}"
    );
    let fronted = result_of(&server, "toolu_fronted");
    assert!(fronted.contains("names 127.0.0.1; refused"), "{fronted}");
    let store = result_of(&server, "toolu_store");
    assert!(store.contains("ok") && !store.contains("failed"), "{store}");
    assert_eq!(heads.lock().map(|h| h.len()).unwrap_or(0), 2);
    assert!(!seen(&server, &run).contains(TOKEN), "the token leaked");
    Ok(())
}

#[path = "secrets_git.rs"]
mod git;
#[path = "secrets_masked.rs"]
mod masked;
