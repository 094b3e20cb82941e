//! The NotebookEdit tool: replaces, inserts or deletes one cell of a
//! Jupyter notebook (`.ipynb`). Granted write access to that one file only,
//! like Edit; editing a notebook the model has not read in this session —
//! or that changed since — is refused.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../wit/tool/v0.3.0",
});

use carapace::tool::host::{FileStamp, last_read, record_read};
use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, InterruptBehavior, ToolAnnotations,
    ToolDefinition, ToolOutput,
};
use carapace_guest_util::{absolute_path, read_before_edit, stamp};
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;
use serde_json::{Map, Value, json};

#[derive(Deserialize)]
struct NotebookInput {
    notebook_path: String,
    cell_id: Option<String>,
    new_source: String,
    cell_type: Option<String>,
    edit_mode: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Replace,
    Insert,
    Delete,
}

fn parse(input: &str) -> Result<(NotebookInput, Mode), String> {
    let input: NotebookInput =
        serde_json::from_str(input).map_err(|e| format!("invalid input: {e}"))?;
    let mode = match input.edit_mode.as_deref() {
        None | Some("replace") => Mode::Replace,
        Some("insert") => Mode::Insert,
        Some("delete") => Mode::Delete,
        Some(other) => {
            return Err(format!(
                "edit_mode `{other}` is not replace, insert or delete"
            ));
        }
    };
    if !input.notebook_path.ends_with(".ipynb") {
        return Err(
            "notebook_path must name a Jupyter notebook (.ipynb); use Edit for other files".into(),
        );
    }
    if mode == Mode::Insert && input.cell_type.is_none() {
        return Err("cell_type is required to insert a cell".into());
    }
    if mode != Mode::Insert && input.cell_id.is_none() {
        return Err("cell_id is required to replace or delete a cell".into());
    }
    Ok((input, mode))
}

struct NotebookTool;

impl Guest for NotebookTool {
    fn tools() -> Vec<ToolDefinition> {
        // The definition the host embeds too (see tool.json).
        carapace_guest_util::tools_from_json!()
    }

    fn plan(_tool: String, input: String) -> Result<CallPlan, String> {
        let (input, _) = parse(&input)?;
        let path = absolute_path("notebook_path", &input.notebook_path)?;
        Ok(CallPlan {
            concurrency_safe: false,
            interrupt: InterruptBehavior::Block,
            needs: vec![Capability::WriteFile(path.to_string_lossy().into_owned())],
        })
    }

    fn call(_tool: String, input: String, context: CallContext) -> Result<ToolOutput, CallError> {
        let (input, mode) = parse(&input).map_err(CallError::InvalidInput)?;
        let path = absolute_path("notebook_path", &input.notebook_path)
            .map_err(CallError::InvalidInput)?;
        let path_text = path.to_string_lossy().into_owned();
        let failed = |m: String| CallError::Failed(m);
        let meta = std::fs::metadata(&path)
            .map_err(|_| failed(format!("Notebook does not exist: {path_text}")))?;
        let seen = last_read(&path_text).map(|s| (s.modified_ns, s.size));
        read_before_edit(&path_text, &meta, seen).map_err(failed)?;
        let original = std::fs::read_to_string(&path)
            .map_err(|e| failed(format!("Cannot read {path_text}: {e}")))?;
        let mut notebook: Value = serde_json::from_str(&original)
            .map_err(|e| failed(format!("{path_text} is not a notebook (not JSON: {e})")))?;
        let language = notebook["metadata"]["language_info"]["name"]
            .as_str()
            .unwrap_or("python")
            .to_string();
        let with_ids = notebook["nbformat"].as_u64().unwrap_or(4) >= 4
            && notebook["nbformat_minor"].as_u64().unwrap_or(0) >= 5;
        let cells = notebook
            .get_mut("cells")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| failed(format!("{path_text} is not a notebook (no `cells` list)")))?;
        let index = match &input.cell_id {
            Some(id) => Some(find_cell(cells, id).ok_or_else(|| {
                failed(format!(
                    "No cell `{id}` in {path_text} ({} cells).",
                    cells.len()
                ))
            })?),
            None => None,
        };
        let (done, cell_id) = match (mode, index) {
            (Mode::Delete, Some(at)) => {
                cells.remove(at);
                ("Deleted cell".to_string(), input.cell_id.clone())
            }
            (Mode::Insert, after) => {
                let at = after.map_or(0, |i| i + 1);
                let kind = input.cell_type.as_deref().unwrap_or("code");
                let id = with_ids.then(|| new_cell_id(cells));
                cells.insert(at, new_cell(kind, &input.new_source, id.as_deref()));
                (format!("Inserted a {kind} cell at position {at}"), id)
            }
            (Mode::Replace, Some(at)) => {
                let cell = cells[at]
                    .as_object_mut()
                    .ok_or_else(|| failed(format!("Cell {at} of {path_text} is not an object")))?;
                if let Some(kind) = &input.cell_type {
                    cell.insert("cell_type".into(), json!(kind));
                }
                cell.insert("source".into(), json!(input.new_source));
                if cell.get("cell_type").and_then(Value::as_str) == Some("code") {
                    cell.insert("outputs".into(), json!([]));
                    cell.insert("execution_count".into(), Value::Null);
                } else {
                    cell.remove("outputs");
                    cell.remove("execution_count");
                }
                ("Updated cell".to_string(), input.cell_id.clone())
            }
            (Mode::Replace | Mode::Delete, None) => {
                return Err(CallError::InvalidInput(
                    "cell_id is required to replace or delete a cell".into(),
                ));
            }
        };
        let updated = serde_json::to_string_pretty(&notebook)
            .map_err(|e| failed(format!("Cannot encode {path_text}: {e}")))?
            + "\n";
        carapace_guest_util::replace_file(&path, updated.as_bytes())
            .map_err(|e| failed(format!("Cannot write {path_text}: {e}")))?;
        if let Ok(meta) = std::fs::metadata(&path) {
            let (modified_ns, size) = stamp(&meta);
            record_read(&path_text, FileStamp { modified_ns, size });
        }
        let structured = context.wants_structured.then(|| {
            json!({
                "new_source": input.new_source,
                "cell_id": cell_id,
                "cell_type": input.cell_type,
                "language": language,
                "edit_mode": match mode { Mode::Replace => "replace", Mode::Insert => "insert", Mode::Delete => "delete" },
                "notebook_path": path_text,
                "original_file": original,
                "updated_file": updated,
            })
            .to_string()
        });
        Ok(ToolOutput {
            content: vec![Content::Text(format!("{done} in {path_text}."))],
            is_error: false,
            structured,
        })
    }
}

/// A cell by its `id`, or by `cell-N` (its position).
fn find_cell(cells: &[Value], id: &str) -> Option<usize> {
    cells
        .iter()
        .position(|c| c["id"].as_str() == Some(id))
        .or_else(|| {
            id.strip_prefix("cell-")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n < cells.len())
        })
}

/// An id no cell has (nbformat 4.5 wants one per cell).
fn new_cell_id(cells: &[Value]) -> String {
    let taken = |id: &str| cells.iter().any(|c| c["id"].as_str() == Some(id));
    let mut n = cells.len();
    loop {
        let id = format!("cell-{n:x}-new");
        if !taken(&id) {
            return id;
        }
        n += 1;
    }
}

fn new_cell(kind: &str, source: &str, id: Option<&str>) -> Value {
    let mut cell = Map::new();
    cell.insert("cell_type".into(), json!(kind));
    if let Some(id) = id {
        cell.insert("id".into(), json!(id));
    }
    cell.insert("metadata".into(), json!({}));
    cell.insert("source".into(), json!(source));
    if kind == "code" {
        cell.insert("execution_count".into(), Value::Null);
        cell.insert("outputs".into(), json!([]));
    }
    Value::Object(cell)
}

export!(NotebookTool);
