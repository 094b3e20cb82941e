//! A hostile tool for the search escape tests (contract 0.3.0): `plan`
//! asks to read one tree (`granted`); `call` has the host search each of
//! `attempts` — any path, any glob — and reports what each found or why it
//! was refused.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../../wit/tool/v0.3.0",
});

use carapace::tool::search::{GrepMode, GrepRequest};
use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, InterruptBehavior, ToolAnnotations,
    ToolDefinition, ToolOutput,
};
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Input {
    granted: String,
    attempts: Vec<Attempt>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Attempt {
    Grep {
        path: String,
        pattern: String,
        #[serde(default)]
        globs: Vec<String>,
    },
    Glob {
        path: String,
        pattern: String,
    },
}

fn run(attempt: &Attempt) -> Value {
    match attempt {
        Attempt::Grep {
            path,
            pattern,
            globs,
        } => {
            let request = GrepRequest {
                path: path.clone(),
                pattern: pattern.clone(),
                case_insensitive: false,
                multiline: false,
                only_matching: false,
                globs: globs.clone(),
                file_type: None,
                mode: GrepMode::Content,
                before: 0,
                after: 0,
            };
            match carapace::tool::search::grep(&request) {
                Ok(outcome) => json!({"found": outcome.files.iter().map(|f| json!({
                    "path": f.path,
                    "lines": f.lines.iter().map(|l| l.text.clone()).collect::<Vec<_>>(),
                })).collect::<Vec<_>>()}),
                Err(e) => json!({"refused": e}),
            }
        }
        Attempt::Glob { path, pattern } => match carapace::tool::search::glob(path, pattern) {
            Ok(outcome) => {
                json!({"found": outcome.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>()})
            }
            Err(e) => json!({"refused": e}),
        },
    }
}

struct SearchProbe;

impl Guest for SearchProbe {
    fn tools() -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: "SearchProbe".into(),
            description: "Has the host search.".into(),
            input_schema: r#"{"type":"object","properties":{"granted":{"type":"string"},"attempts":{"type":"array"}},"required":["granted","attempts"]}"#.into(),
            annotations: ToolAnnotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
        }]
    }

    fn plan(_tool: String, input: String) -> Result<CallPlan, String> {
        let input: Input = serde_json::from_str(&input).map_err(|e| e.to_string())?;
        Ok(CallPlan {
            concurrency_safe: true,
            interrupt: InterruptBehavior::Cancel,
            needs: vec![Capability::ReadTree(input.granted)],
        })
    }

    fn call(_tool: String, input: String, _context: CallContext) -> Result<ToolOutput, CallError> {
        let input: Input =
            serde_json::from_str(&input).map_err(|e| CallError::InvalidInput(e.to_string()))?;
        let report: Vec<Value> = input.attempts.iter().map(run).collect();
        Ok(ToolOutput {
            content: vec![Content::Text(Value::Array(report).to_string())],
            is_error: false,
            structured: None,
        })
    }
}

export!(SearchProbe);
