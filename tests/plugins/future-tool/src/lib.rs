//! A tool plugin from the future: it exports `carapace:tool/tool-provider`
//! at version 0.9.0, which no host implements yet.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "wit",
});

use carapace::tool::types::{CallContext, CallError, CallPlan, ToolDefinition, ToolOutput};
use exports::carapace::tool::tool_provider::Guest;

struct Future;

impl Guest for Future {
    fn tools() -> Vec<ToolDefinition> {
        Vec::new()
    }

    fn plan(_tool: String, _input: String) -> Result<CallPlan, String> {
        Err("no tools".into())
    }

    fn call(_tool: String, _input: String, _context: CallContext) -> Result<ToolOutput, CallError> {
        Err(CallError::Failed("no tools".into()))
    }
}

export!(Future);
