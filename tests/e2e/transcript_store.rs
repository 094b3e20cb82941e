//! The shared transcript store through the binary (issue 28), against a
//! PostgreSQL server each test starts on loopback: a session begun on one
//! machine resumes on another (a fresh config folder and working copy)
//! and sends what a resume from files sends; two workers resuming one
//! session at once — one runs, the other is refused; `kill -9` while an
//! append waits leaves whole lines, frees the lease and resumes; file
//! checkpoints resumed from either store rewind.

mod support;

use carapace_test_support::postgres::Postgres;
use scripted_server::{Block, Reply, ScriptedServer, Step};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::{Run, TestResult, lines, wait_for, without_cache_marks};

/// A machine: a workspace and a config folder of its own.
struct Machine {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    config: PathBuf,
}

impl Machine {
    /// A machine whose working copy is at `ws` (the same path on every
    /// machine, as a pod mounts its checkout), holding `notes.txt`.
    fn new(ws: &Path) -> Result<Self, Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(ws)?;
        std::fs::write(ws.join("notes.txt"), "the port is 8080\n")?;
        Ok(Self {
            config: dir.path().join("config"),
            _dir: dir,
            ws: ws.to_path_buf(),
        })
    }

    fn command(&self, server: &ScriptedServer, store: Option<&str>, args: &[&str]) -> Command {
        let mut command = support::against(server, &self.ws);
        command
            .env("CARAPACE_CONFIG_DIR", &self.config)
            .args(["--output-format", "stream-json", "--verbose"])
            .args(args);
        if let Some(url) = store {
            command.args(["--transcript-store", url]);
        }
        command
    }

    fn run(
        &self,
        server: &ScriptedServer,
        store: Option<&str>,
        args: &[&str],
    ) -> Result<Run, Box<dyn std::error::Error>> {
        Run::from_output(self.command(server, store, args).output()?)
    }
}

fn ok(run: &Run) -> Result<(), String> {
    match run.status {
        Some(0) => Ok(()),
        status => Err(format!("exit {status:?}\n{}\n{}", run.stdout, run.stderr)),
    }
}

fn session_id(run: &Run) -> Result<String, Box<dyn std::error::Error>> {
    let last = support::last_line(&run.stdout)?;
    Ok(last["session_id"]
        .as_str()
        .ok_or_else(|| format!("no session id: {}", run.stdout))?
        .to_string())
}

/// A turn that reads the notes, then answers.
fn reading_turn(ws: &Path) -> Vec<Reply> {
    vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_read",
            "Read",
            json!({"file_path": ws.join("notes.txt")}),
        )]),
        Reply::text("the port is 8080"),
    ]
}

/// The messages of the request a resumed turn sends, when the session was
/// begun on one machine and resumed on `second` (the same machine for
/// files; a fresh one for PostgreSQL).
fn resumed_request(
    ws: &Path,
    store: Option<&str>,
    fresh: bool,
) -> Result<Value, Box<dyn std::error::Error>> {
    let mut replies = reading_turn(ws);
    replies.push(Reply::text("resumed"));
    let server = ScriptedServer::start(replies)?;
    let first = Machine::new(ws)?;
    let run = first.run(&server, store, &["-p", "FIRST", "--allowedTools", "Read"])?;
    ok(&run)?;
    let id = session_id(&run)?;
    let second = if fresh {
        drop(first);
        std::fs::remove_dir_all(ws)?;
        Machine::new(ws)?
    } else {
        first
    };
    let run = second.run(&server, store, &["-p", "SECOND", "--resume", &id])?;
    ok(&run)?;
    assert_eq!(session_id(&run)?, id, "a resumed session keeps its id");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    Ok(without_cache_marks(&requests[2].body["messages"]))
}

#[test]
fn a_session_resumed_on_another_machine_sends_what_a_resume_from_files_sends() -> TestResult {
    let postgres = Postgres::start()?;
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("checkout");
    let from_files = resumed_request(&ws, None, false)?;
    std::fs::remove_dir_all(&ws)?;
    let from_postgres = resumed_request(&ws, Some(&postgres.url()), true)?;
    assert_eq!(
        serde_json::to_string_pretty(&from_postgres)?,
        serde_json::to_string_pretty(&from_files)?
    );
    let texts = from_files.to_string();
    assert!(texts.contains("FIRST") && texts.contains("SECOND") && texts.contains("8080"));
    // Nothing was written to the fresh machine's config folder but its
    // own session files: the transcript is in the store.
    let rows = postgres.psql("SELECT count(DISTINCT session_id) FROM carapace_transcript_lines")?;
    assert_eq!(rows.trim(), "1");
    Ok(())
}

fn finish(child: Child) -> Result<Run, Box<dyn std::error::Error>> {
    support::finish_within(child, Duration::from_secs(60))
}

#[test]
fn of_two_workers_resuming_one_session_at_once_one_runs_and_the_other_is_refused() -> TestResult {
    let postgres = Postgres::start()?;
    let url = postgres.url();
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("checkout");
    let server = ScriptedServer::start(vec![
        Reply::text("one"),
        // The first worker's answer holds its stream open for a while.
        Reply::text("slow").after_block(0, Step::Pause(Duration::from_secs(3))),
    ])?;
    let first = Machine::new(&ws)?;
    let run = first.run(&server, Some(&url), &["-p", "FIRST"])?;
    ok(&run)?;
    let id = session_id(&run)?;
    let (a, b) = (Machine::new(&ws)?, Machine::new(&ws)?);
    let running = a
        .command(&server, Some(&url), &["-p", "BY A", "--resume", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    wait_for("the first worker's request", || {
        server.requests().len() == 2
    })?;
    let refused = b.run(&server, Some(&url), &["-p", "BY B", "--resume", &id])?;
    assert_ne!(refused.status, Some(0), "{}", refused.stdout);
    assert!(
        refused.stderr.contains("is being written by another"),
        "{}",
        refused.stderr
    );
    ok(&finish(running)?)?;
    assert_eq!(
        server.requests().len(),
        2,
        "the refused worker sent nothing"
    );
    // Only the winner's lines are in the store, in order.
    let lines = postgres.psql(&format!(
        "SELECT line FROM carapace_transcript_lines WHERE session_id = '{id}' ORDER BY seq"
    ))?;
    assert!(!lines.contains("BY B"), "{lines}");
    let order: Vec<usize> = ["FIRST", "\"one\"", "BY A", "\"slow\""]
        .iter()
        .filter_map(|t| lines.find(t))
        .collect();
    assert_eq!(order.len(), 4, "{lines}");
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{lines}");
    Ok(())
}

/// A `psql` holding the transcript table locked against writes until it
/// is dropped (its transaction then ends).
struct TableLock(Child);

impl TableLock {
    fn take(postgres: &Postgres) -> Result<Self, Box<dyn std::error::Error>> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")?
            .filter_map(Result::ok)
            .map(|e| e.path().join("bin/psql"))
            .find(|p| p.exists())
            .ok_or("no psql")?;
        let mut child = Command::new(bin)
            .args(["-X", "-q", "-d", &postgres.url()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.as_mut().ok_or("no stdin")?;
        writeln!(
            stdin,
            "BEGIN; LOCK TABLE carapace_transcript_lines IN EXCLUSIVE MODE; SELECT pg_sleep(0);"
        )?;
        stdin.flush()?;
        let lock = Self(child);
        wait_for("the table lock", || {
            postgres
                .psql("SELECT count(*) FROM pg_locks WHERE mode = 'ExclusiveLock' AND locktype = 'relation'")
                .is_ok_and(|n| n.trim() == "1")
        })?;
        Ok(lock)
    }
}

impl Drop for TableLock {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

#[test]
fn kill_9_while_an_append_waits_leaves_whole_lines_frees_the_lease_and_resumes() -> TestResult {
    let postgres = Postgres::start()?;
    let url = postgres.url();
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("checkout");
    let machine = Machine::new(&ws)?;
    let mut replies = reading_turn(&ws);
    replies.push(Reply::text("after the kill"));
    let server = ScriptedServer::start(replies)?;
    let run = machine.run(
        &server,
        Some(&url),
        &["-p", "FIRST", "--allowedTools", "Read"],
    )?;
    ok(&run)?;
    let id = session_id(&run)?;
    let count = || {
        postgres.psql(&format!(
            "SELECT count(*) FROM carapace_transcript_lines WHERE session_id = '{id}'"
        ))
    };
    let before = count()?;
    let lock = TableLock::take(&postgres)?;
    let mut killed = machine
        .command(&server, Some(&url), &["-p", "SECOND", "--resume", &id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    wait_for("carapace waiting on its append", || {
        postgres
            .psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'carapace' AND wait_event_type = 'Lock'")
            .is_ok_and(|n| n.trim() == "1")
    })?;
    killed.kill()?; // SIGKILL, mid-append
    killed.wait()?;
    drop(lock);
    // The prompt was never sent: it is written before it is acted on.
    assert_eq!(server.requests().len(), 2);
    // The append is all or nothing: the prompt's line, whole, or nothing.
    let after = count()?;
    let grown = after.trim().parse::<i64>()? - before.trim().parse::<i64>()?;
    assert!(matches!(grown, 0 | 1), "{before} -> {after}");
    // The lease died with the process: the next worker resumes at once.
    let again = machine.run(&server, Some(&url), &["-p", "THIRD", "--resume", &id])?;
    ok(&again)?;
    assert!(!again.stderr.contains("damaged"), "{}", again.stderr);
    let sent = server.requests()[2].body["messages"].to_string();
    assert!(sent.contains("FIRST") && sent.contains("THIRD"), "{sent}");
    assert_eq!(sent.contains("SECOND"), grown == 1, "{sent}");
    let calls = sent.matches("\"tool_use\"").count();
    let answered = sent.matches("\"tool_use_id\":\"toolu_read\"").count();
    assert_eq!((calls, answered), (1, 1), "{sent}");
    Ok(())
}

/// One stream-json session: `input` lines in, its stdout lines out.
fn stream_session(
    machine: &Machine,
    server: &ScriptedServer,
    store: Option<&str>,
    extra: &[&str],
    input: &[Value],
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let mut args = vec![
        "-p",
        "--input-format",
        "stream-json",
        "--permission-mode",
        "acceptEdits",
    ];
    args.extend_from_slice(extra);
    let mut child = machine
        .command(server, store, &args)
        .env("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    {
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        for line in input {
            writeln!(stdin, "{line}")?;
        }
    }
    let run = finish(child)?;
    ok(&run)?;
    Ok(lines(&run.stdout)?)
}

#[test]
fn file_checkpoints_resumed_from_either_store_rewind_what_the_first_run_wrote() -> TestResult {
    let postgres = Postgres::start()?;
    for store in [None, Some(postgres.url())] {
        let dir = tempfile::tempdir()?;
        let ws = dir.path().join("checkout");
        let machine = Machine::new(&ws)?;
        let notes = ws.join("notes.txt");
        let server = ScriptedServer::start(vec![
            // Write replaces a file only after it was read.
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_read",
                "Read",
                json!({"file_path": notes}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_write",
                "Write",
                json!({"file_path": notes, "content": "rewritten\n"}),
            )]),
            Reply::text("written"),
        ])?;
        let prompt = json!({"type": "user", "uuid": "u-1",
            "message": {"role": "user", "content": "rewrite the notes"}});
        let first = stream_session(&machine, &server, store.as_deref(), &[], &[prompt])?;
        assert_eq!(std::fs::read_to_string(&notes)?, "rewritten\n");
        let id = first
            .last()
            .and_then(|l| l["session_id"].as_str())
            .ok_or("no session id")?
            .to_string();
        // Another process resumes the session and rewinds to the prompt.
        let rewind = json!({"type": "control_request", "request_id": "r1",
            "request": {"subtype": "rewind_files", "user_message_id": "u-1"}});
        let second = stream_session(
            &machine,
            &server,
            store.as_deref(),
            &["--resume", &id],
            &[rewind],
        )?;
        let answer = second
            .iter()
            .find(|l| l["type"] == "control_response")
            .ok_or("no control_response")?;
        let response = &answer["response"]["response"];
        assert_eq!(response["canRewind"], true, "{store:?}: {answer}");
        assert_eq!(
            response["filesChanged"],
            json!([notes]),
            "{store:?}: {answer}"
        );
        assert_eq!(
            std::fs::read_to_string(&notes)?,
            "the port is 8080\n",
            "{store:?}"
        );
    }
    Ok(())
}

#[test]
fn a_checkpoint_a_tampered_transcript_adds_outside_the_workspace_is_never_restored() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("checkout");
    let machine = Machine::new(&ws)?;
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "safe\n")?;
    let server = ScriptedServer::start(vec![Reply::text("nothing written")])?;
    let prompt = json!({"type": "user", "uuid": "u-1",
        "message": {"role": "user", "content": "hello"}});
    let first = stream_session(&machine, &server, None, &[], &[prompt])?;
    let id = first
        .last()
        .and_then(|l| l["session_id"].as_str())
        .ok_or("no session id")?
        .to_string();
    // Whoever can write the transcript adds a record naming a file
    // outside the workspace, as it "was" before the turn — and, as the
    // control, one inside it.
    let inside = ws.join("planted.txt");
    let transcript = walk(&machine.config)
        .into_iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n == format!("{id}.jsonl").as_str())
        })
        .ok_or("no transcript")?;
    let mut file = std::fs::OpenOptions::new().append(true).open(&transcript)?;
    for path in [&victim, &inside] {
        let line = json!({"type": "file_checkpoint", "turn": "u-1",
            "file": [path, {"content": "b3duZWQK"}]});
        writeln!(file, "{line}")?;
    }
    let rewind = json!({"type": "control_request", "request_id": "r1",
        "request": {"subtype": "rewind_files", "user_message_id": "u-1"}});
    let second = stream_session(&machine, &server, None, &["--resume", &id], &[rewind])?;
    let answer = second
        .iter()
        .find(|l| l["type"] == "control_response")
        .ok_or("no control_response")?;
    assert_eq!(std::fs::read_to_string(&victim)?, "safe\n", "{answer}");
    assert_eq!(std::fs::read_to_string(&inside)?, "owned\n", "{answer}");
    Ok(())
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn a_job_retried_on_another_machine_after_sigterm_goes_on_with_its_session() -> TestResult {
    let postgres = Postgres::start()?;
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("checkout");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_1",
            "Read",
            json!({"file_path": ws.join("notes.txt")}),
        )])
        .after_block(0, Step::Pause(Duration::from_secs(60))),
        Reply::text("resumed elsewhere"),
    ])?;
    // The same job both times, as a Job controller retries a lost pod:
    // a fixed session id, continued when the store has it.
    let id = "0b6f2f55-52c5-4c4e-9a55-6d0a6c1f3a01";
    let job = |machine: &Machine| -> Result<Child, Box<dyn std::error::Error>> {
        let job = json!({"prompt": "read the notes", "workspace": machine.ws,
            "allowedTools": ["Read"], "sessionId": id, "continueSession": true,
            "result": machine.config.with_file_name("result.json")});
        let path = machine.config.with_file_name("job.json");
        std::fs::write(&path, job.to_string())?;
        Ok(support::against(&server, dir.path())
            .env("CARAPACE_CONFIG_DIR", &machine.config)
            .env("CARAPACE_TRANSCRIPT_STORE", postgres.url())
            .arg("worker")
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?)
    };
    let first = Machine::new(&ws)?;
    let mut stopped = job(&first)?;
    // Stopped once the worker has printed the call the response began
    // with (its stream-json, a line per block as it completes).
    let (seen, lines) = std::sync::mpsc::channel();
    let stdout = stopped.stdout.take().ok_or("no stdout")?;
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if seen.send(line).is_err() {
                break;
            }
        }
    });
    loop {
        let line = lines.recv_timeout(Duration::from_secs(30))?;
        if line.contains("\"tool_use\"") && line.contains("toolu_1") {
            break;
        }
    }
    Command::new("kill")
        .args(["-TERM", &stopped.id().to_string()])
        .status()?;
    let run = finish(stopped)?;
    assert_eq!(run.status, Some(1), "{}", run.stderr);
    // The pod is gone: a fresh machine, the same store, the same job.
    drop(first);
    std::fs::remove_dir_all(&ws)?;
    let second = Machine::new(&ws)?;
    let run = finish(job(&second)?)?;
    ok(&run)?;
    assert!(run.stderr.contains("resuming it"), "{}", run.stderr);
    let result: Value = serde_json::from_str(&std::fs::read_to_string(
        second.config.with_file_name("result.json"),
    )?)?;
    assert_eq!(result["session_id"], id);
    assert_eq!(result["result"], "resumed elsewhere");
    let sent = server.requests()[1].body["messages"].to_string();
    assert_eq!(sent.matches("read the notes").count(), 2, "{sent}");
    let uses = sent.matches("\"tool_use\"").count();
    let answered = sent.matches("\"tool_use_id\":\"toolu_1\"").count();
    assert_eq!((uses, answered), (1, 1), "{sent}");
    Ok(())
}

/// A session is keyed by its workspace and its id, as the file store keys
/// it: resumed by id from another workspace it is not found there — the
/// other workspace's model never gets its history, and it never gets the
/// other workspace's lines, whether resumed, or begun anew under its id.
/// The control: resumed from its own workspace, it is found.
#[test]
fn a_session_of_one_workspace_is_not_found_from_another() -> TestResult {
    let postgres = Postgres::start()?;
    let url = postgres.url();
    let dir = tempfile::tempdir()?;
    let a = Machine::new(&dir.path().join("workspace-a"))?;
    let b = Machine::new(&dir.path().join("workspace-b"))?;
    let server = ScriptedServer::start(vec![
        Reply::text("A's secret answer"),
        Reply::text("should never be sent"),
        Reply::text("a new session"),
        Reply::text("resumed in A"),
    ])?;
    let run = a.run(&server, Some(&url), &["-p", "A's SECRET PROMPT"])?;
    ok(&run)?;
    let id = session_id(&run)?;
    let lines_of = |id: &str| -> Result<String, Box<dyn std::error::Error>> {
        Ok(postgres.psql(&format!(
            "SELECT count(*) FROM carapace_transcript_lines WHERE session_id = '{id}'"
        ))?)
    };
    let before = lines_of(&id)?;
    // Resumed from B: not there.
    let resumed = b.run(&server, Some(&url), &["-p", "B's prompt", "--resume", &id])?;
    assert_ne!(resumed.status, Some(0), "{}", resumed.stdout);
    assert!(
        resumed.stderr.contains(&id) || resumed.stdout.contains("No conversation"),
        "{}{}",
        resumed.stdout,
        resumed.stderr
    );
    // Begun anew in B under A's id: it cannot write into A's session.
    let _ = b.run(
        &server,
        Some(&url),
        &["-p", "B's prompt", "--session-id", &id],
    )?;
    assert_eq!(lines_of(&id)?, before, "A's session got B's lines");
    for request in server.requests().iter().skip(1) {
        assert!(
            !request.body.to_string().contains("A's SECRET PROMPT"),
            "B's model got A's history"
        );
    }
    // The control: from A, it resumes.
    let back = a.run(&server, Some(&url), &["-p", "again", "--resume", &id])?;
    ok(&back)?;
    let last = server
        .requests()
        .last()
        .map(|r| r.body.to_string())
        .unwrap_or_default();
    assert!(last.contains("A's SECRET PROMPT"), "{last}");
    Ok(())
}
