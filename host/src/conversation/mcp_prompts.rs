//! An MCP server's prompt typed as a command (`/mcp__server__prompt
//! args`): its arguments taken from the words after it, the prompt filled
//! in by the server (through its bridge), and what the server wrote sent
//! as the user's message under the command's header, as Claude Code
//! sends it.

use crate::mcp::{McpPrompt, McpServer};
use crate::sandbox::ToolContent;
use std::sync::Arc;

/// A prompt the user named, with what they typed after it.
pub struct PromptCall {
    pub server: Arc<McpServer>,
    pub prompt: McpPrompt,
    pub command: String,
    pub args: String,
}

impl PromptCall {
    /// Each declared argument takes a word, in order; the last takes the
    /// rest of the line. A required argument left out is refused here,
    /// before the server is asked.
    fn arguments(&self) -> Result<Vec<(String, String)>, String> {
        let words: Vec<&str> = self.args.split_whitespace().collect();
        let last = self.prompt.arguments.len().saturating_sub(1);
        let mut values = Vec::new();
        for (i, (name, _, required)) in self.prompt.arguments.iter().enumerate() {
            let value = match i == last {
                true => words.get(i..).map(|rest| rest.join(" ")),
                false => words.get(i).map(|w| w.to_string()),
            };
            match value.filter(|v| !v.is_empty()) {
                Some(value) => values.push((name.clone(), value)),
                None if *required => {
                    let names: Vec<&str> =
                        self.prompt.arguments.iter().map(|a| a.0.as_str()).collect();
                    return Err(format!(
                        "/{} needs `{name}` (its arguments, in order: {})",
                        self.command,
                        names.join(" ")
                    ));
                }
                None => {}
            }
        }
        Ok(values)
    }

    /// The user message's texts: the header, then each message the server
    /// wrote (an image it sent is named, not shown).
    pub async fn expand(&self) -> Result<Vec<String>, String> {
        let arguments = self.arguments()?;
        let messages = self
            .server
            .get_prompt(&self.prompt.name, arguments)
            .await
            .map_err(|e| {
                format!(
                    "MCP server `{}` could not give /{}: {e}",
                    self.server.name, self.command
                )
            })?;
        let mut texts = vec![crate::commands::invocation_header(
            &self.command,
            &self.args,
        )];
        texts.extend(messages.into_iter().map(|m| match m.content {
            ToolContent::Text(text) => text,
            ToolContent::Image { media_type, .. } => {
                format!("[an image ({media_type}) from the prompt, not shown]")
            }
        }));
        Ok(texts)
    }
}
