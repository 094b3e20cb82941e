//! The transcript tests. Those about what a store keeps run against each
//! store — files, and a PostgreSQL server the tests start on loopback —
//! through `each_store`, so both give the same guarantees; those about the
//! format alone read bytes.

use super::*;
use crate::agent::{CompactTrigger, HistoryLog};
use crate::model::{ContentBlock, Message, Role, ToolResultContent};
use carapace_test_support::postgres::Postgres;
use serde_json::json;
use std::io::Write;
use std::sync::OnceLock;

type Error = Box<dyn std::error::Error + Send + Sync>;
type TestResult = Result<(), Error>;

fn call(id: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse {
            id: id.into(),
            name: "Read".into(),
            input: json!({}),
        }],
    }
}

fn result(id: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content: ToolResultContent::Text("ok".into()),
        is_error: false,
    }
}

fn new_opening<'a>() -> Opening<'a> {
    Opening::New {
        forked_from: None,
        history: &[],
        name: None,
    }
}

/// One server for every test of this binary (it stops with the process).
fn server() -> Result<&'static Postgres, String> {
    static SERVER: OnceLock<Result<Postgres, String>> = OnceLock::new();
    SERVER
        .get_or_init(|| Postgres::start().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(Clone::clone)
}

/// A store to test, with a workspace and a config folder of its own.
struct Fixture {
    transcripts: TranscriptStore,
    server: Option<&'static Postgres>,
    dir: tempfile::TempDir,
}

impl Fixture {
    fn files() -> Result<Self, Error> {
        Ok(Self {
            transcripts: TranscriptStore::Files,
            server: None,
            dir: tempfile::tempdir()?,
        })
    }

    fn postgres() -> Result<Self, Error> {
        let server = server()?;
        Ok(Self {
            transcripts: TranscriptStore::from_url(&server.url())?,
            server: Some(server),
            dir: tempfile::tempdir()?,
        })
    }

    fn place(&self, id: &str) -> TranscriptPlace {
        self.transcripts.place(self.dir.path(), self.dir.path(), id)
    }

    fn open(&self, id: &str, opening: Opening<'_>) -> Result<Transcript, TranscriptError> {
        Transcript::open(self.place(id), id, self.dir.path(), opening)
    }

    /// The same store as another worker reaches it (for PostgreSQL, a
    /// connection of its own).
    fn another_worker(&self) -> Result<TranscriptStore, TranscriptError> {
        match self.server {
            Some(server) => TranscriptStore::from_url(&server.url()),
            None => Ok(TranscriptStore::Files),
        }
    }

    fn bytes(&self, id: &str) -> Vec<u8> {
        self.place(id).head(usize::MAX)
    }

    /// Adds a line as something other than carapace would (a damaged one).
    fn push_raw_line(&self, id: &str, line: &str) -> TestResult {
        match (self.place(id), self.server) {
            (TranscriptPlace::File(path), _) => {
                let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
                writeln!(file, "{line}")?;
            }
            (TranscriptPlace::Postgres { project, .. }, Some(server)) => {
                let quoted = |text: &str| format!("'{}'", text.replace('\'', "''"));
                server.psql(&format!(
                    "INSERT INTO carapace_transcript_lines (session_id, seq, project, line) \
                     SELECT {id}, count(*), {project}, {line} FROM carapace_transcript_lines \
                     WHERE session_id = {id}",
                    id = quoted(id),
                    project = quoted(&project),
                    line = quoted(line),
                ))?;
            }
            (TranscriptPlace::Postgres { .. }, None) => return Err("no server".into()),
        }
        Ok(())
    }
}

/// Runs `test` against the file store and against PostgreSQL, naming the
/// store that failed.
fn each_store(test: impl Fn(&Fixture) -> TestResult) -> TestResult {
    let files = Fixture::files()?;
    test(&files).map_err(|e| format!("files: {e}"))?;
    let postgres = Fixture::postgres()?;
    test(&postgres).map_err(|e| format!("postgres: {e}"))?;
    Ok(())
}

fn session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[test]
fn appends_read_back_as_the_same_history() -> TestResult {
    each_store(|store| {
        let id = session_id();
        let transcript = store.open(&id, new_opening())?;
        let mut history = vec![Message::user_text("hi"), call("t1")];
        transcript.sync(&history);
        history.push(Message {
            role: Role::User,
            content: vec![result("t1")],
        });
        transcript.sync(&history);
        // The loop extends the results message (hook context, queued input).
        history[2].content.push(ContentBlock::Text {
            text: "more".into(),
        });
        transcript.sync(&history);
        let answer = vec![ContentBlock::Text {
            text: "done".into(),
        }];
        transcript.response(&answer);
        history.push(Message {
            role: Role::Assistant,
            content: answer,
        });
        transcript.sync(&history);
        transcript.sync(&history);
        let loaded = store.place(&id).load()?;
        assert_eq!(loaded.messages, history);
        assert!(loaded.warnings.is_empty());
        let bytes = String::from_utf8(store.bytes(&id))?;
        assert_eq!(bytes.lines().count(), 6, "{bytes}");
        Ok(())
    })
}

#[test]
fn a_resumed_session_reads_back_byte_for_byte_and_goes_on_after_it() -> TestResult {
    each_store(|store| {
        let id = session_id();
        let transcript = store.open(&id, new_opening())?;
        let mut history = vec![Message::user_text("hi"), call("t1")];
        transcript.sync(&history);
        history.push(Message {
            role: Role::User,
            content: vec![result("t1")],
        });
        transcript.sync(&history);
        drop(transcript);
        let before = store.bytes(&id);
        let loaded = store.place(&id).load()?;
        assert_eq!(loaded.messages, history);
        let resumed = store.open(&id, Opening::Resume(&loaded))?;
        history.push(Message::user_text("again"));
        resumed.sync(&history);
        drop(resumed);
        let after = store.bytes(&id);
        assert_eq!(
            after[..before.len()],
            before[..],
            "nothing written is rewritten"
        );
        assert_eq!(store.place(&id).load()?.messages, history);
        Ok(())
    })
}

/// What the session picker shows a session by: its first bytes, whichever
/// store holds it (a store sends only the lines that begin within them).
#[test]
fn the_head_of_a_transcript_is_its_first_bytes() -> TestResult {
    each_store(|store| {
        let id = session_id();
        let transcript = store.open(&id, new_opening())?;
        let history: Vec<Message> = (0..20)
            .map(|n| Message::user_text("x".repeat(n * 10)))
            .collect();
        transcript.sync(&history);
        drop(transcript);
        let whole = store.bytes(&id);
        let first_line = whole
            .iter()
            .position(|b| *b == b'\n')
            .map_or(0, |at| at + 1);
        for max in [
            0,
            1,
            first_line - 1,
            first_line,
            first_line + 1,
            whole.len() / 2,
            whole.len(),
        ] {
            let head = store.place(&id).head(max);
            assert_eq!(head, whole[..max], "the first {max} bytes");
        }
        assert_eq!(store.place(&id).head(whole.len() + 1), whole);
        Ok(())
    })
}

#[test]
fn a_call_cut_off_is_paired_on_load_and_the_pairing_written_on_resume() -> TestResult {
    each_store(|store| {
        let id = session_id();
        let transcript = store.open(&id, new_opening())?;
        transcript.sync(&[Message::user_text("hi")]);
        transcript.response(&call("t1").content);
        drop(transcript);
        let loaded = store.place(&id).load()?;
        assert_eq!(loaded.messages.len(), 3);
        assert!(matches!(
            &loaded.messages[2].content[0],
            ContentBlock::ToolResult { is_error: true, .. }
        ));
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
        let resumed = store.open(&id, Opening::Resume(&loaded))?;
        let mut history = loaded.messages.clone();
        history.push(Message::user_text("again"));
        resumed.sync(&history);
        drop(resumed);
        let again = store.place(&id).load()?;
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
        assert_eq!(again.messages, history);
        Ok(())
    })
}

#[test]
fn a_compaction_starts_the_history_again() -> TestResult {
    each_store(|store| {
        let id = session_id();
        let transcript = store.open(&id, new_opening())?;
        transcript.sync(&[Message::user_text("a"), call("t1")]);
        let summary = vec![Message::user_text("summary")];
        transcript.compacted(CompactTrigger::Auto, 1000, &summary);
        let mut history = summary.clone();
        history.push(Message::user_text("next"));
        transcript.sync(&history);
        assert_eq!(store.place(&id).load()?.messages, history);
        Ok(())
    })
}

#[test]
fn a_session_has_one_writer_and_a_new_one_never_overwrites() -> TestResult {
    each_store(|store| {
        let id = session_id();
        let writer = store.open(&id, new_opening())?;
        writer.sync(&[Message::user_text("hi")]);
        let loaded = store.place(&id).load()?;
        let second = store.open(&id, Opening::Resume(&loaded));
        assert!(
            matches!(second, Err(TranscriptError::InUse(ref held)) if *held == id),
            "{:?}",
            second.err()
        );
        assert!(matches!(
            store.open(&id, new_opening()),
            Err(TranscriptError::AlreadyExists(_))
        ));
        // What the refused ones did not write, the writer goes on with.
        writer.sync(&[Message::user_text("hi"), Message::user_text("more")]);
        drop(writer);
        assert_eq!(store.place(&id).load()?.messages.len(), 2);
        // Read before the writer's last line, it resumes nothing.
        let resumed = store.open(&id, Opening::Resume(&loaded));
        assert!(
            matches!(resumed, Err(TranscriptError::Changed { .. })),
            "{:?}",
            resumed.err()
        );
        Ok(())
    })
}

#[test]
fn of_workers_racing_to_resume_a_session_exactly_one_wins() -> TestResult {
    each_store(|store| {
        let workers = (0..8)
            .map(|_| store.another_worker())
            .collect::<Result<Vec<_>, _>>()?;
        let (config, cwd) = (store.dir.path(), store.dir.path());
        for _ in 0..5 {
            let id = session_id();
            store
                .open(&id, new_opening())?
                .sync(&[Message::user_text("hi")]);
            let loaded = store.place(&id).load()?;
            let outcomes: Vec<Result<Transcript, TranscriptError>> = std::thread::scope(|s| {
                let racers: Vec<_> = workers
                    .iter()
                    .map(|worker| {
                        let place = worker.place(config, cwd, &id);
                        let loaded = &loaded;
                        let id = &id;
                        s.spawn(move || Transcript::open(place, id, cwd, Opening::Resume(loaded)))
                    })
                    .collect();
                racers
                    .into_iter()
                    .map(|r| {
                        r.join()
                            .unwrap_or(Err(TranscriptError::Store("a racer panicked".into())))
                    })
                    .collect()
            });
            // Every winner is still open while the others try: one only.
            let errors: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
            assert_eq!(errors.len(), 7, "{errors:?}");
            assert!(
                errors
                    .iter()
                    .all(|e| matches!(e, TranscriptError::InUse(_))),
                "{errors:?}"
            );
        }
        Ok(())
    })
}

#[test]
fn a_damaged_line_is_named_and_nothing_is_resumed_from_it() -> TestResult {
    each_store(|store| {
        let id = session_id();
        store
            .open(&id, new_opening())?
            .sync(&[Message::user_text("hi")]);
        store.push_raw_line(
            &id,
            r#"{"type":"user","message":{"role":"robot","content":[]}}"#,
        )?;
        match store.place(&id).load() {
            Err(TranscriptError::Damaged { line, reason, .. }) => {
                assert_eq!(line, 3);
                assert!(reason.contains("bad `user` line"), "{reason}");
            }
            other => return Err(format!("{other:?}").into()),
        }
        Ok(())
    })
}

#[test]
fn subagents_are_kept_beside_their_session_and_never_continued() -> TestResult {
    each_store(|store| {
        let id = session_id();
        let parent = store.open(&id, new_opening())?;
        parent.sync(&[Message::user_text("parent")]);
        let child_place = store.place(&id).child("agent-1234");
        let child = Transcript::open(
            child_place.clone(),
            "agent-1234",
            store.dir.path(),
            new_opening(),
        )?;
        child.sync(&[Message::user_text("child")]);
        let listed = store
            .transcripts
            .sessions(store.dir.path(), store.dir.path())?;
        let ids: Vec<&str> = listed.iter().map(|(_, id)| id.as_str()).collect();
        assert_eq!(ids, [id.as_str()]);
        assert_eq!(
            store
                .transcripts
                .latest(store.dir.path(), store.dir.path())?,
            id
        );
        assert_eq!(child_place.load()?.messages, [Message::user_text("child")]);
        // Another session's subagent of the same id is its own.
        let other = store.place(&session_id()).child("agent-1234");
        assert!(!other.exists()?);
        Ok(())
    })
}

#[test]
fn a_torn_last_line_is_cut_off_before_a_resumed_file_is_appended() -> TestResult {
    let store = Fixture::files()?;
    let id = session_id();
    store
        .open(&id, new_opening())?
        .sync(&[Message::user_text("hi")]);
    let TranscriptPlace::File(path) = store.place(&id) else {
        return Err("not a file".into());
    };
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)?
        .write_all(b"{\"type\":\"user\",\"mess")?;
    let loaded = load(&path)?;
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    let resumed = store.open(&id, Opening::Resume(&loaded))?;
    let history = [Message::user_text("hi"), Message::user_text("again")];
    resumed.sync(&history);
    let again = load(&path)?;
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.messages, history);
    Ok(())
}

#[test]
fn a_store_that_goes_away_is_said_once_and_the_run_goes_on() -> TestResult {
    // A server of its own: the test cuts every carapace connection to it.
    let server = Postgres::start()?;
    let store = TranscriptStore::from_url(&server.url())?;
    let dir = tempfile::tempdir()?;
    let place = store.place(dir.path(), dir.path(), "gone");
    let transcript = Transcript::open(place.clone(), "gone", dir.path(), new_opening())?;
    transcript.sync(&[Message::user_text("kept")]);
    server.psql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'carapace'",
    )?;
    let mut history = vec![Message::user_text("kept"), Message::user_text("lost")];
    transcript.sync(&history);
    history.push(call("t1"));
    transcript.sync(&history);
    transcript.flush();
    // Nothing after the cut is written, nothing before it is lost, and
    // the store says it cannot go on rather than write without a lease.
    let rows =
        server.psql("SELECT count(*) FROM carapace_transcript_lines WHERE session_id = 'gone'")?;
    assert_eq!(rows.trim(), "2");
    assert!(matches!(place.exists(), Err(TranscriptError::Store(_))));
    // The process makes a new connection for the sessions after it.
    assert!(!store.is_usable());
    assert!(TranscriptStore::from_url(&server.url())?.is_usable());
    Ok(())
}

#[test]
fn damage_and_other_formats_are_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("x.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"header\",\"format\":1,\"sessionId\":\"x\"}\nnot json\n{\"type\":\"user\"}\n",
    )?;
    assert!(matches!(
        load(&path),
        Err(TranscriptError::Damaged { line: 2, .. })
    ));
    std::fs::write(
        &path,
        "{\"type\":\"header\",\"format\":7,\"version\":\"9.0.0\",\"sessionId\":\"x\"}\n",
    )?;
    let error = load(&path).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("9.0.0"), "{error}");
    Ok(())
}

#[test]
fn a_long_transcript_parsed_in_parallel_names_the_damaged_line() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("long.jsonl");
    let mut text = String::from("{\"type\":\"header\",\"format\":1,\"sessionId\":\"long\"}\n");
    let message = json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "x".repeat(1000)}]}});
    for _ in 0..3_000 {
        text.push_str(&message.to_string());
        text.push('\n');
    }
    std::fs::write(&path, &text)?;
    assert_eq!(load(&path)?.messages.len(), 3_000);
    // Damage far into the file: the line number is the file's.
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[2_900] = "{\"type\":\"user\",\"message\":{\"role\":\"robot\",\"content\":[]}}".into();
    std::fs::write(&path, lines.join("\n") + "\n")?;
    match load(&path) {
        Err(TranscriptError::Damaged { line, reason, .. }) => {
            assert_eq!(line, 2_901);
            assert!(reason.contains("bad `user` line"), "{reason}");
        }
        other => return Err(format!("{other:?}").into()),
    }
    Ok(())
}

#[test]
fn workspace_folders_are_named_as_claude_code_names_them() {
    assert_eq!(
        project_dir(Path::new("/c"), Path::new("/work/my_repo.v2")),
        PathBuf::from("/c/projects/-work-my-repo-v2")
    );
}

#[test]
fn a_store_that_cannot_be_used_says_why() {
    for (url, why) in [
        ("mysql://db/x", "is not a transcript store"),
        ("postgres://u@127.0.0.1:1/db?sslmode=require", "TLS"),
        ("postgres://u@127.0.0.1:1/db", "Connection refused"),
        ("postgres://u@[::1/db", "the store's URL"),
    ] {
        let said = TranscriptStore::from_url(url)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(said.contains(why), "{url}: {said}");
    }
    assert!(matches!(
        TranscriptStore::from_url("files"),
        Ok(TranscriptStore::Files)
    ));
}
