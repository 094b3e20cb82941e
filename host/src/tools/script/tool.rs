//! The Script tool as the model sees it: its definition, and the
//! description that carries the TypeScript declarations of the tools a
//! script may call (made again whenever the offered tools change).

use super::declarations::declarations;
use super::limits::ScriptLimits;
use crate::model::ToolSpec;
use crate::sandbox::{CallContext, ToolDefinition, ToolFailure, ToolOutput};
use crate::tools::NativeTool;
use futures::future::BoxFuture;
use serde_json::{Value, json};

pub const SCRIPT_TOOL: &str = "Script";

const ABOUT: &str = "Runs a JavaScript program that calls your tools, so that many calls take one response instead of one each: reading or searching many files, editing every match, running a command and reading its output.

- `code` is the body of an async function. Call tools as `await tools.Name({...})` with the same input you would give the tool; each resolves to the tool's result text (content blocks as objects where the result is not only text).
- Each call is checked exactly as if you had made it (permission rules, hooks, the user's approval): a call that is refused or fails rejects with an Error whose message is the result (and `error.denied` is true when it was refused) — catch it to go on.
- `Promise.all([...])` runs read-only calls at the same time; calls that change something run one after another in the order made.
- What `console.log` prints and what the function returns (as JSON unless it is a string) are the result.
- There is no file system, network, environment, `require`, `import` or `fetch`: only `tools`. Write JavaScript, or TypeScript whose types can simply be erased (no `enum` or `namespace`).
- For a long run (a slow build, many commands), set `run_in_background`: you are answered at once and told the result when it ends.";

pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: SCRIPT_TOOL.into(),
        description: ABOUT.into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The body of an async JavaScript function"},
                "run_in_background": {"type": "boolean", "description": "Answer at once; the script's result arrives as a task notification when it ends"}
            },
            "required": ["code"],
            "additionalProperties": false
        })
        .to_string(),
        annotations: Default::default(),
    }
}

/// The description offered with the tools a script may call (every
/// offered tool but Script) declared, and the limits.
pub fn description(offered: &[ToolSpec], limits: &ScriptLimits) -> String {
    let callable: Vec<ToolSpec> = offered
        .iter()
        .filter(|s| s.name != SCRIPT_TOOL)
        .cloned()
        .collect();
    format!(
        "{ABOUT}\n- Limits: {} s of the script's own running time ({} s in the background; waiting on calls does not count), {} tool calls, {} MiB of memory, {} KB of output.\n\nThe tools:\n```ts\n{}\n```",
        limits.deadline.as_secs(),
        limits.background_deadline.as_secs(),
        limits.max_calls,
        limits.memory_bytes >> 20,
        limits.output_bytes >> 10,
        declarations(&callable)
    )
}

/// The registry's entry; the pipeline runs scripts (`pipeline/script.rs`):
/// their calls go through it.
pub struct ScriptTool;

impl NativeTool for ScriptTool {
    fn concurrency_safe(&self) -> bool {
        // Its calls are scheduled by their own safety; the script itself
        // is one call that may change things.
        false
    }

    fn runs_scripts(&self) -> bool {
        true
    }

    fn presentation(&self) -> crate::tools::Presentation {
        crate::tools::Presentation {
            action: Some("run a script of tool calls"),
            subject: crate::tools::Subject::Field("code"),
            ..crate::tools::Presentation::UNKNOWN
        }
    }

    fn call<'a>(
        &'a self,
        _context: &'a CallContext,
        _input: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        crate::tools::run_by_the_pipeline("Script")
    }
}
