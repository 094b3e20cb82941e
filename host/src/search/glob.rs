//! Glob: the files beneath a root whose path matches a pattern, as
//! Claude Code's `rg --files --glob PATTERN --no-ignore --hidden` lists
//! them (ignore files not read, hidden files listed, symlinks not
//! followed), version-control folders left out.

use super::confine::{Root, confined};
use super::{Cancel, SearchError, modified_ns, overrides, threads};
use ignore::WalkState;
use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::sync::Mutex;

#[derive(Debug, Clone)]
pub struct GlobRequest {
    /// The root of a granted tree.
    pub root: PathBuf,
    /// A ripgrep glob, matched against paths relative to the root (a glob
    /// without `/` matches a name at any depth).
    pub pattern: String,
    /// Keep only this many files, the oldest: a listing of a large tree
    /// then costs the same memory as a small one.
    pub limit: Option<usize>,
}

/// A file as the listing orders it: oldest first, then by name (a
/// string's order: its bytes').
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GlobFile {
    pub modified_ns: u64,
    /// Absolute; a name that is not UTF-8 is counted, not listed.
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GlobListing {
    /// Oldest first by modification time, then by name; at most the
    /// request's limit.
    pub files: Vec<GlobFile>,
    /// Every matching file, listed or not.
    pub total: u64,
    /// Matching files whose names are not UTF-8 (a string cannot carry
    /// them); counted in `total`, never in `files`.
    pub unnamed: u64,
}

/// The oldest files found so far, never more than `limit` (a max-heap: the
/// newest kept file is the one the next older file displaces).
struct Kept {
    limit: usize,
    heap: BinaryHeap<GlobFile>,
    total: u64,
    unnamed: u64,
}

impl Kept {
    fn offer(&mut self, path: PathBuf, modified_ns: u64) {
        self.total += 1;
        let Ok(path) = path.into_os_string().into_string() else {
            self.unnamed += 1;
            return;
        };
        let file = GlobFile { modified_ns, path };
        if self.heap.len() < self.limit {
            self.heap.push(file);
        } else if self.heap.peek().is_some_and(|newest| file < *newest) {
            self.heap.pop();
            self.heap.push(file);
        }
    }

    fn into_listing(self) -> GlobListing {
        GlobListing {
            files: self.heap.into_sorted_vec(),
            total: self.total,
            unnamed: self.unnamed,
        }
    }
}

/// The matching files, oldest first, as many as the request keeps.
pub fn glob(request: &GlobRequest, cancel: &Cancel) -> Result<GlobListing, SearchError> {
    let root = Root::open(&request.root)?;
    if !root.is_dir {
        return Err(SearchError::Root {
            path: root.path.clone(),
            reason: "it is not a directory".into(),
        });
    }
    let overrides = overrides(&root.path, &[&request.pattern])?;
    let walk = ignore::WalkBuilder::new(&root.path)
        .standard_filters(false)
        .follow_links(false)
        .overrides(overrides)
        .threads(threads())
        .build_parallel();
    let kept = Mutex::new(Kept {
        limit: request.limit.unwrap_or(usize::MAX),
        heap: BinaryHeap::new(),
        total: 0,
        unnamed: 0,
    });
    confined(&root, Vec::new(), |enforced| {
        walk.run(|| {
            Box::new(|entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                // Without Landlock, a directory swapped for a link mid-walk
                // could have been walked through: every name is checked
                // beneath the root before it counts.
                if entry.file_type().is_some_and(|t| t.is_file())
                    && (enforced || root.holds(entry.path()))
                    && let Ok(meta) = entry.metadata()
                    && let Ok(mut kept) = kept.lock()
                {
                    kept.offer(entry.into_path(), modified_ns(&meta));
                }
                WalkState::Continue
            })
        });
    })?;
    if cancel.is_cancelled() {
        return Err(SearchError::Cancelled);
    }
    Ok(kept
        .into_inner()
        .map(Kept::into_listing)
        .unwrap_or_default())
}
