//! How a response and its results become history: the assistant message,
//! the user message of tool results (in delivery order), the messages the
//! loop adds itself — and what of each is shown.

use super::events::AgentEvent;
use super::executor::ToolExecutor;
use super::loop_hooks::BatchCall;
use super::run::Run;
use super::tools::ToolCallResult;
use crate::model::{ContentBlock, InvalidToolInput, Message, Role};
use serde_json::{Value, json};

/// What history keeps of unparsable tool input: Claude Code's
/// `__unparsedToolInput` placeholder, so the model sees what it sent
/// without the history holding invalid JSON. `raw` keeps at most this many
/// UTF-16 units (JavaScript string length, as Claude Code counts).
const UNPARSED_RAW_UNITS: usize = 2048;

impl Run<'_, '_> {
    /// Appends the assistant message and the user message holding the tool
    /// results (in delivery order); returns the results message's content so
    /// hook context and queued input can join it.
    pub(super) fn append_turn(
        &mut self,
        messages: &mut Vec<Message>,
        content: Vec<ContentBlock>,
        results: Vec<ToolCallResult>,
    ) -> Vec<ContentBlock> {
        self.totals
            .denials
            .extend(results.iter().filter_map(|r| r.denial.as_deref().cloned()));
        self.totals.user_messages += results.len() as u32;
        push_assistant(messages, content);
        let blocks: Vec<ContentBlock> = results
            .into_iter()
            .map(|r| ContentBlock::ToolResult {
                tool_use_id: r.tool_use_id,
                content: r.content,
                is_error: r.is_error,
            })
            .collect();
        if !blocks.is_empty() {
            messages.push(Message {
                role: Role::User,
                content: blocks.clone(),
            });
        }
        blocks
    }

    /// Appends a user message the loop writes itself (a nudge, hook
    /// feedback), shown as a synthetic user line when `shown`.
    pub(super) fn add_user_text(&mut self, messages: &mut Vec<Message>, text: &str, shown: bool) {
        push_user_text(messages, text);
        self.totals.user_messages += 1;
        if shown {
            self.sink
                .emit(AgentEvent::SyntheticUser { text: text.into() });
        }
    }

    pub(super) fn emit_results(&mut self, results: &[ToolCallResult]) {
        for result in results {
            self.emit_result(result);
        }
    }

    /// A result, preceded by its `permission_denied` line when the policy
    /// refused the call.
    pub(super) fn emit_result(&mut self, result: &ToolCallResult) {
        // A deferred call's result is shown only if the batch goes on (it
        // then says the call was not run); a batch of just that call ends
        // the run.
        if result.hooks.deferred {
            return;
        }
        if let Some(denial) = &result.denial {
            self.sink
                .emit(AgentEvent::PermissionDenied(denial.as_ref().clone()));
        }
        self.sink.emit(AgentEvent::ToolResult(result.clone()));
    }
}

/// Appends an assistant message; an empty one is dropped (the API rejects
/// it, and it says nothing).
pub(super) fn push_assistant(messages: &mut Vec<Message>, content: Vec<ContentBlock>) {
    if !content.is_empty() {
        messages.push(Message {
            role: Role::Assistant,
            content,
        });
    }
}

/// Appends a user text, joining the last message when it is the user's (two
/// user messages in a row are one turn to the API).
fn push_user_text(messages: &mut Vec<Message>, text: &str) {
    let block = ContentBlock::Text { text: text.into() };
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(block),
        _ => messages.push(Message {
            role: Role::User,
            content: vec![block],
        }),
    }
}

/// The placeholder input of a call whose input was not valid JSON.
fn unparsed_input(invalid: &InvalidToolInput) -> Value {
    let mut units = 0;
    let raw: String = invalid
        .raw
        .chars()
        .take_while(|c| {
            units += c.len_utf16();
            units <= UNPARSED_RAW_UNITS
        })
        .collect();
    json!({"__unparsedToolInput": {
        "raw": raw,
        "len": invalid.raw.encode_utf16().count(),
    }})
}

/// A block as the assistant line shows it: a tool call whose input could
/// not be parsed shows the placeholder history will keep.
pub(super) fn shown_block(
    block: &ContentBlock,
    invalid: Option<&InvalidToolInput>,
) -> ContentBlock {
    match (block, invalid) {
        (ContentBlock::ToolUse { id, name, .. }, Some(invalid)) => ContentBlock::ToolUse {
            id: id.clone(),
            name: name.clone(),
            input: unparsed_input(invalid),
        },
        _ => block.clone(),
    }
}

/// The response as history keeps it (see [`shown_block`]).
pub(super) fn history_content(
    content: Vec<ContentBlock>,
    executor: &ToolExecutor,
) -> Vec<ContentBlock> {
    content
        .into_iter()
        .map(|block| match &block {
            ContentBlock::ToolUse { id, .. } => shown_block(&block, executor.invalid_input(id)),
            _ => block,
        })
        .collect()
}

/// The batch's calls with their results, for PostToolBatch hooks.
pub(super) fn batch_calls(content: &[ContentBlock], results: &[ToolCallResult]) -> Vec<BatchCall> {
    results
        .iter()
        .map(|result| {
            let (name, input) = content
                .iter()
                .find_map(|b| match b {
                    ContentBlock::ToolUse { id, name, input } if *id == result.tool_use_id => {
                        Some((name.clone(), input.clone()))
                    }
                    _ => None,
                })
                .unwrap_or_default();
            BatchCall {
                tool_name: name,
                tool_input: input,
                tool_use_id: result.tool_use_id.clone(),
                tool_response: serde_json::to_value(&result.content).unwrap_or_default(),
            }
        })
        .collect()
}

/// The visible text of a response.
pub(super) fn final_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unparsable_input_keeps_claude_codes_placeholder() {
        let invalid = InvalidToolInput {
            raw: format!("{{\"x\": \"{}\", oops", "é".repeat(3000)),
            error: "expected value".into(),
        };
        let placeholder = unparsed_input(&invalid);
        let raw = placeholder["__unparsedToolInput"]["raw"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(raw.encode_utf16().count(), UNPARSED_RAW_UNITS);
        assert_eq!(placeholder["__unparsedToolInput"]["len"], 3014);
        // An astral character counts two units and is never split.
        let astral = InvalidToolInput {
            raw: "🦀".repeat(2000),
            error: String::new(),
        };
        let placeholder = unparsed_input(&astral);
        assert_eq!(placeholder["__unparsedToolInput"]["len"], 4000);
        assert_eq!(
            placeholder["__unparsedToolInput"]["raw"]
                .as_str()
                .map(|r| r.chars().count()),
            Some(1024)
        );
    }
}
