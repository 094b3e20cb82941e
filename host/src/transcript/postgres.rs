//! Transcripts in PostgreSQL: one row per line, keyed by session id and
//! line number. A batch of lines is one `INSERT` — one statement, so one
//! transaction: a line is in the table whole or not at all, and a batch
//! never half. A session being written is leased: a session-level
//! advisory lock on the writer's connection, so a second worker resuming
//! it is refused, never interleaved. The lease ends with the writer however
//! it ends — the server drops a closed connection's locks, and TCP
//! keepalives close a connection whose peer vanished — and the primary
//! key refuses a line number written twice even if two writers ever met.
//!
//! Durable as the file store is: a line is written — committed, seen by
//! every reader — before the loop acts on it, and made durable at the end
//! of each turn. Appends commit without waiting for the server's WAL flush
//! (`synchronous_commit = off`, ten times faster here); the turn's sync is
//! a commit that waits, which flushes every one before it.
//!
//! The transcript writer is synchronous (the loop appends before it acts),
//! so the client lives on a thread of its own with its own runtime, and
//! each operation is a request answered over a channel. One store (one
//! connection) serves every session of a process.

use super::TranscriptError;
use super::target::LineTarget;
use std::collections::HashSet;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_postgres::{Client, NoTls, Statement};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS carapace_transcript_lines (
    session_id text NOT NULL,
    seq bigint NOT NULL,
    project text NOT NULL,
    line text NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS carapace_transcript_lines_by_project
    ON carapace_transcript_lines (project, written_at)";

/// A batch's lines, numbered from `$2`, in one statement.
const APPEND: &str = "INSERT INTO carapace_transcript_lines (session_id, seq, project, line) \
     SELECT $1, $2 + n - 1, $3, line FROM unnest($4::text[]) WITH ORDINALITY AS batch(line, n)";

type Reply<T> = Sender<Result<T, String>>;

/// A session, as the store keys it: by its project and its id. An id is
/// the user's to choose (`--session-id`, `--resume ID`): found alone, a
/// session of another workspace would be resumed — its history in this
/// one's model, this one's lines in it.
#[derive(Clone)]
struct Key {
    project: String,
    id: String,
}

enum Request {
    Exists(Key, Reply<bool>),
    /// The session's lines; with a limit, only those that begin within
    /// that many bytes.
    Read(Key, Option<i64>, Reply<Vec<u8>>),
    /// A project's sessions, newest first, with when each was last written.
    Sessions(String, Reply<Vec<(std::time::SystemTime, String)>>),
    /// Takes the session's lease; answers how many lines it has.
    Lease(Key, Reply<Option<i64>>),
    Release(String),
    /// Waits until every commit so far is durable.
    Sync(Reply<()>),
    /// Whether the connection has ended.
    Closed(Reply<bool>),
    Append {
        project: String,
        id: String,
        first: i64,
        lines: Vec<String>,
        reply: Reply<()>,
    },
}

/// A connection to the store, shared by every session of the process.
pub struct PgStore {
    shown: String,
    requests: Sender<Request>,
    /// Sessions this process holds the lease of: an advisory lock is
    /// re-entrant on its connection, so the process keeps its own count.
    leased: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("url", &self.shown).finish()
    }
}

fn store_error(what: &str) -> impl FnOnce(String) -> TranscriptError + '_ {
    move |e| TranscriptError::Store(format!("{what}: {e}"))
}

/// A client error with its causes (`error connecting to server:
/// Connection refused`): the crate's own message names none.
fn text(e: tokio_postgres::Error) -> String {
    crate::sandbox::describe_chain(&e)
}

impl PgStore {
    /// Connects to `url` and makes the table if it is not there.
    pub fn connect(url: &str) -> Result<Self, TranscriptError> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| store_error("the store's URL")(text(e)))?;
        if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            return Err(TranscriptError::Store(
                "TLS to the transcript store is not supported yet (sslmode=require): reach the server over a private network".into(),
            ));
        }
        config
            .connect_timeout(Duration::from_secs(10))
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30))
            .application_name("carapace");
        let shown = shown_url(url);
        let (requests, inbox) = channel();
        let (ready, started) = channel();
        std::thread::Builder::new()
            .name("carapace-transcript-store".into())
            .spawn(move || serve(config, inbox, ready))
            .map_err(|e| store_error("starting the store's thread")(e.to_string()))?;
        started
            .recv()
            .map_err(|e| e.to_string())
            .and_then(|r| r)
            .map_err(store_error(&format!("connecting to {shown}")))?;
        Ok(Self {
            shown,
            requests,
            leased: Mutex::default(),
        })
    }

    /// The URL without its password, for messages.
    pub fn display_url(&self) -> &str {
        &self.shown
    }

    fn ask<T>(&self, request: impl FnOnce(Reply<T>) -> Request) -> Result<T, String> {
        let ended = || "the store's connection has ended".to_string();
        let (reply, answer) = channel();
        self.requests.send(request(reply)).map_err(|_| ended())?;
        answer.recv().map_err(|_| ended())?
    }

    /// Whether the connection has ended (a server restarted, a network
    /// cut): nothing more can be written through this store.
    pub fn is_closed(&self) -> bool {
        self.ask(Request::Closed).unwrap_or(true)
    }

    pub fn exists(&self, project: &str, id: &str) -> Result<bool, TranscriptError> {
        self.ask(|r| Request::Exists(key(project, id), r))
            .map_err(store_error("looking up a session"))
    }

    /// The session's lines, as a file would hold them.
    pub fn read(&self, project: &str, id: &str) -> Result<Vec<u8>, TranscriptError> {
        self.ask(|r| Request::Read(key(project, id), None, r))
            .map_err(store_error("reading a transcript"))
    }

    /// The lines that begin within the first `max` bytes: the server sends
    /// only those, not a long session whole.
    pub fn read_head(
        &self,
        project: &str,
        id: &str,
        max: usize,
    ) -> Result<Vec<u8>, TranscriptError> {
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        self.ask(|r| Request::Read(key(project, id), Some(max), r))
            .map_err(store_error("reading a transcript"))
    }

    /// The project's sessions, newest first.
    pub fn sessions(
        &self,
        project: &str,
    ) -> Result<Vec<(std::time::SystemTime, String)>, TranscriptError> {
        self.ask(|r| Request::Sessions(project.into(), r))
            .map_err(store_error("listing the sessions"))
    }

    /// Leases session `id` for writing, expecting `lines` lines in it (what
    /// was read to resume it; 0 for a new session).
    pub(super) fn lease(
        self: &Arc<Self>,
        project: &str,
        id: &str,
        lines: i64,
    ) -> Result<PgTarget, TranscriptError> {
        let first_here = self
            .leased
            .lock()
            .map_err(|_| TranscriptError::Store("the lease table is poisoned".into()))?
            .insert(id.to_string());
        if !first_here {
            return Err(TranscriptError::InUse(id.to_string()));
        }
        let mut target = PgTarget {
            store: self.clone(),
            project: project.into(),
            id: id.into(),
            next: lines,
            held: false,
        };
        let found = self
            .ask(|r| Request::Lease(key(project, id), r))
            .map_err(store_error("leasing the session"))?;
        let Some(found) = found else {
            return Err(TranscriptError::InUse(id.to_string()));
        };
        target.held = true;
        if found != lines {
            // Written since it was read: resuming it would lose that.
            return Err(TranscriptError::Changed { id: id.to_string() });
        }
        Ok(target)
    }
}

/// One session's rows, leased for as long as this lives.
pub(super) struct PgTarget {
    store: Arc<PgStore>,
    project: String,
    id: String,
    next: i64,
    /// Whether the advisory lock was taken (else only this process's
    /// claim is given back).
    held: bool,
}

impl LineTarget for PgTarget {
    fn append(&mut self, lines: &[Vec<u8>]) -> std::io::Result<()> {
        let text = lines
            .iter()
            .map(|l| String::from_utf8(l.strip_suffix(b"\n").unwrap_or(l).to_vec()))
            .collect::<Result<Vec<String>, _>>()
            .map_err(std::io::Error::other)?;
        let count = text.len() as i64;
        self.store
            .ask(|reply| Request::Append {
                project: self.project.clone(),
                id: self.id.clone(),
                first: self.next,
                lines: text,
                reply,
            })
            .map_err(std::io::Error::other)?;
        self.next += count;
        Ok(())
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.store.ask(Request::Sync).map_err(std::io::Error::other)
    }
}

impl Drop for PgTarget {
    fn drop(&mut self) {
        if self.held {
            let _ = self.store.requests.send(Request::Release(self.id.clone()));
        }
        if let Ok(mut leased) = self.store.leased.lock() {
            leased.remove(&self.id);
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user@host/db`.
fn shown_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user = &url[scheme + 3..at];
            let user = user.split(':').next().unwrap_or("");
            format!("{}{user}{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_string(),
    }
}

/// The store's thread: connects, then answers requests until the store is
/// dropped.
fn serve(
    config: tokio_postgres::Config,
    inbox: Receiver<Request>,
    ready: Sender<Result<(), String>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return;
        }
    };
    let (client, append) = match runtime.block_on(start(&config)) {
        Ok(started) => started,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    while let Ok(request) = inbox.recv() {
        runtime.block_on(answer(&client, &append, request));
    }
}

async fn start(config: &tokio_postgres::Config) -> Result<(Client, Statement), String> {
    let (client, connection) = config.connect(NoTls).await.map_err(text)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!("the transcript store's connection ended: {e}");
        }
    });
    // Two workers starting at once may both try to make the table: one
    // of them fails on the catalog's unique index, and its second try
    // finds the table made.
    if let Err(e) = client.batch_execute(SCHEMA).await
        && client.batch_execute(SCHEMA).await.is_err()
    {
        return Err(text(e));
    }
    client
        .batch_execute("SET synchronous_commit = off")
        .await
        .map_err(text)?;
    let append = client.prepare(APPEND).await.map_err(text)?;
    Ok((client, append))
}

async fn answer(client: &Client, append: &Statement, request: Request) {
    match request {
        Request::Exists(key, reply) => {
            let row = client
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM carapace_transcript_lines \
                     WHERE session_id = $1 AND project = $2)",
                    &[&key.id, &key.project],
                )
                .await;
            let _ = reply.send(row.map(|r| r.get(0)).map_err(text));
        }
        Request::Read(key, max, reply) => {
            let _ = reply.send(read(client, &key, max).await);
        }
        Request::Sessions(project, reply) => {
            let _ = reply.send(sessions(client, &project).await.map_err(text));
        }
        Request::Lease(key, reply) => {
            let _ = reply.send(lease(client, &key).await.map_err(text));
        }
        Request::Release(id) => {
            let released = client
                .execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", &[&id])
                .await;
            if let Err(e) = released {
                tracing::warn!("releasing session {id}'s lease failed: {e}");
            }
        }
        Request::Closed(reply) => {
            let _ = reply.send(Ok(client.is_closed()));
        }
        Request::Sync(reply) => {
            // A transaction that takes an id writes a commit record; with
            // the wait on, its commit flushes the WAL up to it.
            let synced = client
                .batch_execute(
                    "BEGIN; SET LOCAL synchronous_commit = on; SELECT txid_current(); COMMIT",
                )
                .await;
            let _ = reply.send(synced.map_err(text));
        }
        Request::Append {
            project,
            id,
            first,
            lines,
            reply,
        } => {
            let inserted = client
                .execute(append, &[&id, &first, &project, &lines])
                .await;
            let _ = reply.send(inserted.map(drop).map_err(text));
        }
    }
}

async fn read(client: &Client, key: &Key, max: Option<i64>) -> Result<Vec<u8>, String> {
    let id = &key.id;
    let rows = match max {
        None => {
            client
                .query(
                    "SELECT line FROM carapace_transcript_lines \
                     WHERE session_id = $1 AND project = $2 ORDER BY seq",
                    &[id, &key.project],
                )
                .await
        }
        // Each line's offset is the bytes of the lines (and newlines)
        // before it.
        Some(max) => {
            client
                .query(
                    "SELECT line FROM (SELECT seq, line, sum(octet_length(line) + 1) \
                     OVER (ORDER BY seq) - octet_length(line) - 1 AS offset_at \
                     FROM carapace_transcript_lines WHERE session_id = $1 AND project = $3) \
                     AS lines WHERE offset_at < $2 ORDER BY seq",
                    &[id, &max, &key.project],
                )
                .await
        }
    }
    .map_err(text)?;
    if rows.is_empty() {
        return Err(format!("no session `{id}` in the store"));
    }
    let mut bytes = Vec::new();
    for row in rows {
        let line: &str = row.get(0);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    Ok(bytes)
}

async fn sessions(
    client: &Client,
    project: &str,
) -> Result<Vec<(std::time::SystemTime, String)>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT session_id, max(written_at) AS last FROM carapace_transcript_lines \
             WHERE project = $1 GROUP BY session_id ORDER BY last DESC, session_id DESC",
            &[&project],
        )
        .await?;
    Ok(rows.iter().map(|row| (row.get(1), row.get(0))).collect())
}

/// The lease, and how many lines the session has once it is held.
async fn lease(client: &Client, key: &Key) -> Result<Option<i64>, tokio_postgres::Error> {
    let held: bool = client
        .query_one(
            "SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
            &[&key.id],
        )
        .await?
        .get(0);
    if !held {
        return Ok(None);
    }
    // Another project's lines under the same id are never counted nor
    // written after: the first append would collide with them and fail.
    let count: i64 = client
        .query_one(
            "SELECT count(*) FROM carapace_transcript_lines WHERE session_id = $1 AND project = $2",
            &[&key.id, &key.project],
        )
        .await?
        .get(0);
    Ok(Some(count))
}

fn key(project: &str, id: &str) -> Key {
    Key {
        project: project.into(),
        id: id.into(),
    }
}
