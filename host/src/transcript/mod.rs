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
//!
//! Where the lines go is the store's choice (`store.rs`): files, or a
//! PostgreSQL database many workers share (`postgres.rs`), with the same
//! guarantees.
//!
//! Imports: `agent`, `files`, `model`, `sandbox` (to describe an error
//! chain) — folders below it; nothing that imports it.

mod postgres;
mod read;
mod store;
mod target;
mod write;

pub use postgres::PgStore;
pub use read::{Loaded, load};
pub use store::{TranscriptPlace, TranscriptStore};
pub use write::{Opening, Transcript};

use std::path::{Path, PathBuf};

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
    #[error("the transcript store: {0}")]
    Store(String),
    #[error(
        "session `{0}` is being written by another session or worker (its lease is held); wait for it to end, or resume another"
    )]
    InUse(String),
    #[error("session `{id}` was written to while it was being resumed; resume it again")]
    Changed { id: String },
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

/// The sessions whose transcripts are in `dir`, newest first, with when
/// each was last written (`--resume` without an id lists them).
pub fn sessions(dir: &Path) -> Vec<(std::time::SystemTime, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".jsonl").filter(|id| is_session_id(id))?;
            let modified = entry.metadata().ok()?.modified().ok()?;
            Some((modified, id.to_string()))
        })
        .collect();
    found.sort_by(|a, b| b.cmp(a));
    found
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

#[cfg(test)]
mod tests;
