//! `carapace acp` driven by the official TypeScript ACP client
//! (`@agentclientprotocol/sdk`, pinned in `tests/acp/ts/package.json`,
//! installed by `tests/setup.sh`) through `tests/acp/ts/driver.mjs`: what a
//! client written against the reference SDK sees, on the wire as it parses
//! it.

mod support;

use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::TestResult;

type Failure = Box<dyn std::error::Error>;

/// The driver `name`, beside the SDK `tests/setup.sh` installed from
/// `tests/acp/ts/package-lock.json`.
fn driver_named(name: &str) -> Result<PathBuf, Failure> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/acp/ts")
        .join(name);
    Ok(carapace_test_support::deps::node_driver(
        "acp-ts",
        "@agentclientprotocol/sdk/package.json",
        &source,
    )?)
}

fn driver() -> Result<PathBuf, Failure> {
    driver_named("driver.mjs")
}

/// node with carapace's environment for `server` (a private HOME, the
/// scripted API), which it passes on to carapace.
fn node(server: &ScriptedServer, cwd: &Path) -> Command {
    let carapace = support::against(server, cwd);
    let mut node = Command::new("node");
    node.env_clear().current_dir(cwd);
    for (name, value) in carapace.get_envs() {
        if let Some(value) = value {
            node.env(name, value);
        }
    }
    node
}

#[test]
fn the_typescript_client_runs_a_turn_with_a_question_and_its_updates() -> TestResult {
    let driver = driver()?;
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    let target = cwd.join("from-ts.txt");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_ts",
            "Write",
            json!({"file_path": target, "content": "written for the TypeScript client\n"}),
        )]),
        Reply::text("Done from TypeScript."),
    ])?;
    // carapace's environment (a private HOME, the scripted API) is what
    // node passes on to it.
    let carapace = support::against(&server, &cwd);
    let mut node = Command::new("node");
    node.env_clear().current_dir(&cwd);
    for (name, value) in carapace.get_envs() {
        if let Some(value) = value {
            node.env(name, value);
        }
    }
    node.arg(&driver)
        .arg(env!("CARGO_BIN_EXE_carapace"))
        .arg(&cwd)
        .arg("write the file");
    let out = node.output()?;
    let stdout = String::from_utf8(out.stdout)?;
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim())?;
    assert_eq!(seen["init"]["agentInfo"]["name"], "carapace", "{seen}");
    assert_eq!(seen["answer"]["stopReason"], "end_turn", "{seen}");
    assert_eq!(seen["exit"], 0, "{seen}");
    assert_eq!(
        seen["questions"].as_array().map(Vec::len),
        Some(1),
        "{seen}"
    );
    assert_eq!(
        std::fs::read_to_string(&target)?,
        "written for the TypeScript client\n"
    );
    let kinds: Vec<&str> = seen["updates"]
        .as_array()
        .ok_or("no updates")?
        .iter()
        .filter_map(|u| u["sessionUpdate"].as_str())
        .collect();
    for kind in [
        "available_commands_update",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    Ok(())
}

/// What an editor does with the defaults: fifty sessions opened at once,
/// then a prompt in each at once. Every session opens, and every prompt
/// ends `end_turn` — those beyond the turns a process runs at once wait
/// for a slot instead of being refused.
#[test]
fn fifty_sessions_and_fifty_prompts_at_once_all_end_their_turns() -> TestResult {
    const SESSIONS: usize = 50;
    let driver = driver_named("many.mjs")?;
    let workspace = tempfile::tempdir()?;
    let cwd = workspace.path().canonicalize()?;
    let replies = (0..SESSIONS)
        .map(|n| Reply::text(format!("answer {n}")))
        .collect();
    let server = ScriptedServer::start(replies)?;
    let out = node(&server, &cwd)
        .arg(&driver)
        .arg(env!("CARGO_BIN_EXE_carapace"))
        .arg(&cwd)
        .arg(SESSIONS.to_string())
        .output()?;
    let stdout = String::from_utf8(out.stdout)?;
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim())?;
    assert_eq!(seen["sessions"], json!({"fulfilled": SESSIONS}), "{seen}");
    assert_eq!(seen["prompts"], json!({"end_turn": SESSIONS}), "{seen}");
    assert_eq!(server.requests().len(), SESSIONS);
    assert_eq!(seen["exit"], 0, "{seen}");
    Ok(())
}
