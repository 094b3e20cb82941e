//! BashOutput and KillShell: reading and stopping the commands Bash started
//! with `run_in_background`. Host-native because the shells are the
//! host's (a component instance lives for one call); they need no grant —
//! they touch only processes this session's granted calls started.

use crate::sandbox::{
    BackgroundShells, CallContext, ShellReport, ShellStatus, ToolContent, ToolDefinition,
    ToolFailure, ToolOutput,
};
use crate::tools::{Presentation, Subject, ToolKind, TypedNativeTool};
use futures::future::BoxFuture;
use serde_json::json;
use std::sync::Arc;

pub const BASH_OUTPUT_TOOL: &str = "BashOutput";
pub const KILL_SHELL_TOOL: &str = "KillShell";

/// Characters of one stream shown per read (the rest stays counted).
const MAX_SHOWN_CHARS: usize = 30_000;

pub fn bash_output_definition() -> ToolDefinition {
    ToolDefinition {
        name: BASH_OUTPUT_TOOL.into(),
        description: "Reads what a background shell (started by Bash with run_in_background) wrote since the last read, with its status: running, completed, failed or killed. `filter` keeps only the lines matching a regular expression (the others are consumed too).".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "bash_id": {"type": "string", "description": "The shell's id, as Bash returned it"},
                "filter": {"type": "string", "description": "A regular expression: only matching lines are shown"}
            },
            "required": ["bash_id"],
            "additionalProperties": false
        })
        .to_string(),
        annotations: Default::default(),
    }
}

pub fn kill_shell_definition() -> ToolDefinition {
    ToolDefinition {
        name: KILL_SHELL_TOOL.into(),
        description: "Stops a background shell started by Bash with run_in_background, with every process it started.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "shell_id": {"type": "string", "description": "The shell's id, as Bash returned it"}
            },
            "required": ["shell_id"],
            "additionalProperties": false
        })
        .to_string(),
        annotations: Default::default(),
    }
}

pub struct BashOutputTool {
    pub shells: Arc<BackgroundShells>,
}

pub struct KillShellTool {
    pub shells: Arc<BackgroundShells>,
}

/// BashOutput's input.
#[derive(serde::Deserialize)]
pub struct ReadShell {
    bash_id: String,
    filter: Option<String>,
}

impl TypedNativeTool for BashOutputTool {
    type Input = ReadShell;
    const CONCURRENCY_SAFE: bool = true;
    const PRESENTATION: Presentation = Presentation {
        kind: ToolKind::Execute,
        action: Some("read a background command's output"),
        subject: Subject::Field("bash_id"),
        ..Presentation::UNKNOWN
    };

    fn run<'a>(
        &'a self,
        _context: &'a CallContext,
        input: ReadShell,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let filter = match input.filter.as_deref() {
                Some(pattern) => Some(output_filter(pattern)?),
                None => None,
            };
            let report = self
                .shells
                .read(&input.bash_id)
                .map_err(ToolFailure::Failed)?;
            Ok(render(report, filter.as_ref()))
        })
    }
}

/// The longest `filter` pattern BashOutput compiles.
const MAX_FILTER_LEN: usize = 4096;
/// What compiling it may take (the regex crate's compiled-program and lazy
/// DFA budgets): a model-written pattern costs the host a bounded amount.
const FILTER_SIZE_LIMIT: usize = 1 << 20;

/// BashOutput's `filter`, compiled within the bounds above.
fn output_filter(pattern: &str) -> Result<regex::Regex, ToolFailure> {
    if pattern.len() > MAX_FILTER_LEN {
        return Err(ToolFailure::InvalidInput(format!(
            "filter is {} bytes long; at most {MAX_FILTER_LEN} are compiled",
            pattern.len()
        )));
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(FILTER_SIZE_LIMIT)
        .dfa_size_limit(FILTER_SIZE_LIMIT)
        .nest_limit(64)
        .build()
        .map_err(|e| {
            ToolFailure::InvalidInput(format!("filter is not a usable regular expression: {e}"))
        })
}

/// KillShell's input.
#[derive(serde::Deserialize)]
pub struct StopShell {
    shell_id: String,
}

impl TypedNativeTool for KillShellTool {
    type Input = StopShell;
    const CONCURRENCY_SAFE: bool = false;
    const PRESENTATION: Presentation = Presentation {
        kind: ToolKind::Execute,
        action: Some("stop a background command"),
        subject: Subject::Field("shell_id"),
        ..Presentation::UNKNOWN
    };

    fn run<'a>(
        &'a self,
        _context: &'a CallContext,
        input: StopShell,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let id = input.shell_id.as_str();
            let before = self.shells.read_status(id).map_err(ToolFailure::Failed)?;
            let status = self.shells.kill(id).await.map_err(ToolFailure::Failed)?;
            let text = match before {
                ShellStatus::Running => format!("Background shell {id} was stopped."),
                ended => format!(
                    "Background shell {id} had already ended ({}); nothing to stop.",
                    ended.as_str()
                ),
            };
            Ok(ToolOutput {
                content: vec![ToolContent::Text(text)],
                is_error: false,
                structured: Some(json!({"shell_id": id, "status": status.as_str()}).to_string()),
            })
        })
    }
}

fn render(report: ShellReport, filter: Option<&regex::Regex>) -> ToolOutput {
    let keep = |text: &str| -> String {
        let text = match filter {
            Some(filter) => text
                .lines()
                .filter(|l| filter.is_match(l))
                .collect::<Vec<_>>()
                .join("\n"),
            None => text.trim_end().to_string(),
        };
        match text.char_indices().nth(MAX_SHOWN_CHARS) {
            Some((cut, _)) => format!(
                "{}\n[… output cut at {MAX_SHOWN_CHARS} characters]",
                &text[..cut]
            ),
            None => text,
        }
    };
    let exit_code = match report.status {
        ShellStatus::Exited(code) => code,
        _ => None,
    };
    let mut text = format!("<status>{}</status>", report.status.as_str());
    if let Some(code) = exit_code {
        text.push_str(&format!("\n<exit_code>{code}</exit_code>"));
    }
    let (stdout, stderr) = (keep(&report.stdout), keep(&report.stderr));
    if !stdout.is_empty() {
        text.push_str(&format!("\n<stdout>\n{stdout}\n</stdout>"));
    }
    if !stderr.is_empty() {
        text.push_str(&format!("\n<stderr>\n{stderr}\n</stderr>"));
    }
    if report.dropped > 0 {
        text.push_str(&format!(
            "\n[{} bytes of output were dropped before this read: read more often]",
            report.dropped
        ));
    }
    ToolOutput {
        content: vec![ToolContent::Text(text)],
        is_error: false,
        structured: Some(
            json!({
                "shellId": report.id,
                "command": report.command,
                "status": report.status.as_str(),
                "exitCode": exit_code,
                "stdout": stdout,
                "stderr": stderr,
            })
            .to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_written_filter_costs_the_host_a_bounded_amount() {
        // Long, or small but exploding when compiled: both refused.
        let long = "a".repeat(8 << 20);
        for pattern in [long.as_str(), "(?:a{1000}){1000}", "\\w{500}\\w{500}"] {
            let refused = output_filter(pattern);
            assert!(
                matches!(refused, Err(ToolFailure::InvalidInput(_))),
                "{}",
                &pattern[..20.min(pattern.len())]
            );
        }
        // Weakened: without the size limit the exploding one compiles.
        assert!(
            regex::RegexBuilder::new("\\w{500}\\w{500}")
                .size_limit(1 << 30)
                .build()
                .is_ok()
        );
        // An ordinary filter works.
        assert!(output_filter("error|warning: .*").is_ok_and(|r| r.is_match("warning: x")));
    }
}
