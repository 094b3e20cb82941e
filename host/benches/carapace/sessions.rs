//! Subagents and sessions: a child loop's cost, transcripts appended and resumed, memory read at start.

use super::*;
use carapace::transcript::{Opening, Transcript, TranscriptPlace, TranscriptStore};
use carapace_test_support::postgres::Postgres;

/// Child loops in the binary: one response starting N foreground agents at
/// once (each answers with one scripted request), whole-run time and peak
/// memory; the differences between N = 1 and N = 100 are the per-child
/// cost.
pub(super) fn subagent_benches(cache: &Path, cwd: &Path) -> BenchResult {
    let mut figures = Vec::new();
    for children in [1usize, 100] {
        let mut samples = Vec::new();
        let mut peaks = Vec::new();
        for run in 0..6 {
            let calls = (0..children)
                .map(|n| {
                    scripted_server::Block::tool_use(
                        format!("toolu_{n}"),
                        "Agent",
                        json!({"description": "bench", "prompt": format!("child {n}")}),
                    )
                })
                .collect();
            let mut replies = vec![Reply::tool_uses(calls)];
            replies.extend((0..children).map(|n| Reply::text(format!("child {n} done"))));
            replies.push(Reply::text("all done"));
            let server = ScriptedServer::start(replies)?;
            let started = Instant::now();
            let child = session_command(cache, cwd, &server)
                .args(["-p", "delegate", "--no-session-persistence"])
                .stdout(std::process::Stdio::null())
                .spawn()?;
            let (succeeded, peak_kib) = wait_sampling_peak(child)?;
            let took = started.elapsed();
            if !succeeded || server.requests().len() != children + 2 {
                return Err(format!("the {children}-child run failed").into());
            }
            if run > 0 {
                samples.push(took);
                peaks.push(peak_kib);
            }
        }
        peaks.sort_unstable();
        let peak = peaks[peaks.len() / 2];
        report(
            &format!("subagents: one response starting {children} agent(s), whole run"),
            &samples,
            &format!(
                "peak RSS p50 {:.1} MiB (VmHWM, sampled)",
                peak as f64 / 1024.0
            ),
        );
        let mut sorted = samples.clone();
        sorted.sort();
        figures.push((children, sorted[sorted.len() / 2], peak));
    }
    if let [(_, one_time, one_peak), (many, many_time, many_peak)] = figures[..] {
        let extra = (many - 1) as u32;
        println!(
            "| subagents: cost of each further concurrent child | | {} | | | {:.0} KiB of peak RSS each |",
            fmt(many_time.saturating_sub(one_time) / extra),
            (many_peak - one_peak) as f64 / f64::from(extra)
        );
    }
    Ok(())
}

/// A tool round as history keeps it: the call, and a result of `bytes`.
fn tool_round(n: usize, bytes: usize) -> [Message; 2] {
    use carapace::model::{ContentBlock, Role, ToolResultContent};
    let id = format!("toolu_{n:06}");
    [
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: id.clone(),
                name: "Read".into(),
                input: json!({"file_path": format!("/work/project/src/file_{n}.rs")}),
            }],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: id,
                content: ToolResultContent::Text("let x = 1; // some source\n".repeat(bytes / 27)),
                is_error: false,
            }],
        },
    ]
}

/// The stores a transcript bench runs against: files, and a PostgreSQL
/// server started on loopback (fsync on, as a real one).
fn stores(
    postgres: &Postgres,
) -> Result<Vec<(&'static str, TranscriptStore)>, Box<dyn std::error::Error>> {
    let store = TranscriptStore::from_url(&postgres.url())?;
    Ok(vec![("files", TranscriptStore::Files), ("postgres", store)])
}

fn new_transcript(
    store: &TranscriptStore,
    dir: &Path,
    id: &str,
) -> Result<(Transcript, TranscriptPlace), Box<dyn std::error::Error>> {
    let place = store.place(dir, dir, id);
    let transcript = Transcript::open(
        place.clone(),
        id,
        dir,
        Opening::New {
            forked_from: None,
            history: &[],
            name: None,
        },
    )?;
    Ok((transcript, place))
}

/// Appending 2,000 tool rounds as the loop does, per message; the sync
/// at a turn's end.
fn append_bench(name: &str, store: &TranscriptStore, dir: &Path) -> BenchResult {
    use carapace::agent::HistoryLog;
    let (transcript, _) = new_transcript(store, dir, &format!("append-{name}"))?;
    let mut history = vec![Message::user_text("go")];
    transcript.sync(&history);
    let mut per_message = Vec::with_capacity(2_000);
    for n in 0..2_000 {
        let [call, result] = tool_round(n, 1_024);
        let started = Instant::now();
        // As the loop does: the response ahead of its tools, then the
        // history before the next request.
        transcript.response(&call.content);
        history.push(call);
        history.push(result);
        transcript.sync(&history);
        per_message.push(started.elapsed() / 2);
    }
    let how = match store {
        TranscriptStore::Files => "one write(2) per line, no fsync",
        TranscriptStore::Postgres(_) => {
            "one INSERT per batch on loopback, committed; durable at the turn's sync"
        }
    };
    report(
        &format!("session_append ({name}): transcript, per message (1 KiB tool result)"),
        &per_message,
        how,
    );
    let mut flushes = Vec::with_capacity(50);
    for _ in 0..50 {
        let started = Instant::now();
        transcript.flush();
        flushes.push(started.elapsed());
    }
    report(
        &format!("session_append ({name}): sync at the end of a turn"),
        &flushes,
        "",
    );
    Ok(())
}

/// Sessions written at once, each by its own worker (for PostgreSQL, a
/// connection of its own): messages per second for all of them, with a
/// sync at the end of each turn of two messages.
fn concurrent_append_bench(
    name: &str,
    connect: &dyn Fn() -> Result<TranscriptStore, Box<dyn std::error::Error>>,
    dir: &Path,
) -> BenchResult {
    use carapace::agent::HistoryLog;
    for writers in [8usize, 64] {
        let stores = (0..writers)
            .map(|_| connect())
            .collect::<Result<Vec<_>, _>>()?;
        let rounds = 4_000 / writers;
        let started = Instant::now();
        std::thread::scope(|scope| -> BenchResult {
            let handles: Vec<_> = stores
                .iter()
                .enumerate()
                .map(|(n, store)| {
                    scope.spawn(move || -> Result<(), String> {
                        let id = format!("concurrent-{name}-{writers}-{n}");
                        let (transcript, _) =
                            new_transcript(store, dir, &id).map_err(|e| e.to_string())?;
                        let mut history = vec![Message::user_text("go")];
                        for round in 0..rounds {
                            let [call, result] = tool_round(round, 1_024);
                            transcript.response(&call.content);
                            history.push(call);
                            history.push(result);
                            transcript.sync(&history);
                            transcript.flush();
                        }
                        Ok(())
                    })
                })
                .collect();
            for handle in handles {
                handle.join().map_err(|_| "a writer panicked")??;
            }
            Ok(())
        })?;
        let took = started.elapsed();
        let messages = (writers * rounds * 2) as f64;
        println!(
            "| session_append ({name}): {writers} sessions written at once | {} | | | | {:.0} messages/s in all, a sync every 2 |",
            writers * rounds * 2,
            messages / took.as_secs_f64()
        );
    }
    Ok(())
}

/// What `pgbench` gets from the same server doing what the store does
/// for a turn of two messages, with no carapace around it: the two lines
/// in one `INSERT … unnest` (the store's statement; `ON CONFLICT DO
/// NOTHING` because pgbench picks the line numbers at random), committed
/// without waiting for the WAL, then the turn's commit that waits for it
/// — as many turns and connections as the bench above, in the same run.
fn pgbench_reference(postgres: &Postgres) -> BenchResult {
    let script = "\\set seq random(1, 2000000000)
INSERT INTO carapace_transcript_lines (session_id, seq, project, line) \
SELECT 'pgbench-' || :client_id, :seq + n - 1, 'bench', line \
FROM unnest(ARRAY[repeat('c', 1100), repeat('r', 1100)]) WITH ORDINALITY AS batch(line, n) \
ON CONFLICT DO NOTHING;
BEGIN;
SET LOCAL synchronous_commit = on;
SELECT txid_current();
COMMIT;
";
    for writers in [8usize, 64] {
        let turns = 4_000 / writers;
        let run = postgres.pgbench(script, writers, turns, "-c synchronous_commit=off")?;
        println!(
            "| session_append (pgbench): {writers} connections, the same statements | {} | | | | {:.0} rows/s in all ({:.0} turns/s), a commit that waits every 2 |",
            run.transactions * 2,
            run.tps * 2.0,
            run.tps
        );
    }
    Ok(())
}

/// 10,000 messages: 4,999 tool rounds of ~500 B results, a prompt and an
/// answer.
fn long_history() -> Vec<Message> {
    let mut history = vec![Message::user_text("go")];
    for n in 0..4_999 {
        history.extend(tool_round(n, 512));
    }
    history.push(Message {
        role: carapace::model::Role::Assistant,
        content: vec![carapace::model::ContentBlock::Text {
            text: "done".into(),
        }],
    });
    history
}

/// Loading the long history back from `store`, 20 times.
fn resume_bench(name: &str, store: &TranscriptStore, dir: &Path) -> BenchResult {
    use carapace::agent::HistoryLog;
    let (transcript, place) = new_transcript(store, dir, &format!("resume-{name}"))?;
    transcript.sync(&long_history());
    drop(transcript);
    let size = place.head(usize::MAX).len();
    let mut loads = Vec::with_capacity(20);
    for _ in 0..20 {
        let started = Instant::now();
        let loaded = place.load()?;
        loads.push(started.elapsed());
        if loaded.messages.len() != 10_000 {
            return Err(format!("loaded {} messages", loaded.messages.len()).into());
        }
    }
    report(
        &format!("session_resume ({name}): load a 10,000-message transcript"),
        &loads,
        &format!(
            "{:.1} MiB of lines; {} threads",
            size as f64 / 1048576.0,
            std::thread::available_parallelism().map_or(1, |n| n.get())
        ),
    );
    Ok(())
}

/// Transcripts: the cost of appending, of loading a long one back (from
/// files and from PostgreSQL), and the memory of a long session in the
/// binary.
pub(super) fn session_benches(
    cache: &Path,
    cwd: &Path,
    wanted: &dyn Fn(&str) -> bool,
) -> BenchResult {
    let dir = tempfile::tempdir()?;
    if wanted("session_append") || wanted("session_resume") {
        let postgres = Postgres::start()?;
        for (name, store) in &stores(&postgres)? {
            if wanted("session_append") {
                append_bench(name, store, dir.path())?;
                let connect = || -> Result<TranscriptStore, Box<dyn std::error::Error>> {
                    Ok(match store {
                        TranscriptStore::Files => TranscriptStore::Files,
                        TranscriptStore::Postgres(_) => TranscriptStore::from_url(&postgres.url())?,
                    })
                };
                concurrent_append_bench(name, &connect, dir.path())?;
                if matches!(store, TranscriptStore::Postgres(_)) {
                    pgbench_reference(&postgres)?;
                }
            }
            if wanted("session_resume") {
                resume_bench(name, store, dir.path())?;
            }
        }
    }
    if wanted("session_resume") {
        resume_from_binary(cache, cwd, dir.path())?;
    }
    if wanted("session_memory") {
        memory_bench(cache, cwd)?;
    }
    Ok(())
}

/// What a resume adds to the first request, and the binary resuming a
/// 10,000-message session: spawn → its first request.
fn resume_from_binary(cache: &Path, cwd: &Path, dir: &Path) -> BenchResult {
    use carapace::agent::HistoryLog;
    use carapace::transcript::{load, transcript_path};
    let history = long_history();
    let (transcript, place) = new_transcript(&TranscriptStore::Files, dir, "resume")?;
    transcript.sync(&history);
    drop(transcript);
    let TranscriptPlace::File(path) = place else {
        return Err("a file store gave no file".into());
    };
    // What the first request after a resume adds: the size estimate and
    // the request body.
    let loaded = load(&path)?;
    let mut bodies = Vec::with_capacity(20);
    for _ in 0..20 {
        let started = Instant::now();
        let estimate = carapace::agent::estimate_tokens(&loaded.messages);
        // As the client sends it: the history cloned into the request,
        // the JSON body with its cache breakpoints, as text.
        let body = MessagesRequest {
            model: "m".into(),
            max_tokens: 1000,
            system: "s".into(),
            messages: loaded.messages.clone(),
            tools: Vec::new(),
            server_tools: Vec::new(),
            effort: None,
            thinking: None,
            task_budget: None,
            output_format: None,
            tool_choice: None,
        }
        .body_text();
        bodies.push(started.elapsed());
        if estimate == 0 || body.is_empty() {
            return Err("no estimate or body".into());
        }
    }
    report(
        "session_resume: estimate + request body of the loaded history",
        &bodies,
        "",
    );
    // The binary: spawn → the resumed session's first request.
    let projects = carapace::transcript::project_dir(&cwd.join(".carapace"), cwd);
    std::fs::create_dir_all(&projects)?;
    std::fs::copy(&path, transcript_path(&projects, "resume"))?;
    let mut to_request = Vec::with_capacity(10);
    for i in 0..12 {
        let server = ScriptedServer::start(vec![Reply::text("resumed")])?;
        let started = Instant::now();
        let status = session_command(cache, cwd, &server)
            .args([
                "-p",
                "again",
                "--resume",
                "resume",
                "--no-session-persistence",
            ])
            .stdout(std::process::Stdio::null())
            .status()?;
        if !status.success() {
            return Err("the resumed run failed".into());
        }
        let requests = server.requests();
        let sent = requests.first().ok_or("no request")?;
        if sent.body["messages"].as_array().map(Vec::len) != Some(10_001) {
            return Err("the resumed request does not carry the history".into());
        }
        if i >= 2 {
            to_request.push(sent.received_at.duration_since(started));
        }
    }
    report(
        "session_resume: carapace --resume (10,000 messages), spawn → first request",
        &to_request,
        "start-up, load, request; and the scripted server reading the 5 MiB body",
    );
    Ok(())
}

/// A 10- and a 1,000-turn session in the binary: whole run, peak memory.
fn memory_bench(cache: &Path, cwd: &Path) -> BenchResult {
    let file = cwd.join("memory-fixture.txt");
    std::fs::write(&file, "let x = 1; // some source\n".repeat(20))?;
    for turns in [10usize, 1_000] {
        let mut replies: Vec<Reply> = (0..turns)
            .map(|n| {
                Reply::tool_uses(vec![scripted_server::Block::tool_use(
                    format!("toolu_{n}"),
                    "Read",
                    json!({"file_path": file}),
                )])
            })
            .collect();
        replies.push(Reply::text("done"));
        let server = ScriptedServer::start(replies)?;
        let started = Instant::now();
        let child = session_command(cache, cwd, &server)
            .args([
                "-p",
                "go",
                "--tools",
                "Read",
                "--output-format",
                "stream-json",
                "--verbose",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()?;
        let (succeeded, peak_kib) = wait_sampling_peak(child)?;
        let took = started.elapsed();
        if !succeeded || server.requests().len() != turns + 1 {
            return Err(format!("the {turns}-turn session failed").into());
        }
        report(
            &format!("session_memory: a {turns}-turn session (one Read a turn), whole run"),
            &[took],
            &format!(
                "peak RSS {:.1} MiB (VmHWM, sampled); transcript written",
                peak_kib as f64 / 1024.0
            ),
        );
    }
    Ok(())
}
