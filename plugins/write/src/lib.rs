//! The Write tool: creates or overwrites one file. Granted write access to
//! that one file only (the host creates missing parent directories when it
//! saves the result). Overwriting a file the model has not read in this
//! session — or that changed since — is refused, as in Claude Code.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../wit/tool/v0.3.0",
});

use carapace::tool::host::{FileStamp, last_read, record_read};
use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, InterruptBehavior, ToolAnnotations,
    ToolDefinition, ToolOutput,
};
use carapace_guest_util::{absolute_path, stamp};
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;

#[derive(Deserialize)]
struct WriteInput {
    file_path: String,
    content: String,
}

struct WriteTool;

impl Guest for WriteTool {
    fn tools() -> Vec<ToolDefinition> {
        // The definition the host embeds too (see tool.json).
        carapace_guest_util::tools_from_json!()
    }

    fn plan(_tool: String, input: String) -> Result<CallPlan, String> {
        let input: WriteInput =
            serde_json::from_str(&input).map_err(|e| format!("invalid input: {e}"))?;
        let path = absolute_path("file_path", &input.file_path)?;
        Ok(CallPlan {
            concurrency_safe: false,
            interrupt: InterruptBehavior::Block,
            needs: vec![Capability::WriteFile(path.to_string_lossy().into_owned())],
        })
    }

    fn call(_tool: String, input: String, context: CallContext) -> Result<ToolOutput, CallError> {
        let input: WriteInput =
            serde_json::from_str(&input).map_err(|e| CallError::InvalidInput(e.to_string()))?;
        let path = absolute_path("file_path", &input.file_path).map_err(CallError::InvalidInput)?;
        let path_text = path.to_string_lossy().into_owned();
        let existed = match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                return Err(CallError::Failed(format!(
                    "{path_text} is a directory; Write writes files."
                )));
            }
            Ok(meta) => {
                let (modified_ns, size) = stamp(&meta);
                match last_read(&path_text) {
                    None => {
                        return Err(CallError::Failed(format!(
                            "{path_text} exists and has not been read in this conversation. Read it first, then write it."
                        )));
                    }
                    Some(seen) if seen.modified_ns != modified_ns || seen.size != size => {
                        return Err(CallError::Failed(format!(
                            "{path_text} has changed since it was read. Read it again before writing it."
                        )));
                    }
                    Some(_) => {
                        Some(std::fs::read_to_string(&path).map_err(|e| {
                            CallError::Failed(format!("Cannot read {path_text}: {e}"))
                        })?)
                    }
                }
            }
            Err(_) => None,
        };
        carapace_guest_util::replace_file(&path, input.content.as_bytes())
            .map_err(|e| CallError::Failed(format!("Cannot write {path_text}: {e}")))?;
        if let Ok(meta) = std::fs::metadata(&path) {
            let (modified_ns, size) = stamp(&meta);
            record_read(&path_text, FileStamp { modified_ns, size });
        }
        let text = if existed.is_some() {
            format!("The file {path_text} has been updated.")
        } else {
            format!("File created successfully at: {path_text}")
        };
        // Claude Code's shape for Write's structured result.
        let structured = context.wants_structured.then(|| {
            serde_json::json!({
                "type": if existed.is_some() { "update" } else { "create" },
                "filePath": path_text,
                "content": input.content,
                "structuredPatch": match &existed {
                    Some(original) => carapace_guest_util::structured_patch(original, &input.content),
                    None => serde_json::json!([]),
                },
                "originalFile": existed,
                "userModified": false,
            })
            .to_string()
        });
        Ok(ToolOutput {
            content: vec![Content::Text(text)],
            is_error: false,
            structured,
        })
    }
}

export!(WriteTool);
