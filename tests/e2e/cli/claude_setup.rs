//! A Claude Code user's setup carries over: `.claude/settings.json`,
//! `.claude/settings.local.json` and `~/.claude/settings.json` load beside
//! carapace's own files, and nothing that guards is dropped — a team's
//! deny rule holds in every mode, even in a workspace nobody trusted yet,
//! and what carapace does not read is named rather than ignored.

use super::*;
use std::path::Path;

const SECRET: &str = "TOKEN=do-not-leak-4711";

/// A workspace whose committed Claude Code settings deny reading
/// `secrets.txt` (a file only the rule keeps: `.env` is withheld anyway),
/// and a home of its own.
struct Project {
    _dirs: [tempfile::TempDir; 2],
    ws: std::path::PathBuf,
    home: std::path::PathBuf,
}

impl Project {
    fn new(project_settings: Value) -> Result<Self, Box<dyn std::error::Error>> {
        let (ws_dir, home_dir) = (tempfile::tempdir()?, tempfile::tempdir()?);
        let ws = std::fs::canonicalize(ws_dir.path())?;
        let home = std::fs::canonicalize(home_dir.path())?;
        std::fs::create_dir_all(ws.join(".claude"))?;
        std::fs::write(
            ws.join(".claude/settings.json"),
            project_settings.to_string(),
        )?;
        std::fs::write(ws.join("secrets.txt"), format!("{SECRET}\n"))?;
        std::fs::write(ws.join("notes.txt"), "plain notes\n")?;
        Ok(Project {
            _dirs: [ws_dir, home_dir],
            ws,
            home,
        })
    }

    fn user_settings(&self, value: Value) -> std::io::Result<()> {
        std::fs::create_dir_all(self.home.join(".claude"))?;
        std::fs::write(self.home.join(".claude/settings.json"), value.to_string())
    }

    fn run(
        &self,
        server: &ScriptedServer,
        args: &[&str],
    ) -> Result<support::Run, Box<dyn std::error::Error>> {
        let output = support::against(server, &self.ws)
            .env("HOME", &self.home)
            .env("CARAPACE_CONFIG_DIR", self.home.join(".carapace"))
            .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
            .args(args)
            .output()?;
        support::Run::from_output(output)
    }
}

fn calls(ws: &Path) -> Vec<Block> {
    vec![
        Block::tool_use(
            "toolu_read",
            "Read",
            json!({"file_path": ws.join("secrets.txt")}),
        ),
        Block::tool_use(
            "toolu_bash",
            "Bash",
            json!({"command": "cat secrets.txt; echo end-of-cat"}),
        ),
        Block::tool_use(
            "toolu_grep",
            "Grep",
            json!({"pattern": "TOKEN", "output_mode": "content"}),
        ),
    ]
}

fn result_text(results: &[Value], id: &str) -> String {
    results
        .iter()
        .find(|r| r["tool_use_id"] == id)
        .map(support::text_of)
        .unwrap_or_else(|| format!("no result for {id}"))
}

#[test]
fn a_teams_deny_rule_holds_in_every_mode_in_an_untrusted_workspace() -> TestResult {
    let project = Project::new(json!({
        "permissions": {"deny": ["Read(./secrets.txt)"]},
        "theme": "dark",
    }))?;
    for mode in ["default", "acceptEdits", "bypassPermissions"] {
        let server = ScriptedServer::start(vec![
            Reply::tool_uses(calls(&project.ws)),
            Reply::text("done"),
        ])?;
        let run = project.run(&server, &["--permission-mode", mode])?;
        assert_eq!(run.status, Some(0), "{mode}: {}", run.stderr);
        let results = support::second_request_results(&server)?;
        let all = serde_json::to_string(&results)?;
        assert!(
            !all.contains("do-not-leak"),
            "{mode}: the secret reached the model: {all}"
        );
        let read = results
            .iter()
            .find(|r| r["tool_use_id"] == "toolu_read")
            .ok_or("no Read result")?;
        assert_eq!(read["is_error"], true, "{mode}: {read}");
        assert!(
            result_text(&results, "toolu_read").contains("Read(./secrets.txt)"),
            "{mode}: the refusal names the rule: {read}"
        );
        assert!(
            result_text(&results, "toolu_bash").contains("end-of-cat"),
            "{mode}: {all}"
        );
        assert!(
            run.stderr.contains("`theme` is not used by carapace"),
            "{mode}: what is not read is named: {}",
            run.stderr
        );
    }
    Ok(())
}

#[test]
fn without_the_claude_code_file_the_secret_would_be_read() -> TestResult {
    // The control: the same project, its settings file not Claude Code's.
    let project = Project::new(json!({}))?;
    std::fs::remove_file(project.ws.join(".claude/settings.json"))?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(calls(&project.ws)),
        Reply::text("done"),
    ])?;
    let run = project.run(&server, &["--permission-mode", "bypassPermissions"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let all = serde_json::to_string(&support::second_request_results(&server)?)?;
    assert!(all.contains("do-not-leak"), "control: {all}");
    Ok(())
}

#[test]
fn a_deny_rule_carapace_cannot_read_denies_its_whole_tool() -> TestResult {
    // Negated paths are Claude Code syntax carapace does not parse: the
    // guard must widen to all of Read, never vanish.
    let project = Project::new(json!({
        "permissions": {"deny": ["Read(!notes.txt)"], "allow": ["Edit(!x)"]},
    }))?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_read",
            "Read",
            json!({"file_path": project.ws.join("notes.txt")}),
        )]),
        Reply::text("done"),
    ])?;
    let run = project.run(&server, &["--permission-mode", "bypassPermissions"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let results = support::second_request_results(&server)?;
    let read = result_text(&results, "toolu_read");
    assert!(!read.contains("plain notes"), "{read}");
    assert!(
        run.stderr.contains("it applies to all of Read instead"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("cannot read the allow rule `Edit(!x)`"),
        "{}",
        run.stderr
    );
    Ok(())
}

#[test]
fn the_users_claude_code_settings_can_keep_bypass_off_and_paths_unwritable() -> TestResult {
    let project = Project::new(json!({}))?;
    std::fs::create_dir(project.ws.join("locked"))?;
    project.user_settings(json!({
        "permissions": {"disableBypassPermissionsMode": "disable"},
        "sandbox": {"filesystem": {"denyWrite": ["./locked"]}},
    }))?;
    let server = ScriptedServer::start(vec![Reply::text("never")])?;
    let refused = project.run(&server, &["--permission-mode", "bypassPermissions"])?;
    assert_ne!(refused.status, Some(0), "{}", refused.stdout);
    assert!(
        refused.stderr.contains("disableBypassPermissionsMode"),
        "{}",
        refused.stderr
    );
    assert!(server.requests().is_empty(), "refused before any request");
    // acceptEdits still runs, and the command cannot write in `locked`.
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_bash",
            "Bash",
            json!({"command": "echo x > locked/f; echo x > free; echo wrote"}),
        )]),
        Reply::text("done"),
    ])?;
    let run = project.run(
        &server,
        &["--permission-mode", "acceptEdits", "--allowedTools", "Bash"],
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(!project.ws.join("locked/f").exists(), "{}", run.stdout);
    assert!(project.ws.join("free").exists(), "{}", run.stdout);
    Ok(())
}

#[test]
fn claude_code_agents_load_and_model_aliases_resolve_as_claude_code_sends_them() -> TestResult {
    let project = Project::new(json!({}))?;
    std::fs::create_dir_all(project.ws.join(".claude/agents"))?;
    std::fs::write(
        project.ws.join(".claude/agents/code-explorer.md"),
        "---\nname: code-explorer\ndescription: Explores code\ntools: Read, Grep\nmodel: haiku\n---\nYou explore code.\n",
    )?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_agent",
            "Agent",
            json!({"description": "explore", "prompt": "look around", "subagent_type": "code-explorer"}),
        )]),
        Reply::text("explored"),
        Reply::text("done"),
    ])?;
    let run = project.run(&server, &["--model", "sonnet", "--trust-workspace"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        models,
        ["claude-sonnet-5-5", "claude-haiku-5-5", "claude-sonnet-5-5"],
        "{}",
        run.stdout
    );
    let init = support::lines(&run.stdout)?
        .into_iter()
        .find(|l| l["subtype"] == "init")
        .ok_or("no init line")?;
    assert_eq!(init["model"], "claude-sonnet-5-5");
    Ok(())
}

/// The setup Claude Code 2.1.332 was recorded with
/// (tests/claude-code/claude-setup.json): a committed deny rule on `.env`,
/// an allow rule for `rm`, and a Python PreToolUse guard against `rm -rf`.
fn recorded_setup() -> Result<Project, Box<dyn std::error::Error>> {
    let project = Project::new(json!({
        "permissions": {"deny": ["Read(./.env)"], "allow": ["Bash(rm:*)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/guard.py\""}
        ]}]},
    }))?;
    std::fs::create_dir_all(project.ws.join(".claude/hooks"))?;
    std::fs::write(
        project.ws.join(".claude/hooks/guard.py"),
        "import json, sys\nevent = json.load(sys.stdin)\nif \"rm -rf\" in event.get(\"tool_input\", {}).get(\"command\", \"\"):\n    print(\"guard: recursive deletes are blocked\", file=sys.stderr)\n    sys.exit(2)\n",
    )?;
    std::fs::create_dir(project.ws.join("keep"))?;
    Ok(project)
}

#[test]
fn a_projects_setup_behaves_as_claude_code_recorded_it() -> TestResult {
    let recorded = support::recording("claude-setup")?;
    for (mode, expected) in recorded["modes"].as_object().ok_or("no modes")? {
        // Trusted, as print mode trusts in Claude Code; untrusted, where
        // the guard does not run but what it guards is refused.
        for trusted in [true, false] {
            let project = recorded_setup()?;
            let server = ScriptedServer::start(vec![
                Reply::tool_uses(vec![
                    Block::tool_use(
                        "toolu_read",
                        "Read",
                        json!({"file_path": project.ws.join(".env")}),
                    ),
                    Block::tool_use("toolu_rm", "Bash", json!({"command": "rm -rf keep"})),
                ]),
                Reply::text("done"),
            ])?;
            let mut args = vec!["--permission-mode", mode.as_str()];
            if trusted {
                args.push("--trust-workspace");
            }
            let run = project.run(&server, &args)?;
            assert_eq!(run.status, Some(0), "{}", run.stderr);
            let results = support::second_request_results(&server)?;
            for id in ["toolu_read", "toolu_rm"] {
                let ours = results
                    .iter()
                    .find(|r| r["tool_use_id"] == id)
                    .ok_or("no result")?;
                let theirs = &expected["results"][id];
                assert_eq!(
                    ours["is_error"].as_bool().unwrap_or(false),
                    theirs["is_error"].as_bool().unwrap_or(false),
                    "{mode} trusted={trusted} {id}: {ours}"
                );
                assert!(!ours.to_string().contains("do-not-leak"), "{ours}");
            }
            assert_eq!(
                project.ws.join("keep").is_dir(),
                expected["keep_left"] == true
            );
            let rm = result_text(&results, "toolu_rm");
            if trusted {
                assert!(
                    rm.contains("guard: recursive deletes are blocked"),
                    "{mode}: {rm}"
                );
            } else {
                assert!(rm.contains("trusted workspace"), "{mode}: {rm}");
            }
        }
    }
    Ok(())
}
