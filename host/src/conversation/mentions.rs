//! `@path` in a prompt: the file named is read for the model through the
//! session's Read tool — its rules, hooks and sandbox, a question when one
//! is due — and goes with the message; while `@` is typed, the project's
//! files that match are offered (those ripgrep would search: ignore
//! files honoured), Tab taking the first.

use crate::agent::ToolCall;
use crate::tools::ToolPipeline;
use std::path::Path;

/// Files listed for completion at most (a huge tree is cut, not walked
/// whole while a key waits).
const LISTED: usize = 10_000;

/// The project's files, relative to `cwd`.
pub fn project_files(cwd: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in ignore::WalkBuilder::new(cwd).hidden(true).build().flatten() {
        if files.len() >= LISTED {
            break;
        }
        if entry.file_type().is_some_and(|t| t.is_file())
            && let Ok(relative) = entry.path().strip_prefix(cwd)
        {
            files.push(relative.display().to_string());
        }
    }
    files.sort();
    files
}

/// The `@word` the text ends with, when it does.
pub fn typed_mention(text: &str) -> Option<&str> {
    let word = text.rsplit(char::is_whitespace).next()?;
    word.strip_prefix('@')
}

/// Files matching a partial mention: those whose path starts with it,
/// then those whose name contains it.
pub fn matching<'a>(files: &'a [String], typed: &str) -> Vec<&'a String> {
    let mut found: Vec<&String> = files.iter().filter(|f| f.starts_with(typed)).collect();
    found.extend(files.iter().filter(|f| {
        !f.starts_with(typed)
            && Path::new(f.as_str())
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(typed))
    }));
    found
}

/// The files a prompt mentions that exist, relative to `cwd`.
pub fn mentioned(text: &str, cwd: &Path) -> Vec<String> {
    let mut found: Vec<String> = text
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|path| path.trim_end_matches([',', '.', ';', ':', ')', '?', '!']))
        .filter(|path| !path.is_empty() && cwd.join(path).is_file())
        .map(str::to_string)
        .collect();
    found.dedup();
    found
}

/// Reads each mentioned file through the pipeline; what the model is
/// told of each (its text, or why it could not be read).
pub async fn read_mentions(pipeline: &ToolPipeline, cwd: &Path, files: &[String]) -> String {
    let mut told = Vec::new();
    for file in files {
        let path = cwd.join(file);
        let call = ToolCall {
            id: format!("mention_{}", uuid::Uuid::new_v4().simple()),
            name: "Read".into(),
            input: serde_json::json!({"file_path": path.display().to_string()}),
            invalid_input: None,
        };
        let result = pipeline.run_nested(call).await;
        let text = result.content.text();
        told.push(match result.is_error {
            false => format!(
                "<system-reminder>\nThe user mentioned @{file}; carapace read {} for you:\n{text}\n</system-reminder>",
                path.display()
            ),
            true => format!(
                "<system-reminder>\nThe user mentioned @{file}, which could not be read: {text}\n</system-reminder>"
            ),
        });
    }
    told.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_found_and_completed() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join("src"))?;
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}")?;
        std::fs::write(dir.path().join("README.md"), "x")?;
        std::fs::write(dir.path().join(".gitignore"), "target/\n")?;
        std::fs::create_dir_all(dir.path().join("target"))?;
        std::fs::write(dir.path().join("target/out.rs"), "x")?;
        std::fs::create_dir_all(dir.path().join(".git"))?;
        let files = project_files(dir.path());
        assert!(files.contains(&"src/main.rs".to_string()), "{files:?}");
        assert!(
            !files.iter().any(|f| f.starts_with("target/")),
            "ignored files listed: {files:?}"
        );
        assert_eq!(typed_mention("look at @src/ma"), Some("src/ma"));
        assert_eq!(typed_mention("look at src"), None);
        assert_eq!(matching(&files, "src/ma"), [&"src/main.rs".to_string()]);
        assert_eq!(matching(&files, "main"), [&"src/main.rs".to_string()]);
        assert_eq!(
            mentioned("see @src/main.rs, and @missing.rs", dir.path()),
            ["src/main.rs"]
        );
        Ok(())
    }
}
