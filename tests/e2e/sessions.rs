//! Sessions that last, through the binary: transcripts on disk, resume,
//! continue and fork (what the next request carries), a `kill -9` mid-turn,
//! damaged and foreign transcripts, compaction seen from outside, and
//! the worker mode's jobs.

mod commands;
mod memory;
mod skills;
mod styles;
mod support;
mod worker;

use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::{Run, TestResult, last_line, lines, text_of, without_cache_marks};

/// A workspace and a config dir of its own (where transcripts go).
struct Home {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    config: PathBuf,
}

impl Home {
    fn new() -> Result<Self, Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let ws = dir.path().join("ws");
        let config = dir.path().join("config");
        std::fs::create_dir_all(&ws)?;
        std::fs::write(ws.join("notes.txt"), "the port is 8080\n")?;
        Ok(Self {
            _dir: dir,
            ws,
            config,
        })
    }

    fn command(&self, server: &ScriptedServer, args: &[&str]) -> std::process::Command {
        let mut command = support::against(server, &self.ws);
        command
            .env("CARAPACE_CONFIG_DIR", &self.config)
            .args(["--output-format", "stream-json", "--verbose"])
            .args(args);
        command
    }

    fn run(
        &self,
        server: &ScriptedServer,
        args: &[&str],
    ) -> Result<Run, Box<dyn std::error::Error>> {
        Run::from_output(self.command(server, args).output()?)
    }

    fn transcripts(&self) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.config.join("projects"))
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|project| {
                std::fs::read_dir(project.path())
                    .into_iter()
                    .flatten()
                    .flatten()
            })
            .map(|entry| entry.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        found.sort();
        found
    }

    fn transcript(&self, id: &str) -> Result<PathBuf, String> {
        self.transcripts()
            .into_iter()
            .find(|p| p.file_stem().is_some_and(|s| s == id))
            .ok_or_else(|| format!("no transcript for {id}"))
    }
}

fn session_id(run: &Run) -> Result<String, Box<dyn std::error::Error>> {
    let line = last_line(&run.stdout)?;
    Ok(line["session_id"]
        .as_str()
        .ok_or_else(|| format!("no session id: {}", run.stdout))?
        .to_string())
}

fn messages(server: &ScriptedServer, n: usize) -> Vec<Value> {
    server.requests()[n].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn ok(run: &Run) -> Result<(), String> {
    if run.status == Some(0) {
        Ok(())
    } else {
        Err(format!(
            "exit {:?}\n{}\n{}",
            run.status, run.stdout, run.stderr
        ))
    }
}

#[test]
fn resume_continue_and_fork_send_the_same_history() -> TestResult {
    let home = Home::new()?;
    let server = ScriptedServer::start(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
        Reply::text("four"),
    ])?;
    let first = home.run(&server, &["-p", "FIRST"])?;
    ok(&first)?;
    let id = session_id(&first)?;
    let path = home.transcript(&id)?;

    let second = home.run(&server, &["-p", "SECOND", "--resume", &id])?;
    ok(&second)?;
    assert_eq!(session_id(&second)?, id, "a resumed session keeps its id");
    let sent = messages(&server, 1);
    assert_eq!(sent.len(), 3);
    // The prefix is what the first run sent and got, byte for byte (the
    // cache breakpoint moves to the newest message; it is not content).
    assert_eq!(
        serde_json::to_string(&without_cache_marks(&sent[0]))?,
        serde_json::to_string(&without_cache_marks(&messages(&server, 0)[0]))?
    );
    assert!(sent[2].to_string().contains("cache_control"));
    assert_eq!(
        serde_json::to_string(&without_cache_marks(&sent[1]))?,
        serde_json::to_string(
            &json!({"role": "assistant", "content": [{"type": "text", "text": "one"}]})
        )?
    );
    let requests = server.requests();
    assert_eq!(requests[1].body["system"], requests[0].body["system"]);
    assert_eq!(requests[1].body["tools"], requests[0].body["tools"]);

    let third = home.run(&server, &["-p", "THIRD", "--continue"])?;
    ok(&third)?;
    assert_eq!(session_id(&third)?, id);
    let texts: Vec<String> = messages(&server, 2).iter().map(text_of).collect();
    assert_eq!(texts, ["FIRST", "one", "SECOND", "two", "THIRD"]);

    let before = std::fs::read(&path)?;
    let fork = home.run(&server, &["-p", "FOURTH", "--continue", "--fork-session"])?;
    ok(&fork)?;
    let fork_id = session_id(&fork)?;
    assert_ne!(fork_id, id, "a fork has an id of its own");
    let texts: Vec<String> = messages(&server, 3).iter().map(text_of).collect();
    assert_eq!(
        texts,
        ["FIRST", "one", "SECOND", "two", "THIRD", "three", "FOURTH"]
    );
    assert_eq!(
        std::fs::read(&path)?,
        before,
        "the forked session is left as it was"
    );
    let header = std::fs::read_to_string(home.transcript(&fork_id)?)?;
    let header: Value = serde_json::from_str(header.lines().next().unwrap_or_default())?;
    assert_eq!(header["forkedFrom"], id.as_str());
    Ok(())
}

#[test]
fn session_ids_and_persistence_flags() -> TestResult {
    let home = Home::new()?;
    let server = ScriptedServer::start(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("never"),
    ])?;
    let chosen = "7d5e4c32-1f0a-4b6e-9a53-0c2f8e7d6b1a";
    let run = home.run(&server, &["-p", "hi", "--session-id", chosen])?;
    ok(&run)?;
    assert_eq!(session_id(&run)?, chosen);
    home.transcript(chosen)?;
    // The same id again would mix two sessions in one file.
    let again = home.run(&server, &["-p", "hi", "--session-id", chosen])?;
    assert_eq!(again.status, Some(1));
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);

    let before = home.transcripts();
    let run = home.run(&server, &["-p", "hi", "--no-session-persistence"])?;
    ok(&run)?;
    assert_eq!(home.transcripts(), before, "nothing written");

    let missing = home.run(&server, &["-p", "hi", "--resume", "no-such-session"])?;
    assert_eq!(missing.status, Some(1));
    assert!(
        missing.stderr.contains("no session `no-such-session`"),
        "{}",
        missing.stderr
    );
    // An id is a name in this workspace's folder, not a path to a file.
    let outside = home.config.join("elsewhere.jsonl");
    std::fs::copy(home.transcript(chosen)?, &outside)?;
    let by_path = home.run(&server, &["-p", "hi", "--resume", "../../elsewhere"])?;
    assert_eq!(by_path.status, Some(1));
    assert!(
        by_path.stderr.contains("is not a session id"),
        "{}",
        by_path.stderr
    );
    let fork_alone = home.run(&server, &["-p", "hi", "--fork-session"])?;
    assert_eq!(fork_alone.status, Some(1));
    assert_eq!(server.requests().len(), 2, "refused runs send nothing");
    Ok(())
}

#[test]
fn a_run_killed_mid_tool_resumes_without_losing_a_completed_message() -> TestResult {
    let home = Home::new()?;
    let notes = home.ws.join("notes.txt").to_string_lossy().into_owned();
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![
            Block::text("Reading first."),
            Block::tool_use("toolu_read", "Read", json!({"file_path": notes})),
        ]),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_slow",
            "Bash",
            json!({"command": "sleep 30"}),
        )]),
        Reply::text("picked up again"),
    ])?;
    let mut child = home
        .command(
            &server,
            &[
                "-p",
                "do the work",
                "--permission-mode",
                "bypassPermissions",
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    // Killed while `sleep 30` runs: the second response is on disk by then.
    let deadline = Instant::now() + Duration::from_secs(60);
    let transcript = loop {
        let found = home.transcripts().into_iter().next().and_then(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            text.contains("toolu_slow").then_some(path)
        });
        if let Some(path) = found {
            break path;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err("the second response never reached the transcript".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The call is on disk without its result: whether `sleep 30` has
    // started yet or not, that is what a killed run leaves.
    child.kill()?; // SIGKILL
    child.wait()?;
    let id = transcript
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .ok_or("no id")?;

    let resumed = home.run(&server, &["-p", "go on", "--resume", &id])?;
    ok(&resumed)?;
    assert!(
        resumed.stderr.contains("marked interrupted"),
        "{}",
        resumed.stderr
    );
    let sent = messages(&server, 2);
    let roles: Vec<&str> = sent.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant", "user", "user"],
        "{sent:?}"
    );
    assert_eq!(text_of(&sent[1]), "Reading first.");
    assert_eq!(sent[2]["content"][0]["tool_use_id"], "toolu_read");
    assert!(
        sent[2]["content"][0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("the port is 8080"))
    );
    assert_eq!(sent[3]["content"][0]["id"], "toolu_slow");
    assert_eq!(sent[4]["content"][0]["tool_use_id"], "toolu_slow");
    assert_eq!(sent[4]["content"][0]["is_error"], true);
    assert_eq!(text_of(&sent[5]), "go on");
    // The repair is on disk: loading again needs none.
    let again = ScriptedServer::start(vec![Reply::text("fine")])?;
    let run = home.run(&again, &["-p", "more", "--resume", &id])?;
    ok(&run)?;
    assert!(!run.stderr.contains("interrupted"), "{}", run.stderr);
    assert_eq!(messages(&again, 0).len(), 8);
    Ok(())
}

fn transcript_with(
    home: &Home,
    server: &ScriptedServer,
) -> Result<(String, PathBuf), Box<dyn std::error::Error>> {
    let run = home.run(server, &["-p", "FIRST"])?;
    ok(&run)?;
    let id = session_id(&run)?;
    let path = home.transcript(&id)?;
    Ok((id, path))
}

#[test]
fn damaged_and_foreign_transcripts_are_refused_and_left_alone() -> TestResult {
    let home = Home::new()?;
    let server = ScriptedServer::start(vec![Reply::text("one"), Reply::text("two")])?;
    let (id, path) = transcript_with(&home, &server)?;
    let good = std::fs::read_to_string(&path)?;
    let mut lines: Vec<&str> = good.lines().collect();

    // A line in the middle that is not JSON.
    lines.insert(2, "{\"type\":\"user\",\"message\": garbage");
    let damaged = format!("{}\n", lines.join("\n"));
    std::fs::write(&path, &damaged)?;
    let run = home.run(&server, &["-p", "again", "--resume", &id])?;
    assert_eq!(run.status, Some(1));
    assert!(run.stderr.contains("damaged at line 3"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&path)?, damaged, "changed nothing");

    // Another format (a different carapace).
    let foreign = good.replacen("\"format\":1", "\"format\":2", 1);
    std::fs::write(&path, &foreign)?;
    let run = home.run(&server, &["-p", "again", "--resume", &id])?;
    assert_eq!(run.status, Some(1));
    assert!(run.stderr.contains("transcript format 2"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&path)?, foreign);
    assert_eq!(server.requests().len(), 1, "nothing was sent");

    // A torn last line (a kill mid-write) is ignored, with a warning.
    std::fs::write(&path, format!("{good}{{\"type\":\"assistant\",\"mess"))?;
    let run = home.run(&server, &["-p", "again", "--resume", &id])?;
    ok(&run)?;
    assert!(run.stderr.contains("cut off mid-write"), "{}", run.stderr);
    let texts: Vec<String> = messages(&server, 1).iter().map(text_of).collect();
    assert_eq!(texts, ["FIRST", "one", "again"]);
    let after = std::fs::read_to_string(&path)?;
    for line in after.lines() {
        serde_json::from_str::<Value>(line)?;
    }
    Ok(())
}

#[test]
fn compaction_shows_a_boundary_keeps_the_full_record_and_resumes_after_it() -> TestResult {
    let home = Home::new()?;
    let notes = home.ws.join("notes.txt").to_string_lossy().into_owned();
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Read",
            json!({"file_path": notes}),
        )])
        .input_tokens(30_000),
        Reply::text("SUMMARY: the port is 8080"),
        Reply::text("done"),
        Reply::text("after resume"),
        Reply::text("MANUAL SUMMARY"),
    ])?;
    let run = Run::from_output(
        home.command(&server, &["-p", "find the port"])
            .env("CARAPACE_AUTOCOMPACT_PCT_OVERRIDE", "10")
            .output()?,
    )?;
    ok(&run)?;
    let all = lines(&run.stdout)?;
    let boundary = all
        .iter()
        .find(|l| l["subtype"] == "compact_boundary")
        .ok_or("no compact_boundary line")?;
    assert_eq!(boundary["compact_metadata"]["trigger"], "auto");
    assert!(boundary["compact_metadata"]["pre_tokens"].as_u64() >= Some(30_000));
    let id = session_id(&run)?;
    let record = std::fs::read_to_string(home.transcript(&id)?)?;
    assert!(
        record.contains("toolu_1"),
        "the history before the boundary stays"
    );
    assert!(record.contains("\"compact_boundary\""));

    let resumed = home.run(&server, &["-p", "and now?", "--resume", &id])?;
    ok(&resumed)?;
    let texts: Vec<String> = messages(&server, 3).iter().map(text_of).collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert!(texts[0].contains("SUMMARY: the port is 8080"));
    assert_eq!(texts[1..], ["done", "and now?"]);

    // /compact by hand.
    let manual = home.run(&server, &["-p", "/compact keep the port", "--resume", &id])?;
    ok(&manual)?;
    let all = lines(&manual.stdout)?;
    assert!(all.iter().any(
        |l| l["subtype"] == "compact_boundary" && l["compact_metadata"]["trigger"] == "manual"
    ));
    let summary_request = messages(&server, 4);
    let last = summary_request.last().map(text_of).unwrap_or_default();
    assert!(last.contains("keep the port"), "{last}");
    let result = last_line(&manual.stdout)?;
    assert_eq!(
        (
            result["num_turns"].as_u64(),
            result["result"].as_str(),
            result["is_error"].as_bool()
        ),
        (Some(0), Some(""), Some(false)),
        "as Claude Code ends /compact"
    );
    Ok(())
}

#[test]
fn hooks_are_told_the_transcript_path_and_how_the_session_started() -> TestResult {
    let home = Home::new()?;
    let script = home.ws.join("hook-script.json");
    std::fs::write(&script, json!({"SessionStart": {"echo": true}}).to_string())?;
    let probe =
        std::path::Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("command-hook-probe.wasm");
    let settings = json!({"hooks": {"SessionStart": [{"matcher": "", "hooks": [{
        "type": "wasm-command",
        "path": probe,
        "grants": {"read": [script]},
    }]}]}})
    .to_string();
    let server = ScriptedServer::start(vec![Reply::text("one"), Reply::text("two")])?;
    let stdin_of = |run: &Run| -> Result<Value, Box<dyn std::error::Error>> {
        let all = lines(&run.stdout)?;
        let response = all
            .iter()
            .find(|l| l["subtype"] == "hook_response" && l["hook_event"] == "SessionStart")
            .ok_or_else(|| format!("no SessionStart hook_response: {}", run.stdout))?;
        Ok(serde_json::from_str(
            response["stderr"].as_str().unwrap_or_default(),
        )?)
    };
    let args = ["--settings", settings.as_str(), "--include-hook-events"];
    let first = home.run(&server, &[&["-p", "FIRST"], &args[..]].concat())?;
    ok(&first)?;
    let id = session_id(&first)?;
    let path = home.transcript(&id)?.display().to_string();
    let told = stdin_of(&first)?;
    assert_eq!(
        (told["source"].as_str(), told["transcript_path"].as_str()),
        (Some("startup"), Some(path.as_str()))
    );
    let resumed = home.run(
        &server,
        &[&["-p", "SECOND", "--resume", &id], &args[..]].concat(),
    )?;
    ok(&resumed)?;
    let told = stdin_of(&resumed)?;
    assert_eq!(
        (told["source"].as_str(), told["transcript_path"].as_str()),
        (Some("resume"), Some(path.as_str()))
    );
    Ok(())
}

#[test]
fn a_multi_turn_stream_is_one_session_on_disk() -> TestResult {
    use std::io::Write;
    let home = Home::new()?;
    let server = ScriptedServer::start(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
    ])?;
    let mut child = home
        .command(&server, &["-p", "--input-format", "stream-json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    {
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        for text in ["FIRST", "SECOND"] {
            writeln!(
                stdin,
                "{}",
                json!({"type": "user", "message": {"role": "user", "content": text}})
            )?;
        }
    } // closed: the session ends after its turns
    let run = Run::from_output(child.wait_with_output()?)?;
    ok(&run)?;
    let results: Vec<Value> = lines(&run.stdout)?
        .into_iter()
        .filter(|l| l["type"] == "result")
        .collect();
    assert_eq!(results.len(), 2);
    let id = session_id(&run)?;
    assert_eq!(results[0]["session_id"], id.as_str());
    let resumed = home.run(&server, &["-p", "THIRD", "--resume", &id])?;
    ok(&resumed)?;
    let texts: Vec<String> = messages(&server, 2).iter().map(text_of).collect();
    assert_eq!(texts, ["FIRST", "one", "SECOND", "two", "THIRD"]);
    Ok(())
}

#[test]
fn a_pre_compact_hook_is_told_the_instructions_and_may_block() -> TestResult {
    let home = Home::new()?;
    let script = home.ws.join("hook-script.json");
    let probe =
        std::path::Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("command-hook-probe.wasm");
    let settings = json!({"hooks": {"PreCompact": [{"matcher": "", "hooks": [{
        "type": "wasm-command",
        "path": probe,
        "grants": {"read": [script]},
    }]}]}})
    .to_string();
    let server = ScriptedServer::start(vec![Reply::text("one"), Reply::text("SUMMARY")])?;
    let first = home.run(&server, &["-p", "FIRST"])?;
    ok(&first)?;
    let id = session_id(&first)?;
    let compact = |instructions: &str| {
        home.run(
            &server,
            &[
                "-p",
                instructions,
                "--resume",
                &id,
                "--settings",
                &settings,
                "--include-hook-events",
            ],
        )
    };

    // exit 2 blocks, as in Claude Code: the reason is the result, no error.
    std::fs::write(
        &script,
        json!({"PreCompact": {"stderr": "not now", "exit": 2}}).to_string(),
    )?;
    let blocked = compact("/compact")?;
    ok(&blocked)?;
    let result = last_line(&blocked.stdout)?;
    assert_eq!(
        result["result"],
        "Compaction blocked by PreCompact hook: not now"
    );
    assert_eq!(result["is_error"], false);
    assert_eq!(server.requests().len(), 1, "no summary request");

    // A hook that fails otherwise does not stop it, and saw its input.
    std::fs::write(&script, json!({"PreCompact": {"echo": true}}).to_string())?;
    let done = compact("/compact keep the tests")?;
    ok(&done)?;
    let all = lines(&done.stdout)?;
    let response = all
        .iter()
        .find(|l| l["subtype"] == "hook_response")
        .ok_or("no hook_response")?;
    let told: Value = serde_json::from_str(response["stderr"].as_str().unwrap_or_default())?;
    assert_eq!(
        (
            told["trigger"].as_str(),
            told["custom_instructions"].as_str()
        ),
        (Some("manual"), Some("keep the tests"))
    );
    assert!(all.iter().any(|l| l["subtype"] == "compact_boundary"));
    assert_eq!(server.requests().len(), 2);
    Ok(())
}

/// A transcript whose header names another session (a path, another
/// file): carapace would have truncated and appended to what that id
/// names. Refused, and the file it names is untouched; the control — the
/// same transcript with its own name in the header — resumes.
#[test]
fn a_crafted_transcript_header_cannot_name_a_file_outside_its_folder() -> TestResult {
    let home = Home::new()?;
    let server = ScriptedServer::start(vec![Reply::text("first"), Reply::text("again")])?;
    let first = home.run(&server, &["-p", "hello"])?;
    assert_eq!(first.status, Some(0), "{}", first.stderr);
    let id = session_id(&first)?;
    let path = home.transcript(&id)?;
    let original = std::fs::read_to_string(&path)?;
    // The victim: a file two folders up, which the crafted id names.
    let victim = home.config.join("victim.jsonl");
    std::fs::write(&victim, "precious\n")?;
    let crafted = "crafted";
    let crafted_path = path.with_file_name(format!("{crafted}.jsonl"));
    for header_id in ["../../victim", "victim", &id] {
        let text = original.replacen(
            &format!("\"sessionId\":\"{id}\""),
            &format!("\"sessionId\":\"{header_id}\""),
            1,
        );
        let header = text.lines().next().unwrap_or_default();
        assert!(header.contains(&format!("\"{header_id}\"")), "{header}");
        std::fs::write(&crafted_path, text)?;
        let resumed = home.run(&server, &["-p", "more", "--resume", crafted])?;
        assert_eq!(resumed.status, Some(1), "{header_id}: {}", resumed.stdout);
        assert!(
            resumed.stderr.contains("not this file's name"),
            "{header_id}: {}",
            resumed.stderr
        );
        assert_eq!(std::fs::read_to_string(&victim)?, "precious\n");
    }
    // Control: the header names its own file; the session resumes and the
    // request carries its history.
    let own = original.replacen(
        &format!("\"sessionId\":\"{id}\""),
        &format!("\"sessionId\":\"{crafted}\""),
        1,
    );
    std::fs::write(&crafted_path, own)?;
    let resumed = home.run(&server, &["-p", "more", "--resume", crafted])?;
    assert_eq!(resumed.status, Some(0), "{}", resumed.stderr);
    let requests = server.requests();
    let last = requests.last().ok_or("no request")?;
    assert!(text_of(&last.body["messages"][0]).contains("hello"));
    assert!(std::fs::read_to_string(&crafted_path)?.contains("again"));
    Ok(())
}

/// Another account on the machine must not read the sessions: the config
/// folder, the project folders, transcripts and audit logs are private,
/// and a folder an earlier version left open is closed.
#[test]
fn carapaces_own_files_are_private_to_the_user() -> TestResult {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new()?;
    std::fs::create_dir_all(&home.config)?;
    std::fs::set_permissions(&home.config, std::fs::Permissions::from_mode(0o755))?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Read",
            json!({"file_path": home.ws.join("notes.txt")}),
        )]),
        Reply::text("done"),
    ])?;
    let run = home.run(
        &server,
        &["-p", "read it", "--permission-mode", "bypassPermissions"],
    )?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let id = session_id(&run)?;
    let transcript = home.transcript(&id)?;
    let audit = home.config.join("sessions").join(&id).join("audit.jsonl");
    assert!(audit.is_file(), "the call was audited");
    let mode = |p: &std::path::Path| -> std::io::Result<u32> {
        Ok(std::fs::metadata(p)?.permissions().mode() & 0o777)
    };
    for dir in [
        home.config.clone(),
        home.config.join("projects"),
        transcript.parent().ok_or("no folder")?.to_path_buf(),
        home.config.join("sessions"),
        home.config.join("sessions").join(&id),
    ] {
        assert_eq!(mode(&dir)?, 0o700, "{}", dir.display());
    }
    for file in [&transcript, &audit] {
        assert_eq!(mode(file)?, 0o600, "{}", file.display());
    }
    // The workspace's own files keep the user's umask: the rule is for
    // carapace's files only.
    assert_eq!(mode(&home.ws.join("notes.txt"))? & 0o044, 0o044);
    Ok(())
}

/// SessionEnd and Notification fire as Claude Code fires them: a
/// Notification when carapace needs a permission (here a Bash call the
/// default mode asks about, refused in print mode), a SessionEnd when the
/// session ends; each hook is told its event's fields.
#[test]
fn session_end_and_notification_hooks_fire_with_their_fields() -> TestResult {
    let home = Home::new()?;
    let script = home.ws.join("hook-script.json");
    std::fs::write(
        &script,
        json!({"SessionEnd": {"echo": true}, "Notification": {"echo": true}}).to_string(),
    )?;
    let probe =
        std::path::Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("command-hook-probe.wasm");
    let hook = json!([{"matcher": "", "hooks": [{
        "type": "wasm-command", "path": probe, "grants": {"read": [script]},
    }]}]);
    let settings = json!({"hooks": {"SessionEnd": hook, "Notification": hook}}).to_string();
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Bash",
            // Not a read-only line: it is asked about (the Notification).
            json!({"command": "printf hi"}),
        )]),
        Reply::text("done"),
    ])?;
    let run = home.run(
        &server,
        &["-p", "go", "--settings", &settings, "--include-hook-events"],
    )?;
    ok(&run)?;
    let all = lines(&run.stdout)?;
    let told = |event: &str| -> Result<Value, Box<dyn std::error::Error>> {
        let response = all
            .iter()
            .find(|l| l["subtype"] == "hook_response" && l["hook_event"] == event)
            .ok_or_else(|| format!("no {event} hook_response: {}", run.stdout))?;
        Ok(serde_json::from_str(
            response["stderr"].as_str().unwrap_or_default(),
        )?)
    };
    let notification = told("Notification")?;
    assert_eq!(notification["hook_event_name"], "Notification");
    let message = notification["message"].as_str().unwrap_or_default();
    assert!(message.contains("permission to use Bash"), "{message}");
    let end = told("SessionEnd")?;
    assert_eq!(end["hook_event_name"], "SessionEnd");
    assert_eq!(end["reason"], "other");
    assert_eq!(end["session_id"], session_id(&run)?.as_str());
    Ok(())
}

/// After a manual compaction, SessionStart (`compact`) and then
/// PostCompact fire, PostCompact told the trigger and the model's summary,
/// with the fields Claude Code 2.1.332 gives it
/// (`tests/claude-code/hook-post-compact.json`).
#[test]
fn post_compact_is_told_the_summary_as_in_claude_code() -> TestResult {
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/claude-code/hook-post-compact.json"),
    )?)?;
    let home = Home::new()?;
    let script = home.ws.join("hook-script.json");
    std::fs::write(
        &script,
        json!({"PostCompact": {"echo": true}, "SessionStart": {"echo": true}}).to_string(),
    )?;
    let probe =
        std::path::Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("command-hook-probe.wasm");
    let hook = json!([{"matcher": "", "hooks": [{"type": "wasm-command", "path": probe,
        "grants": {"read": [script]}}]}]);
    let settings = json!({"hooks": {"PostCompact": hook, "SessionStart": hook}}).to_string();
    let server = ScriptedServer::start(vec![
        Reply::text("first answer"),
        Reply::text("we said hello"),
    ])?;
    let first = home.run(&server, &["-p", "hello"])?;
    ok(&first)?;
    let id = session_id(&first)?;
    let done = home.run(
        &server,
        &[
            "-p",
            "/compact",
            "--resume",
            &id,
            "--settings",
            &settings,
            "--include-hook-events",
        ],
    )?;
    ok(&done)?;
    let told: Vec<Value> = lines(&done.stdout)?
        .iter()
        .filter(|l| l["subtype"] == "hook_response")
        .filter_map(|l| serde_json::from_str(l["stderr"].as_str()?).ok())
        .collect();
    let names: Vec<&str> = told
        .iter()
        .filter_map(|t| t["hook_event_name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["SessionStart", "SessionStart", "PostCompact"],
        "resume, compact, then PostCompact"
    );
    let post = told.last().ok_or("no PostCompact")?;
    assert_eq!(post["trigger"], "manual");
    assert_eq!(post["compact_summary"], "we said hello");
    let theirs = recorded["hook_inputs"]
        .as_array()
        .and_then(|all| all.iter().find(|h| h["hook_event_name"] == "PostCompact"))
        .ok_or("no recorded PostCompact")?;
    let keys = |v: &Value| {
        let mut k: Vec<String> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        k.sort();
        k
    };
    assert_eq!(keys(post), keys(theirs), "PostCompact's fields");
    // The SessionStarts before it: a resume tells the history's age, size
    // and cache cost; a compaction the model — the fields Claude Code gives.
    for source in ["resume", "compact"] {
        let pick = |all: &[Value]| {
            all.iter()
                .find(|h| h["hook_event_name"] == "SessionStart" && h["source"] == source)
                .map(keys)
        };
        let recorded_inputs = recorded["hook_inputs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            pick(&told),
            pick(&recorded_inputs),
            "SessionStart ({source})"
        );
    }
    let resumed = told
        .iter()
        .find(|h| h["source"] == "resume")
        .ok_or("no resume")?;
    assert!(
        resumed["context_tokens"].as_u64().is_some_and(|t| t > 0),
        "{resumed}"
    );
    assert_eq!(resumed["prompt_cache_likely_expired"], false);
    Ok(())
}
