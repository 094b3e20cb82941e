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

const DESCRIPTION: &str = "\
Keeps the task list for this session: your working plan, shown to the user. \
Each call replaces the whole list.

- Use it for work of three or more steps, or when the user gives several \
tasks; skip it for a single quick change.
- Each item has `content` (imperative: \"Run the tests\"), `activeForm` \
(present continuous: \"Running the tests\") and `status`: pending, \
in_progress or completed.
- Keep exactly one item in_progress while working; mark an item completed \
as soon as it is done (not in batches), and only when it is fully done.";

const INPUT_SCHEMA: &str = r#"{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The whole updated list",
      "items": {
        "type": "object",
        "properties": {
          "content": {"type": "string", "minLength": 1},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
          "activeForm": {"type": "string", "minLength": 1}
        },
        "required": ["content", "status", "activeForm"],
        "additionalProperties": false
      }
    }
  },
  "required": ["todos"],
  "additionalProperties": false
}"#;

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
        vec![ToolDefinition {
            name: "TodoWrite".into(),
            description: DESCRIPTION.into(),
            input_schema: INPUT_SCHEMA.into(),
            annotations: ToolAnnotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
        }]
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
