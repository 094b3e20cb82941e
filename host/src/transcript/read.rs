//! Reading a transcript back: the header checked, every line parsed (on
//! several threads for a long one), compactions and cleared results
//! replayed, and calls cut off without a result paired with an
//! interrupted one.

use super::{INTERRUPTED_RESULT, TRANSCRIPT_FORMAT, TranscriptError, io, is_session_id};
use crate::agent::clear_results;
use crate::checkpoints::CheckpointRecord;
use crate::model::{ContentBlock, Message, Role, ToolResultContent};
use serde_json::Value;
use std::fs::File;
use std::io::Read;
use std::path::Path;

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
    pub(super) intact_len: u64,
    /// What loading added that the file does not say (interrupted results).
    pub(super) repair: Repair,
    /// How many whole lines the intact part has (where a store's next
    /// line goes).
    pub(super) lines: i64,
    /// How many bytes were read: a writer resuming it finds the same, or
    /// someone wrote in between.
    pub(super) read_len: u64,
    /// The file checkpoints recorded, in order (compactions keep them).
    pub checkpoints: Vec<CheckpointRecord>,
}

/// Results given on load to calls that had none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Repair {
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
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    load_bytes(path, stem, &bytes)
}

/// Reads a transcript's bytes (`path` names it in messages); its header
/// must name session `expected_id`.
pub(super) fn load_bytes(
    path: &Path,
    expected_id: &str,
    bytes: &[u8],
) -> Result<Loaded, TranscriptError> {
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
    let line_count = lines.len() as i64;
    let session_id = header_session(path, expected_id, lines.first().copied())?;
    let entries = parse_lines(&lines[1..]).map_err(|(index, reason)| damaged(index + 2, reason))?;
    let mut messages: Vec<Message> = Vec::new();
    let mut checkpoints = Vec::new();
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
            Entry::Checkpoint(record) => checkpoints.push(record),
            Entry::Decision => {}
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
        lines: line_count,
        read_len: bytes.len() as u64,
        checkpoints,
    })
}

/// The session id a transcript's header names: the header must be the
/// first line, of this format, naming the file's own id.
fn header_session(
    path: &Path,
    expected_id: &str,
    first: Option<&[u8]>,
) -> Result<String, TranscriptError> {
    let damaged = |reason: String| TranscriptError::Damaged {
        path: path.to_path_buf(),
        line: 1,
        reason,
    };
    let header = first.ok_or_else(|| damaged("the file is empty".into()))?;
    let header: Value =
        serde_json::from_slice(header).map_err(|e| damaged(format!("not a JSON line ({e})")))?;
    if header["type"] != "header" {
        return Err(damaged("the first line is not a transcript header".into()));
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
        .ok_or_else(|| damaged("the header has no session id".into()))?;
    // The id names the files the session goes on writing: it must be the
    // file's own name, never a path a crafted header chose.
    if !is_session_id(&session_id) || expected_id != session_id {
        return Err(damaged(format!(
            "the header's session id {session_id:?} is not this file's name ({expected_id})"
        )));
    }
    Ok(session_id)
}

/// One line after the header, as loading uses it.
enum Entry {
    Message {
        message: Message,
        continues: bool,
    },
    Microcompact {
        cleared: Vec<String>,
    },
    CompactBoundary,
    Checkpoint(CheckpointRecord),
    /// A decision made on the session's behalf: kept for the reader, not
    /// part of the history.
    Decision,
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
    #[serde(default)]
    turn: Option<String>,
    #[serde(default)]
    file: Option<(std::path::PathBuf, crate::checkpoints::Before)>,
    #[serde(default)]
    written: Option<(std::path::PathBuf, crate::files::FileIdentity)>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum LineKind {
    User,
    Assistant,
    Microcompact,
    CompactBoundary,
    FileCheckpoint,
    AutoModeDecision,
    /// A tool call a script made (its result reached the model inside
    /// the Script call's).
    ScriptCall,
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
                    kind @ ("user" | "assistant" | "microcompact" | "compact_boundary"
                    | "file_checkpoint" | "auto_mode_decision" | "script_call" | "header"),
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
        LineKind::FileCheckpoint => Ok(Entry::Checkpoint(CheckpointRecord {
            turn: line.turn.ok_or("a file_checkpoint line without its turn")?,
            file: line.file,
            written: line.written,
        })),
        LineKind::AutoModeDecision | LineKind::ScriptCall => Ok(Entry::Decision),
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
