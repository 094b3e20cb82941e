//! What a print-mode run writes on stdout: text, one JSON result, or
//! Claude Code's stream-json lines (`system`/`init`, one `assistant` line per
//! completed content block, one `user` line per tool result, `result`).
//!
//! Output never carries the API key or the host's environment.

use crate::agent::{AgentEvent, EventSink, QueryOutcome};
use crate::model::{ContentBlock, ToolResultContent, Usage};
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
}

pub struct Printer<W: Write + Send> {
    format: OutputFormat,
    verbose: bool,
    out: W,
    info: RunInfo,
    /// `--output-format json --verbose` prints every line as one array.
    collected: Vec<Value>,
    write_failed: bool,
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
        }
    }

    /// Prints the `system`/`init` line (stream-json, or json with --verbose).
    pub fn start(&mut self) {
        let line = json!({
            "type": "system",
            "subtype": "init",
            "cwd": self.info.cwd,
            "session_id": self.info.session_id,
            "tools": self.info.tools,
            "mcp_servers": [],
            "model": self.info.model,
            "permissionMode": self.info.permission_mode,
            "slash_commands": [],
            "apiKeySource": self.info.api_key_source,
            "carapace_version": env!("CARGO_PKG_VERSION"),
            "output_style": "default",
            "agents": [],
            "skills": [],
            "plugins": [],
            "uuid": new_uuid(),
        });
        self.line(line);
    }

    /// Prints the final result in the chosen format.
    pub fn finish(&mut self, outcome: &QueryOutcome) {
        let result = self.result_line(outcome);
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
                let text = if outcome.terminal.is_error() {
                    format!("Error: {}", outcome.errors.join("; "))
                } else {
                    outcome.result.clone()
                };
                self.write_raw(&text);
            }
        }
    }

    pub fn result_line(&self, outcome: &QueryOutcome) -> Value {
        let mut line = json!({
            "type": "result",
            "subtype": outcome.terminal.subtype(),
            "is_error": outcome.terminal.is_error(),
            "duration_ms": self.info.started.elapsed().as_millis() as u64,
            "duration_api_ms": outcome.api_duration.as_millis() as u64,
            "num_turns": outcome.num_turns,
            "stop_reason": outcome.stop_reason,
            "session_id": self.info.session_id,
            "usage": usage_json(&outcome.usage),
            "permission_denials": outcome.permission_denials,
            "terminal_reason": outcome.terminal.as_str(),
            "uuid": new_uuid(),
        });
        if outcome.terminal.is_error() {
            line["errors"] = json!(outcome.errors);
        } else {
            line["result"] = json!(outcome.result);
        }
        line
    }

    fn line(&mut self, line: Value) {
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
            AgentEvent::AssistantBlock {
                message_id,
                model,
                block,
                usage,
            } => json!({
                "type": "assistant",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [block],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": usage_json(&usage),
                },
                "parent_tool_use_id": null,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
            }),
            AgentEvent::ToolResult(result) => {
                let block = ContentBlock::ToolResult {
                    tool_use_id: result.tool_use_id.clone(),
                    content: result.content.clone(),
                    is_error: result.is_error,
                };
                json!({
                    "type": "user",
                    "message": {"role": "user", "content": [block]},
                    "parent_tool_use_id": null,
                    "session_id": self.info.session_id,
                    "uuid": new_uuid(),
                    "tool_use_result": match &result.content {
                        ToolResultContent::Text(text) => json!(text),
                        blocks => json!(blocks),
                    },
                })
            }
            AgentEvent::Error { message } => json!({
                "type": "assistant",
                "message": {
                    "id": format!("msg_{}", uuid::Uuid::new_v4().simple()),
                    "type": "message",
                    "role": "assistant",
                    "model": "<synthetic>",
                    "content": [{"type": "text", "text": message}],
                    "stop_reason": "stop_sequence",
                    "stop_sequence": "",
                    "usage": usage_json(&Usage::default()),
                },
                "parent_tool_use_id": null,
                "session_id": self.info.session_id,
                "uuid": new_uuid(),
                "error": "unknown",
            }),
        };
        self.line(line);
    }
}

fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
    })
}

fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
