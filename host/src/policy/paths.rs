//! Paths as the policy compares them: made absolute and normal without
//! touching the filesystem, and resolved through every symlink.

use std::path::{Component, Path, PathBuf};

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
