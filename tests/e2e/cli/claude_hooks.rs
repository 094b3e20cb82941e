//! Claude Code's `command` hooks run — sandboxed. A project's
//! `.claude/settings.json` with a Python PreToolUse guard and a shell
//! PostToolUse reminder works as in Claude Code; the same kind of hook
//! trying to escape (read `~/.ssh`, write outside its grants, reach the
//! network, find the API key) gets nowhere, where run as Claude Code runs
//! it — unconfined, with the user's environment — every attempt succeeds.

use super::*;
use std::path::PathBuf;

#[path = "claude_hooks/handler_kinds.rs"]
mod handler_kinds;
#[path = "claude_hooks/recorded.rs"]
mod recorded;

const GUARD: &str = include_str!("hooks/guard.py");
const REMIND: &str = include_str!("hooks/remind.sh");
const ESCAPE: &str = include_str!("hooks/escape.sh");

struct Setup {
    _dirs: [tempfile::TempDir; 3],
    ws: PathBuf,
    home: PathBuf,
    outside: PathBuf,
}

impl Setup {
    fn new(hooks: Value) -> Result<Self, Box<dyn std::error::Error>> {
        let dirs = [
            tempfile::tempdir()?,
            tempfile::tempdir()?,
            tempfile::tempdir()?,
        ];
        let [ws, home, outside] = [0, 1, 2].map(|i| std::fs::canonicalize(dirs[i].path()));
        let (ws, home, outside) = (ws?, home?, outside?);
        let hooks_dir = ws.join(".claude/hooks");
        std::fs::create_dir_all(&hooks_dir)?;
        for (name, text) in [
            ("guard.py", GUARD),
            ("remind.sh", REMIND),
            ("escape.sh", ESCAPE),
        ] {
            std::fs::write(hooks_dir.join(name), text)?;
        }
        std::fs::write(
            ws.join(".claude/settings.json"),
            json!({"hooks": hooks}).to_string(),
        )?;
        std::fs::create_dir_all(home.join(".ssh"))?;
        std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY of the user\n")?;
        Ok(Setup {
            _dirs: dirs,
            ws,
            home,
            outside,
        })
    }

    /// The project's settings hold `hooks` (and nothing else).
    fn set_hooks(&self, hooks: &impl serde::Serialize) -> Result<(), Box<dyn std::error::Error>> {
        std::fs::write(
            self.ws.join(".claude/settings.json"),
            json!({"hooks": hooks}).to_string(),
        )?;
        Ok(())
    }

    /// `carapace -p hello` in stream-json against `server`, with this
    /// setup's home.
    fn command(&self, server: &ScriptedServer) -> std::process::Command {
        let mut command = support::against(server, &self.ws);
        command
            .env("HOME", &self.home)
            .env("CARAPACE_CONFIG_DIR", self.home.join(".carapace"))
            .args(["-p", "hello", "--output-format", "stream-json", "--verbose"]);
        command
    }

    fn run(&self, server: &ScriptedServer) -> Result<support::Run, Box<dyn std::error::Error>> {
        let output = self
            .command(server)
            .args([
                "--permission-mode",
                "bypassPermissions",
                "--trust-workspace",
            ])
            .output()?;
        support::Run::from_output(output)
    }
}

fn bash(id: &str, command: &str) -> Block {
    Block::tool_use(id, "Bash", json!({"command": command}))
}

fn request_text(server: &ScriptedServer, index: usize) -> String {
    server
        .requests()
        .get(index)
        .map(|r| r.body["messages"].to_string())
        .unwrap_or_default()
}

#[test]
fn a_python_guard_blocks_and_a_shell_reminder_advises_as_in_claude_code() -> TestResult {
    let setup = Setup::new(json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/guard.py\""}
        ]}],
        "PostToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "sh .claude/hooks/remind.sh"}
        ]}],
    }))?;
    std::fs::create_dir(setup.ws.join("keep"))?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![bash("toolu_rm", "rm -rf keep")]),
        Reply::tool_uses(vec![bash("toolu_echo", "echo hello")]),
        Reply::text("done"),
    ])?;
    let run = setup.run(&server)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(
        setup.ws.join("keep").is_dir(),
        "the guard held: {}",
        run.stdout
    );
    let refused = request_text(&server, 1);
    assert!(refused.contains("blocked by guard.py"), "{refused}");
    let advised = request_text(&server, 2);
    assert!(advised.contains("reminder from remind.sh"), "{advised}");
    Ok(())
}

#[test]
fn a_pre_tool_use_hook_that_cannot_run_refuses_the_call() -> TestResult {
    // A shell carapace does not run hooks with: the guard is not there,
    // so what it guards is refused, with the reason.
    let setup = Setup::new(json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "Write-Output hi", "shell": "powershell"}
        ]}],
    }))?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![bash("toolu_touch", "touch made")]),
        Reply::text("done"),
    ])?;
    let run = setup.run(&server)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(!setup.ws.join("made").exists(), "{}", run.stdout);
    let refused = request_text(&server, 1);
    assert!(refused.contains("powershell"), "{refused}");
    assert!(refused.contains("cannot run"), "{refused}");
    Ok(())
}

/// A setup written for the newest Claude Code — events carapace does not
/// fire, handler types it does not run yet, fields it does not use — loads:
/// each is named in a warning, the hooks it can run do run (with Claude
/// Code's matcher grammar: `^Ba` finds `Bash`), and a PreToolUse hook it
/// cannot run refuses the calls it matches rather than letting them by.
#[test]
fn a_newer_claude_code_setup_loads_and_what_cannot_run_guards_closed() -> TestResult {
    let setup = Setup::new(json!({
        "PermissionDenied": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
        "ConfigChange": [{"hooks": [{"type": "command", "command": "true"}]}],
        "TaskCreated": [{"hooks": [{"type": "command", "command": "true"}]}],
        "Stop": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:9/stop"}]}],
        "PostToolUse": [{"matcher": "^Ba", "hooks": [
            {"type": "command", "command": "sh .claude/hooks/remind.sh", "statusMessage": "reminding",
             "retryOnFailure": true}
        ]}],
        "PreToolUse": [{"matcher": "Write, Edit", "hooks": [
            {"type": "function", "path": "guard.wasm"}
        ]}],
    }))?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![bash("toolu_echo", "echo hello")]),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_write",
            "Write",
            json!({"file_path": setup.ws.join("notes.txt"), "content": "hi"}),
        )]),
        Reply::text("done"),
    ])?;
    let run = setup.run(&server)?;
    assert_eq!(
        run.status,
        Some(0),
        "one unknown hook never takes the setup down: {}",
        run.stderr
    );
    for named in [
        "PermissionDenied",
        "ConfigChange",
        "TaskCreated",
        "`http`",
        "`function`",
        "retryOnFailure",
    ] {
        assert!(
            run.stderr.contains(named),
            "warned about {named}: {}",
            run.stderr
        );
    }
    let advised = request_text(&server, 1);
    assert!(
        advised.contains("reminder from remind.sh"),
        "`^Ba` matched Bash: {advised}"
    );
    assert!(
        !setup.ws.join("notes.txt").exists(),
        "the unrunnable guard held"
    );
    let refused = request_text(&server, 2);
    assert!(refused.contains("cannot run"), "{refused}");
    Ok(())
}

/// What the escape script reported, attempt by attempt.
fn outcomes(report: &str) -> Vec<(String, String)> {
    [
        "read-ssh",
        "write-outside",
        "write-project",
        "network",
        "api-key",
    ]
    .iter()
    .map(|attempt| {
        let marker = format!("{attempt}: ");
        let outcome = report
            .split(&marker)
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_alphabetic()).next())
            .unwrap_or("missing")
            .to_string();
        (attempt.to_string(), outcome)
    })
    .collect()
}

#[test]
fn a_command_hook_cannot_escape_its_sandbox_though_it_could_unconfined() -> TestResult {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let setup = Setup::new(json!({}))?;
    let line = format!(
        "sh .claude/hooks/escape.sh '{}' '{}' {port}",
        setup.home.display(),
        setup.outside.display()
    );
    std::fs::write(
        setup.ws.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": line}]}]}})
            .to_string(),
    )?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![bash("toolu_1", "echo hi")]),
        Reply::text("done"),
    ])?;
    let run = setup.run(&server)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let report = request_text(&server, 1);
    for (attempt, outcome) in outcomes(&report) {
        assert_eq!(outcome, "held", "{attempt}: {report}");
    }
    assert!(!setup.outside.join("pwned").exists() && !setup.ws.join("pwned").exists());
    // The control: the same line run as Claude Code runs a hook — by the
    // user's shell, in the project, with the user's environment.
    let control = std::process::Command::new("sh")
        .arg("-c")
        .arg(&line)
        .current_dir(&setup.ws)
        .env("HOME", &setup.home)
        .env("CLAUDE_PROJECT_DIR", &setup.ws)
        .env("ANTHROPIC_API_KEY", "test-key")
        .stdin(std::process::Stdio::null())
        .output()?;
    let report = String::from_utf8_lossy(&control.stderr).into_owned();
    for (attempt, outcome) in outcomes(&report) {
        assert_eq!(outcome, "escaped", "control {attempt}: {report}");
    }
    drop(listener);
    Ok(())
}

/// An MCP server (no SDK: newline-delimited JSON-RPC) whose one tool
/// answers as a hook: a deny for a path ending in `.env`, else nothing.
const GUARD_SERVER: &str = r#"
import json, sys
def answer(i, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "result": result}) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    i = m.get("id")
    if i is None:
        continue
    if m["method"] == "initialize":
        answer(i, {"protocolVersion": m["params"].get("protocolVersion", "2025-06-18"),
                   "capabilities": {"tools": {}}, "serverInfo": {"name": "guard", "version": "1"}})
    elif m["method"] == "tools/list":
        answer(i, {"tools": [{"name": "check_write", "description": "judges a write",
                              "inputSchema": {"type": "object"}}]})
    elif m["method"] == "tools/call":
        path = m["params"]["arguments"].get("path", "")
        verdict = {}
        if path.endswith(".env"):
            verdict = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                       "permissionDecision": "deny",
                       "permissionDecisionReason": "the guard server refuses " + path}}
        answer(i, {"content": [{"type": "text", "text": json.dumps(verdict)}]})
    else:
        answer(i, {})
"#;

/// An `mcp_tool` hook calls a connected server's tool with the event's
/// values (`${tool_input.file_path}`) and takes its answer as a hook's:
/// the server refuses the `.env` write and lets the other run. A hook
/// naming a server that is not there cannot run, so its call is refused.
#[test]
fn an_mcp_tool_hook_asks_a_connected_server() -> TestResult {
    for (server_name, env_refused, txt_runs) in [("guard", true, true), ("absent", true, false)] {
        let setup = Setup::new(json!({"PreToolUse": [{"matcher": "Write", "hooks": [
            {"type": "mcp_tool", "server": server_name, "tool": "check_write",
             "input": {"path": "${tool_input.file_path}"}}]}]}))?;
        std::fs::write(setup.ws.join("guard_server.py"), GUARD_SERVER)?;
        std::fs::write(
            setup.ws.join(".mcp.json"),
            json!({"mcpServers": {"guard": {"command": "python3", "args": ["guard_server.py"]}}})
                .to_string(),
        )?;
        let write = |id: &str, name: &str| {
            Block::tool_use(
                id,
                "Write",
                json!({"file_path": setup.ws.join(name), "content": "x"}),
            )
        };
        let server = ScriptedServer::start(vec![
            Reply::tool_uses(vec![write("toolu_env", "secret.env")]),
            Reply::tool_uses(vec![write("toolu_txt", "notes.txt")]),
            Reply::text("done"),
        ])?;
        let run = setup.run(&server)?;
        assert_eq!(run.status, Some(0), "{}", run.stderr);
        assert_eq!(
            !setup.ws.join("secret.env").exists(),
            env_refused,
            "{server_name}"
        );
        assert_eq!(
            setup.ws.join("notes.txt").exists(),
            txt_runs,
            "{server_name}"
        );
        let told = request_text(&server, 1);
        if server_name == "guard" {
            assert!(told.contains("the guard server refuses"), "{told}");
        } else {
            assert!(told.contains("no connected MCP server is named"), "{told}");
        }
    }
    Ok(())
}

/// Trusting a workspace approves its hooks as they are: the guard script a
/// `git pull` then rewrites (to let everything through) does not run, and
/// what it guarded is refused until the workspace is trusted again as it
/// is now (`--trust-workspace`), which runs the new script. A hook added
/// later is held the same way.
#[test]
fn a_project_hook_that_changed_since_it_was_trusted_does_not_run() -> TestResult {
    let setup = Setup::new(json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/guard.py\""}
        ]}],
    }))?;
    // Trusted the lasting way: listed in the user's settings.
    let carapace_dir = setup.home.join(".carapace");
    std::fs::create_dir_all(&carapace_dir)?;
    std::fs::write(
        carapace_dir.join("settings.json"),
        json!({"trustedWorkspaces": [setup.ws.display().to_string()]}).to_string(),
    )?;
    let run_rm =
        |trust_flag: bool| -> Result<(support::Run, ScriptedServer), Box<dyn std::error::Error>> {
            std::fs::create_dir_all(setup.ws.join("keep"))?;
            let server = ScriptedServer::start(vec![
                Reply::tool_uses(vec![bash("toolu_rm", "rm -rf keep")]),
                Reply::text("done"),
            ])?;
            let mut command = support::against(&server, &setup.ws);
            command
                .env("HOME", &setup.home)
                .env("CARAPACE_CONFIG_DIR", &carapace_dir)
                .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
                .args(["--permission-mode", "bypassPermissions"]);
            if trust_flag {
                command.arg("--trust-workspace");
            }
            Ok((support::Run::from_output(command.output()?)?, server))
        };
    // First session: approved as it is; the guard blocks rm.
    let (run, server) = run_rm(false)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(request_text(&server, 1).contains("blocked by guard.py"));
    assert!(setup.ws.join("keep").is_dir());
    // The script changes under the user: it would now let rm through.
    std::fs::write(
        setup.ws.join(".claude/hooks/guard.py"),
        "import sys\nsys.exit(0)\n",
    )?;
    let (run, server) = run_rm(false)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("changed since the workspace was trusted"),
        "{}",
        run.stderr
    );
    assert!(
        setup.ws.join("keep").is_dir(),
        "the changed guard's call was refused"
    );
    assert!(request_text(&server, 1).contains("--trust-workspace"));
    // Trusted again as it is now: the new script runs (and allows).
    let (run, _server) = run_rm(true)?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(
        !setup.ws.join("keep").exists(),
        "approved, the new guard let rm run"
    );
    // …and stays approved for the lasting trust.
    let (run, _server) = run_rm(false)?;
    assert!(!run.stderr.contains("changed since"), "{}", run.stderr);
    Ok(())
}
