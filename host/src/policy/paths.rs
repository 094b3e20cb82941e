//! Paths as the policy compares them: made absolute and normal without
//! touching the filesystem, and resolved through every symlink.

use crate::sandbox::FileId;
use std::path::{Component, Path, PathBuf};

/// A tree with more entries than the scan may visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the tree has more than {0} entries")]
pub struct TreeTooLarge(pub usize);

/// `path` made absolute-and-normal without touching the filesystem, or
/// `None` if it is relative.
pub fn lexical_absolute(path: &str) -> Option<PathBuf> {
    let path = Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    let mut normal = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::Normal(name) => normal.push(name),
            Component::ParentDir => {
                normal.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(normal)
}

/// The real location of `path`: every symlink resolved. For a path that does
/// not exist yet, the deepest existing ancestor is resolved and the rest
/// appended, so a link in a parent directory cannot hide where a new file
/// would go.
pub fn resolve_symlinks(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let mut rest = Vec::new();
    let mut ancestor = path;
    while let Some(parent) = ancestor.parent() {
        if let Some(name) = ancestor.file_name() {
            rest.push(name.to_owned());
        }
        if let Ok(real) = std::fs::canonicalize(parent) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        ancestor = parent;
    }
    path.to_path_buf()
}

/// What a bounded walk does after visiting an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// Go on; into the entry when it is a directory.
    Descend,
    /// Go on, but not into this entry.
    Skip,
    /// End the walk.
    Stop,
}

/// One entry met by [`walk_tree`]: its path and kind from the directory
/// listing; its identity only when asked (one `stat`, files only).
pub struct TreeEntry<'a> {
    pub path: &'a Path,
    entry: &'a std::fs::DirEntry,
    kind: std::fs::FileType,
}

impl TreeEntry<'_> {
    pub fn is_dir(&self) -> bool {
        self.kind.is_dir()
    }

    pub fn is_link(&self) -> bool {
        self.kind.is_symlink()
    }

    /// A regular file's identity and how many names it has.
    pub fn file(&self) -> Option<(FileId, u64)> {
        use std::os::unix::fs::MetadataExt;
        if !self.kind.is_file() {
            return None;
        }
        let meta = self.entry.metadata().ok()?;
        Some((
            FileId {
                dev: meta.dev(),
                ino: meta.ino(),
            },
            meta.nlink(),
        ))
    }
}

/// Walks the tree `root`, calling `visit` for each entry (links not
/// followed, carapace's staging roots not entered), visiting at most
/// `limit` entries: a larger tree cannot be vouched for.
pub fn walk_tree(
    root: &Path,
    limit: usize,
    mut visit: impl FnMut(&TreeEntry<'_>) -> Visit,
) -> Result<(), TreeTooLarge> {
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(current) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > limit {
                return Err(TreeTooLarge(limit));
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let visited = visit(&TreeEntry {
                path: &path,
                entry: &entry,
                kind,
            });
            match visited {
                Visit::Stop => return Ok(()),
                Visit::Descend if kind.is_dir() && !is_staging(&entry.file_name()) => {
                    stack.push(path)
                }
                Visit::Descend | Visit::Skip => {}
            }
        }
    }
    Ok(())
}

/// The regular files inside `dir` with more than one name (hard links),
/// visiting at most `limit` entries; links are not followed.
pub fn multiply_linked(dir: &Path, limit: usize) -> Result<Vec<FileId>, TreeTooLarge> {
    let mut found = Vec::new();
    walk_tree(dir, limit, |entry| {
        if let Some((id, links)) = entry.file()
            && links > 1
        {
            found.push(id);
        }
        Visit::Descend
    })?;
    Ok(found)
}

/// Whether a directory is one of carapace's staging roots: the hard links
/// in it are carapace's own, made for one call, and never another name a
/// rule should judge.
pub fn is_staging(name: &std::ffi::OsStr) -> bool {
    name.to_string_lossy()
        .starts_with(crate::sandbox::STAGING_PREFIX)
}
