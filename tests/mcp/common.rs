//! What the MCP tests share: the servers as `tests/setup.sh` installed
//! them, and one print-mode session with them configured.

#![allow(dead_code)] // each test binary uses a different part

use crate::support::{self, free_port, lines, wait_for_port};
use scripted_server::{Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

pub type BoxError = Box<dyn std::error::Error>;

pub fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join("mcp")
        .join("servers")
}

/// A missing toolchain fails the test: it never passes for want of it.
pub fn missing(what: &str) -> BoxError {
    format!("{what} is required; the README's test command installs it").into()
}

/// The npm server, as `tests/setup.sh` installed it from
/// `tests/mcp/servers/package-lock.json`.
pub fn everything() -> Result<Value, BoxError> {
    let entry = "@modelcontextprotocol/server-everything/dist/index.js";
    let installed = carapace_test_support::deps::node_package("mcp-servers", entry)?;
    let entry = installed.join("node_modules").join(entry);
    Ok(json!({"command": "node", "args": [entry, "stdio"]}))
}

/// The Python server (the `mcp` package must be importable).
pub fn notes() -> Result<Value, BoxError> {
    let found = Command::new(carapace_test_support::deps::python())
        .args(["-c", "import mcp.server.mcpserver"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        return Err(missing(
            "the `mcp` Python package (tests/setup.sh installs it)",
        ));
    }
    Ok(
        json!({"command": carapace_test_support::deps::python(), "args": [servers_dir().join("notes_server.py")]}),
    )
}

pub struct Session {
    pub server: ScriptedServer,
    pub status: Option<i32>,
    pub out: Vec<Value>,
    pub stderr: String,
}

/// Runs one print-mode session with `servers` as `--mcp-config`.
pub fn session(servers: Value, replies: Vec<Reply>, args: &[&str]) -> Result<Session, BoxError> {
    let ws = tempfile::tempdir()?;
    session_in(ws.path(), servers, replies, args)
}

/// [`session`] in a given workspace.
pub fn session_in(
    ws: &Path,
    servers: Value,
    replies: Vec<Reply>,
    args: &[&str],
) -> Result<Session, BoxError> {
    session_prompting(ws, servers, replies, ("use the tools", args))
}

/// [`session_in`] with its own prompt.
pub fn session_prompting(
    ws: &Path,
    servers: Value,
    replies: Vec<Reply>,
    (prompt, args): (&str, &[&str]),
) -> Result<Session, BoxError> {
    session_with_env(ws, servers, replies, (prompt, args), &[])
}

/// [`session_prompting`] with variables set for carapace.
pub fn session_with_env(
    ws: &Path,
    servers: Value,
    replies: Vec<Reply>,
    (prompt, args): (&str, &[&str]),
    env: &[(&str, &str)],
) -> Result<Session, BoxError> {
    let config = ws.join("mcp.json");
    std::fs::write(&config, json!({"mcpServers": servers}).to_string())?;
    let server = ScriptedServer::start(replies)?;
    let output = support::carapace()
        .envs(env.iter().copied())
        .current_dir(ws)
        .env("CARAPACE_CONFIG_DIR", ws.join(".config"))
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .args(["-p", prompt, "--output-format", "stream-json", "--verbose"])
        .arg("--mcp-config")
        .arg(&config)
        .args(args)
        .output()?;
    let stdout = String::from_utf8(output.stdout)?;
    Ok(Session {
        server,
        status: output.status.code(),
        out: lines(&stdout)?,
        stderr: String::from_utf8(output.stderr)?,
    })
}

impl Session {
    pub fn init(&self) -> &Value {
        &self.out[0]
    }

    pub fn server_status(&self, name: &str) -> Value {
        self.init()["mcp_servers"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["name"] == name).cloned())
            .unwrap_or(Value::Null)
    }

    /// The tool_result for `id` in request `n` (0-based).
    pub fn result(&self, n: usize, id: &str) -> Result<Value, BoxError> {
        let requests = self.server.requests();
        let request = requests.get(n).ok_or(format!("no request {n}"))?;
        let last = request.body["messages"]
            .as_array()
            .and_then(|m| m.last().cloned())
            .ok_or("no messages")?;
        Ok(last["content"]
            .as_array()
            .and_then(|c| c.iter().find(|r| r["tool_use_id"] == id).cloned())
            .ok_or(format!("no result for {id}"))?)
    }
}

/// A test server from `tests/mcp/servers` on Streamable HTTP
/// (`--http PORT`, then `args`), running until dropped.
pub struct HttpServer {
    child: std::process::Child,
    pub url: String,
}

impl HttpServer {
    pub fn start(script: &str, args: &[&str], env: &[(&str, &Path)]) -> Result<Self, BoxError> {
        notes()?; // the `mcp` package is there
        let port = free_port()?;
        let mut child = Command::new(carapace_test_support::deps::python())
            .arg(servers_dir().join(script))
            .args(["--http", &port.to_string()])
            .args(args)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        wait_for_port(&mut child, port)?;
        Ok(Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        })
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
