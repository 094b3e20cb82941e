//! The session's transcript: every message of the session, appended as one
//! JSON line each to `~/.carapace/projects/<workspace>/<session-id>.jsonl`.
//!
//! Durability: each line goes to the file in one `write` on an unbuffered
//! descriptor opened for appending, before the loop acts on it (sends it,
//! or ends with it), and the file is synced at the end of each turn. A
//! `kill -9` can therefore tear at most the line being written; a torn
//! last line is ignored on load, with a warning, and cut off before the
//! file is appended to again. Anything else that does not parse is a
//! damaged file: loading refuses it and changes nothing.
//!
//! Lines (`type`):
//! - `header` — the first line: the format, the writing carapace's
//!   version, the session id, the workspace, the session it was forked
//!   from;
//! - `user` / `assistant` — a message (`continues: true` when it extends
//!   the previous message, as the loop adds hook context or queued input
//!   to a message of tool results);
//! - `microcompact` — these tool results' content was cleared;
//! - `compact_boundary` — a compaction: the messages after it replace all
//!   before (which stay in the file, for the record).

use crate::agent::{CompactTrigger, HistoryLog, clear_results};
use crate::model::{ContentBlock, Message, Role, ToolResultContent};
use serde_json::{Value, json};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The transcript format this carapace writes and reads.
pub const TRANSCRIPT_FORMAT: u64 = 1;
/// What a tool call left without a result at the cut gets on load.
pub const INTERRUPTED_RESULT: &str = "This tool call was interrupted: the session ended before it returned, so it may or may not have taken effect. Check before doing it again.";

#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("no session `{id}` in this workspace (looked in {dir})")]
    NotFound { id: String, dir: PathBuf },
    #[error("no earlier session in this workspace to continue (looked in {0})")]
    NoneToContinue(PathBuf),
    #[error("session `{0}` already exists; pick another --session-id, or --resume it")]
    AlreadyExists(String),
    #[error(
        "{path} was written by carapace {version} in transcript format {found}; this carapace reads format {TRANSCRIPT_FORMAT} only"
    )]
    Format {
        path: PathBuf,
        found: String,
        version: String,
    },
    #[error("{path} is damaged at line {line}: {reason}")]
    Damaged {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TranscriptError + '_ {
    move |source| TranscriptError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where a workspace's transcripts live: `<config>/projects/<cwd with
/// every character but letters and digits turned into `-`>`, as Claude
/// Code names its project folders.
pub fn project_dir(config_dir: &Path, cwd: &Path) -> PathBuf {
    let name: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    config_dir.join("projects").join(name)
}

/// The longest session id carapace reads or writes.
const MAX_ID_LEN: usize = 128;

/// Whether `id` may name a session: letters, digits, `-` and `_`, so that
/// it names one file inside carapace's folders and never a path. Checked
/// for ids from the command line and from disk alike.
pub fn is_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The transcript of session `id` in `dir`.
pub fn transcript_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.jsonl"))
}

/// The most recently written transcript in `dir` (`--continue`).
pub fn latest(dir: &Path) -> Result<String, TranscriptError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(TranscriptError::NoneToContinue(dir.to_path_buf()));
        }
        Err(e) => return Err(io(dir)(e)),
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".jsonl").filter(|id| is_session_id(id))?;
            let id = id.to_string();
            let modified = entry.metadata().ok()?.modified().ok()?;
            Some((modified, id))
        })
        .max()
        .map(|(_, id)| id)
        .ok_or_else(|| TranscriptError::NoneToContinue(dir.to_path_buf()))
}

/// A transcript read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub session_id: String,
    /// The history the next request carries (after the last compaction),
    /// every tool call paired with a result.
    pub messages: Vec<Message>,
    /// Said once to the user (a torn last line, calls that were cut off).
    pub warnings: Vec<String>,
    /// The length of the file's intact part (a torn tail is cut off there
    /// before appending).
    intact_len: u64,
    /// What loading added that the file does not say (interrupted results).
    repair: Repair,
}

/// Results given on load to calls that had none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repair {
    None,
    /// One message of results after the last one.
    Appended,
    /// Results inside the history.
    Inside,
}

/// Reads the transcript at `path`.
pub fn load(path: &Path) -> Result<Loaded, TranscriptError> {
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(io(path))?;
    let damaged = |line: usize, reason: String| TranscriptError::Damaged {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut warnings = Vec::new();
    let mut intact_len = bytes.len() as u64;
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    // What follows the last newline is either nothing or a torn line.
    if let Some(tail) = lines.pop()
        && !tail.is_empty()
    {
        intact_len -= tail.len() as u64;
        warnings.push(format!(
            "the last line of {} was cut off mid-write ({} bytes); it is ignored",
            path.display(),
            tail.len()
        ));
    }
    let header = lines
        .first()
        .ok_or_else(|| damaged(1, "the file is empty".into()))?;
    let header: Value =
        serde_json::from_slice(header).map_err(|e| damaged(1, format!("not a JSON line ({e})")))?;
    if header["type"] != "header" {
        return Err(damaged(
            1,
            "the first line is not a transcript header".into(),
        ));
    }
    if header["format"].as_u64() != Some(TRANSCRIPT_FORMAT) {
        return Err(TranscriptError::Format {
            path: path.to_path_buf(),
            found: header["format"].to_string(),
            version: header["version"].as_str().unwrap_or("(unknown)").into(),
        });
    }
    let session_id = header["sessionId"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| damaged(1, "the header has no session id".into()))?;
    // The id names the files the session goes on writing: it must be the
    // file's own name, never a path a crafted header chose.
    let stem = path.file_stem().and_then(|s| s.to_str());
    if !is_session_id(&session_id) || stem != Some(session_id.as_str()) {
        return Err(damaged(
            1,
            format!(
                "the header's session id {session_id:?} is not this file's name ({})",
                stem.unwrap_or("?")
            ),
        ));
    }
    let entries = parse_lines(&lines[1..]).map_err(|(index, reason)| damaged(index + 2, reason))?;
    let mut messages: Vec<Message> = Vec::new();
    for (index, entry) in entries.into_iter().enumerate() {
        let number = index + 2;
        match entry {
            Entry::Message { message, continues } => {
                if continues {
                    match messages.last_mut() {
                        Some(last) if last.role == message.role => {
                            last.content.extend(message.content)
                        }
                        _ => {
                            return Err(damaged(
                                number,
                                "extends a message that is not there".into(),
                            ));
                        }
                    }
                } else {
                    messages.push(message);
                }
            }
            Entry::Microcompact { cleared } => clear_results(&mut messages, &cleared),
            Entry::CompactBoundary => messages.clear(),
        }
    }
    let (paired, repair) = pair_cut_calls(&mut messages);
    if paired > 0 {
        warnings.push(format!(
            "{paired} tool call(s) had no result when the session ended; they are marked interrupted"
        ));
    }
    Ok(Loaded {
        session_id,
        messages,
        warnings,
        intact_len,
        repair,
    })
}

/// One line after the header, as loading uses it.
enum Entry {
    Message { message: Message, continues: bool },
    Microcompact { cleared: Vec<String> },
    CompactBoundary,
}

/// A line as written: only what loading needs is read, the rest (ids,
/// timestamps) is skipped.
#[derive(serde::Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: LineKind,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    continues: bool,
    #[serde(default)]
    cleared: Option<Vec<String>>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum LineKind {
    User,
    Assistant,
    Microcompact,
    CompactBoundary,
    Header,
}

/// Transcripts larger than this are parsed on several threads.
const PARALLEL_PARSE_BYTES: usize = 1 << 20;

/// Parses every line; the error says which (0-based) and why. A long
/// transcript is split across the machine's cores: parsing is nearly all
/// of a resume's cost, and lines are independent.
fn parse_lines(lines: &[&[u8]]) -> Result<Vec<Entry>, (usize, String)> {
    let bytes: usize = lines.iter().map(|l| l.len()).sum();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if bytes < PARALLEL_PARSE_BYTES || threads < 2 || lines.len() < 2 * threads {
        return parse_chunk(lines, 0);
    }
    let chunk = lines.len().div_ceil(threads);
    let parsed: Vec<Result<Vec<Entry>, (usize, String)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = lines
            .chunks(chunk)
            .enumerate()
            .map(|(n, part)| scope.spawn(move || parse_chunk(part, n * chunk)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err((0, "a parser thread panicked".into())))
            })
            .collect()
    });
    let mut entries = Vec::with_capacity(lines.len());
    for part in parsed {
        entries.extend(part?);
    }
    Ok(entries)
}

fn parse_chunk(lines: &[&[u8]], first: usize) -> Result<Vec<Entry>, (usize, String)> {
    lines
        .iter()
        .enumerate()
        .map(|(n, line)| parse_line(line).map_err(|reason| (first + n, reason)))
        .collect()
}

fn parse_line(line: &[u8]) -> Result<Entry, String> {
    let line: Line = serde_json::from_slice(line).map_err(|e| {
        // Say which: a line that is not JSON, or a line of a kind no
        // carapace writes.
        match serde_json::from_slice::<Value>(line) {
            Err(e) => format!("not a JSON line ({e})"),
            Ok(value) => match value["type"].as_str() {
                Some(
                    kind @ ("user" | "assistant" | "microcompact" | "compact_boundary" | "header"),
                ) => {
                    format!("a bad `{kind}` line ({e})")
                }
                Some(other) => format!("an unknown line type `{other}`"),
                None => "a line without a type".into(),
            },
        }
    })?;
    match line.kind {
        LineKind::User | LineKind::Assistant => {
            let message = line.message.ok_or("a message line without its message")?;
            Ok(Entry::Message {
                message,
                continues: line.continues,
            })
        }
        LineKind::Microcompact => Ok(Entry::Microcompact {
            cleared: line
                .cleared
                .ok_or("a microcompact line without `cleared`")?,
        }),
        LineKind::CompactBoundary => Ok(Entry::CompactBoundary),
        LineKind::Header => Err("a second header".into()),
    }
}

/// Gives every tool call without a result an interrupted one, right after
/// its message (where the API expects it). Returns how many it paired, and
/// where.
fn pair_cut_calls(messages: &mut Vec<Message>) -> (usize, Repair) {
    let mut paired = 0;
    let mut repair = Repair::None;
    let mut index = 0;
    while index < messages.len() {
        if messages[index].role != Role::Assistant {
            index += 1;
            continue;
        }
        let calls = crate::model::tool_use_ids(&messages[index].content);
        if calls.is_empty() {
            index += 1;
            continue;
        }
        let answered: Vec<String> = match messages.get(index + 1) {
            Some(next) if next.role == Role::User => next
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let missing: Vec<ContentBlock> = calls
            .into_iter()
            .filter(|id| !answered.contains(id))
            .map(|id| ContentBlock::ToolResult {
                tool_use_id: id,
                content: ToolResultContent::Text(INTERRUPTED_RESULT.into()),
                is_error: true,
            })
            .collect();
        paired += missing.len();
        if !missing.is_empty() {
            repair = if index + 1 == messages.len() && repair == Repair::None {
                Repair::Appended
            } else {
                Repair::Inside
            };
            match messages.get_mut(index + 1) {
                Some(next) if next.role == Role::User => {
                    // Results come first in a message that answers calls.
                    let rest = std::mem::take(&mut next.content);
                    next.content = missing.into_iter().chain(rest).collect();
                }
                _ => messages.insert(
                    index + 1,
                    Message {
                        role: Role::User,
                        content: missing,
                    },
                ),
            }
        }
        index += 1;
    }
    (paired, repair)
}

/// What the writer knows of what is already on disk.
#[derive(Default)]
struct Written {
    /// Messages of the current history that are in the file.
    messages: usize,
    /// Blocks of the last of them that are in the file.
    last_blocks: usize,
    /// An assistant message written ahead of the history ([`HistoryLog::response`]).
    ahead: bool,
    /// A write failed: said once, then the transcript is left alone.
    failed: bool,
    /// How many times a failure was said to the user (at most once).
    failures_said: usize,
    parent: Option<String>,
}

/// The transcript being written.
pub struct Transcript {
    path: PathBuf,
    session_id: String,
    file: Mutex<(Option<File>, Written)>,
}

/// How a transcript is opened.
pub enum Opening<'a> {
    /// A new session (`forked_from`: the session whose history it starts
    /// with).
    New {
        forked_from: Option<&'a str>,
        history: &'a [Message],
        /// A display name (`-n`).
        name: Option<&'a str>,
    },
    /// A resumed session: appended to, after its torn tail is cut off.
    Resume(&'a Loaded),
}

impl Transcript {
    /// Opens the transcript of session `id` at `path`.
    pub fn open(
        path: PathBuf,
        session_id: &str,
        cwd: &Path,
        opening: Opening<'_>,
    ) -> Result<Self, TranscriptError> {
        if let Some(dir) = path.parent() {
            crate::files::create_dir_all(dir).map_err(io(dir))?;
        }
        let transcript = match opening {
            Opening::New {
                forked_from,
                history,
                name,
            } => {
                let file = crate::files::create_new(&path).map_err(|e| match e.kind() {
                    std::io::ErrorKind::AlreadyExists => {
                        TranscriptError::AlreadyExists(session_id.to_string())
                    }
                    _ => io(&path)(e),
                })?;
                let transcript = Self {
                    session_id: session_id.to_string(),
                    file: Mutex::new((Some(file), Written::default())),
                    path,
                };
                let mut header = json!({
                    "type": "header",
                    "format": TRANSCRIPT_FORMAT,
                    "version": env!("CARGO_PKG_VERSION"),
                    "sessionId": session_id,
                    "cwd": cwd.display().to_string(),
                    "timestamp": now(),
                });
                if let Some(from) = forked_from {
                    header["forkedFrom"] = json!(from);
                }
                if let Some(name) = name {
                    header["name"] = json!(name);
                }
                transcript.write_lines(vec![header])?;
                if !history.is_empty() {
                    let mut guard = transcript.lock();
                    let (file, written) = &mut *guard;
                    let lines = message_lines(&transcript.session_id, written, history, 0);
                    append(file, written, &transcript.path, lines);
                    written.messages = history.len();
                    written.last_blocks = history.last().map_or(0, |m| m.content.len());
                }
                transcript
            }
            Opening::Resume(loaded) => {
                let file = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(io(&path))?;
                // A torn tail would glue itself to the next line.
                file.set_len(loaded.intact_len).map_err(io(&path))?;
                drop(file);
                let file = OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(io(&path))?;
                let transcript = Self {
                    session_id: session_id.to_string(),
                    file: Mutex::new((Some(file), Written::default())),
                    path,
                };
                {
                    let mut guard = transcript.lock();
                    let (file, written) = &mut *guard;
                    // Results paired on load are not in the file: written
                    // now, the file says what the next request carried.
                    let lines = match loaded.repair {
                        Repair::None => Vec::new(),
                        Repair::Appended => message_lines(
                            &transcript.session_id,
                            written,
                            &loaded.messages,
                            loaded.messages.len() - 1,
                        ),
                        Repair::Inside => {
                            let mut lines = vec![json!({
                                "type": "compact_boundary",
                                "trigger": "resume",
                                "timestamp": now(),
                            })];
                            lines.extend(message_lines(
                                &transcript.session_id,
                                written,
                                &loaded.messages,
                                0,
                            ));
                            lines
                        }
                    };
                    append(file, written, &transcript.path, lines);
                    written.messages = loaded.messages.len();
                    written.last_blocks = loaded.messages.last().map_or(0, |m| m.content.len());
                }
                transcript
            }
        };
        Ok(transcript)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes what was written durable (at the end of a turn).
    pub fn flush(&self) {
        let guard = self.lock();
        if let (Some(file), written) = &*guard
            && !written.failed
            && let Err(e) = file.sync_data()
        {
            tracing::warn!(path = %self.path.display(), "syncing the transcript failed: {e}");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Option<File>, Written)> {
        self.file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_lines(&self, lines: Vec<Value>) -> Result<(), TranscriptError> {
        let mut guard = self.lock();
        let (file, _) = &mut *guard;
        let Some(file) = file else { return Ok(()) };
        for line in lines {
            file.write_all(&encode(&line)).map_err(io(&self.path))?;
        }
        Ok(())
    }
}

impl HistoryLog for Transcript {
    fn sync(&self, messages: &[Message]) {
        let mut guard = self.lock();
        let (file, written) = &mut *guard;
        if written.failed {
            return;
        }
        let mut lines = Vec::new();
        if messages.len() < written.messages {
            // Not an append: the whole history again, after a boundary.
            lines.push(
                json!({"type": "compact_boundary", "trigger": "rewrite", "timestamp": now()}),
            );
            written.messages = 0;
            written.last_blocks = 0;
            written.ahead = false;
        }
        let mut from = written.messages;
        if from > 0 {
            let last = &messages[from - 1];
            if last.content.len() > written.last_blocks {
                lines.push(message_line(
                    &self.session_id,
                    written,
                    last.role,
                    &last.content[written.last_blocks..],
                    true,
                ));
            }
        }
        if written.ahead {
            written.ahead = false;
            if messages
                .get(from)
                .is_some_and(|m| m.role == Role::Assistant)
            {
                from += 1;
            }
        }
        lines.extend(message_lines(&self.session_id, written, messages, from));
        written.messages = messages.len();
        written.last_blocks = messages.last().map_or(0, |m| m.content.len());
        append(file, written, &self.path, lines);
    }

    fn response(&self, content: &[ContentBlock]) {
        let mut guard = self.lock();
        let (file, written) = &mut *guard;
        if written.failed || written.ahead {
            return;
        }
        let line = message_line(&self.session_id, written, Role::Assistant, content, false);
        written.ahead = true;
        append(file, written, &self.path, vec![line]);
    }

    fn cleared(&self, tool_use_ids: &[String]) {
        let mut guard = self.lock();
        let (file, written) = &mut *guard;
        let line = json!({"type": "microcompact", "cleared": tool_use_ids, "timestamp": now()});
        append(file, written, &self.path, vec![line]);
    }

    fn compacted(&self, trigger: CompactTrigger, pre_tokens: u64, messages: &[Message]) {
        let mut guard = self.lock();
        let (file, written) = &mut *guard;
        let mut lines = vec![json!({
            "type": "compact_boundary",
            "trigger": trigger.as_str(),
            "preTokens": pre_tokens,
            "timestamp": now(),
        })];
        written.ahead = false;
        lines.extend(message_lines(&self.session_id, written, messages, 0));
        written.messages = messages.len();
        written.last_blocks = messages.last().map_or(0, |m| m.content.len());
        append(file, written, &self.path, lines);
    }
}

fn message_lines(
    session_id: &str,
    written: &mut Written,
    messages: &[Message],
    from: usize,
) -> Vec<Value> {
    messages
        .iter()
        .skip(from)
        .map(|m| message_line(session_id, written, m.role, &m.content, false))
        .collect()
}

fn message_line(
    session_id: &str,
    written: &mut Written,
    role: Role,
    content: &[ContentBlock],
    continues: bool,
) -> Value {
    let uuid = uuid::Uuid::new_v4().to_string();
    let mut line = json!({
        "type": match role { Role::User => "user", Role::Assistant => "assistant" },
        "uuid": uuid,
        "parentUuid": written.parent,
        "sessionId": session_id,
        "timestamp": now(),
        "message": {"role": role, "content": content},
    });
    if continues {
        line["continues"] = json!(true);
    }
    written.parent = Some(uuid);
    line
}

/// Appends `lines`, each in one write. A failure (a full disk) is said
/// once; the run goes on without its transcript rather than stopping.
fn append(file: &mut Option<File>, written: &mut Written, path: &Path, lines: Vec<Value>) {
    let Some(handle) = file else { return };
    if written.failed {
        return;
    }
    for line in lines {
        if let Err(e) = handle.write_all(&encode(&line)) {
            written.failed = true;
            written.failures_said += 1;
            eprintln!(
                "carapace: warning: writing the transcript {} failed ({e}); the rest of this session is not saved",
                path.display()
            );
            *file = None;
            return;
        }
    }
}

fn encode(line: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(line).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

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

    fn open_new(dir: &Path) -> Result<Transcript, TranscriptError> {
        Transcript::open(
            transcript_path(dir, "s1"),
            "s1",
            dir,
            Opening::New {
                forked_from: None,
                history: &[],
                name: None,
            },
        )
    }

    #[test]
    fn appends_read_back_as_the_same_history() -> TestResult {
        let dir = tempfile::tempdir()?;
        let transcript = open_new(dir.path())?;
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
        let loaded = load(transcript.path())?;
        assert_eq!(loaded.messages, history);
        assert!(loaded.warnings.is_empty());
        let lines = std::fs::read_to_string(transcript.path())?;
        assert_eq!(lines.lines().count(), 6, "{lines}");
        Ok(())
    }

    #[test]
    fn a_torn_last_line_is_ignored_and_a_call_without_result_is_paired() -> TestResult {
        let dir = tempfile::tempdir()?;
        let transcript = open_new(dir.path())?;
        transcript.sync(&[Message::user_text("hi")]);
        transcript.response(&call("t1").content);
        drop(transcript);
        let path = transcript_path(dir.path(), "s1");
        let mut file = OpenOptions::new().append(true).open(&path)?;
        file.write_all(b"{\"type\":\"user\",\"mess")?;
        let loaded = load(&path)?;
        assert_eq!(loaded.messages.len(), 3);
        assert!(matches!(
            &loaded.messages[2].content[0],
            ContentBlock::ToolResult { is_error: true, .. }
        ));
        assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
        // Resuming cuts the torn tail off and writes the paired result.
        let resumed = Transcript::open(path.clone(), "s1", dir.path(), Opening::Resume(&loaded))?;
        let mut history = loaded.messages.clone();
        history.push(Message::user_text("again"));
        resumed.sync(&history);
        let again = load(&path)?;
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
        assert_eq!(again.messages, history);
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
    fn a_compaction_starts_the_history_again() -> TestResult {
        let dir = tempfile::tempdir()?;
        let transcript = open_new(dir.path())?;
        transcript.sync(&[Message::user_text("a"), call("t1")]);
        let summary = vec![Message::user_text("summary")];
        transcript.compacted(CompactTrigger::Auto, 1000, &summary);
        let mut history = summary.clone();
        history.push(Message::user_text("next"));
        transcript.sync(&history);
        assert_eq!(load(transcript.path())?.messages, history);
        Ok(())
    }

    #[test]
    fn a_full_disk_is_said_once_and_the_run_goes_on() -> TestResult {
        let full = OpenOptions::new().append(true).open("/dev/full")?;
        let transcript = Transcript {
            path: PathBuf::from("/dev/full"),
            session_id: "s".into(),
            file: Mutex::new((Some(full), Written::default())),
        };
        transcript.sync(&[Message::user_text("hi")]);
        {
            let guard = transcript.lock();
            assert!(guard.0.is_none() && guard.1.failed);
        }
        // Later writes are skipped, not retried line by line, and the
        // failure is not said again.
        transcript.response(&call("t1").content);
        transcript.sync(&[Message::user_text("hi"), call("t1")]);
        transcript.flush();
        assert_eq!(transcript.lock().1.failures_said, 1, "said once");
        Ok(())
    }

    #[test]
    fn workspace_folders_are_named_as_claude_code_names_them() {
        assert_eq!(
            project_dir(Path::new("/c"), Path::new("/work/my_repo.v2")),
            PathBuf::from("/c/projects/-work-my-repo-v2")
        );
    }
}
