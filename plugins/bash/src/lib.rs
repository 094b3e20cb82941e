//! The Bash tool: one command line, run by the host through its process
//! capability — a real process in the OS sandbox, in a fresh environment,
//! and only the exact command line the policy granted for this call.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../wit/tool/v0.3.0",
});

use carapace::tool::process::{run, start};
use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, InterruptBehavior, ToolAnnotations,
    ToolDefinition, ToolOutput,
};
use carapace_guest_util::cap_chars;
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;

const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Characters of output the model sees.
const MAX_OUTPUT_CHARS: usize = 30_000;

#[derive(Deserialize)]
struct BashInput {
    command: String,
    timeout: Option<u64>,
    #[serde(default)]
    run_in_background: bool,
}

/// Commands that only read (so calls may overlap), when used plainly.
const READ_ONLY: &[&str] = &[
    "cat", "head", "tail", "ls", "pwd", "wc", "grep", "rg", "echo", "which", "file", "stat", "du",
    "df", "tree", "sort", "uniq", "cut", "diff", "date", "whoami", "uname", "env", "printenv",
    "basename", "dirname", "realpath", "true", "false",
];
const READ_ONLY_GIT: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "ls-files",
    "rev-parse",
    "blame",
    "branch",
];

/// Whether every part of the line only reads: a plain pipeline of known
/// read-only commands, with no redirection, substitution or sequencing.
fn read_only(command: &str) -> bool {
    if command.contains(['>', '<', ';', '&', '$', '`', '(', ')', '{', '}', '\n']) {
        return false;
    }
    command.split('|').all(|part| {
        let mut words = part.split_whitespace();
        match words.next() {
            Some("git") => words.next().is_some_and(|sub| READ_ONLY_GIT.contains(&sub)),
            Some("find") => {
                !part.contains("-delete") && !part.contains("-exec") && !part.contains("-ok")
            }
            Some(name) => READ_ONLY.contains(&name),
            None => false,
        }
    })
}

fn parse(input: &str) -> Result<BashInput, String> {
    let input: BashInput =
        serde_json::from_str(input).map_err(|e| format!("invalid input: {e}"))?;
    if input.command.trim().is_empty() {
        return Err("command is empty".into());
    }
    if input.timeout.is_some_and(|t| t > MAX_TIMEOUT_MS) {
        return Err(format!("timeout is at most {MAX_TIMEOUT_MS} ms"));
    }
    Ok(input)
}

struct BashTool;

impl Guest for BashTool {
    fn tools() -> Vec<ToolDefinition> {
        // The definition the host embeds too (see tool.json).
        carapace_guest_util::tools_from_json!()
    }

    fn plan(_tool: String, input: String) -> Result<CallPlan, String> {
        let input = parse(&input)?;
        Ok(CallPlan {
            concurrency_safe: read_only(&input.command),
            interrupt: InterruptBehavior::Cancel,
            needs: vec![Capability::Process(input.command)],
        })
    }

    fn call(_tool: String, input: String, context: CallContext) -> Result<ToolOutput, CallError> {
        let input = parse(&input).map_err(CallError::InvalidInput)?;
        if input.run_in_background {
            let id = start(&input.command).map_err(CallError::Failed)?;
            return Ok(ToolOutput {
                content: vec![Content::Text(format!(
                    "Command running in the background with id {id}. Read its output with BashOutput (bash_id \"{id}\"); stop it with KillShell."
                ))],
                is_error: false,
                structured: context.wants_structured.then(|| {
                    serde_json::json!({
                        "stdout": "",
                        "stderr": "",
                        "interrupted": false,
                        "isImage": false,
                        "noOutputExpected": false,
                        "backgroundTaskId": id,
                    })
                    .to_string()
                }),
            });
        }
        let timeout = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
        let output = run(&input.command, timeout).map_err(CallError::Failed)?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        // Claude Code's shape for Bash's structured result.
        let structured = serde_json::json!({
            "stdout": cap_chars(stdout.trim_end(), MAX_OUTPUT_CHARS),
            "stderr": cap_chars(stderr.trim_end(), MAX_OUTPUT_CHARS),
            "interrupted": output.timed_out,
            "isImage": false,
            "noOutputExpected": false,
        });
        let mut text = stdout.trim_end().to_string();
        if !stderr.trim().is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(stderr.trim_end());
        }
        if output.truncated {
            text.push_str("\n[output beyond the host's capture limit was dropped]");
        }
        let mut text = cap_chars(&text, MAX_OUTPUT_CHARS);
        let failed = if output.timed_out {
            text.push_str(&format!(
                "\nCommand timed out after {timeout} ms and was stopped."
            ));
            true
        } else {
            match output.exit_code {
                Some(0) => false,
                Some(code) => {
                    text.push_str(&format!("\nExit code {code}"));
                    true
                }
                None => {
                    text.push_str("\nThe command was killed by a signal.");
                    true
                }
            }
        };
        if text.trim().is_empty() {
            text = "(no output)".into();
        }
        Ok(ToolOutput {
            content: vec![Content::Text(text)],
            is_error: failed,
            structured: context.wants_structured.then(|| structured.to_string()),
        })
    }
}

export!(BashTool);
