//! Writing a transcript: one line per message, appended in one write each,
//! and the opening of a new or a resumed session's file.

use super::read::{Loaded, Repair};
use super::{TRANSCRIPT_FORMAT, TranscriptError, io};
use crate::agent::{CompactTrigger, HistoryLog};
use crate::model::{ContentBlock, Message, Role};
use serde_json::{Value, json};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
    /// How long the file is: where a line that fails half-written is cut
    /// back to, so the file always ends on a whole line.
    len: u64,
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
                    file: Mutex::new((
                        Some(file),
                        Written {
                            len: loaded.intact_len,
                            ..Written::default()
                        },
                    )),
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
        let (file, written) = &mut *guard;
        let Some(file) = file else { return Ok(()) };
        for line in lines {
            write_line(file, &mut written.len, &encode(&line)).map_err(io(&self.path))?;
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
/// once; the run goes on without its transcript rather than stopping, and
/// the file keeps every line before the one that failed, whole.
fn append(file: &mut Option<File>, written: &mut Written, path: &Path, lines: Vec<Value>) {
    let Some(handle) = file else { return };
    if written.failed {
        return;
    }
    for line in lines {
        if let Err(e) = write_line(handle, &mut written.len, &encode(&line)) {
            written.failed = true;
            written.failures_said += 1;
            eprintln!(
                "carapace: warning: writing the transcript {} failed ({e}); the rest of this session is not saved",
                path.display()
            );
            // What was written whole is kept: synced now, as at a turn's
            // end, since no later flush will see this file.
            if let Err(e) = handle.sync_data() {
                tracing::warn!(path = %path.display(), "syncing the transcript failed: {e}");
            }
            *file = None;
            return;
        }
    }
}

/// Writes one whole line at the end of the file (`len` long). When the
/// write fails part-way — a disk that fills mid-line writes what fits —
/// the part is cut off again: a reader then finds the file ending on the
/// last line that was written whole, not on a torn one.
fn write_line(file: &mut File, len: &mut u64, bytes: &[u8]) -> std::io::Result<()> {
    match file.write_all(bytes) {
        Ok(()) => {
            *len += bytes.len() as u64;
            Ok(())
        }
        Err(e) => {
            if let Err(cut) = file.set_len(*len) {
                tracing::warn!("cutting a half-written transcript line off failed: {cut}");
            }
            Err(e)
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
        transcript.response(&call_message().content);
        transcript.sync(&[Message::user_text("hi"), call_message()]);
        transcript.flush();
        assert_eq!(transcript.lock().1.failures_said, 1, "said once");
        Ok(())
    }
}
