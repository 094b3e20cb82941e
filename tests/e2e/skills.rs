//! Skills through the binary, against Claude Code's recordings
//! (`tests/claude-code/skill-*.json`): the same SKILL.md folders and
//! command files, the same script, the same listing, Skill results and
//! instructions sent — and a skill's `` !`command` `` spans held to the
//! Bash pipeline, its `allowed-tools` to the workspace's trust.

use super::support;
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::TestResult;

/// A recording replayed: its files laid out, its script played, carapace
/// run with its prompt and `flags`.
struct Replayed {
    recorded: Value,
    root: PathBuf,
    _scratch: tempfile::TempDir,
    sent: Vec<Value>,
    lines: Vec<Value>,
    stderr: String,
}

impl Replayed {
    fn run(name: &str, flags: &[&str]) -> Result<Self, Box<dyn std::error::Error>> {
        let recorded = support::recording(name)?;
        let (scratch, root) = support::lay_out(&recorded)?;
        let filled = fill_paths(&recorded["script"].to_string(), &root);
        let replies = serde_json::from_str::<Vec<Value>>(&filled)?
            .iter()
            .map(Reply::from_script)
            .collect::<Result<Vec<_>, _>>()?;
        let server = ScriptedServer::start(replies)?;
        let prompt = recorded["args"][1].as_str().ok_or("no prompt")?.to_string();
        let mut args = vec!["-p", &prompt, "--output-format", "stream-json", "--verbose"];
        args.extend(flags);
        let out = support::against(&server, &root.join("ws"))
            .env("HOME", root.join("home"))
            .env("CARAPACE_CONFIG_DIR", root.join("home/.carapace"))
            .args(&args)
            .output()?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            return Err(format!("{name}: {stderr}").into());
        }
        Ok(Self {
            sent: server.requests().into_iter().map(|r| r.body).collect(),
            lines: support::lines(&String::from_utf8(out.stdout)?)?,
            recorded,
            root,
            _scratch: scratch,
            stderr,
        })
    }

    fn theirs(&self) -> Vec<Value> {
        let text = fill_paths(&self.recorded["requests"].to_string(), &self.root);
        serde_json::from_str::<Vec<Value>>(&text)
            .unwrap_or_default()
            .into_iter()
            .map(|r| normalized(&r["messages"]))
            .collect()
    }

    fn ours(&self) -> Vec<Value> {
        self.sent
            .iter()
            .map(|b| normalized(&b["messages"]))
            .collect()
    }

    /// The last message of the last request, both sides.
    fn last_messages(&self) -> (Value, Value) {
        let last = |requests: Vec<Value>| {
            requests
                .last()
                .and_then(|m| m.as_array().and_then(|m| m.last()).cloned())
                .unwrap_or_default()
        };
        (last(self.ours()), last(self.theirs()))
    }
}

fn fill_paths(text: &str, root: &Path) -> String {
    text.replace("{ws}", &root.join("ws").display().to_string())
        .replace("{home}", &root.join("home").display().to_string())
        .replace("{scratch}", &root.display().to_string())
}

/// Without what differs run to run: cache markers, the session id.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), normalized(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::String(text) => match text.split_once("Session: ") {
            Some((before, after)) => {
                let rest = after.split_once('\n').map_or("", |(_, r)| r);
                Value::String(format!("{before}Session: <id>\n{rest}"))
            }
            None => value.clone(),
        },
        other => other.clone(),
    }
}

/// The listing's lines for the skills and commands the scenario laid out
/// (Claude Code's own bundled skills left out).
fn listed(listing: &str, ours: &[&str]) -> Vec<String> {
    listing
        .lines()
        .filter(|l| {
            l.strip_prefix("- ")
                .and_then(|l| l.split(':').next())
                .is_some_and(|name| ours.contains(&name))
        })
        .map(str::to_string)
        .collect()
}

/// As recorded, in a workspace the user trusts (Claude Code's print mode
/// trusts every workspace).
const SKILL_FLAGS: &[&str] = &[
    "--tools",
    "Read,Bash,Skill",
    "--allowedTools",
    "Skill",
    "--trust-workspace",
];

#[test]
fn skills_are_listed_and_started_as_claude_code_does() -> TestResult {
    let run = Replayed::run("skill-with-commands", SKILL_FLAGS)?;
    // The listing opens the first user message of every request.
    let names = [
        "notes", "bare", "deploy", "risky", "manual", "greet", "mine", "plain",
    ];
    let theirs = run.theirs();
    let their_listing = theirs[0][0]["content"][0]["text"].as_str().unwrap_or("");
    for (n, request) in run.ours().iter().enumerate() {
        let ours = request[0]["content"][0]["text"].as_str().unwrap_or("");
        assert!(ours.starts_with("<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n- "), "{ours}");
        let lines: Vec<String> = ours
            .lines()
            .filter(|l| l.starts_with("- "))
            .map(String::from)
            .collect();
        assert_eq!(lines, listed(their_listing, &names), "request {n}");
    }
    // A command through the Skill tool: its body follows the result.
    assert_eq!(
        run.ours()[1].as_array().map(Vec::len),
        theirs[1].as_array().map(Vec::len)
    );
    assert_eq!(run.ours()[1][2], theirs[1][2]);
    let ran = run
        .lines
        .iter()
        .find(|l| l["type"] == "user" && l["tool_use_result"].is_object())
        .ok_or("no Skill result line")?;
    assert_eq!(
        ran["tool_use_result"],
        json!({"success": true, "commandName": "greet"})
    );

    for name in [
        "skill-call",
        "skill-args-unused",
        "skill-no-rule",
        "skill-manual",
    ] {
        let flags = if name == "skill-no-rule" {
            &[SKILL_FLAGS[..2].to_vec(), vec!["--trust-workspace"]].concat()
        } else {
            SKILL_FLAGS
        };
        let run = Replayed::run(name, flags)?;
        let (ours, theirs) = run.last_messages();
        assert_eq!(ours, theirs, "{name}: {}", run.stderr);
        assert_eq!(run.sent.len(), run.theirs().len(), "{name}");
    }
    // What stream-json prints: the result, then the instructions as a
    // synthetic user line.
    let run = Replayed::run("skill-call", SKILL_FLAGS)?;
    let users: Vec<&Value> = run.lines.iter().filter(|l| l["type"] == "user").collect();
    let recorded: Vec<Value> = run.recorded["stdout"]
        .as_array()
        .ok_or("no stdout")?
        .iter()
        .filter(|l| l["type"] == "user")
        .cloned()
        .collect();
    assert_eq!(users.len(), 2);
    assert_eq!(users[0]["tool_use_result"], recorded[0]["tool_use_result"]);
    assert_eq!(users[1]["isSynthetic"], true);
    assert_eq!(
        normalized(&users[1]["message"]),
        normalized(&serde_json::from_str(&fill_paths(
            &recorded[1]["message"].to_string(),
            &run.root
        ))?)
    );
    Ok(())
}

#[test]
fn a_skill_typed_as_a_slash_command_is_sent_as_claude_code_sends_it() -> TestResult {
    for name in ["skill-slash", "skill-slash-manual", "command-args-unused"] {
        let flags: &[&str] = if name.starts_with("command") {
            &["--tools", "Read"]
        } else {
            SKILL_FLAGS
        };
        let run = Replayed::run(name, flags)?;
        // Everything after the listing and the context reminder.
        let tail = |messages: &Value| {
            let blocks = messages[0]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let skip = blocks
                .iter()
                .take_while(|b| {
                    b["text"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("<system-reminder>"))
                })
                .count();
            blocks[skip..].to_vec()
        };
        assert_eq!(tail(&run.ours()[0]), tail(&run.theirs()[0]), "{name}");
    }
    Ok(())
}

#[test]
fn a_skill_that_pre_approves_tools_asks_before_it_starts() -> TestResult {
    // Claude Code denies `deploy` (it has allowed-tools) without a rule.
    let run = Replayed::run(
        "skill-call",
        &[SKILL_FLAGS[..2].to_vec(), vec!["--trust-workspace"]].concat(),
    )?;
    let result = run.lines.last().ok_or("no result")?;
    assert_eq!(result["permission_denials"][0]["tool_name"], "Skill");
    assert!(
        !run.sent[1]
            .to_string()
            .contains("Base directory for this skill")
    );
    Ok(())
}

#[test]
fn a_skill_command_needing_approval_is_refused_and_does_not_run() -> TestResult {
    let run = Replayed::run("skill-asks", SKILL_FLAGS)?;
    let (ours, theirs) = run.last_messages();
    let text = |m: &Value| {
        m["content"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let prefix = "Shell command permission check failed for pattern \"!`mkdir made-by-skill && echo made`\": ";
    assert!(text(&theirs).starts_with(prefix));
    assert!(text(&ours).starts_with(prefix), "{}", text(&ours));
    assert_eq!(ours["content"][0]["is_error"], true);
    assert!(
        !run.root.join("ws/made-by-skill").exists(),
        "the refused span ran"
    );
    // Control: allowed by a rule, the very span runs.
    let run = Replayed::run(
        "skill-asks",
        &[
            SKILL_FLAGS,
            &["--allowedTools", "Bash(mkdir:*),Bash(echo:*)"],
        ]
        .concat(),
    )?;
    assert!(run.root.join("ws/made-by-skill").is_dir(), "{}", run.stderr);
    let (ours, _) = run.last_messages();
    assert!(
        ours["content"][1]["text"]
            .as_str()
            .unwrap_or("")
            .contains("Before: made\n"),
        "{ours}"
    );
    Ok(())
}

/// A skill granting `Bash(touch:*)` is started, then the model runs
/// `touch granted`: whether the touch ran.
fn touch_after_skill(
    folder: &str,
    flags: &[&str],
) -> Result<(bool, String), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let root = std::fs::canonicalize(scratch.path())?;
    let (ws, home) = (root.join("ws"), root.join("home"));
    let skill = root.join(folder).join("grant/SKILL.md");
    std::fs::create_dir_all(skill.parent().ok_or("no parent")?)?;
    std::fs::create_dir_all(&ws)?;
    std::fs::write(
        &skill,
        "---\ndescription: Grants touch\nallowed-tools: Bash(touch:*)\n---\nTouch things.\n",
    )?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "s",
            "Skill",
            json!({"skill": "grant"}),
        )]),
        Reply::tool_uses(vec![Block::tool_use(
            "t",
            "Bash",
            json!({"command": "touch granted"}),
        )]),
        Reply::text("done"),
    ])?;
    let mut args = vec![
        "-p",
        "hi",
        "--output-format",
        "stream-json",
        "--verbose",
        "--tools",
        "Bash,Skill",
        "--allowedTools",
        "Skill",
    ];
    args.extend(flags);
    let out = support::against(&server, &ws)
        .env("HOME", &home)
        .env("CARAPACE_CONFIG_DIR", home.join(".carapace"))
        .args(&args)
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    Ok((ws.join("granted").exists(), stderr))
}

#[test]
fn only_the_users_skills_or_a_trusted_workspaces_pre_approve_tools() -> TestResult {
    let (ran, stderr) = touch_after_skill("home/.claude/skills", &[])?;
    assert!(ran, "a user skill's allowed-tools: {stderr}");
    let (ran, stderr) = touch_after_skill("ws/.claude/skills", &[])?;
    assert!(
        !ran,
        "a cloned repository's skill granted itself Bash: {stderr}"
    );
    assert!(
        stderr.contains("allowed-tools pre-approve tools only in a trusted workspace"),
        "{stderr}"
    );
    let (ran, stderr) = touch_after_skill("ws/.carapace/skills", &["--trust-workspace"])?;
    assert!(ran, "a trusted workspace's skill: {stderr}");
    // A deny rule still wins over what a skill pre-approves.
    let (ran, _) = touch_after_skill(
        "home/.claude/skills",
        &["--disallowedTools", "Bash(touch:*)"],
    )?;
    assert!(!ran, "a skill's allow beat a deny rule");
    Ok(())
}

/// `--plugin-dir` with the layout Claude Code 2.1.197 reads (checked by
/// hand against it: the same names in `init`, the same Skill result).
#[test]
fn a_plugin_folder_offers_its_skills_commands_and_agents() -> TestResult {
    let scratch = tempfile::tempdir()?;
    let root = std::fs::canonicalize(scratch.path())?;
    let plugin = root.join("myplug");
    let write = |path: &str, text: &str| -> std::io::Result<()> {
        let full = plugin.join(path);
        std::fs::create_dir_all(full.parent().unwrap_or(&plugin))?;
        std::fs::write(full, text)
    };
    write(
        ".claude-plugin/plugin.json",
        r#"{"name": "tools-kit", "version": "1.0.0"}"#,
    )?;
    write(
        "skills/lint/SKILL.md",
        "---\ndescription: Lints the code\n---\nLint it. Root: ${CLAUDE_PLUGIN_ROOT}\n",
    )?;
    write(
        "commands/fmt.md",
        "---\ndescription: Formats\n---\nFormat $ARGUMENTS\n",
    )?;
    write(
        "agents/checker.md",
        "---\nname: checker\ndescription: Checks things\n---\nYou check.\n",
    )?;
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws)?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "t1",
            "Skill",
            json!({"skill": "tools-kit:lint"}),
        )]),
        Reply::text("ok"),
    ])?;
    let out = support::against(&server, &ws)
        .env("HOME", root.join("home"))
        .env("CARAPACE_CONFIG_DIR", root.join("home/.carapace"))
        .args([
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            "Skill",
            "--plugin-dir",
        ])
        .arg(&plugin)
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = support::lines(&String::from_utf8(out.stdout)?)?;
    let init = &lines[0];
    let has = |key: &str, name: &str| {
        init[key]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == name))
    };
    assert!(has("skills", "tools-kit:lint"), "{init}");
    assert!(has("slash_commands", "tools-kit:fmt"), "{init}");
    assert!(has("agents", "tools-kit:checker"), "{init}");
    assert_eq!(init["plugins"][0]["source"], "tools-kit@inline", "{init}");
    let requests = server.requests();
    let listing = requests[0].body["messages"][0]["content"][0]["text"].to_string();
    assert!(
        listing.contains("- tools-kit:fmt: Formats")
            && listing.contains("- tools-kit:lint: Lints the code"),
        "{listing}"
    );
    let last = &requests[1].body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        last["content"][0]["content"],
        "Launching skill: tools-kit:lint"
    );
    let body = format!(
        "Base directory for this skill: {}\n\nLint it. Root: {}\n",
        plugin.join("skills/lint").display(),
        plugin.display()
    );
    assert_eq!(last["content"][1]["text"], body.as_str());
    // Not a plugin folder: a clear error before anything runs.
    let out = support::against(&server, &ws)
        .args(["-p", "hi", "--plugin-dir"])
        .arg(root.join("nosuch"))
        .output()?;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a folder"));
    Ok(())
}

#[test]
fn rules_naming_a_skill_allow_and_deny_that_skill_only() -> TestResult {
    let flags = |rules: &[&'static str]| -> Vec<&'static str> {
        [&["--tools", "Read,Bash,Skill", "--trust-workspace"], rules].concat()
    };
    let started = |run: &Replayed| {
        run.sent[1]
            .to_string()
            .contains("Base directory for this skill")
    };
    // As Claude Code 2.1.197 (skill-rule-*.json): `Skill(deploy)` lets
    // deploy start without asking ...
    let run = Replayed::run(
        "skill-rule-named",
        &flags(&["--allowedTools", "Skill(deploy)"]),
    )?;
    let theirs = run.theirs();
    assert!(
        theirs[1]
            .to_string()
            .contains("Base directory for this skill")
    );
    assert!(started(&run), "{}", run.stderr);
    // ... a rule for another skill does not ...
    let run = Replayed::run(
        "skill-rule-other",
        &flags(&["--allowedTools", "Skill(other)"]),
    )?;
    assert!(!run.theirs()[1].to_string().contains("Base directory"));
    assert!(!started(&run), "allowed by a rule for another skill");
    let result = run.lines.last().ok_or("no result")?;
    assert_eq!(result["permission_denials"][0]["tool_name"], "Skill");
    // ... and a deny rule for another skill leaves deploy alone.
    let run = Replayed::run(
        "skill-rule-deny-other",
        &flags(&[
            "--allowedTools",
            "Skill(deploy)",
            "--disallowedTools",
            "Skill(other)",
        ]),
    )?;
    assert!(
        started(&run),
        "denied by a rule for another skill: {}",
        run.stderr
    );
    let result = run.lines.last().ok_or("no result")?;
    assert_eq!(result["permission_denials"], json!([]));
    Ok(())
}

#[test]
fn a_commands_model_is_its_turns_and_a_skill_call_keeps_the_sessions() -> TestResult {
    for (name, flags) in [
        ("command-model", &["--tools", "Read"][..]),
        (
            "skill-model",
            &["--tools", "Read,Skill", "--allowedTools", "Skill"][..],
        ),
    ] {
        let flags = [flags, &["--model", "claude-sonnet-4-5"]].concat();
        let run = Replayed::run(name, &flags)?;
        let models = |requests: &[Value]| -> Vec<Value> {
            requests.iter().map(|r| r["model"].clone()).collect()
        };
        let theirs = run.recorded["params"]
            .as_array()
            .ok_or("no params recorded")?;
        assert_eq!(models(&run.sent), models(theirs), "{name}: {}", run.stderr);
    }
    Ok(())
}
