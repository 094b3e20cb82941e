//! `@path` in a prompt: the file named is read for the model through the
//! session's Read tool — its rules, hooks and sandbox, a question when one
//! is due — and goes with the message; `@server:uri` the same for an MCP
//! server's resource, through ReadMcpResourceTool. While `@` is typed, the
//! project's files that match are offered (those ripgrep would search:
//! ignore files honoured), Tab taking the first.

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

/// What a prompt's `@` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mention {
    /// A file that exists, relative to the working directory.
    File(String),
    /// A resource of a connected MCP server (`@server:uri`).
    Resource { server: String, uri: String },
}

impl Mention {
    /// As the user wrote it, without the `@`.
    fn written(&self) -> String {
        match self {
            Mention::File(file) => file.clone(),
            Mention::Resource { server, uri } => format!("{server}:{uri}"),
        }
    }

    /// The call that reads it, and what it is called in the reminder.
    fn read_call(&self, cwd: &Path) -> (ToolCall, String) {
        let (name, input, what) = match self {
            Mention::File(file) => {
                let path = cwd.join(file).display().to_string();
                ("Read", serde_json::json!({"file_path": path}), path)
            }
            Mention::Resource { server, uri } => (
                crate::tools::mcp_resources::READ_RESOURCE_TOOL,
                serde_json::json!({"server": server, "uri": uri}),
                format!("{uri} from the MCP server `{server}`"),
            ),
        };
        let call = ToolCall {
            id: format!("mention_{}", uuid::Uuid::new_v4().simple()),
            name: name.into(),
            input,
            invalid_input: None,
        };
        (call, what)
    }
}

/// What a prompt mentions: files that exist (relative to `cwd`), and
/// resources of the servers `pipeline` holds (`@server:uri`, the server
/// connected and turned on).
pub fn mentioned(text: &str, cwd: &Path, pipeline: &ToolPipeline) -> Vec<Mention> {
    let servers: Vec<String> = pipeline
        .mcp_servers()
        .enabled()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    let mut found: Vec<Mention> = text
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|word| word.trim_end_matches([',', '.', ';', ':', ')', '?', '!']))
        .filter_map(|word| {
            if let Some((server, uri)) = word.split_once(':')
                && servers.iter().any(|s| s == server)
                && !uri.is_empty()
            {
                return Some(Mention::Resource {
                    server: server.to_string(),
                    uri: uri.to_string(),
                });
            }
            (!word.is_empty() && cwd.join(word).is_file()).then(|| Mention::File(word.to_string()))
        })
        .collect();
    found.dedup();
    found
}

/// A resource read's text: each entry's text (the read's JSON otherwise).
fn resource_text(read: &str) -> String {
    let parsed: Option<Vec<String>> = serde_json::from_str::<serde_json::Value>(read)
        .ok()
        .and_then(|v| {
            v["contents"].as_array().map(|entries| {
                entries
                    .iter()
                    .filter_map(|e| e["text"].as_str().map(str::to_string))
                    .collect()
            })
        });
    parsed.map_or_else(|| read.to_string(), |texts| texts.join("\n"))
}

/// Reads each mention through the pipeline; what the model is told of
/// each (its text, or why it could not be read).
pub async fn read_mentions(pipeline: &ToolPipeline, cwd: &Path, mentions: &[Mention]) -> String {
    let mut told = Vec::new();
    for mention in mentions {
        let (call, what) = mention.read_call(cwd);
        let result = pipeline.run_nested(call).await;
        let mut text = result.content.text();
        if matches!(mention, Mention::Resource { .. }) && !result.is_error {
            text = resource_text(&text);
        }
        let written = mention.written();
        told.push(match result.is_error {
            false => format!(
                "<system-reminder>\nThe user mentioned @{written}; carapace read {what} for you:\n{text}\n</system-reminder>"
            ),
            true => format!(
                "<system-reminder>\nThe user mentioned @{written}, which could not be read: {text}\n</system-reminder>"
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
        let pipeline = ToolPipeline::new(
            crate::tools::ToolRegistry::default(),
            crate::policy::Policy::new(crate::policy::PermissionMode::Default, dir.path()),
            crate::sandbox::CallLimits::default(),
        );
        assert_eq!(
            mentioned("see @src/main.rs, and @missing.rs", dir.path(), &pipeline),
            [Mention::File("src/main.rs".into())]
        );
        // A server that is not connected is no resource mention.
        assert!(mentioned("see @library:library://x", dir.path(), &pipeline).is_empty());
        Ok(())
    }
}
