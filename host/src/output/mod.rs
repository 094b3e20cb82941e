//! What a print-mode run writes on stdout: text, one JSON result, or
//! Claude Code's stream-json lines (`system`/`init`, one `assistant` line per
//! completed content block, one `user` line per tool result, `result`).
//!
//! Output never carries the API key or the host's environment.
//!
//! Imports: `agent`, `control`, `model` — folders below it; nothing that
//! imports it.

mod lines;

use crate::agent::{AgentEvent, EventSink, QueryOutcome};
use crate::model::{ContentBlock, Usage};
use serde_json::{Value, json};
use std::io::Write;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
    #[value(name = "stream-json")]
    StreamJson,
}

/// What the `init` and `result` lines say about the run.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub session_id: String,
    pub cwd: String,
    pub model: String,
    pub tools: Vec<String>,
    pub permission_mode: String,
    pub api_key_source: String,
    pub started: Instant,
    /// Installed plugins and whether each loaded (`system`/`init`'s
    /// `plugins`).
    pub plugins: Vec<serde_json::Value>,
    /// Configured MCP servers and their status (`mcp_servers`).
    pub mcp_servers: Vec<serde_json::Value>,
    /// The Agent tool's agent types (`agents`).
    pub agents: Vec<String>,
    /// The slash commands a prompt may be (`slash_commands`): `compact`
    /// and the custom commands and skills, none with
    /// `--disable-slash-commands`.
    pub slash_commands: Vec<String>,
    /// The session's skills (`skills`).
    pub skills: Vec<String>,
    /// The output style in use (`output_style`).
    pub output_style: String,
}

pub struct Printer<W: Write + Send> {
    format: OutputFormat,
    verbose: bool,
    out: W,
    info: RunInfo,
    /// `--output-format json --verbose` prints every line as one array.
    collected: Vec<Value>,
    write_failed: bool,
    /// Lines that come before the first `system`/`init` (a message queued
    /// while the session starts), printed right after it.
    before_init: Option<Vec<Value>>,
    /// `--include-hook-events`: print `hook_started` / `hook_response`.
    include_hook_events: bool,
    /// `--include-partial-messages`: print `stream_event` lines.
    partial_messages: bool,
    /// `--replay-user-messages`: print user messages taken from stdin.
    replay_user_messages: bool,
    /// The result line `finish` printed.
    printed_result: Option<Value>,
}

impl<W: Write + Send> Printer<W> {
    pub fn new(format: OutputFormat, verbose: bool, out: W, info: RunInfo) -> Self {
        Self {
            format,
            verbose,
            out,
            info,
            collected: Vec::new(),
            write_failed: false,
            before_init: Some(Vec::new()),
            include_hook_events: false,
            partial_messages: false,
            replay_user_messages: false,
            printed_result: None,
        }
    }

    /// Prints each user message taken from stdin back (`isReplay`).
    pub fn with_replayed_user_messages(mut self, replay: bool) -> Self {
        self.replay_user_messages = replay;
        self
    }

    /// Prints each event of a response as it streams (`stream_event`).
    pub fn with_partial_messages(mut self, include: bool) -> Self {
        self.partial_messages = include;
        self
    }

    /// Prints hook lines (`hook_started`, `hook_response`) as Claude Code
    /// does with `--include-hook-events`.
    pub fn with_hook_events(mut self, include: bool) -> Self {
        self.include_hook_events = include;
        self
    }

    /// Prints the `system`/`init` line (stream-json, or json with --verbose).
    pub fn start(&mut self) {
        let line = json!({
            "type": "system",
            "subtype": "init",
            "cwd": self.info.cwd,
            "session_id": self.info.session_id,
            "tools": self.info.tools,
            "mcp_servers": self.info.mcp_servers,
            "model": self.info.model,
            "permissionMode": self.info.permission_mode,
            "slash_commands": self.info.slash_commands,
            "apiKeySource": self.info.api_key_source,
            "carapace_version": env!("CARGO_PKG_VERSION"),
            "output_style": self.info.output_style,
            "agents": self.info.agents,
            "skills": self.info.skills,
            "plugins": self.info.plugins,
            "uuid": new_uuid(),
        });
        let waiting = self.before_init.take().unwrap_or_default();
        self.line(line);
        for line in waiting {
            self.line(line);
        }
    }

    /// Prints the final result in the chosen format.
    pub fn finish(&mut self, outcome: &QueryOutcome) {
        let result = self.result_line(outcome);
        self.printed_result = Some(result.clone());
        match self.format {
            OutputFormat::StreamJson => self.line(result),
            OutputFormat::Json => {
                if self.verbose {
                    self.collected.push(result);
                    let all = Value::Array(std::mem::take(&mut self.collected));
                    self.write(&all);
                } else {
                    self.write(&result);
                }
            }
            OutputFormat::Text => {
                let text = if outcome.terminal.subtype().starts_with("error_") {
                    format!("Error: {}", outcome.errors.join("; "))
                } else {
                    outcome.result.clone()
                };
                self.write_raw(&text);
            }
        }
    }

    pub fn result_line(&self, outcome: &QueryOutcome) -> Value {
        let subtype = outcome.terminal.subtype();
        let mut line = json!({
            "type": "result",
            "subtype": subtype,
            "is_error": outcome.is_error(),
            "api_error_status": outcome.error.as_ref().and_then(|e| e.status),
            "duration_ms": self.info.started.elapsed().as_millis() as u64,
            "duration_api_ms": outcome.api_duration.as_millis() as u64,
            "num_turns": outcome.num_turns,
            "stop_reason": outcome.stop_reason,
            "session_id": self.info.session_id,
            "total_cost_usd": outcome.cost_usd,
            "usage": usage_json(&outcome.usage),
            "permission_denials": outcome.permission_denials,
            "terminal_reason": outcome.terminal.reported(),
            "uuid": new_uuid(),
        });
        if subtype.starts_with("error_") {
            line["errors"] = json!(outcome.errors);
        } else {
            line["result"] = json!(outcome.result);
        }
        if let Some(answer) = &outcome.structured_output {
            line["structured_output"] = answer.clone();
        }
        line
    }

    fn line(&mut self, line: Value) {
        // `init` comes first, as in Claude Code, however early input is.
        if let Some(waiting) = &mut self.before_init
            && line["subtype"] == "command_lifecycle"
        {
            waiting.push(line);
            return;
        }
        match self.format {
            OutputFormat::StreamJson => self.write(&line),
            OutputFormat::Json if self.verbose => self.collected.push(line),
            OutputFormat::Json | OutputFormat::Text => {}
        }
    }

    fn write(&mut self, value: &Value) {
        self.write_raw(&value.to_string());
    }

    fn write_raw(&mut self, text: &str) {
        if self.write_failed {
            return;
        }
        // The last line: a hook's printed output, a prompt echoed back —
        // no credential of carapace's reaches the stream.
        let cleaned = crate::secrets::own_credentials().redact(text);
        let text = cleaned.as_ref().map_or(text, |(clean, _)| clean.as_str());
        let written = writeln!(self.out, "{text}").and_then(|()| self.out.flush());
        if let Err(e) = written {
            // A closed stdout (a pipe whose reader left) must not end the
            // run; the result is lost to that reader either way.
            tracing::warn!(error = %e, "stdout is not writable; further output is dropped");
            self.write_failed = true;
        }
    }
}

impl<W: Write + Send> EventSink for Printer<W> {
    fn emit(&mut self, event: AgentEvent) {
        let line = match event {
            // A child loop's line: the parent's Agent call it belongs to.
            AgentEvent::Child {
                parent_tool_use_id,
                event,
            } => self.line_for(*event).map(|mut line| {
                line["parent_tool_use_id"] = json!(parent_tool_use_id);
                line
            }),
            other => {
                if let Some(line) = self.thinking_tokens(&other) {
                    self.line(line);
                }
                self.line_for(other)
            }
        };
        if let Some(line) = line {
            self.line(line);
        }
    }
}

impl<W: Write + Send> Printer<W> {
    /// An assistant line no model wrote (an error, an answer carapace gave
    /// itself), as Claude Code prints one.
    fn synthetic_assistant(&self, text: &str) -> Value {
        json!({
            "type": "assistant",
            "message": {
                "id": new_uuid(),
                "type": "message",
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "stop_sequence",
                "stop_sequence": "",
                "usage": usage_json(&Usage::default()),
            },
            "parent_tool_use_id": null,
            "session_id": self.info.session_id,
            "uuid": new_uuid(),
        })
    }

    /// Before a thinking block's line, Claude Code's estimate of its tokens
    /// (a quarter of its characters, rounded up): the `system` /
    /// `thinking_tokens` line, in stream-json.
    fn thinking_tokens(&self, event: &AgentEvent) -> Option<Value> {
        let AgentEvent::AssistantBlock {
            block: ContentBlock::Thinking { thinking, .. },
            ..
        } = event
        else {
            return None;
        };
        if self.format != OutputFormat::StreamJson {
            return None;
        }
        let estimated = thinking.chars().count().div_ceil(4);
        Some(json!({
            "type": "system",
            "subtype": "thinking_tokens",
            "estimated_tokens": estimated,
            "estimated_tokens_delta": estimated,
            "uuid": new_uuid(),
            "session_id": self.info.session_id,
        }))
    }
}

impl<W: Write + Send> Printer<W> {
    /// The stream-json line of one event (`None`: not printed), by family.
    fn line_for(&self, event: AgentEvent) -> Option<Value> {
        match event {
            AgentEvent::Child { event, .. } => self.line_for(*event),
            event @ (AgentEvent::TaskStarted { .. }
            | AgentEvent::TaskProgress { .. }
            | AgentEvent::TaskNotification { .. }) => self.task_line(event),
            event @ (AgentEvent::AssistantBlock { .. }
            | AgentEvent::ToolResult(_)
            | AgentEvent::SyntheticUser { .. }
            | AgentEvent::UserReplay { .. }
            | AgentEvent::Partial(_)
            | AgentEvent::LocalAnswer { .. }
            | AgentEvent::Error { .. }) => self.message_line(event),
            event @ (AgentEvent::PermissionDenied(_)
            | AgentEvent::AutoModeDecision { .. }
            | AgentEvent::ApiRetry { .. }
            | AgentEvent::ModelFallback { .. }
            | AgentEvent::Tombstone { .. }
            | AgentEvent::CompactBoundary { .. }
            | AgentEvent::CommandLifecycle { .. }) => self.loop_line(event),
            event @ (AgentEvent::Warning { .. }
            | AgentEvent::Informational { .. }
            | AgentEvent::HookStarted { .. }
            | AgentEvent::HookResponse { .. }) => self.notice_line(event),
            // Shown on the screen and to an editor; Claude Code's stream
            // has no line for it.
            AgentEvent::ToolProgress { .. } => None,
        }
    }
}

pub(super) fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
    })
}

pub(super) fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Where a run's events go, told when it starts and when each turn ends:
/// the printer, or the interactive screen.
pub trait RunOutput: EventSink + Clone + Send + 'static {
    fn start(&self);
    fn finish(&self, outcome: &QueryOutcome);
}

impl<W: Write + Send + 'static> RunOutput for SharedPrinter<W> {
    fn start(&self) {
        SharedPrinter::start(self);
    }

    fn finish(&self, outcome: &QueryOutcome) {
        SharedPrinter::finish(self, outcome);
    }
}

/// A printer shared by the loop and the input reader (which reports queued
/// messages while a turn runs).
pub struct SharedPrinter<W: Write + Send>(std::sync::Arc<std::sync::Mutex<Printer<W>>>);

impl<W: Write + Send> Clone for SharedPrinter<W> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<W: Write + Send> SharedPrinter<W> {
    pub fn new(printer: Printer<W>) -> Self {
        Self(std::sync::Arc::new(std::sync::Mutex::new(printer)))
    }

    pub fn start(&self) {
        if let Ok(mut printer) = self.0.lock() {
            printer.start();
        }
    }

    pub fn finish(&self, outcome: &QueryOutcome) {
        if let Ok(mut printer) = self.0.lock() {
            printer.finish(outcome);
        }
    }

    /// The `result` line `finish` printed, once it has.
    pub fn printed_result(&self) -> Option<Value> {
        self.0.lock().ok().and_then(|p| p.printed_result.clone())
    }
}

impl<W: Write + Send> SharedPrinter<W> {
    /// Changes what `system`/`init` will say (tools and servers that
    /// joined before it is printed).
    pub fn update_info(&self, update: impl FnOnce(&mut RunInfo)) {
        if let Ok(mut printer) = self.0.lock() {
            update(&mut printer.info);
        }
    }
}

impl<W: Write + Send> crate::control::LineOut for SharedPrinter<W> {
    fn line(&self, value: Value) {
        if let Ok(mut printer) = self.0.lock() {
            printer.line(value);
        }
    }
}

impl<W: Write + Send> EventSink for SharedPrinter<W> {
    fn emit(&mut self, event: AgentEvent) {
        if let Ok(mut printer) = self.0.lock() {
            printer.emit(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContentBlock;

    fn printer() -> Printer<Vec<u8>> {
        Printer::new(
            OutputFormat::StreamJson,
            true,
            Vec::new(),
            RunInfo {
                session_id: "s".into(),
                cwd: "/w".into(),
                model: "m".into(),
                tools: Vec::new(),
                permission_mode: "default".into(),
                api_key_source: "none".into(),
                started: Instant::now(),
                plugins: Vec::new(),
                mcp_servers: Vec::new(),
                agents: Vec::new(),
                slash_commands: Vec::new(),
                skills: Vec::new(),
                output_style: "default".into(),
            },
        )
    }

    fn printed(printer: &Printer<Vec<u8>>) -> Vec<Value> {
        String::from_utf8_lossy(&printer.out)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    #[test]
    fn a_child_loops_lines_name_the_parents_call() {
        let mut printer = printer();
        let block = AgentEvent::AssistantBlock {
            message_id: "msg".into(),
            model: "m".into(),
            block: ContentBlock::Text {
                text: "from the child".into(),
            },
            usage: Usage::default(),
        };
        printer.emit(block.clone());
        printer.emit(AgentEvent::Child {
            parent_tool_use_id: "toolu_agent".into(),
            event: Box::new(block),
        });
        // Filtered events stay filtered inside a child.
        printer.emit(AgentEvent::Child {
            parent_tool_use_id: "toolu_agent".into(),
            event: Box::new(AgentEvent::UserReplay {
                uuid: "u".into(),
                text: "t".into(),
            }),
        });
        let lines = printed(&printer);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["parent_tool_use_id"], Value::Null);
        assert_eq!(lines[1]["parent_tool_use_id"], "toolu_agent");
        assert_eq!(lines[1]["message"]["content"][0]["text"], "from the child");
    }
}
