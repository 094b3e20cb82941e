//! Glob: the files beneath a root whose path matches a pattern, as
//! Claude Code's `rg --files --glob PATTERN --no-ignore --hidden` lists
//! them (ignore files not read, hidden files listed, symlinks not
//! followed), version-control folders left out.

use super::confine::{Root, confined};
use super::{Cancel, SearchError, modified_ns, overrides, threads};
use ignore::WalkState;
use std::path::PathBuf;
use std::sync::Mutex;

#[derive(Debug, Clone)]
pub struct GlobRequest {
    /// The root of a granted tree.
    pub root: PathBuf,
    /// A ripgrep glob, matched against paths relative to the root (a glob
    /// without `/` matches a name at any depth).
    pub pattern: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobFile {
    pub path: PathBuf,
    pub modified_ns: u64,
}

/// The matching files, in no particular order.
pub fn glob(request: &GlobRequest, cancel: &Cancel) -> Result<Vec<GlobFile>, SearchError> {
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
    let found = Mutex::new(Vec::new());
    let enforced = confined(&root, Vec::new(), |enforced| {
        walk.run(|| {
            Box::new(|entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if entry.file_type().is_some_and(|t| t.is_file())
                    && let Ok(meta) = entry.metadata()
                    && let Ok(mut found) = found.lock()
                {
                    found.push(GlobFile {
                        path: entry.into_path(),
                        modified_ns: modified_ns(&meta),
                    });
                }
                WalkState::Continue
            })
        });
        enforced
    })?;
    if cancel.is_cancelled() {
        return Err(SearchError::Cancelled);
    }
    let mut found = found.into_inner().unwrap_or_default();
    // Without Landlock, a directory swapped for a link mid-walk could have
    // been listed through it: every name is checked beneath the root.
    if !enforced {
        found.retain(|f| root.holds(&f.path));
    }
    Ok(found)
}
