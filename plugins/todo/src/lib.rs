//! The TodoWrite tool: the model's working plan for the session, as a list
//! it rewrites whole on each call. It needs no capability at all: the list
//! lives in the conversation (the call's input, shown in stream-json) and
//! in the result's structured value, never on disk.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../wit/tool/v0.3.0",
});

use carapace::tool::types::{
    CallContext, CallError, CallPlan, Content, InterruptBehavior, ToolAnnotations, ToolDefinition,
    ToolOutput,
};
use exports::carapace::tool::tool_provider::Guest;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize)]
struct Todo {
    content: String,
    status: String,
    #[serde(rename = "activeForm")]
    active_form: String,
}

#[derive(Deserialize)]
struct TodoInput {
    todos: Vec<Todo>,
}

struct TodoTool;

impl Guest for TodoTool {
    fn tools() -> Vec<ToolDefinition> {
        // The definition the host embeds too (see tool.json).
        carapace_guest_util::tools_from_json!()
    }

    fn plan(_tool: String, input: String) -> Result<CallPlan, String> {
        serde_json::from_str::<TodoInput>(&input).map_err(|e| format!("invalid input: {e}"))?;
        Ok(CallPlan {
            concurrency_safe: false,
            interrupt: InterruptBehavior::Cancel,
            needs: Vec::new(),
        })
    }

    fn call(_tool: String, input: String, context: CallContext) -> Result<ToolOutput, CallError> {
        let input: TodoInput =
            serde_json::from_str(&input).map_err(|e| CallError::InvalidInput(e.to_string()))?;
        let count = |status: &str| input.todos.iter().filter(|t| t.status == status).count();
        let (done, active) = (count("completed"), count("in_progress"));
        let items = match input.todos.len() {
            1 => "1 item".to_string(),
            n => format!("{n} items"),
        };
        let mut text = format!(
            "The task list is updated: {items}, {done} completed, {active} in progress. Keep it current as you work."
        );
        if active > 1 {
            text.push_str(
                " More than one item is in progress: finish one before starting the next.",
            );
        }
        let structured = context
            .wants_structured
            .then(|| serde_json::json!({ "newTodos": input.todos }).to_string());
        Ok(ToolOutput {
            content: vec![Content::Text(text)],
            is_error: false,
            structured,
        })
    }
}

export!(TodoTool);
