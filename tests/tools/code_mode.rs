//! Code mode (issue 51), through the binary in print mode against the
//! scripted server: the model sends one Script call; the script's tool
//! calls each pass the pipeline as if the model had made them — rules,
//! hooks, questions (refused where nobody can be asked) — are told as
//! sub-calls of the Script call and kept in the transcript; the script has
//! no file system, network or environment of its own; it stops at its
//! deadline.

#[path = "../e2e/support.rs"]
mod support;

use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{TestResult, text_of};

#[path = "code_mode/escapes.rs"]
mod escapes;

struct Ran {
    out: support::Run,
    lines: Vec<Value>,
    server: ScriptedServer,
    config: tempfile::TempDir,
}

impl Ran {
    /// The Script call's result, as the model received it.
    fn result(&self) -> Result<Value, String> {
        let requests = self.server.requests();
        let request = requests.get(1).ok_or("no second request")?;
        request.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_array())
            .and_then(|c| c.iter().find(|b| b["tool_use_id"] == "toolu_script"))
            .cloned()
            .ok_or_else(|| "no Script result".to_string())
    }

    /// What the script returned (its result's last line), as JSON.
    fn returned(&self) -> Result<Value, Box<dyn std::error::Error>> {
        let result = self.result()?;
        let text = text_of(&result);
        let last = text.lines().last().ok_or("an empty result")?;
        Ok(serde_json::from_str(last)?)
    }

    /// The sub-calls told on the stream: (id, tool name).
    fn sub_calls(&self) -> Vec<(String, String)> {
        self.lines
            .iter()
            .filter(|l| l["type"] == "assistant" && l["parent_tool_use_id"] == "toolu_script")
            .flat_map(|l| {
                l["message"]["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                (
                    b["id"].as_str().unwrap_or_default().to_string(),
                    b["name"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// The transcript's `script_call` lines.
    fn kept_calls(&self) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
        let mut kept = Vec::new();
        for file in transcripts(self.config.path())? {
            for line in std::fs::read_to_string(file)?.lines() {
                let line: Value = serde_json::from_str(line)?;
                if line["type"] == "script_call" {
                    kept.push(line);
                }
            }
        }
        Ok(kept)
    }
}

fn transcripts(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            found.extend(transcripts(&path)?);
        } else if path.extension().is_some_and(|e| e == "jsonl") && !path.ends_with("audit.jsonl") {
            found.push(path);
        }
    }
    Ok(found)
}

/// `carapace -p` in `ws` with code mode on, the model sending `code` as one
/// Script call, then `args`.
fn script(ws: &Path, code: &str, args: &[&str]) -> Result<Ran, Box<dyn std::error::Error>> {
    script_with(ws, code, args, &[])
}

/// [`script`] with variables set for carapace.
fn script_with(
    ws: &Path,
    code: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<Ran, Box<dyn std::error::Error>> {
    let config = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_script",
            "Script",
            json!({"code": code}),
        )]),
        Reply::text("done"),
    ])?;
    let mut command = support::against(&server, ws);
    command
        .env("CARAPACE_CONFIG_DIR", config.path())
        .envs(env.iter().copied())
        .args(["-p", "do the task", "--output-format", "stream-json"])
        .args(["--verbose", "--code-mode"])
        .args(args);
    let out = support::Run::from_output(command.output()?)?;
    let lines = support::lines(&out.stdout)?;
    Ok(Ran {
        out,
        lines,
        server,
        config,
    })
}

fn workspace() -> Result<(tempfile::TempDir, PathBuf), Box<dyn std::error::Error>> {
    let ws = tempfile::tempdir()?;
    let root = std::fs::canonicalize(ws.path())?;
    Ok((ws, root))
}

#[test]
fn a_script_reads_forty_files_and_greps_them_in_one_call() -> TestResult {
    let (_ws, root) = workspace()?;
    for i in 0..40 {
        let text = match i % 3 {
            0 => format!("file {i}\nthe needle is here\n"),
            _ => format!("file {i}\nnothing\n"),
        };
        std::fs::write(root.join(format!("f{i:02}.txt")), text)?;
    }
    let code = format!(
        r#"const root = {root:?};
const reads = [];
for (let i = 0; i < 40; i++) {{
  reads.push(tools.Read({{file_path: `${{root}}/f${{String(i).padStart(2, "0")}}.txt`}}));
}}
const texts = await Promise.all(reads);
const grep = await tools.Grep({{pattern: "needle", path: root, output_mode: "files_with_matches"}});
console.log("read", texts.length, "files");
return {{read: texts.length, withNeedle: texts.filter(t => t.includes("needle")).length,
  grepped: grep.split("\n").filter(l => l.endsWith(".txt")).length}};"#,
        root = root.display().to_string()
    );
    let ran = script(&root, &code, &[])?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    // One model call did it all: two requests in the whole run.
    assert_eq!(ran.server.requests().len(), 2);
    let result = ran.result()?;
    assert_ne!(result["is_error"], true, "{result}");
    assert!(text_of(&result).starts_with("read 40 files\n"), "{result}");
    assert_eq!(
        ran.returned()?,
        json!({"read": 40, "withNeedle": 14, "grepped": 14})
    );
    let subs = ran.sub_calls();
    assert_eq!(subs.len(), 41, "{subs:?}");
    assert_eq!(subs[0], ("toolu_script.1".to_string(), "Read".to_string()));
    assert_eq!(subs[40].1, "Grep");
    assert_eq!(ran.kept_calls()?.len(), 41);
    // A resumed session reads past the script's calls: the model is sent
    // the Script call and its one result, not the calls inside it.
    let session_id = ran.lines[0]["session_id"].as_str().ok_or("no session id")?;
    let server = ScriptedServer::start(vec![Reply::text("resumed")])?;
    let resumed = support::Run::from_output(
        support::against(&server, &root)
            .env("CARAPACE_CONFIG_DIR", ran.config.path())
            .args(["-p", "again", "--resume", session_id])
            .output()?,
    )?;
    assert_eq!(resumed.status, Some(0), "{}", resumed.stderr);
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(
        sent.contains("toolu_script") && sent.contains("read 40 files"),
        "{sent}"
    );
    assert!(!sent.contains("toolu_script.1"), "{sent}");
    Ok(())
}

#[test]
fn each_call_of_a_script_is_judged_as_its_own_and_a_refusal_is_caught() -> TestResult {
    let (_ws, root) = workspace()?;
    std::fs::write(root.join("a.txt"), "old text\n")?;
    let code = format!(
        r#"const a = {a:?};
await tools.Read({{file_path: a}});
await tools.Edit({{file_path: a, old_string: "old", new_string: "new"}});
const shown = await tools.Bash({{command: "cat a.txt"}});
let refused = null;
try {{
  await tools.Bash({{command: "touch made.txt"}});
}} catch (e) {{
  refused = {{denied: e.denied, message: e.message}};
}}
return {{shown, refused}};"#,
        a = root.join("a.txt").display().to_string()
    );
    let ran = script(&root, &code, &["--allowedTools", "Edit"])?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    // The edit ran (an allow rule), the reading command ran (read-only,
    // as in default mode), the writing one was asked — refused here.
    assert_eq!(std::fs::read_to_string(root.join("a.txt"))?, "new text\n");
    assert!(!root.join("made.txt").exists());
    let returned = ran.returned()?;
    assert!(
        returned["shown"]
            .as_str()
            .is_some_and(|s| s.contains("new text")),
        "{returned}"
    );
    assert_eq!(returned["refused"]["denied"], true, "{returned}");
    let message = returned["refused"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Running `touch made.txt` needs approval"),
        "{message}"
    );
    // The refusal is told as the sub-call's, and every call is kept.
    let denied: Vec<&Value> = ran
        .lines
        .iter()
        .filter(|l| l["subtype"] == "permission_denied")
        .collect();
    assert_eq!(denied.len(), 1, "{:?}", ran.lines);
    assert_eq!(denied[0]["parent_tool_use_id"], "toolu_script");
    let kept = ran.kept_calls()?;
    let names: Vec<&str> = kept
        .iter()
        .filter_map(|k| k["tool_name"].as_str())
        .collect();
    assert_eq!(names, ["Read", "Edit", "Bash", "Bash"]);
    assert_eq!(kept[3]["denied"], true);
    assert_eq!(kept[1]["denied"], false);
    Ok(())
}

#[test]
fn a_refusal_the_script_does_not_catch_fails_the_script() -> TestResult {
    let (_ws, root) = workspace()?;
    let code = r#"console.log("before");
await tools.Bash({command: "touch made.txt"});
return "not reached";"#;
    let ran = script(&root, code, &[])?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    let result = ran.result()?;
    assert_eq!(result["is_error"], true, "{result}");
    let text = text_of(&result);
    assert!(
        text.starts_with("The script threw: Error: Running `touch made.txt` needs approval"),
        "{text}"
    );
    assert!(text.ends_with("It printed before that:\nbefore"), "{text}");
    assert!(!root.join("made.txt").exists());
    Ok(())
}

/// A PreToolUse hook sees a script's call as any other and rewrites its
/// input: the script reads the file the hook chose.
#[test]
fn a_hook_rewrites_a_nested_calls_input() -> TestResult {
    let (_ws, root) = workspace()?;
    std::fs::write(root.join("asked.txt"), "what the script asked for\n")?;
    std::fs::write(root.join("chosen.txt"), "what the hook chose\n")?;
    let answer = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"file_path": root.join("chosen.txt")}}});
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
        {"type": "command", "command": format!("printf '%s' '{answer}'")}]}]}});
    let code = format!(
        "return await tools.Read({{file_path: {:?}}});",
        root.join("asked.txt").display().to_string()
    );
    let ran = script(&root, &code, &["--settings", &settings.to_string()])?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    let text = text_of(&ran.result()?);
    assert!(text.contains("what the hook chose"), "{text}");
    assert!(!text.contains("what the script asked for"), "{text}");
    Ok(())
}

#[test]
fn an_endless_script_is_stopped_at_its_deadline_and_the_turn_goes_on() -> TestResult {
    let (_ws, root) = workspace()?;
    let settings = json!({"codeMode": {"deadlineSeconds": 1}}).to_string();
    let code = "console.log(\"spinning\");\nwhile (true) {}";
    let ran = script(&root, code, &["--settings", &settings])?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    let result = ran.result()?;
    assert_eq!(result["is_error"], true, "{result}");
    let text = text_of(&result);
    assert!(text.starts_with("The script was stopped: "), "{text}");
    assert!(text.contains("1s") || text.contains("1 s"), "{text}");
    assert!(
        text.ends_with("It printed before that:\nspinning"),
        "{text}"
    );
    let last = support::last_line(&ran.out.stdout)?;
    assert_eq!(last["subtype"], "success", "{last}");
    Ok(())
}

/// Without `--code-mode` (or `codeMode` in settings) no Script tool is
/// offered; with it, its description declares the tools a script may
/// call.
#[test]
fn the_script_tool_is_offered_only_in_code_mode_with_the_tools_declared() -> TestResult {
    let (_ws, root) = workspace()?;
    let server = ScriptedServer::start(vec![Reply::text("hi")])?;
    let out = support::run(&server, &root, &["-p", "hello"])?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let tools = support::tool_names(&server.requests()[0].body);
    assert!(!tools.iter().any(|t| t == "Script"), "{tools:?}");
    let server = ScriptedServer::start(vec![Reply::text("hi")])?;
    let settings = json!({"codeMode": true}).to_string();
    let out = support::run(&server, &root, &["-p", "hello", "--settings", &settings])?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let body = &server.requests()[0].body;
    let script = body["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "Script"))
        .ok_or("no Script tool")?;
    let description = script["description"].as_str().unwrap_or_default();
    assert!(
        description.contains("Read(input: { file_path: string;"),
        "{description}"
    );
    assert!(description.contains("Bash(input: {"), "{description}");
    assert!(!description.contains("Script(input"), "{description}");
    Ok(())
}

/// A script run in the background answers at once; its result reaches
/// the model as a task notification when it ends, and the run waits for
/// it.
#[test]
fn a_background_script_reports_when_it_ends() -> TestResult {
    let (_ws, root) = workspace()?;
    let code = "const out = await tools.Bash({command: \"echo from-the-background\"});\nreturn \"said: \" + out.trim();";
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_script",
            "Script",
            json!({"code": code, "run_in_background": true}),
        )]),
        Reply::text("it runs"),
        Reply::text("it reported"),
    ])?;
    let config = tempfile::tempdir()?;
    let mut command = support::against(&server, &root);
    command
        .env("CARAPACE_CONFIG_DIR", config.path())
        .args([
            "-p",
            "start it",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .args(["--code-mode", "--allowedTools", "Bash"]);
    let out = support::Run::from_output(command.output()?)?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", out.stdout);
    let answered = requests[1].body["messages"].to_string();
    assert!(answered.contains("Started script script-"), "{answered}");
    let reported = requests[2].body["messages"].to_string();
    assert!(reported.contains("<task-notification>"), "{reported}");
    assert!(
        reported.contains("<status>completed</status>"),
        "{reported}"
    );
    assert!(reported.contains("said: from-the-background"), "{reported}");
    let lines = support::lines(&out.stdout)?;
    let subtypes: Vec<&str> = lines.iter().filter_map(|l| l["subtype"].as_str()).collect();
    assert!(subtypes.contains(&"task_started"), "{subtypes:?}");
    assert!(subtypes.contains(&"task_notification"), "{subtypes:?}");
    Ok(())
}

/// A subagent's script calls through the subagent's tools: what its
/// definition gives it runs, what it does not (Bash, and Agent — no
/// grandchildren) is not there to call; its Script tool declares only
/// the subagent's tools.
#[test]
fn a_subagents_script_has_only_the_subagents_tools() -> TestResult {
    let (_ws, root) = workspace()?;
    std::fs::write(root.join("notes.txt"), "the notes\n")?;
    let code = format!(
        r#"const notes = await tools.Read({{file_path: {notes:?}}});
const refused = [];
for (const [name, input] of [["Bash", {{command: "echo hi"}}], ["Agent", {{description: "x", prompt: "y"}}]]) {{
  try {{ await tools[name](input); }} catch (e) {{ refused.push(name + ": " + e.message); }}
}}
return {{notes, refused, names: Object.getOwnPropertyNames(tools)}};"#,
        notes = root.join("notes.txt").display().to_string()
    );
    let agents = json!({"reader": {"description": "reads files", "prompt": "You read.",
        "tools": ["Read", "Script"]}});
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_agent",
            "Agent",
            json!({"description": "read", "prompt": "read the notes", "subagent_type": "reader"}),
        )]),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_script",
            "Script",
            json!({"code": code}),
        )]),
        Reply::text("the child is done"),
        Reply::text("done"),
    ])?;
    let out = support::run(
        &server,
        &root,
        &[
            "-p",
            "delegate",
            "--code-mode",
            "--agents",
            &agents.to_string(),
        ],
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let requests = server.requests();
    let child_tools = support::tool_names(&requests[1].body);
    assert_eq!(child_tools, ["Read", "Script"], "{child_tools:?}");
    // Its Script declares the subagent's tools, not the session's.
    let described = requests[1].body["tools"][1]["description"].to_string();
    assert!(described.contains("Read(input: {"), "{described}");
    assert!(!described.contains("Bash(input"), "{described}");
    let parents = requests[0].body["tools"].to_string();
    assert!(parents.contains("Bash(input"), "the control: {parents}");
    let sent = requests[2].body["messages"].to_string();
    let result: Value = requests[2].body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .and_then(|c| c.iter().find(|b| b["tool_use_id"] == "toolu_script"))
        .map(text_of)
        .and_then(|t| serde_json::from_str(t.lines().last()?).ok())
        .ok_or(sent)?;
    assert_eq!(result["notes"], "1\tthe notes\n2\t", "{result}");
    // The script is given only the subagent's tools (Script aside): the
    // others are not there to call.
    assert_eq!(result["names"], json!(["Read"]), "{result}");
    assert_eq!(
        result["refused"],
        json!([
            "Bash: not a callable function",
            "Agent: not a callable function"
        ]),
        "{result}"
    );
    Ok(())
}

/// Calls that change things run one after another even when the script
/// starts them together; each command's start and end are logged, and
/// no start comes between another's start and end.
#[test]
fn calls_that_change_things_run_one_at_a_time_under_promise_all() -> TestResult {
    let (_ws, root) = workspace()?;
    let code = r#"const runs = [1, 2, 3].map(i =>
  tools.Bash({command: `echo start-${i} >> log.txt; sleep 0.2; echo end-${i} >> log.txt`}));
await Promise.all(runs);
return "ok";"#;
    let ran = script(&root, code, &["--allowedTools", "Bash"])?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    let log = std::fs::read_to_string(root.join("log.txt"))?;
    assert_eq!(
        log, "start-1\nend-1\nstart-2\nend-2\nstart-3\nend-3\n",
        "the commands overlapped"
    );
    Ok(())
}

/// The documented limits, each set low: the call after the cap rejects;
/// output past the cap is cut with a note; an engine past its memory is
/// stopped.
#[test]
fn a_script_is_held_to_its_call_output_and_memory_limits() -> TestResult {
    let (_ws, root) = workspace()?;
    std::fs::write(root.join("a.txt"), "a\n")?;
    let limits = json!({"codeMode": {"maxCalls": 2, "outputKB": 1, "memoryMB": 32}}).to_string();
    let args = ["--settings", limits.as_str()];
    let read = format!(
        "tools.Read({{file_path: {:?}}})",
        root.join("a.txt").display().to_string()
    );
    let code = format!(
        "await {read};\nawait {read};\ntry {{ await {read}; }} catch (e) {{ return e.message; }}"
    );
    let ran = script(&root, &code, &args)?;
    let text = text_of(&ran.result()?);
    assert_eq!(
        text, "the script may make at most 2 tool calls, and has made them",
        "{text}"
    );
    let ran = script(&root, "console.log(\"x\".repeat(5000));", &args)?;
    let text = text_of(&ran.result()?);
    assert!(text.starts_with(&"x".repeat(1024)), "{text}");
    assert!(
        text.ends_with(
            "[3977 more bytes of output were cut: the script's output is capped at 1024 bytes]"
        ),
        "{text}"
    );
    let code =
        "const hoard = [];\nwhile (true) { hoard.push(new Array(100000).fill(hoard.length)); }";
    let ran = script(&root, code, &args)?;
    let result = ran.result()?;
    assert_eq!(result["is_error"], true, "{result}");
    let text = text_of(&result);
    assert!(
        text.starts_with("The script was stopped: ") && text.contains("memory"),
        "{text}"
    );
    Ok(())
}

/// A result that is not only text reaches the script as its content
/// blocks: an image Read gives the image block, its data whole.
#[test]
fn a_result_with_an_image_reaches_the_script_as_content_blocks() -> TestResult {
    let (_ws, root) = workspace()?;
    // A 1×1 PNG.
    let png: [u8; 67] = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f,
        0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    std::fs::write(root.join("dot.png"), png)?;
    let code = format!(
        "const blocks = await tools.Read({{file_path: {:?}}});\nreturn blocks.map(b => [b.type, b.source ? b.source.media_type : null, b.source ? b.source.data.length : 0]);",
        root.join("dot.png").display().to_string()
    );
    let ran = script(&root, &code, &[])?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    let returned = ran.returned()?;
    let image = returned
        .as_array()
        .and_then(|blocks| blocks.iter().find(|b| b[0] == "image"))
        .ok_or_else(|| format!("no image block: {returned}"))?;
    assert_eq!(image[1], "image/png", "{returned}");
    // 67 bytes are 92 characters of base64.
    assert_eq!(image[2], 92, "{returned}");
    Ok(())
}

/// A script that waits on what nothing will settle fails at once, saying
/// so, instead of holding the turn until its deadline.
#[test]
fn a_script_waiting_on_nothing_fails_at_once() -> TestResult {
    let (_ws, root) = workspace()?;
    let settings = json!({"codeMode": {"deadlineSeconds": 600}}).to_string();
    let ran = script(
        &root,
        "await new Promise(() => {});\nreturn 1;",
        &["--settings", &settings],
    )?;
    let result = ran.result()?;
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(
        text_of(&result),
        "The script threw: the script waits on a promise that nothing will settle (no tool call is running)"
    );
    Ok(())
}

/// A call the script starts and does not wait for still runs to its end
/// before the Script call answers, as it would in any JavaScript runtime.
#[test]
fn a_call_the_script_does_not_wait_for_still_runs() -> TestResult {
    let (_ws, root) = workspace()?;
    let code = "tools.Bash({command: \"touch late.txt\"});\nreturn \"early\";";
    let ran = script(&root, code, &["--allowedTools", "Bash"])?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    assert_eq!(text_of(&ran.result()?), "early");
    assert!(root.join("late.txt").exists(), "the call ran");
    assert_eq!(ran.kept_calls()?.len(), 1, "and was kept");
    Ok(())
}

/// TypeScript's types are erased before the script runs (the tools are
/// declared to the model in TypeScript); what needs more than erasing is
/// refused with the reason.
#[test]
fn typescript_types_are_erased() -> TestResult {
    let (_ws, root) = workspace()?;
    let code = r#"interface Hit { file: string; line: number }
const hits: Hit[] = [{file: "a.rs", line: 3}];
const next = (n: number): number => n + 1;
function first<T>(items: T[]): T | undefined { return items[0]; }
return {next: next(1) as number, first: first<Hit>(hits)!.file};"#;
    let ran = script(&root, code, &[])?;
    assert_eq!(ran.out.status, Some(0), "{}", ran.out.stderr);
    assert_eq!(ran.returned()?, json!({"next": 2, "first": "a.rs"}));
    let ran = script(&root, "enum Color { Red }\nreturn Color.Red;", &[])?;
    let result = ran.result()?;
    assert_eq!(result["is_error"], true, "{result}");
    let text = text_of(&result);
    assert!(
        text.starts_with("The script threw: SyntaxError: the script cannot be read"),
        "{text}"
    );
    Ok(())
}
