//! A Script call, run: the script in a fresh instance of the runner
//! component, each of its tool calls prepared and run by this pipeline
//! (through its own `Arc`, as the loop's calls are), under the script's
//! limits. Its result is what it printed and returned; a throw, a stop at
//! a limit or an interruption is an error result with what it printed.

use super::ToolPipeline;
use crate::agent::{ToolCall, ToolCallResult, ToolRuntime};
use crate::model::ToolResultContent;
use crate::tools::script::{
    CallWitness, NestedCalls, SCRIPT_TOOL, ScriptEnd, ScriptLimits, ScriptOutput, ScriptRunner,
};
use std::sync::{Arc, Mutex};

/// Code mode, as the session turned it on.
pub struct CodeMode {
    pub runner: ScriptRunner,
    pub limits: ScriptLimits,
}

impl ToolPipeline {
    pub(super) async fn run_script(&self, call: &ToolCall) -> ToolCallResult {
        let Some(code) = call.input["code"].as_str() else {
            return ToolCallResult::error(&call.id, "Script needs `code`, a string");
        };
        let (Some(mode), Some(me)) = (&self.code_mode, self.myself()) else {
            return ToolCallResult::error(&call.id, "code mode is not on in this session");
        };
        let offered: Vec<String> = self
            .specs()
            .into_iter()
            .map(|s| s.name)
            .filter(|name| name != SCRIPT_TOOL)
            .collect();
        let witness = CallWitness {
            output: self.output.clone(),
            log: self.decisions.get().cloned(),
        };
        let runtime: Arc<dyn ToolRuntime> = me;
        let calls = NestedCalls::new(
            runtime,
            &call.id,
            offered.clone(),
            (mode.limits.max_calls, witness),
        );
        let printed = Arc::new(Mutex::new(ScriptOutput::new(mode.limits.output_bytes)));
        let end = mode
            .runner
            .run(
                code.to_string(),
                offered,
                calls,
                (&mode.limits, printed.clone()),
            )
            .await;
        let printed = printed
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        let (text, is_error) = match end {
            Ok(ScriptEnd::Returned(value)) => (printed.finish(value.as_deref()), false),
            Ok(ScriptEnd::Threw(thrown)) => (
                failure(printed, &format!("The script threw: {thrown}")),
                true,
            ),
            Err(stopped) => (
                failure(
                    printed,
                    &format!("The script was stopped: {}", stopped.describe()),
                ),
                true,
            ),
        };
        ToolCallResult {
            content: ToolResultContent::Text(text),
            is_error,
            ..ToolCallResult::error(&call.id, "")
        }
    }
}

/// Why the script failed, then what it printed before.
fn failure(printed: ScriptOutput, why: &str) -> String {
    let lines = printed.finish(None);
    match lines.is_empty() {
        true => why.to_string(),
        false => format!("{why}\nIt printed before that:\n{lines}"),
    }
}
