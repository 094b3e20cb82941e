//! Writing a transcript: one line per message, appended in one write each,
//! and the opening of a new or a resumed session's file.

use super::read::{Loaded, Repair};
use super::store::TranscriptPlace;
use super::target::{FileTarget, LineTarget};
use super::{TRANSCRIPT_FORMAT, TranscriptError, io};
use crate::agent::{CompactTrigger, HistoryLog};
use crate::checkpoints::{CheckpointLog, CheckpointRecord};
use crate::model::{ContentBlock, Message, Role};
use serde_json::{Value, json};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What the writer knows of what is already written.
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

type Target = Option<Box<dyn LineTarget>>;

/// The transcript being written.
pub struct Transcript {
    /// Where it is, as the user and hooks are told.
    label: PathBuf,
    session_id: String,
    file: Mutex<(Target, Written)>,
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
    /// Opens the transcript of session `id` at `place`: a new one is
    /// created (refused if it exists), a resumed one appended to. In a
    /// shared store the session is leased for as long as this lives.
    pub fn open(
        place: TranscriptPlace,
        session_id: &str,
        cwd: &Path,
        opening: Opening<'_>,
    ) -> Result<Self, TranscriptError> {
        let label = place.label();
        let target = match (&place, &opening) {
            (TranscriptPlace::File(path), Opening::New { .. }) => new_file(path, session_id)?,
            (TranscriptPlace::File(path), Opening::Resume(loaded)) => {
                resumed_file(path, session_id, loaded)?
            }
            (TranscriptPlace::Postgres { store, project, id }, opening) => {
                let lines = match opening {
                    Opening::New { .. } if place.exists()? => {
                        return Err(TranscriptError::AlreadyExists(id.clone()));
                    }
                    Opening::New { .. } => 0,
                    Opening::Resume(loaded) => loaded.lines,
                };
                Box::new(store.lease(project, id, lines)?) as Box<dyn LineTarget>
            }
        };
        let transcript = Self {
            label,
            session_id: session_id.to_string(),
            file: Mutex::new((Some(target), Written::default())),
        };
        match opening {
            Opening::New {
                forked_from,
                history,
                name,
            } => transcript.start(cwd, forked_from, history, name)?,
            Opening::Resume(loaded) => transcript.repair(loaded),
        }
        Ok(transcript)
    }

    /// A new transcript's header, and the history it starts with.
    fn start(
        &self,
        cwd: &Path,
        forked_from: Option<&str>,
        history: &[Message],
        name: Option<&str>,
    ) -> Result<(), TranscriptError> {
        let mut header = json!({
            "type": "header",
            "format": TRANSCRIPT_FORMAT,
            "version": env!("CARGO_PKG_VERSION"),
            "sessionId": self.session_id,
            "cwd": cwd.display().to_string(),
            "timestamp": now(),
        });
        if let Some(from) = forked_from {
            header["forkedFrom"] = json!(from);
        }
        if let Some(name) = name {
            header["name"] = json!(name);
        }
        self.write_lines(vec![header])?;
        if !history.is_empty() {
            let mut guard = self.lock();
            let (file, written) = &mut *guard;
            let lines = message_lines(&self.session_id, written, history, 0);
            append(file, written, &self.label, lines);
            written.messages = history.len();
            written.last_blocks = history.last().map_or(0, |m| m.content.len());
        }
        Ok(())
    }

    /// Results paired on load are not in the transcript: written now, it
    /// says what the next request carried.
    fn repair(&self, loaded: &Loaded) {
        let mut guard = self.lock();
        let (file, written) = &mut *guard;
        let lines = match loaded.repair {
            Repair::None => Vec::new(),
            Repair::Appended => message_lines(
                &self.session_id,
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
                    &self.session_id,
                    written,
                    &loaded.messages,
                    0,
                ));
                lines
            }
        };
        append(file, written, &self.label, lines);
        written.messages = loaded.messages.len();
        written.last_blocks = loaded.messages.last().map_or(0, |m| m.content.len());
    }

    /// Where the transcript is (a file's path, or the store's URL and the
    /// session id).
    pub fn path(&self) -> &Path {
        &self.label
    }

    /// Makes what was written durable (at the end of a turn).
    pub fn flush(&self) {
        let mut guard = self.lock();
        if let (Some(target), written) = &mut *guard
            && !written.failed
            && let Err(e) = target.sync()
        {
            tracing::warn!(path = %self.label.display(), "syncing the transcript failed: {e}");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Target, Written)> {
        self.file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_lines(&self, lines: Vec<Value>) -> Result<(), TranscriptError> {
        let mut guard = self.lock();
        let (target, _) = &mut *guard;
        let Some(target) = target else { return Ok(()) };
        target.append(&encoded(lines)).map_err(io(&self.label))
    }
}

fn new_file(path: &Path, session_id: &str) -> Result<Box<dyn LineTarget>, TranscriptError> {
    if let Some(dir) = path.parent() {
        crate::files::create_dir_all(dir).map_err(io(dir))?;
    }
    let file = crate::files::create_new(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => TranscriptError::AlreadyExists(session_id.to_string()),
        _ => io(path)(e),
    })?;
    Ok(Box::new(FileTarget::lease(file, path, session_id)?))
}

fn resumed_file(
    path: &Path,
    session_id: &str,
    loaded: &Loaded,
) -> Result<Box<dyn LineTarget>, TranscriptError> {
    let file = OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(io(path))?;
    let mut target = FileTarget::lease(file, path, session_id)?;
    let len = target.file.metadata().map_err(io(path))?.len();
    if len != loaded.read_len {
        // Written since it was read: resuming it would lose that.
        return Err(TranscriptError::Changed {
            id: session_id.to_string(),
        });
    }
    // A torn tail would glue itself to the next line.
    target.file.set_len(loaded.intact_len).map_err(io(path))?;
    target.len = loaded.intact_len;
    Ok(Box::new(target))
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
        append(file, written, &self.label, lines);
    }

    fn response(&self, content: &[ContentBlock]) {
        let mut guard = self.lock();
        let (file, written) = &mut *guard;
        if written.failed || written.ahead {
            return;
        }
        let line = message_line(&self.session_id, written, Role::Assistant, content, false);
        written.ahead = true;
        append(file, written, &self.label, vec![line]);
    }

    fn cleared(&self, tool_use_ids: &[String]) {
        let mut guard = self.lock();
        let (file, written) = &mut *guard;
        let line = json!({"type": "microcompact", "cleared": tool_use_ids, "timestamp": now()});
        append(file, written, &self.label, vec![line]);
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
        append(file, written, &self.label, lines);
    }
}

/// A decision made on the session's behalf (auto mode's classifier's),
/// kept as a line of its own: loading skips it.
impl crate::agent::DecisionLog for Transcript {
    fn decided(&self, mut decision: Value) {
        if let Some(line) = decision.as_object_mut() {
            line.insert("timestamp".into(), json!(now()));
        }
        let mut guard = self.lock();
        let (file, written) = &mut *guard;
        append(file, written, &self.label, vec![decision]);
    }
}

/// A kept file's record goes into the transcript before the write it
/// precedes, so a resumed session can rewind past where it resumed.
impl CheckpointLog for Transcript {
    fn record(&self, record: &CheckpointRecord) {
        let mut guard = self.lock();
        let (file, written) = &mut *guard;
        let mut line = serde_json::Map::new();
        line.insert("type".into(), json!("file_checkpoint"));
        line.insert("timestamp".into(), json!(now()));
        match serde_json::to_value(record) {
            Ok(Value::Object(fields)) => line.extend(fields),
            // A path that is not UTF-8 has no JSON spelling: this process
            // keeps it, a resumed one cannot.
            _ => {
                tracing::warn!(turn = %record.turn, "a file checkpoint could not be recorded");
                return;
            }
        }
        append(file, written, &self.label, vec![Value::Object(line)]);
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

/// Appends `lines`, in order. A failure (a full disk, a store that went
/// away) is said once; the run goes on without its transcript rather than
/// stopping, and what was written before the line that failed is kept
/// whole.
fn append(target: &mut Target, written: &mut Written, label: &Path, lines: Vec<Value>) {
    let Some(handle) = target else { return };
    if written.failed || lines.is_empty() {
        return;
    }
    if let Err(e) = handle.append(&encoded(lines)) {
        written.failed = true;
        written.failures_said += 1;
        eprintln!(
            "carapace: warning: writing the transcript {} failed ({e}); the rest of this session is not saved",
            label.display()
        );
        // What was written whole is kept: synced now, as at a turn's
        // end, since no later flush will see this target.
        if let Err(e) = handle.sync() {
            tracing::warn!(path = %label.display(), "syncing the transcript failed: {e}");
        }
        *target = None;
    }
}

/// The lines as written: each cleaned of carapace's own credentials (the
/// last line: none reaches the disk), then encoded.
fn encoded(lines: Vec<Value>) -> Vec<Vec<u8>> {
    let redactor = crate::secrets::own_credentials();
    lines
        .into_iter()
        .map(|mut line| {
            let found = redactor.redact_json(&mut line);
            if !found.is_empty() {
                tracing::warn!(?found, "a secret was replaced in a transcript line");
            }
            encode(&line)
        })
        .collect()
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

    fn call_message() -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "t1".into(),
                name: "Read".into(),
                input: json!({}),
            }],
        }
    }

    #[test]
    fn a_full_disk_is_said_once_and_the_run_goes_on() -> Result<(), Box<dyn std::error::Error>> {
        let full = OpenOptions::new().append(true).open("/dev/full")?;
        let target: Box<dyn LineTarget> =
            Box::new(FileTarget::lease(full, Path::new("/dev/full"), "s")?);
        let transcript = Transcript {
            label: PathBuf::from("/dev/full"),
            session_id: "s".into(),
            file: Mutex::new((Some(target), Written::default())),
        };
        transcript.sync(&[Message::user_text("hi")]);
        {
            let guard = transcript.lock();
            assert!(guard.0.is_none() && guard.1.failed);
        }
        // Later writes are skipped, not retried line by line, and the
        // failure is not said again.
        transcript.response(&call_message().content);
        transcript.sync(&[Message::user_text("hi"), call_message()]);
        transcript.flush();
        assert_eq!(transcript.lock().1.failures_said, 1, "said once");
        Ok(())
    }
}
