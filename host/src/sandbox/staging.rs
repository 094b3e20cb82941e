//! Staging directories for single-file grants, reused across calls.
//!
//! Creating and removing a directory costs ~100 µs on ext4; linking a file
//! into an empty directory and unlinking it again costs ~2 µs. So a call's
//! staging directory comes from a pool of empty directories under the
//! process's private root, and goes back once it is empty again. A directory
//! that cannot be emptied is removed whole and never reused.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How every staging root's name begins. Its hard links are carapace's own
/// (a granted file, linked for one call): searches for a file's other names
/// skip these directories.
pub const STAGING_PREFIX: &str = "carapace-staging-";

/// Empty directories kept for reuse; beyond this they are removed.
const MAX_FREE: usize = 256;

pub(crate) struct StagingPool {
    /// Private (0700, unique name); removed with everything in it when the
    /// process ends.
    root: tempfile::TempDir,
    next: AtomicU64,
    free: Mutex<Vec<PathBuf>>,
}

impl StagingPool {
    pub(crate) fn new(parent: &Path) -> std::io::Result<Arc<Self>> {
        let root = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(parent)?;
        Ok(Arc::new(Self {
            root,
            next: AtomicU64::new(0),
            free: Mutex::new(Vec::new()),
        }))
    }

    /// An empty directory for one call.
    /// The process's private root every staging directory is made in.
    pub(crate) fn root(&self) -> &Path {
        self.root.path()
    }

    pub(crate) fn take(self: &Arc<Self>) -> std::io::Result<StagingDir> {
        let reused = self.free.lock().ok().and_then(|mut free| free.pop());
        let path = match reused {
            Some(path) => path,
            None => {
                let n = self.next.fetch_add(1, Ordering::Relaxed);
                let path = self.root.path().join(format!("d{n}"));
                std::fs::create_dir(&path)?;
                path
            }
        };
        Ok(StagingDir {
            path,
            entries: Vec::new(),
            pool: self.clone(),
        })
    }

    fn give_back(&self, path: PathBuf) {
        if let Ok(mut free) = self.free.lock()
            && free.len() < MAX_FREE
        {
            free.push(path);
            return;
        }
        let _ = std::fs::remove_dir(&path);
    }
}

/// One call's staging directory; emptied and returned to the pool on drop.
pub(crate) struct StagingDir {
    path: PathBuf,
    entries: Vec<PathBuf>,
    pool: Arc<StagingPool>,
}

impl StagingDir {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Remembers an entry to remove when the call ends.
    pub(crate) fn record(&mut self, entry: PathBuf) {
        self.entries.push(entry);
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        for entry in &self.entries {
            // Never follows a link: removes the staged name only, not the
            // granted file behind a hard link.
            let removed = match std::fs::symlink_metadata(entry) {
                Ok(meta) if meta.is_dir() => std::fs::remove_dir(entry),
                Ok(_) => std::fs::remove_file(entry),
                Err(e) => Err(e),
            };
            if let Err(e) = removed {
                tracing::debug!(entry = %entry.display(), error = %e, "could not unstage");
            }
        }
        let empty = std::fs::read_dir(&self.path).is_ok_and(|mut d| d.next().is_none());
        if empty {
            self.pool.give_back(std::mem::take(&mut self.path));
        } else if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(dir = %self.path.display(), error = %e, "could not remove a staging directory");
        }
    }
}
