//! Searching a granted tree at ripgrep's speed: the walk and the matching
//! that Grep and Glob ask of the host (`carapace:tool/search`), done with
//! the crates ripgrep is built from (`ignore`, `grep-searcher`,
//! `grep-regex`) on every core, instead of file by file inside the guest.
//!
//! Confinement is the kernel's, not the walker's good manners: each search
//! runs on threads of its own that Landlock restricts, before anything is
//! opened, to reading beneath the granted root (the descriptor the host
//! opened without following links, so a root swapped for a link later
//! leads nowhere); a directory swapped for a symlink mid-walk, a symlinked
//! `.gitignore`, `..` anywhere, all meet the same wall. Files are opened
//! again beneath the root with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)`, which holds on its own where the kernel has no
//! Landlock. Symlinks are never followed (as ripgrep without `-L`).
//!
//! This folder imports nothing of carapace's: the sandbox's tool binding
//! checks the call's grant and calls in.

mod confine;
mod glob;
mod grep;

pub use glob::{GlobFile, GlobListing, GlobRequest, glob};
pub use grep::{GrepFile, GrepLine, GrepMode, GrepOutcome, GrepRequest, Withheld, grep};

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Lines longer than this many bytes are shown as a note instead, as
/// Claude Code's `rg --max-columns 500` does.
pub const MAX_COLUMNS: usize = 500;

/// Directories of version control systems, never searched (Claude Code
/// passes the same `--glob !…` to ripgrep).
pub const VCS_DIRS: &[&str] = &[".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SearchError {
    #[error("invalid regular expression: {0}")]
    Pattern(String),
    #[error("invalid glob `{glob}`: {reason}")]
    Glob { glob: String, reason: String },
    #[error("unknown file type `{0}`")]
    FileType(String),
    #[error("{path} does not exist")]
    Missing { path: PathBuf },
    #[error("cannot search {path}: {reason}")]
    Root { path: PathBuf, reason: String },
    #[error("the search could not be confined to {path}: {reason}")]
    Confinement { path: PathBuf, reason: String },
    #[error("the search was stopped")]
    Cancelled,
    #[error("{what}; nothing was searched")]
    TooLarge { what: String },
}

/// The longest glob or regular expression searched with: longer ones
/// (which the model, or a repository's instructions, can make as long as
/// a request) are refused before anything is built from them.
pub const MAX_PATTERN_BYTES: usize = 16 * 1024;
/// The most globs one search takes.
pub const MAX_GLOBS: usize = 256;
/// The memory a compiled regular expression (and its lazy DFA) may use.
pub const REGEX_SIZE_LIMIT: usize = 32 << 20;

/// Refuses a pattern past [`MAX_PATTERN_BYTES`].
fn bounded(what: &'static str, pattern: &str) -> Result<(), SearchError> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(SearchError::TooLarge {
            what: format!(
                "{what} is {} bytes, past the {MAX_PATTERN_BYTES} searched with",
                pattern.len()
            ),
        });
    }
    Ok(())
}

/// Stops a running search at its next file (the call was interrupted, or
/// its deadline passed).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// ripgrep's `--glob`s below `root`, with the version-control folders
/// excluded (Claude Code's `--glob !.git` and the rest).
fn overrides(
    root: &std::path::Path,
    globs: &[&str],
) -> Result<ignore::overrides::Override, SearchError> {
    let bad = |glob: &str, e: ignore::Error| SearchError::Glob {
        glob: glob.to_string(),
        reason: e.to_string(),
    };
    if globs.len() > MAX_GLOBS {
        return Err(SearchError::TooLarge {
            what: format!(
                "{} globs are past the {MAX_GLOBS} searched with",
                globs.len()
            ),
        });
    }
    for glob in globs {
        bounded("a glob", glob)?;
    }
    let mut builder = ignore::overrides::OverrideBuilder::new(root);
    for glob in globs {
        builder.add(glob).map_err(|e| bad(glob, e))?;
    }
    for dir in VCS_DIRS {
        let glob = format!("!{dir}");
        builder.add(&glob).map_err(|e| bad(&glob, e))?;
    }
    builder.build().map_err(|e| bad(&globs.join(" "), e))
}

/// The threads a walk uses (read before the search is confined: the
/// count may come from files the confined threads cannot read).
fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(12))
}

/// Nanoseconds since the Unix epoch a file was last modified (0 when the
/// system cannot say).
fn modified_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests;
