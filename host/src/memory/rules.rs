//! `.claude/rules/*.md`: instructions split by topic. A rule whose front
//! matter names `paths:` applies only to files matching one of them, and
//! is attached when such a file is first read; the others load with the
//! rest of memory.

use std::path::{Path, PathBuf};

/// The Markdown files under `dir`, at any depth, in path order.
pub fn rule_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(_) if path.extension().is_some_and(|e| e == "md") => found.push(path),
                _ => {}
            }
        }
    }
    found.sort();
    found
}

/// The front matter of `text` (between `---` lines at its start), and the
/// body after it.
pub fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (None, text);
    };
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (Some(&rest[..at]), &rest[at + line.len()..]);
        }
        at += line.len();
    }
    (None, text)
}

/// The body of a rule, without its front matter.
pub fn body(text: &str) -> &str {
    split_front_matter(text).1
}

/// The patterns a rule is scoped to (`paths:` as a list or a comma-separated
/// string); `None` for a rule that applies everywhere.
pub fn scope(text: &str) -> Option<Vec<String>> {
    let front = split_front_matter(text).0?;
    let value: serde_norway::Value = serde_norway::from_str(front).ok()?;
    let paths = value.get("paths")?;
    let patterns: Vec<String> = match paths {
        serde_norway::Value::String(s) => s
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect(),
        serde_norway::Value::Sequence(items) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => return None,
    };
    (!patterns.is_empty()).then_some(patterns)
}
