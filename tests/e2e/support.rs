//! Running the `carapace` binary against the scripted server.

#![allow(dead_code)] // each test binary uses a different part

use scripted_server::ScriptedServer;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

pub struct Run {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// The binary with an empty environment but for PATH (with the tests'
/// Python first: `tests/support/src/deps.rs`), a private HOME and the
/// shared component cache (so components compile once per test run).
pub fn carapace() -> Command {
    carapace_at(Path::new(env!("CARGO_BIN_EXE_carapace")))
}

/// [`carapace`], with the binary at `program` (a copy another account can
/// run: [`binary_for_other_accounts`]).
pub fn carapace_at(program: &Path) -> Command {
    let mut command = Command::new(program);
    command.env_clear();
    command
        .env("PATH", carapace_test_support::deps::path_with_deps())
        .env("HOME", cache_root().join("home"))
        .env("CARAPACE_CACHE_DIR", cache_root());
    command
}

/// Copies of `carapace` and its sandbox helper in `dir/bin`, for a test
/// that runs them as another account: the build's own binaries sit in the
/// clone, which may be in a folder only its owner can enter (a `0700`
/// home, a `mktemp -d` folder). `dir` and `dir/bin` are made enterable by
/// anyone; the copies are `0755`.
pub fn binary_for_other_accounts(dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin)?;
    for folder in [dir, bin.as_path()] {
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o755))?;
    }
    let programs = [
        env!("CARGO_BIN_EXE_carapace"),
        env!("CARGO_BIN_EXE_carapace-sandbox"),
    ];
    for program in programs {
        let program = Path::new(program);
        let name = program
            .file_name()
            .ok_or_else(|| std::io::Error::other("a binary has a file name"))?;
        std::fs::copy(program, bin.join(name))?;
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(bin.join("carapace"))
}

/// The HOME every `carapace` of [`carapace`] runs with.
pub fn carapace_home() -> PathBuf {
    cache_root().join("home")
}

fn cache_root() -> PathBuf {
    carapace_test_support::cache_root()
}

/// The binary in `cwd` with the scripted server as the API (arguments and
/// further variables are the caller's).
pub fn against(server: &ScriptedServer, cwd: &Path) -> Command {
    against_at(Path::new(env!("CARGO_BIN_EXE_carapace")), server, cwd)
}

/// [`against`], with the binary at `program`.
pub fn against_at(program: &Path, server: &ScriptedServer, cwd: &Path) -> Command {
    let mut command = carapace_at(program);
    command
        .current_dir(cwd)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key");
    command
}

/// Runs `carapace ARGS` in `cwd` with the scripted server as the API.
pub fn run(
    server: &ScriptedServer,
    cwd: &Path,
    args: &[&str],
) -> Result<Run, Box<dyn std::error::Error>> {
    Run::from_output(against(server, cwd).args(args).output()?)
}

impl Run {
    pub fn from_output(output: std::process::Output) -> Result<Self, Box<dyn std::error::Error>> {
        Ok(Run {
            status: output.status.code(),
            stdout: String::from_utf8(output.stdout)?,
            stderr: String::from_utf8(output.stderr)?,
        })
    }
}

/// Every stdout line as JSON.
pub fn lines(stdout: &str) -> Result<Vec<Value>, serde_json::Error> {
    stdout.lines().map(serde_json::from_str).collect()
}

pub fn last_line(stdout: &str) -> Result<Value, Box<dyn std::error::Error>> {
    let line = stdout.lines().last().ok_or("no output")?;
    Ok(serde_json::from_str(line)?)
}

/// The text of a message or a tool_result block: its string content, or
/// its text blocks joined.
/// How the context block at the head of the first user message begins.
pub const CONTEXT_REMINDER: &str =
    "<system-reminder>\nAs you answer the user's questions, you can use the following context:";

pub fn text_of(result: &Value) -> String {
    match &result["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            // Not the context reminder the first user message opens with.
            .filter(|t| !t.starts_with(CONTEXT_REMINDER))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The names of the tools a request offered.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// A free loopback port.
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Waits (up to a minute) until `child` accepts connections on `port`;
/// kills it if it never does.
pub fn wait_for_port(
    child: &mut std::process::Child,
    port: u16,
) -> Result<(), Box<dyn std::error::Error>> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!("nothing listens on port {port} after a minute").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(())
}

/// A recording of Claude Code's (`tests/claude-code/NAME.json`).
pub fn recording(name: &str) -> Result<Value, Box<dyn std::error::Error>> {
    let path = format!(
        "{}/../tests/claude-code/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

/// A recording's files laid out in a scratch folder of the test's own
/// (`ws`, `home`, their parent), whose canonical path is returned.
pub fn lay_out(
    recorded: &Value,
) -> Result<(tempfile::TempDir, PathBuf), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let root = std::fs::canonicalize(scratch.path())?;
    for (path, body) in recorded["files"].as_object().ok_or("no files")? {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().ok_or("no parent")?)?;
        std::fs::write(full, body.as_str().unwrap_or_default())?;
    }
    Ok((scratch, root))
}

/// A request's `system` as one text (a string, or its blocks' texts).
pub fn system_text(system: &Value) -> String {
    match system {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The tool results the second request carried (its last message's
/// blocks), in the order they were sent.
pub fn second_request_results(server: &ScriptedServer) -> Result<Vec<Value>, String> {
    let requests = server.requests();
    let second = requests.get(1).ok_or("no second request")?;
    let messages = second.body["messages"].as_array().ok_or("no messages")?;
    let last = messages.last().ok_or("no message")?;
    Ok(last["content"].as_array().cloned().unwrap_or_default())
}

/// Waits for `child`, killing it (and failing) past `limit`: the bound
/// tells a hang from a slow machine, it is not a speed requirement.
pub fn finish_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
) -> Result<Run, Box<dyn std::error::Error>> {
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait()?.is_none() {
        if std::time::Instant::now() > deadline {
            child.kill()?;
            return Err(format!("the run did not end within {limit:?}").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Run::from_output(child.wait_with_output()?)
}

/// `value` without its `cache_control` marks: where the cache breakpoint
/// sits moves from request to request, and it is not content.
pub fn without_cache_marks(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_marks(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cache_marks).collect()),
        other => other.clone(),
    }
}

/// Waits up to a minute for `done`, or fails naming `what`.
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) -> TestResult {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        if std::time::Instant::now() > deadline {
            return Err(format!("{what} never happened").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(())
}

/// Whether a process whose command line holds `needle` is running (any
/// process this test can see in `/proc`).
pub fn running(needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|line| {
                String::from_utf8_lossy(&line)
                    .replace('\0', " ")
                    .contains(needle)
            })
            .unwrap_or(false)
    })
}
