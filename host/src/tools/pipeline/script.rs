//! A Script call, run: the script in a fresh instance of the runner
//! component, each of its tool calls prepared and run by this pipeline
//! (through its own `Arc`, as the loop's calls are), under the script's
//! limits. Its result is what it printed and returned; a throw, a stop at
//! a limit or an interruption is an error result with what it printed.
//!
//! With `run_in_background` the call is answered at once with a task id;
//! the script runs on (under the longer background deadline) and its
//! result reaches the model as a `<task-notification>` message when it
//! ends, as a background agent's does. The session's abort stops it.

use super::ToolPipeline;
use crate::agent::{AgentEvent, InputQueue, TaskEnd, ToolCall, ToolCallResult, ToolRuntime};
use crate::model::ToolResultContent;
use crate::tools::script::{
    CallWitness, NestedCalls, SCRIPT_TOOL, ScriptEnd, ScriptLimits, ScriptOutput, ScriptRunner,
};
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Code mode, as the session turned it on.
pub struct CodeMode {
    pub runner: ScriptRunner,
    pub limits: ScriptLimits,
    /// Where background scripts report.
    pub background: BackgroundScripts,
}

/// What background scripts need of the session: the queue their reports
/// join, the session's abort, the folder their output is kept in.
pub struct BackgroundScripts {
    pub queue: Arc<InputQueue>,
    pub abort: CancellationToken,
    pub dir: PathBuf,
}

impl ToolPipeline {
    pub(super) async fn run_script(&self, call: &ToolCall) -> ToolCallResult {
        let Some(code) = call.input["code"].as_str() else {
            return ToolCallResult::error(&call.id, "Script needs `code`, a string");
        };
        let (Some(mode), Some(me)) = (self.code_mode.clone(), self.myself()) else {
            return ToolCallResult::error(&call.id, "code mode is not on in this session");
        };
        // A subagent's script calls through the subagent's tools.
        let tools = crate::agent::caller_tools().unwrap_or_else(|| me.clone());
        let me = (me, tools);
        if call.input["run_in_background"] == true {
            return launch(me, &mode, (call, code));
        }
        let (text, is_error) = execute(me, &mode, (&call.id, code), &mode.limits).await;
        ToolCallResult {
            content: ToolResultContent::Text(text),
            is_error,
            ..ToolCallResult::error(&call.id, "")
        }
    }
}

/// The pipeline (where calls are told), and the tools a script calls
/// through (the pipeline, or the subagent's subset of it).
type Through = (Arc<ToolPipeline>, Arc<dyn ToolRuntime>);

/// Runs one script to its end: its result text, and whether it failed.
async fn execute(
    (me, tools): Through,
    mode: &CodeMode,
    (id, code): (&str, &str),
    limits: &ScriptLimits,
) -> (String, bool) {
    let offered: Vec<String> = tools
        .specs()
        .into_iter()
        .map(|s| s.name)
        .filter(|name| name != SCRIPT_TOOL)
        .collect();
    let witness = CallWitness {
        output: me.output.clone(),
        log: me.decisions.get().cloned(),
    };
    let calls = NestedCalls::new(tools, id, offered.clone(), (limits.max_calls, witness));
    let printed = Arc::new(Mutex::new(ScriptOutput::new(limits.output_bytes)));
    let end = (mode.runner)
        .run(code.to_string(), offered, calls, (limits, printed.clone()))
        .await;
    let printed = printed
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default();
    match end {
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
    }
}

/// Starts the script in the background: answered at once, reported when
/// it ends.
fn launch(me: Through, mode: &Arc<CodeMode>, (call, code): (&ToolCall, &str)) -> ToolCallResult {
    let background = &mode.background;
    let task = format!(
        "script-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let output = me.0.output.clone();
    let tell = move |event: AgentEvent| {
        if let Some(output) = &output {
            output.send(event);
        }
    };
    tell(AgentEvent::TaskStarted {
        task_id: task.clone(),
        description: "script".into(),
        tool_use_id: call.id.clone(),
    });
    let hold = background.queue.hold();
    let (queue, stop) = (background.queue.clone(), background.abort.child_token());
    let output_file = background.dir.join(format!("{task}.output"));
    let (mode, id, code, task_id) = (
        mode.clone(),
        call.id.clone(),
        code.to_string(),
        task.clone(),
    );
    tokio::spawn(async move {
        let limits = ScriptLimits {
            deadline: mode.limits.background_deadline,
            ..mode.limits.clone()
        };
        let (text, failed) = tokio::select! {
            ended = execute(me, &mode, (&id, &code), &limits) => ended,
            () = stop.cancelled() => ("The script was stopped: the session ended.".to_string(), true),
        };
        let status = if failed { "failed" } else { "completed" };
        if let Err(e) = crate::files::write(&output_file, text.as_bytes()) {
            tracing::warn!(task = %task_id, "keeping the script's output failed: {e}");
        }
        let ended = TaskEnd {
            task_id,
            tool_use_id: id,
            status,
            summary: format!("Script {status}"),
            output_file: output_file.display().to_string(),
            result: text,
        };
        tell(ended.event());
        queue.push(ended.message());
        drop(hold);
    });
    ToolCallResult {
        content: ToolResultContent::Text(format!(
            "Started script {task} in the background. Its result will arrive as a task notification when it ends: do not start it again, and do not wait for it with tools."
        )),
        is_error: false,
        structured: Some(json!({"status": "async_launched", "taskId": task})),
        ..ToolCallResult::error(&call.id, "")
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
