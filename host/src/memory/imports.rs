//! `@path` imports in a memory file: a path after `@` at the start of a
//! line or after whitespace, relative to the importing file (or `~/…`, or
//! absolute), never inside a code span or a fenced block. A missing file is
//! skipped; imports nest up to [`MAX_DEPTH`] hops.

use std::path::{Path, PathBuf};

/// How many hops of imports are followed from a memory file.
pub const MAX_DEPTH: usize = 5;

/// The files `text` (the contents of `file`) imports, in order.
pub fn imported_paths(file: &Path, text: &str) -> Vec<PathBuf> {
    let base = file.parent().unwrap_or(Path::new("/"));
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for word in outside_code_spans(line) {
            if let Some(path) = word.strip_prefix('@').filter(|p| !p.is_empty()) {
                found.push(resolve(base, path));
            }
        }
    }
    found
}

/// The whitespace-separated words of `line` that are not inside a
/// backquoted span.
fn outside_code_spans(line: &str) -> Vec<&str> {
    let mut words = Vec::new();
    for (i, piece) in line.split('`').enumerate() {
        // Even pieces are outside spans (an unclosed span's tail too).
        if i % 2 == 0 {
            words.extend(piece.split_whitespace());
        }
    }
    words
}

fn resolve(base: &Path, path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_words_after_an_at_outside_code() {
        let text = "See @docs/a.md and @b.md.\nmail me@example.com\n`@not/span.md` then @c.md\n```\n@fenced.md\n```\n@/abs/d.md\n@";
        let got = imported_paths(Path::new("/w/CLAUDE.md"), text);
        let got: Vec<String> = got.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(got, ["/w/docs/a.md", "/w/b.md.", "/w/c.md", "/abs/d.md"]);
    }
}
