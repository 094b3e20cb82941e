//! Signing in to an MCP server behind OAuth 2.1, against the `mcp` Python
//! package's own authorization server on loopback (`guarded_server.py`):
//! the login found by discovery, registered, PKCE, the answer on a
//! loopback redirect (the test plays the browser), the token refreshed
//! when it ends — and the tokens found nowhere the model, a hook, a
//! command or the transcript could see them.

mod common;
#[path = "../e2e/support.rs"]
mod support;

use common::{BoxError, HttpServer, session_prompting};
use scripted_server::{Block, Reply};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use support::{TestResult, text_of};

/// The guarded server, running until dropped; every token it issued is
/// logged outside the workspace.
struct Guarded {
    server: HttpServer,
    tokens: tempfile::TempDir,
}

impl Guarded {
    fn start(first_token_seconds: u32) -> Result<Self, BoxError> {
        let tokens = tempfile::tempdir()?;
        let log = tokens.path().join("issued");
        let seconds = first_token_seconds.to_string();
        let server = HttpServer::start(
            "guarded_server.py",
            &["--first-token-seconds", &seconds],
            &[("TOKENS_LOG", &log)],
        )?;
        Ok(Self { server, tokens })
    }

    fn url(&self) -> &str {
        &self.server.url
    }

    /// Every token issued so far, and whether one was refreshed.
    fn issued(&self) -> Result<(Vec<String>, bool), BoxError> {
        let log = std::fs::read_to_string(self.tokens.path().join("issued")).unwrap_or_default();
        let tokens = log
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(_, token)| token.to_string())
            .collect();
        Ok((tokens, log.lines().any(|l| l.starts_with("refreshed "))))
    }
}

/// `carapace mcp login guarded`, with the test as the person's browser:
/// the printed page is visited, its redirects followed to carapace's
/// loopback callback.
fn login(ws: &Path, config: &Path) -> Result<String, BoxError> {
    let mut child = support::carapace()
        .current_dir(ws)
        .env("CARAPACE_CONFIG_DIR", ws.join(".config"))
        .args(["mcp", "login", "guarded", "--mcp-config"])
        .arg(config)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let mut said = String::new();
    let page = loop {
        let line = lines
            .next()
            .ok_or(format!("no sign-in page was offered: {said}"))??;
        said.push_str(&line);
        said.push('\n');
        if line.starts_with("http://") {
            break line;
        }
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let visited = runtime.block_on(async { reqwest::get(&page).await?.text().await })?;
    assert!(visited.contains("you may close this page"), "{visited}");
    for line in lines {
        said.push_str(&line?);
        said.push('\n');
    }
    let status = child.wait()?;
    assert!(status.success(), "{said}");
    Ok(said)
}

fn call_whoami(ws: &Path, url: &str) -> Result<common::Session, BoxError> {
    // A PreToolUse hook that shows its input, and a command that shows its
    // environment: neither may hold a token.
    let hook =
        json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "cat >&2"}]}]}});
    let settings = hook.to_string();
    session_prompting(
        ws,
        json!({"guarded": {"type": "http", "url": url}}),
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_who",
                "mcp__guarded__whoami",
                json!({}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_env",
                "Bash",
                json!({"command": "env"}),
            )]),
            Reply::text("done"),
        ],
        (
            "who am I",
            &[
                "--allowedTools",
                "mcp__guarded",
                "Bash(env)",
                "--settings",
                &settings,
                "--include-hook-events",
            ],
        ),
    )
}

/// Every file under `dir` but the sign-in store, as text.
fn everything_written(dir: &Path, into: &mut String) -> Result<(), BoxError> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            everything_written(&path, into)?;
        } else if path
            .file_name()
            .is_some_and(|n| n != ".mcp-credentials.json")
        {
            into.push_str(&String::from_utf8_lossy(&std::fs::read(&path)?));
        }
    }
    Ok(())
}

fn signs_in_and_calls(token_seconds: u32) -> TestResult {
    let guarded = Guarded::start(token_seconds)?;
    let ws = tempfile::tempdir()?;
    let config = ws.path().join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"guarded": {"type": "http", "url": guarded.url()}}}).to_string(),
    )?;
    // Before signing in: the server wants a login, and says how.
    let before = call_whoami(ws.path(), guarded.url())?;
    let status = before.server_status("guarded");
    let error = status["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("HTTP 401: log in") && error.contains("carapace mcp login guarded"),
        "{status}"
    );

    login(ws.path(), &config)?;
    let store = ws.path().join(".config").join(".mcp-credentials.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&store)?.permissions().mode() & 0o777,
        0o600
    );

    // The store is the host's alone: Read and a command that name it are
    // refused (it is withheld by name, wherever it is).
    let tries = session_prompting(
        ws.path(),
        json!({}),
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_read",
                "Read",
                json!({"file_path": store}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_cat",
                "Bash",
                json!({"command": "cat .config/.mcp-credentials.json"}),
            )]),
            // Another spelling: a glob the command line does not name.
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_glob",
                "Bash",
                json!({"command": "cat .config/.mcp-cred*; echo END"}),
            )]),
            Reply::text("done"),
        ],
        ("read it", &["--allowedTools", "Read", "Bash"]),
    )?;
    let read = text_of(&tries.result(1, "toolu_read")?);
    let cat = text_of(&tries.result(2, "toolu_cat")?);
    let withheld = "it is withheld because it holds carapace's sign-ins to MCP servers";
    assert!(
        read.starts_with("<tool_use_error>Read may not read") && read.contains(withheld),
        "{read}"
    );
    assert!(
        cat.starts_with("<tool_use_error>The command may not read") && cat.contains(withheld),
        "{cat}"
    );
    // The glob finds an empty stand-in in the file's place.
    let globbed = text_of(&tries.result(3, "toolu_glob")?);
    assert!(
        globbed.contains("END") && !globbed.contains("access_token"),
        "{globbed}"
    );
    let after = call_whoami(ws.path(), guarded.url())?;
    assert_eq!(
        after.server_status("guarded")["status"],
        "connected",
        "{}",
        after.stderr
    );
    assert_eq!(text_of(&after.result(1, "toolu_who")?), "you are signed in");
    let (tokens, refreshed) = guarded.issued()?;
    assert!(tokens.len() >= 2, "{tokens:?}");
    assert_eq!(
        refreshed,
        token_seconds == 0,
        "a token that had ended was refreshed"
    );
    // Nowhere a token could leak: the stream (the model's requests and
    // results, the hook's input, the command's environment), the
    // transcripts, the audit log.
    let mut seen: String = after.out.iter().map(Value::to_string).collect();
    for request in after.server.requests() {
        seen.push_str(&request.body.to_string());
    }
    everything_written(&ws.path().join(".config"), &mut seen)?;
    assert!(
        seen.contains("CARAPACE_") || seen.contains("PATH="),
        "the command's environment was not seen"
    );
    for token in tokens {
        assert!(!seen.contains(&token), "a token leaked");
    }
    // Last (its transcript holds the store it read): the control — an
    // allow rule naming the file lets the same Read read it.
    let rule = format!("Read(/{})", store.display());
    let allowed = session_prompting(
        ws.path(),
        json!({}),
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_read",
                "Read",
                json!({"file_path": store}),
            )]),
            Reply::text("done"),
        ],
        ("read it", &["--allowedTools", &rule]),
    )?;
    let allowed = text_of(&allowed.result(1, "toolu_read")?);
    assert!(
        allowed.contains("access_token"),
        "the control did not read the store: {allowed}"
    );
    Ok(())
}

#[test]
fn a_server_behind_oauth_is_signed_in_to_and_its_token_reaches_only_its_bridge() -> TestResult {
    signs_in_and_calls(3600)
}

#[test]
fn an_ended_token_is_refreshed_before_the_server_is_reached() -> TestResult {
    signs_in_and_calls(0)
}
