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
//! What is kept is also recorded, before the write it precedes, through a
//! `CheckpointLog` (the session's transcript): a session resumed anywhere
//! the transcript is — another process, another machine sharing the
//! transcript store — rewinds past where it was resumed.
//!
//! Imports: `files` — folders below it; nothing that imports it.

use crate::files::FileIdentity;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Largest file kept in a checkpoint.
const MAX_KEPT_BYTES: u64 = 16 * 1024 * 1024;

/// A file as it was before a turn wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Before {
    Missing,
    Content(#[serde(with = "base64_bytes")] Vec<u8>),
    /// Too large (or unreadable) to keep: why.
    NotKept(String),
}

/// One thing a checkpoint log records: a turn began, or a file was kept
/// in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    pub turn: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<(PathBuf, Before)>,
    /// The file a call wrote at a path, by identity: a rewind removes only
    /// that file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<(PathBuf, FileIdentity)>,
}

/// Where checkpoints are recorded durably. `record` returns once the
/// record is kept (or its failure said): the write it precedes follows.
pub trait CheckpointLog: Send + Sync {
    fn record(&self, record: &CheckpointRecord);
}

#[derive(Default)]
struct Turns {
    current: Option<String>,
    /// Each user message's turn, in order, with the files first written in
    /// it as they were before.
    turns: Vec<(String, BTreeMap<PathBuf, Before>)>,
    /// Opened after the tools that keep files (the transcript is opened
    /// last, so a session that fails to assemble leaves none); no turn
    /// runs before it is given.
    log: Option<Arc<dyn CheckpointLog>>,
    /// The file carapace last wrote at each path, by identity.
    written: BTreeMap<PathBuf, FileIdentity>,
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
    /// Checkpoints carried over from what a resumed session recorded, in
    /// the order recorded.
    pub fn restored(records: impl IntoIterator<Item = CheckpointRecord>) -> Self {
        let mut turns = Turns::default();
        for record in records {
            turns.begin(&record.turn);
            if let Some((path, identity)) = record.written {
                turns.written.insert(path, identity);
            }
            if let (Some((path, before)), Some((_, files))) = (record.file, turns.turns.last_mut())
            {
                files.entry(path).or_insert(before);
            }
        }
        turns.current = None;
        Self {
            turns: Mutex::new(turns),
        }
    }

    /// From now on, what is kept is also recorded in `log`.
    pub fn record_to(&self, log: Arc<dyn CheckpointLog>) {
        if let Ok(mut turns) = self.turns.lock() {
            turns.log = Some(log);
        }
    }

    /// The turn of user message `id` starts: writes from now on are its.
    pub fn begin_turn(&self, id: &str) {
        if let Ok(mut turns) = self.turns.lock()
            && turns.begin(id)
            && let Some(log) = &turns.log
        {
            log.record(&CheckpointRecord {
                turn: id.to_string(),
                file: None,
                written: None,
            });
        }
    }

    /// A call is about to write `path`: keep it as it is, unless this turn
    /// already did.
    pub fn before_write(&self, path: &Path) {
        let Ok(mut turns) = self.turns.lock() else {
            return;
        };
        let Turns {
            current: Some(current),
            turns: all,
            log,
            ..
        } = &mut *turns
        else {
            return;
        };
        let Some((_, files)) = all.iter_mut().find(|(t, _)| t == current) else {
            return;
        };
        if files.contains_key(path) {
            return;
        }
        let before = read_before(path);
        if let Some(log) = log {
            log.record(&CheckpointRecord {
                turn: current.clone(),
                file: Some((path.to_path_buf(), before.clone())),
                written: None,
            });
        }
        files.insert(path.to_path_buf(), before);
    }

    /// A call has written `path`: remember which file it left there, so a
    /// rewind removes that file and never another put under its name.
    pub fn after_write(&self, path: &Path) {
        let Ok(mut turns) = self.turns.lock() else {
            return;
        };
        let (Some(identity), Some(current)) = (FileIdentity::of(path), turns.current.clone())
        else {
            return;
        };
        if turns.written.get(path) == Some(&identity) {
            return;
        }
        turns.written.insert(path.to_path_buf(), identity);
        if let Some(log) = &turns.log {
            log.record(&CheckpointRecord {
                turn: current,
                file: None,
                written: Some((path.to_path_buf(), identity)),
            });
        }
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
            // Through no link, whatever the model or a tampered transcript
            // planted on the way: put back beneath `/` with no link
            // followed, and only the file a call wrote there removed.
            let root = Path::new("/");
            let put_back = match (then, turns.written.get(path)) {
                (Some(bytes), _) => crate::files::replace_beneath(root, path, bytes, 0o644),
                (None, Some(identity)) => crate::files::remove_file_beneath(root, path, *identity),
                (None, None) => Err(std::io::Error::other(
                    "carapace has no record of writing the file there; not removed",
                )),
            }
            .map_err(|e| e.to_string());
            if let Err(e) = put_back {
                outcome.can_rewind = false;
                outcome.error = Some(format!("{}: {e}", path.display()));
                return outcome;
            }
        }
        outcome
    }
}

impl Turns {
    /// Makes `id` the current turn; whether it is a new one.
    fn begin(&mut self, id: &str) -> bool {
        self.current = Some(id.to_string());
        let new = !self.turns.iter().any(|(t, _)| t == id);
        if new {
            self.turns.push((id.to_string(), BTreeMap::new()));
        }
        new
    }
}

/// A file's bytes as base64 in a record (a transcript line).
mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
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
        checkpoints.after_write(&made);

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

    /// A log that keeps what it is told.
    #[derive(Default)]
    struct Kept(Mutex<Vec<CheckpointRecord>>);

    impl CheckpointLog for Kept {
        fn record(&self, record: &CheckpointRecord) {
            if let Ok(mut records) = self.0.lock() {
                records.push(record.clone());
            }
        }
    }

    #[test]
    fn what_one_process_records_another_rewinds() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let (kept, made) = (dir.path().join("kept.txt"), dir.path().join("made.txt"));
        std::fs::write(&kept, "one\n")?;
        let log = Arc::new(Kept::default());
        let first = FileCheckpoints::default();
        first.record_to(log.clone());
        first.begin_turn("u1");
        first.before_write(&kept);
        std::fs::write(&kept, "two\n")?;
        first.begin_turn("u2");
        first.begin_turn("u3");
        first.before_write(&made);
        first.before_write(&made);
        std::fs::write(&made, "new\n")?;
        first.after_write(&made);
        let records = log.0.lock().map_err(|_| "poisoned")?.clone();
        // Turns once each, a file once per turn, in order.
        let shape: Vec<(&str, bool)> = records
            .iter()
            .map(|r| (r.turn.as_str(), r.file.is_some()))
            .collect();
        assert_eq!(
            shape,
            [
                ("u1", false),
                ("u1", true),
                ("u2", false),
                ("u3", false),
                ("u3", true),
                ("u3", false)
            ]
        );
        assert!(records[5].written.is_some(), "the file written is recorded");
        // Through JSON (a transcript line) and into another process.
        let text = serde_json::to_string(&records)?;
        let second =
            FileCheckpoints::restored(serde_json::from_str::<Vec<CheckpointRecord>>(&text)?);
        assert!(
            second.rewind("u2", true).can_rewind,
            "a turn that wrote nothing"
        );
        let back = second.rewind("u1", false);
        assert!(back.can_rewind, "{back:?}");
        assert_eq!(std::fs::read_to_string(&kept)?, "one\n");
        assert!(!made.exists());
        Ok(())
    }

    #[test]
    fn a_rewind_removes_only_the_file_the_session_wrote() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let made = dir.path().join("made.txt");
        let checkpoints = FileCheckpoints::default();
        checkpoints.begin_turn("u1");
        checkpoints.before_write(&made);
        std::fs::write(&made, "new\n")?;
        checkpoints.after_write(&made);
        // The name now holds another file (a command moved it there).
        std::fs::write(dir.path().join("theirs"), "theirs\n")?;
        std::fs::rename(dir.path().join("theirs"), &made)?;
        let back = checkpoints.rewind("u1", false);
        assert!(!back.can_rewind, "{back:?}");
        assert!(
            back.error
                .as_deref()
                .is_some_and(|e| e.contains("not the file carapace wrote")),
            "{back:?}"
        );
        assert_eq!(std::fs::read_to_string(&made)?, "theirs\n");
        // A path it never saw written is not removed either.
        let other = dir.path().join("other.txt");
        let unseen = FileCheckpoints::default();
        unseen.begin_turn("u1");
        unseen.before_write(&other);
        std::fs::write(&other, "written, never seen written\n")?;
        let back = unseen.rewind("u1", false);
        assert!(!back.can_rewind && other.exists(), "{back:?}");
        // The control: the file it wrote is removed.
        checkpoints.after_write(&made);
        assert!(checkpoints.rewind("u1", false).can_rewind && !made.exists());
        Ok(())
    }
}
