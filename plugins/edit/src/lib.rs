//! The Edit tool: exact string replacement in one file the model has read in
//! this session and that has not changed since. Granted write access to that
//! one file only.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../wit/tool/v0.3.0",
});

use carapace::tool::host::{FileStamp, last_read, record_read};
use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, InterruptBehavior, ToolAnnotations,
    ToolDefinition, ToolOutput,
};
use carapace_guest_util::{absolute_path, numbered, read_before_edit, stamp};
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct EditInput {
    file_path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// Lines of context shown around the change.
const SNIPPET_CONTEXT: usize = 4;

struct EditTool;

fn parse(input: &str) -> Result<EditInput, String> {
    let input: EditInput =
        serde_json::from_str(input).map_err(|e| format!("invalid input: {e}"))?;
    if input.old_string == input.new_string {
        return Err("No changes to make: old_string and new_string are the same.".into());
    }
    Ok(input)
}

impl Guest for EditTool {
    fn tools() -> Vec<ToolDefinition> {
        // The definition the host embeds too (see tool.json).
        carapace_guest_util::tools_from_json!()
    }

    fn plan(_tool: String, input: String) -> Result<CallPlan, String> {
        let input = parse(&input)?;
        let path = absolute_path("file_path", &input.file_path)?;
        Ok(CallPlan {
            concurrency_safe: false,
            interrupt: InterruptBehavior::Block,
            needs: vec![Capability::WriteFile(path.to_string_lossy().into_owned())],
        })
    }

    fn call(_tool: String, input: String, context: CallContext) -> Result<ToolOutput, CallError> {
        let input = parse(&input).map_err(CallError::InvalidInput)?;
        let path = absolute_path("file_path", &input.file_path).map_err(CallError::InvalidInput)?;
        let path_text = path.to_string_lossy().into_owned();
        let failed = |m: String| CallError::Failed(m);

        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(_) if input.old_string.is_empty() => {
                carapace_guest_util::replace_file(&path, input.new_string.as_bytes())
                    .map_err(|e| failed(format!("Cannot create {path_text}: {e}")))?;
                remember(&path_text);
                let structured = context
                    .wants_structured
                    .then(|| edit_result(&path_text, &input, "", &input.new_string));
                return Ok(text(format!("Created {path_text}."), structured));
            }
            Err(_) => return Err(failed(format!("File does not exist: {path_text}"))),
        };
        if meta.is_dir() {
            return Err(failed(format!("{path_text} is a directory, not a file.")));
        }
        let seen = last_read(&path_text).map(|s| (s.modified_ns, s.size));
        read_before_edit(&path_text, &meta, seen).map_err(failed)?;
        let content = std::fs::read_to_string(&path)
            .map_err(|e| failed(format!("Cannot read {path_text}: {e}")))?;
        if input.old_string.is_empty() {
            return Err(failed(format!(
                "{path_text} already exists; an empty old_string only creates new files."
            )));
        }
        let count = content.matches(&input.old_string).count();
        if count == 0 {
            return Err(failed(format!(
                "The text to replace was not found in {path_text}."
            )));
        }
        if count > 1 && !input.replace_all {
            return Err(failed(format!(
                "The text to replace appears {count} times in {path_text}, but replace_all is false. \
Give more surrounding context to make it unique, or set replace_all to true."
            )));
        }
        let first_at = content.find(&input.old_string).unwrap_or(0);
        let updated = if input.replace_all {
            content.replace(&input.old_string, &input.new_string)
        } else {
            content.replacen(&input.old_string, &input.new_string, 1)
        };
        carapace_guest_util::replace_file(&path, updated.as_bytes())
            .map_err(|e| failed(format!("Cannot write {path_text}: {e}")))?;
        remember(&path_text);

        // A numbered snippet around the (first) change.
        let line = content[..first_at].matches('\n').count();
        let lines: Vec<&str> = updated.split('\n').collect();
        let from = line.saturating_sub(SNIPPET_CONTEXT);
        let to =
            (line + input.new_string.matches('\n').count() + SNIPPET_CONTEXT + 1).min(lines.len());
        let snippet = numbered(&lines[from..to].join("\n"), from + 1);
        let what = if input.replace_all && count > 1 {
            format!("{count} occurrences replaced")
        } else {
            "1 occurrence replaced".into()
        };
        Ok(text(
            format!(
                "The file {path_text} has been updated ({what}). Around the change:\n{snippet}"
            ),
            context
                .wants_structured
                .then(|| edit_result(&path_text, &input, &content, &updated)),
        ))
    }
}

fn remember(path: &str) {
    if let Ok(meta) = std::fs::metadata(path) {
        let (modified_ns, size) = stamp(&meta);
        record_read(path, FileStamp { modified_ns, size });
    }
}

/// Claude Code's shape for Edit's structured result.
fn edit_result(path: &str, input: &EditInput, original: &str, updated: &str) -> Value {
    json!({
        "filePath": path,
        "oldString": input.old_string,
        "newString": input.new_string,
        "originalFile": original,
        "structuredPatch": carapace_guest_util::structured_patch(original, updated),
        "userModified": false,
        "replaceAll": input.replace_all,
    })
}

fn text(t: String, structured: Option<Value>) -> ToolOutput {
    ToolOutput {
        content: vec![Content::Text(t)],
        is_error: false,
        structured: structured.map(|s| s.to_string()),
    }
}

export!(EditTool);
