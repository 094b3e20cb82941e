//! File checkpoints, for the SDK's `rewind_files`: with checkpointing on
//! (`CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING`, the SDK's
//! `enableFileCheckpointing`), every file a call is granted to write is
//! saved as it was before the first write of each user message's turn. A
//! rewind to a message puts every file written since back as it was
//! before that message — a file that did not exist is removed — and says
//! which files changed and by how many lines. A file too large to keep is
//! remembered as such: a rewind over it refuses rather than restore part of
//! the work.
//!
//! Imports: `files` — folders below it; nothing that imports it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Largest file kept in a checkpoint.
const MAX_KEPT_BYTES: u64 = 16 * 1024 * 1024;

/// A file as it was before a turn wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Before {
    Missing,
    Content(Vec<u8>),
    /// Too large (or unreadable) to keep: why.
    NotKept(String),
}

#[derive(Default)]
struct Turns {
    current: Option<String>,
    /// Each user message's turn, in order, with the files first written in
    /// it as they were before.
    turns: Vec<(String, BTreeMap<PathBuf, Before>)>,
}

#[derive(Default)]
pub struct FileCheckpoints {
    turns: Mutex<Turns>,
}

/// What a rewind did (or, dry, would do), in Claude Code's answer shape.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rewind {
    pub can_rewind: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub files_changed: Vec<String>,
    pub insertions: usize,
    pub deletions: usize,
}

impl Rewind {
    fn refused(error: String) -> Self {
        Self {
            can_rewind: false,
            error: Some(error),
            files_changed: Vec::new(),
            insertions: 0,
            deletions: 0,
        }
    }
}

impl FileCheckpoints {
    /// The turn of user message `id` starts: writes from now on are its.
    pub fn begin_turn(&self, id: &str) {
        if let Ok(mut turns) = self.turns.lock() {
            turns.current = Some(id.to_string());
            if !turns.turns.iter().any(|(t, _)| t == id) {
                turns.turns.push((id.to_string(), BTreeMap::new()));
            }
        }
    }

    /// A call is about to write `path`: keep it as it is, unless this turn
    /// already did.
    pub fn before_write(&self, path: &Path) {
        let Ok(mut turns) = self.turns.lock() else {
            return;
        };
        let Some(current) = turns.current.clone() else {
            return;
        };
        let Some((_, files)) = turns.turns.iter_mut().find(|(t, _)| *t == current) else {
            return;
        };
        files
            .entry(path.to_path_buf())
            .or_insert_with(|| read_before(path));
    }

    /// Puts every file written since message `id` back as it was before
    /// it; with `dry_run`, only says what that would change.
    pub fn rewind(&self, id: &str, dry_run: bool) -> Rewind {
        let Ok(turns) = self.turns.lock() else {
            return Rewind::refused("the checkpoints are unusable".into());
        };
        let Some(start) = turns.turns.iter().position(|(t, _)| t == id) else {
            return Rewind::refused(format!(
                "No checkpoint for message {id}: no turn of this session started from it."
            ));
        };
        // The state before `id`: each file's earliest keeping from then on.
        let mut restore: BTreeMap<&PathBuf, &Before> = BTreeMap::new();
        for (_, files) in &turns.turns[start..] {
            for (path, before) in files {
                restore.entry(path).or_insert(before);
            }
        }
        if let Some((path, Before::NotKept(why))) = restore
            .iter()
            .find(|(_, b)| matches!(b, Before::NotKept(_)))
        {
            return Rewind::refused(format!("{} cannot be restored: {why}", path.display()));
        }
        let mut outcome = Rewind {
            can_rewind: true,
            error: None,
            files_changed: Vec::new(),
            insertions: 0,
            deletions: 0,
        };
        for (path, before) in restore {
            let now = std::fs::read(path).ok();
            let then = match before {
                Before::Content(bytes) => Some(bytes.as_slice()),
                _ => None,
            };
            if now.as_deref() == then {
                continue;
            }
            let (added, removed) =
                line_changes(now.as_deref().unwrap_or_default(), then.unwrap_or_default());
            outcome.insertions += added;
            outcome.deletions += removed;
            outcome.files_changed.push(path.display().to_string());
            if dry_run {
                continue;
            }
            let put_back = match then {
                Some(bytes) => crate::files::write(path, bytes).map_err(|e| e.to_string()),
                None => std::fs::remove_file(path)
                    .or_else(|e| match e.kind() {
                        std::io::ErrorKind::NotFound => Ok(()),
                        _ => Err(e),
                    })
                    .map_err(|e| e.to_string()),
            };
            if let Err(e) = put_back {
                outcome.can_rewind = false;
                outcome.error = Some(format!("{}: {e}", path.display()));
                return outcome;
            }
        }
        outcome
    }
}

fn read_before(path: &Path) -> Before {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Before::Missing,
        Err(e) => Before::NotKept(e.to_string()),
        Ok(meta) if !meta.is_file() => Before::NotKept("not a regular file".into()),
        Ok(meta) if meta.len() > MAX_KEPT_BYTES => Before::NotKept(format!(
            "it was larger than {} MiB when it was written",
            MAX_KEPT_BYTES / (1024 * 1024)
        )),
        Ok(_) => match std::fs::read(path) {
            Ok(bytes) => Before::Content(bytes),
            Err(e) => Before::NotKept(e.to_string()),
        },
    }
}

/// Lines the rewind adds and removes, going from `now` back to `then`.
fn line_changes(now: &[u8], then: &[u8]) -> (usize, usize) {
    let (now, then) = (String::from_utf8_lossy(now), String::from_utf8_lossy(then));
    let diff = similar::TextDiff::from_lines(now.as_ref(), then.as_ref());
    diff.iter_all_changes()
        .fold((0, 0), |(added, removed), change| match change.tag() {
            similar::ChangeTag::Insert => (added + 1, removed),
            similar::ChangeTag::Delete => (added, removed + 1),
            similar::ChangeTag::Equal => (added, removed),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewind_restores_what_was_there_before_the_message() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let (kept, made) = (dir.path().join("kept.txt"), dir.path().join("made.txt"));
        std::fs::write(&kept, "one\ntwo\n")?;
        let checkpoints = FileCheckpoints::default();
        checkpoints.begin_turn("u1");
        checkpoints.before_write(&kept);
        std::fs::write(&kept, "one\nTWO\nthree\n")?;
        checkpoints.begin_turn("u2");
        checkpoints.before_write(&kept);
        std::fs::write(&kept, "changed again\n")?;
        checkpoints.before_write(&made);
        std::fs::write(&made, "new\n")?;

        let dry = checkpoints.rewind("u2", true);
        assert!(dry.can_rewind);
        assert_eq!(dry.files_changed.len(), 2);
        assert_eq!(std::fs::read_to_string(&kept)?, "changed again\n");

        let back = checkpoints.rewind("u1", false);
        assert!(back.can_rewind, "{back:?}");
        assert_eq!(std::fs::read_to_string(&kept)?, "one\ntwo\n");
        assert!(!made.exists());
        assert_eq!((back.insertions, back.deletions), (2, 2));
        assert!(!checkpoints.rewind("nosuch", false).can_rewind);
        Ok(())
    }
}
