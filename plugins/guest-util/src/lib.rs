//! Helpers the first-party tools share: path normalisation, file stamps,
//! line numbering and output caps. Pure Rust: each tool keeps its own WIT
//! bindings.

use std::path::{Component, Path, PathBuf};

/// `raw` as an absolute path with `.` and `..` resolved lexically, so the
/// path a tool asks for and the path it opens are the same string; a
/// relative path is an error for the model to fix.
pub fn absolute_path(field: &str, raw: &str) -> Result<PathBuf, String> {
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(format!(
            "{field} must be an absolute path, but `{raw}` is relative"
        ));
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
    Ok(normal)
}

/// An optional path argument, else `cwd` (the host's working directory).
pub fn path_or_cwd(field: &str, raw: Option<&str>, cwd: Option<String>) -> Result<PathBuf, String> {
    match raw {
        Some(raw) if !raw.trim().is_empty() => absolute_path(field, raw),
        _ => cwd.map(PathBuf::from).ok_or_else(|| {
            format!("no {field} given, and the host has no working directory to use instead")
        }),
    }
}

/// (modification time in ns since the epoch, size) of a file's metadata.
pub fn stamp(meta: &std::fs::Metadata) -> (u64, u64) {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    (modified, meta.len())
}

/// `text` cut to at most `max` characters, with a note saying how much was
/// left out.
pub fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!("{}\n\n[… {rest} more characters not shown]", &text[..cut])
        }
    }
}

/// The file's text numbered `N<TAB>line` from `first` (1-based).
pub fn numbered(text: &str, first: usize) -> String {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| format!("{}\t{}", first + i, line.strip_suffix('\r').unwrap_or(line)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether the first bytes look binary (a NUL byte).
pub fn looks_binary(head: &[u8]) -> bool {
    head.iter().take(8192).any(|b| *b == 0)
}
