//! Fewer questions without less safety (issue 50), through the binary in
//! print mode against the scripted server: auto mode's classifier — one
//! Messages request that must call `permission_decision` — allows, asks
//! (refused where nobody can be asked) or denies what the rules would ask
//! about; what it cannot reach past (hard_deny rules, ask rules) is never
//! put to it; and what it is shown holds no credential.

#[path = "../e2e/support.rs"]
mod support;

use scripted_server::{Block, RecordedRequest, Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{TestResult, text_of};

/// The model's call: a command that writes in the workspace (the rules
/// ask about it in default mode).
fn make_file() -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        "toolu_make",
        "Bash",
        json!({"command": "tee made.txt </dev/null", "description": "make a file"}),
    )])
}

/// The classifier's answer.
fn decision(decision: &str, reason: &str) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(
        "toolu_judge",
        "permission_decision",
        json!({"decision": decision, "reason": reason}),
    )])
}

struct Ran {
    out: support::Run,
    lines: Vec<Value>,
    requests: Vec<RecordedRequest>,
    made: bool,
    /// carapace's configuration folder for the run (its transcripts).
    config: tempfile::TempDir,
    ws: tempfile::TempDir,
}

/// `carapace -p PROMPT` in auto mode (stream-json) with `replies`, and
/// `args` after.
fn auto_run(
    replies: Vec<Reply>,
    prompt: &str,
    args: &[&str],
) -> Result<Ran, Box<dyn std::error::Error>> {
    let (ws, config) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let server = ScriptedServer::start(replies)?;
    let mut command = support::against(&server, ws.path());
    command
        .env("CARAPACE_CONFIG_DIR", config.path())
        .args(["-p", prompt, "--output-format", "stream-json", "--verbose"])
        .args(["--permission-mode", "auto"])
        .args(args);
    let out = support::Run::from_output(command.output()?)?;
    let lines = support::lines(&out.stdout)?;
    Ok(Ran {
        made: ws.path().join("made.txt").exists(),
        requests: server.requests(),
        out,
        lines,
        config,
        ws,
    })
}

impl Ran {
    fn decisions(&self) -> Vec<&Value> {
        self.lines
            .iter()
            .filter(|l| l["subtype"] == "auto_mode_decision")
            .collect()
    }

    /// The call's result, in the request after the classifier's.
    fn make_result(&self) -> Result<Value, String> {
        let request = self.requests.last().ok_or("no request")?;
        let last = request.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .ok_or("no message")?;
        last["content"]
            .as_array()
            .and_then(|c| c.iter().find(|b| b["tool_use_id"] == "toolu_make"))
            .cloned()
            .ok_or_else(|| "no result of the call".to_string())
    }
}

#[test]
fn the_classifier_allows_a_call_the_rules_would_ask_about() -> TestResult {
    let ran = auto_run(
        vec![
            make_file(),
            decision("allow", "the user asked for the file"),
            Reply::text("done"),
        ],
        "make the file made.txt",
        &[],
    )?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    assert!(ran.made, "the allowed call ran");
    // The classifier's request: the decision tool forced, the user's
    // prompt and the call shown.
    let judged = &ran.requests.get(1).ok_or("no classifier request")?.body;
    assert_eq!(
        judged["tool_choice"],
        json!({"type": "tool", "name": "permission_decision"})
    );
    assert_eq!(judged["tools"].as_array().map(Vec::len), Some(1));
    let shown = judged["messages"].to_string();
    assert!(shown.contains("make the file made.txt"), "{shown}");
    assert!(shown.contains("tee made.txt </dev/null"), "{shown}");
    let told = ran.decisions();
    assert_eq!(told.len(), 1, "{:?}", ran.lines);
    assert_eq!(told[0]["decision"], "allow");
    assert_eq!(told[0]["tool_use_id"], "toolu_make");
    assert_eq!(told[0]["reason"], "the user asked for the file");
    // The transcript keeps the decision, and a resumed session reads past
    // it.
    let kept = transcript_text(ran.config.path())?;
    assert!(
        kept.contains(r#""type":"auto_mode_decision""#)
            && kept.contains(r#""reason":"the user asked for the file""#),
        "{kept}"
    );
    let session_id = ran.lines[0]["session_id"].as_str().ok_or("no session id")?;
    let server = ScriptedServer::start(vec![Reply::text("resumed")])?;
    let resumed = support::Run::from_output(
        support::against(&server, ran.ws.path())
            .env("CARAPACE_CONFIG_DIR", ran.config.path())
            .args(["-p", "again", "--resume", session_id])
            .output()?,
    )?;
    assert_eq!(resumed.status, Some(0), "{}", resumed.stderr);
    Ok(())
}

/// Every transcript under `config`, one after another.
fn transcript_text(config: &std::path::Path) -> Result<String, Box<dyn std::error::Error>> {
    let mut text = String::new();
    let mut folders = vec![config.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let path = entry?.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                text.push_str(&std::fs::read_to_string(&path)?);
            }
        }
    }
    Ok(text)
}

#[test]
fn the_classifier_denies_and_its_reason_is_the_result() -> TestResult {
    let ran = auto_run(
        vec![
            make_file(),
            decision("deny", "nobody asked for files"),
            Reply::text("done"),
        ],
        "say hello",
        &[],
    )?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    assert!(!ran.made, "the denied call did not run");
    let result = ran.make_result()?;
    assert_eq!(result["is_error"], true);
    assert_eq!(
        text_of(&result),
        "<tool_use_error>Auto mode refused this Bash call: nobody asked for files</tool_use_error>"
    );
    let denied = ran
        .lines
        .iter()
        .find(|l| l["subtype"] == "permission_denied")
        .ok_or("no permission_denied line")?;
    assert_eq!(denied["decided_by"], "auto_mode");
    assert_eq!(ran.decisions()[0]["decision"], "deny");
    Ok(())
}

/// Ask, or an answer that is not a decision: in print mode nobody can be
/// asked, so the call is refused, saying why.
#[test]
fn what_the_classifier_leaves_to_the_user_is_refused_in_print_mode() -> TestResult {
    let garbage = Reply::text("allow");
    for (answer, why) in [
        (
            decision("ask", "deleting is the user's call"),
            "deleting is the user's call",
        ),
        (garbage, "the classifier did not call permission_decision"),
    ] {
        let ran = auto_run(
            vec![make_file(), answer, Reply::text("done")],
            "tidy up",
            &[],
        )?;
        assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
        assert!(!ran.made, "nobody approved the call");
        let text = text_of(&ran.make_result()?);
        assert!(
            text.contains(&format!("Auto mode left it to the user: {why}."))
                && text.contains("cannot ask"),
            "{text}"
        );
        assert_eq!(ran.decisions()[0]["decision"], "ask");
    }
    Ok(())
}

/// A hard_deny entry written as a rule is a deny rule in auto mode: the
/// classifier is never asked, and an allow rule for the same call does
/// not reach past it. The control: the same settings outside auto mode
/// (hard_deny is auto mode's) let the allowed call run.
#[test]
fn a_hard_deny_rule_is_never_put_to_the_classifier() -> TestResult {
    let settings = json!({"autoMode": {
        "hard_deny": ["Bash(tee:*)", "Never drop the production database"],
    }})
    .to_string();
    let args = ["--settings", &settings, "--allowedTools", "Bash(tee:*)"];
    let ran = auto_run(
        vec![make_file(), Reply::text("done")],
        "make the file",
        &args,
    )?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    assert!(!ran.made);
    assert_eq!(ran.requests.len(), 2, "no classifier request");
    let text = text_of(&ran.make_result()?);
    assert!(text.contains("rule `Bash(tee:*)`"), "{text}");
    assert!(ran.decisions().is_empty());

    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![make_file(), Reply::text("done")])?;
    let mut command = support::against(&server, ws.path());
    command.args(["-p", "make the file", "--permission-mode", "default"]);
    let out = support::Run::from_output(command.args(args).output()?)?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(ws.path().join("made.txt").exists(), "the control ran");
    Ok(())
}

/// The classifier reads the hard_deny sentences in its instructions, and
/// an ask rule's question never goes to it.
#[test]
fn an_ask_rule_is_asked_not_classified_and_sentences_reach_the_classifier() -> TestResult {
    let settings = json!({"permissions": {"ask": ["Bash(tee:*)"]}}).to_string();
    let ran = auto_run(
        vec![make_file(), Reply::text("done")],
        "make it",
        &["--settings", &settings],
    )?;
    assert!(!ran.made);
    assert_eq!(ran.requests.len(), 2, "no classifier request");

    let settings = json!({"autoMode": {
        "hard_deny": ["Never drop the production database"],
        "environment": ["This is a throwaway VM"],
    }})
    .to_string();
    let replies = vec![make_file(), decision("allow", "fine"), Reply::text("done")];
    let ran = auto_run(replies, "make it", &["--settings", &settings])?;
    assert!(ran.made);
    let system = ran.requests[1].body["system"].to_string();
    assert!(
        system.contains("- Never drop the production database"),
        "{system}"
    );
    assert!(system.contains("- This is a throwaway VM"), "{system}");
    Ok(())
}

/// carapace's own credential never reaches the classifier, though the
/// prompt and the call name it. The control: the same text when it is not
/// carapace's credential reaches the classifier as written.
#[test]
fn the_classifier_is_shown_no_credential() -> TestResult {
    let key = "sk-ant-api03-classifier-must-not-see-this";
    for (api_key, shown) in [(key, false), ("test-key", true)] {
        let prompt = format!("make the file; my key is {key}");
        let call = Reply::tool_uses(vec![Block::tool_use(
            "toolu_make",
            "Bash",
            json!({"command": format!("tee made.txt </dev/null # {key}")}),
        )]);
        let ws = tempfile::tempdir()?;
        let replies = vec![call, decision("allow", "ok"), Reply::text("done")];
        let server = ScriptedServer::start(replies)?;
        let mut command = support::against(&server, ws.path());
        command.env("ANTHROPIC_API_KEY", api_key).args([
            "-p",
            &prompt,
            "--permission-mode",
            "auto",
        ]);
        let out = support::Run::from_output(command.output()?)?;
        assert_eq!(out.status, Some(0), "{}", out.stderr);
        let requests = server.requests();
        let judged = requests
            .get(1)
            .ok_or("no classifier request")?
            .body
            .to_string();
        assert_eq!(judged.contains(key), shown, "{judged}");
        assert!(judged.contains("tee made.txt </dev/null"), "{judged}");
    }
    Ok(())
}

/// As Claude Code's, auto mode writes inside the working directories
/// without the classifier (what acceptEdits allows); a write outside them
/// is put to it — the control, so the test sees the classifier asked.
#[test]
fn writing_in_the_workspace_needs_no_classifier_and_outside_it_does() -> TestResult {
    let outside = tempfile::tempdir()?;
    let elsewhere = outside.path().join("elsewhere.txt");
    let write = |id: &str, path: &str| {
        Reply::tool_uses(vec![Block::tool_use(
            id,
            "Write",
            json!({"file_path": path, "content": "x"}),
        )])
    };
    let ws = tempfile::tempdir()?;
    let inside = ws.path().join("inside.txt");
    // `touch` in the workspace is a write acceptEdits allows: Claude
    // Code's auto mode runs it without its classifier too.
    let touched = Reply::tool_uses(vec![Block::tool_use(
        "toolu_touch",
        "Bash",
        json!({"command": "touch touched.txt"}),
    )]);
    let replies = vec![
        write("toolu_in", &inside.to_string_lossy()),
        touched,
        write("toolu_out", &elsewhere.to_string_lossy()),
        decision("deny", "outside the project"),
        Reply::text("done"),
    ];
    let server = ScriptedServer::start(replies)?;
    let mut command = support::against(&server, ws.path());
    command.args(["-p", "write notes", "--permission-mode", "auto"]);
    let out = support::Run::from_output(command.output()?)?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(inside.exists(), "the write inside ran");
    assert!(ws.path().join("touched.txt").exists(), "the touch ran");
    assert!(
        !elsewhere.exists(),
        "the classifier refused the write outside"
    );
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        5,
        "one classifier request, for the write outside"
    );
    let judged = requests[3].body["messages"].to_string();
    assert!(judged.contains("elsewhere.txt"), "{judged}");
    Ok(())
}

/// In auto mode a command's connection to a host no rule names goes to the
/// classifier, as Claude Code's auto mode sends it: allowed, the host
/// answers; refused, the next host is not reached — in print mode, where
/// nobody else could be asked.
#[test]
fn in_auto_mode_a_host_no_rule_names_goes_to_the_classifier() -> TestResult {
    let pong = carapace_test_support::pong::Pong::start()?;
    let fetch = |id: &str, host: &str| {
        let command = pong.fetch_command(host);
        Reply::tool_uses(vec![Block::tool_use(
            id,
            "Bash",
            json!({ "command": command }),
        )])
    };
    let ran = auto_run(
        vec![
            fetch("toolu_near", "localhost"),
            decision("allow", "the docs the user asked for"),
            fetch("toolu_far", "127.0.0.1"),
            decision("deny", "not what the user asked for"),
            Reply::text("done"),
        ],
        "fetch the docs",
        &["--allowedTools", "Bash"],
    )?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    let told: Vec<(&Value, &Value)> = (ran.decisions().into_iter())
        .map(|d| (&d["tool_name"], &d["decision"]))
        .collect();
    assert_eq!(
        told,
        [
            (&json!("SandboxNetworkAccess"), &json!("allow")),
            (&json!("SandboxNetworkAccess"), &json!("deny"))
        ],
        "{}\n{}",
        ran.out.stdout,
        ran.out.stderr
    );
    let shown = ran.requests[1].body["messages"].to_string();
    assert!(shown.contains("localhost"), "{shown}");
    let results: Vec<String> = ran
        .requests
        .iter()
        .map(|r| r.body["messages"].to_string())
        .collect();
    assert!(results[2].contains("pong"), "the allowed host answered");
    assert_eq!(pong.served(), 1);
    Ok(())
}

/// A grant through `--permission-prompt-tool` (here an MCP server's tool):
/// the model asks to write in two directories, the prompt tool grants the
/// first by narrowing the request; a Write there runs without a question,
/// a Write in the other is asked about — and refused by the tool.
#[test]
fn a_prompt_tool_grants_part_of_a_request_and_only_that_widens() -> TestResult {
    let python = carapace_test_support::deps::python();
    let server_py = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp/servers/approver_server.py");
    let ws = tempfile::tempdir()?;
    let root = std::fs::canonicalize(ws.path())?;
    for dir in ["a", "b"] {
        std::fs::create_dir(root.join(dir))?;
    }
    let log = root.join("approver.log");
    let config = root.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"approver": {"command": python, "args": [server_py],
              "env": {"APPROVER_LOG": log}}}})
        .to_string(),
    )?;
    let write = |id: &str, path: &str| {
        Reply::tool_uses(vec![Block::tool_use(
            id,
            "Write",
            json!({"file_path": root.join(path), "content": "x"}),
        )])
    };
    let replies = vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_ask",
            "RequestPermissions",
            json!({"reason": "write the reports", "directories": ["a", "b"]}),
        )]),
        write("toolu_a", "a/report.txt"),
        write("toolu_b", "b/report.txt"),
        Reply::text("done"),
    ];
    let server = ScriptedServer::start(replies)?;
    let mut command = support::against(&server, &root);
    command
        .args(["-p", "write the reports", "--output-format", "stream-json"])
        .args(["--verbose", "--mcp-config"])
        .arg(&config)
        .args(["--permission-prompt-tool", "mcp__approver__approve"]);
    let out = support::Run::from_output(command.output()?)?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let asked: Vec<Value> = std::fs::read_to_string(&log)?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let names: Vec<&str> = asked
        .iter()
        .filter_map(|a| a["tool_name"].as_str())
        .collect();
    assert_eq!(names, ["RequestPermissions", "Write"], "{asked:?}");
    assert!(
        asked[1]["input"]["file_path"]
            .as_str()
            .is_some_and(|p| p.ends_with("b/report.txt")),
        "{asked:?}"
    );
    assert!(root.join("a/report.txt").exists(), "the granted write ran");
    assert!(!root.join("b/report.txt").exists(), "the other was refused");
    let requests = server.requests();
    let said = requests[1].body["messages"].to_string();
    let granted = format!(
        "The user granted, until the user's next message: write in {}. Only that was granted",
        root.join("a").display()
    );
    assert!(said.contains(&granted), "{said}");
    let refused = requests[3].body["messages"].to_string();
    assert!(refused.contains("the approver refuses Write"), "{refused}");
    Ok(())
}
