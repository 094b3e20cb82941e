//! The context pipeline that runs before each request (seed 002's order,
//! the parts carapace has): the tool-result budget (applied when results
//! are made, in the tools wing), microcompact of old tool results, then
//! auto-compaction at a threshold of the model's context window, then the
//! blocking-limit check. Reactive compaction (once, on `prompt_too_long`)
//! and the rapid-refill breaker use the same pieces.
//!
//! Sizes are in tokens, estimated: the last response's usage says exactly
//! how large the history was when it was sent; what was added since is
//! estimated from its serialized size (four bytes a token, as the API's
//! own rule of thumb goes).

use super::loop_hooks::{CompactTrigger, LoopHooks, PreCompactDecision};
use crate::model::{
    ContentBlock, FailureKind, Message, MessagesRequest, Model, ModelError, Role,
    ToolResultContent, ToolSpec, Usage, whole_response,
};

/// The context windows of the models carapace knows, by name prefix (the
/// first match wins); anything else gets [`DEFAULT_CONTEXT_WINDOW`].
const CONTEXT_WINDOWS: &[(&str, u64)] = &[
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5", 200_000),
    ("claude-3", 200_000),
];
const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;
/// Room kept for the answer: the window less this is what a request may use.
const OUTPUT_RESERVE: u64 = 20_000;
/// Auto-compaction starts this far below the usable window.
const AUTOCOMPACT_MARGIN: u64 = 13_000;
/// A request this close to the usable window is not sent.
const BLOCKING_MARGIN: u64 = 3_000;
/// Tool results this recent are never cleared by microcompact.
const MICROCOMPACT_KEEP_RECENT: usize = 3;
/// Tool results shorter than this are not worth clearing.
const MICROCOMPACT_MIN_CHARS: usize = 400;
pub(super) const CLEARED_TOOL_RESULT: &str = "[Old tool result content cleared]";
/// A compaction needed again within this many turns of the last one is a
/// rapid refill.
pub(super) const RAPID_REFILL_TURNS: u32 = 1;
/// Rapid refills in a row after which the loop stops instead of compacting
/// again (summarise → full at once → summarise … would never end).
pub(super) const RAPID_REFILL_LIMIT: u32 = 3;
/// Failed auto-compactions in a row after which no more are tried.
pub(super) const AUTOCOMPACT_FAILURE_LIMIT: u32 = 3;

/// Summary requests for one compaction: when the history is too long even
/// to be summarised, the oldest part is left out and the request sent
/// again.
const SUMMARY_TRIES: usize = 3;
const LEFT_OUT_NOTE: &str =
    "(The earliest part of the conversation was too long to summarise and is not covered.)";

const SUMMARY_INSTRUCTIONS: &str = "Answer with text only: do not call any tool, whatever the tools above offer. Stop here and write a summary of this conversation so far, to replace it: the conversation has grown too long for the context window, and only your summary will remain. Write it for yourself, to carry on the work without the user repeating anything. Include: what the user asked for (every request, in their words where they matter); the decisions taken and why; the files, commands and tools involved, with the details that will matter again (paths, names, exact error messages, code that was written or must change); what has been done and verified; what is in progress at this moment and the next step. Answer with the summary only.";
const SUMMARY_PREFIX: &str = "This session continues an earlier conversation that no longer fits in the context window. What follows is a summary of it, written by you:";
const SUMMARY_SUFFIX: &str = "Carry on from where the conversation left off, with the task you were working on, without asking the user to repeat anything.";

/// How large the context may grow, for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextConfig {
    pub window: u64,
    /// Whether the loop compacts on its own when the threshold is crossed.
    pub autocompact: bool,
    /// The estimate at which auto-compaction runs.
    pub autocompact_at: u64,
    /// The estimate from which a request is known to be too long.
    pub blocking_at: u64,
}

impl ContextConfig {
    /// The limits for `model`: its window from the table, less room for
    /// the answer; `autocompact_pct` (1–100) moves the threshold to that
    /// share of the usable window, never above the default.
    pub fn for_model(model: &str, max_tokens: u32, autocompact_pct: Option<u8>) -> Self {
        let window = context_window(model);
        let usable = window.saturating_sub(OUTPUT_RESERVE.min(u64::from(max_tokens)));
        let default_threshold = usable.saturating_sub(AUTOCOMPACT_MARGIN);
        let autocompact_at = match autocompact_pct {
            Some(pct) if (1..=100).contains(&pct) => {
                (usable * u64::from(pct) / 100).min(default_threshold)
            }
            _ => default_threshold,
        };
        Self {
            window,
            autocompact: true,
            autocompact_at,
            blocking_at: usable.saturating_sub(BLOCKING_MARGIN),
        }
    }

    pub fn without_autocompact(self) -> Self {
        Self {
            autocompact: false,
            ..self
        }
    }
}

/// The context window of `model`, from the table.
pub fn context_window(model: &str) -> u64 {
    CONTEXT_WINDOWS
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map_or(DEFAULT_CONTEXT_WINDOW, |(_, window)| *window)
}

/// What the loop knows of the history's size and of its compactions.
/// Part of [`State`](super::State): rebuilt with it at each continue site.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextTracking {
    /// Tokens of `messages[..measured_len]`, from the last usage (less what
    /// microcompact freed since).
    pub measured_tokens: u64,
    pub measured_len: usize,
    /// The turn of the last compaction.
    pub compacted_at_turn: Option<u32>,
    /// Compactions in a row that were needed again at once.
    pub rapid_refills: u32,
    /// Auto-compactions in a row that failed.
    pub failures: u32,
}

impl ContextTracking {
    /// After a response: the request it answered held `sent_len` messages,
    /// and the response is the next one.
    pub fn measured(self, sent_len: usize, usage: &Usage) -> Self {
        Self {
            measured_tokens: usage.input_tokens
                + usage.cache_creation_input_tokens
                + usage.cache_read_input_tokens
                + usage.output_tokens,
            measured_len: sent_len + 1,
            ..self
        }
    }

    /// The estimated size of `messages`.
    pub fn estimate(&self, messages: &[Message]) -> u64 {
        if self.measured_len == 0 || self.measured_len > messages.len() {
            return estimate_tokens(messages);
        }
        self.measured_tokens + estimate_tokens(&messages[self.measured_len..])
    }

    /// After a compaction at `turn` that left a history of `tokens`.
    pub fn compacted(self, turn: u32, tokens: u64, len: usize) -> Self {
        let rapid = self
            .compacted_at_turn
            .is_some_and(|at| turn.saturating_sub(at) <= RAPID_REFILL_TURNS);
        Self {
            measured_tokens: tokens,
            measured_len: len,
            compacted_at_turn: Some(turn),
            rapid_refills: if rapid { self.rapid_refills + 1 } else { 0 },
            failures: 0,
        }
    }

    /// Whether compacting at `turn` would be one rapid refill too many.
    pub fn refilling_too_fast(&self, turn: u32) -> bool {
        self.compacted_at_turn
            .is_some_and(|at| turn.saturating_sub(at) <= RAPID_REFILL_TURNS)
            && self.rapid_refills + 1 >= RAPID_REFILL_LIMIT
    }
}

/// Estimated tokens of messages never measured by a response's usage.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| m.content.iter().map(block_bytes).sum::<usize>() + 8)
        .sum::<usize>()
        .div_ceil(4) as u64
}

fn block_bytes(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text } => text.len(),
        ContentBlock::Thinking { thinking, .. } => thinking.len(),
        ContentBlock::RedactedThinking { data } => data.len(),
        ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
        ContentBlock::ToolResult { content, .. } => match content {
            ToolResultContent::Text(text) => text.len(),
            ToolResultContent::Blocks(blocks) => serde_json::to_string(blocks).map_or(0, |s| {
                // An image is billed by its pixels, not its base64 size;
                // ~1,600 tokens is the API's figure for a large one.
                s.len().min(6_400)
            }),
        },
        // See above.
        ContentBlock::Image { .. } => 6_400,
        ContentBlock::ServerToolUse { input, .. } => input.to_string().len() / 4,
        ContentBlock::WebSearchToolResult { content, .. } => content.to_string().len() / 4,
    }
}

/// What microcompact did: the results it cleared and the tokens it freed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Microcompacted {
    pub cleared: Vec<String>,
    pub freed_tokens: u64,
}

/// Clears the content of old tool results (all but the most recent few,
/// and only those large enough to matter); the calls and their pairing
/// stay. Errors are kept: they say what not to do again.
pub fn microcompact(messages: &mut [Message]) -> Microcompacted {
    let mut seen = 0;
    let mut done = Microcompacted::default();
    for message in messages.iter_mut().rev() {
        if message.role != Role::User {
            continue;
        }
        for block in message.content.iter_mut().rev() {
            let ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } = block
            else {
                continue;
            };
            seen += 1;
            if seen <= MICROCOMPACT_KEEP_RECENT || *is_error {
                continue;
            }
            let before = match content {
                ToolResultContent::Text(text) if text == CLEARED_TOOL_RESULT => continue,
                ToolResultContent::Text(text) => text.len(),
                ToolResultContent::Blocks(_) => block_bytes(&ContentBlock::ToolResult {
                    tool_use_id: String::new(),
                    content: content.clone(),
                    is_error: false,
                }),
            };
            if before < MICROCOMPACT_MIN_CHARS {
                continue;
            }
            *content = ToolResultContent::Text(CLEARED_TOOL_RESULT.into());
            done.freed_tokens += ((before - CLEARED_TOOL_RESULT.len()) / 4) as u64;
            done.cleared.push(tool_use_id.clone());
        }
    }
    done
}

/// Clears the results `cleared` names (a transcript's microcompact entry
/// replayed on load).
pub fn clear_results(messages: &mut [Message], cleared: &[String]) {
    for block in messages.iter_mut().flat_map(|m| m.content.iter_mut()) {
        if let ContentBlock::ToolResult {
            tool_use_id,
            content,
            ..
        } = block
            && cleared.contains(tool_use_id)
        {
            *content = ToolResultContent::Text(CLEARED_TOOL_RESULT.into());
        }
    }
}

/// A finished compaction: the history that replaces the old one.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    pub trigger: CompactTrigger,
    /// The estimated size before and after.
    pub pre_tokens: u64,
    pub post_tokens: u64,
    pub duration: std::time::Duration,
    /// The new history: the summary, as a user message.
    pub messages: Vec<Message>,
    /// The summary request's usage.
    pub usage: Usage,
}

/// Why a history could not be compacted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompactError {
    #[error("there is nothing to compact yet")]
    NothingToCompact,
    #[error("Compaction blocked by PreCompact hook: {0}")]
    Blocked(String),
    #[error("the summary request failed: {0}")]
    Model(#[from] ModelError),
    #[error("the summary request answered without a summary")]
    EmptySummary,
    #[error("cancelled")]
    Aborted,
}

/// What a compaction needs besides the history.
pub struct CompactRequest<'a> {
    pub model: &'a dyn Model,
    pub model_name: &'a str,
    pub system_prompt: &'a str,
    pub max_tokens: u32,
    /// The session's tools, sent as they are with every request: with the
    /// same system prompt and history, the summary request reuses the
    /// prompt cache. The instructions say not to call them.
    pub tools: &'a [ToolSpec],
    pub hooks: &'a dyn LoopHooks,
    pub trigger: CompactTrigger,
    /// The user's own instructions (`/compact focus on the tests`).
    pub instructions: Option<&'a str>,
}

/// Summarises `messages` with one request to the model and returns the
/// history that replaces them. PreCompact hooks run first (they may block,
/// or add instructions); SessionStart hooks (`source: compact`) add their
/// context to the new history.
pub async fn compact(
    request: CompactRequest<'_>,
    messages: &[Message],
    pre_tokens: u64,
) -> Result<Compacted, CompactError> {
    if !messages
        .iter()
        .any(|m| m.role == Role::Assistant && !m.content.is_empty())
    {
        return Err(CompactError::NothingToCompact);
    }
    let started = std::time::Instant::now();
    let mut instructions: Vec<String> = request
        .instructions
        .map(str::to_string)
        .into_iter()
        .collect();
    let asked = request.instructions.map(str::to_string);
    match request.hooks.pre_compact(request.trigger, asked).await {
        PreCompactDecision::Block { reason } => return Err(CompactError::Blocked(reason)),
        PreCompactDecision::Continue { instructions: more } => instructions.extend(more),
    }
    let mut prompt = SUMMARY_INSTRUCTIONS.to_string();
    for extra in instructions.iter().filter(|i| !i.trim().is_empty()) {
        prompt.push_str("\n\nAlso: ");
        prompt.push_str(extra.trim());
    }
    let mut start = 0;
    let mut tries = 0;
    let (summary, usage) = loop {
        tries += 1;
        let summary_request = MessagesRequest {
            model: request.model_name.to_string(),
            max_tokens: request.max_tokens,
            system: request.system_prompt.to_string(),
            messages: summary_history(&messages[start..], &prompt),
            tools: request.tools.to_vec(),
            server_tools: Vec::new(),
            effort: None,
            thinking: None,
            task_budget: None,
            output_format: None,
            tool_choice: None,
        };
        match summarise(request.model, &summary_request).await {
            Err(CompactError::Model(error))
                if error.kind() == FailureKind::PromptTooLong && tries < SUMMARY_TRIES =>
            {
                match later_start(messages, start) {
                    Some(later) => start = later,
                    None => return Err(CompactError::Model(error)),
                }
            }
            other => break other?,
        }
    };
    let left_out = if start > 0 {
        format!("\n\n{LEFT_OUT_NOTE}")
    } else {
        String::new()
    };
    let mut content = vec![ContentBlock::Text {
        text: format!(
            "{SUMMARY_PREFIX}\n\n{}{left_out}\n\n{SUMMARY_SUFFIX}",
            summary.trim()
        ),
    }];
    content.extend(
        request
            .hooks
            .after_compact(
                request.trigger,
                summary.trim().to_string(),
                request.model_name.to_string(),
            )
            .await
            .into_iter()
            .map(|text| ContentBlock::Text { text }),
    );
    let messages = vec![Message {
        role: Role::User,
        content,
    }];
    Ok(Compacted {
        trigger: request.trigger,
        pre_tokens,
        post_tokens: estimate_tokens(&messages),
        duration: started.elapsed(),
        messages,
        usage,
    })
}

/// What the summary request carries: the history (without a last
/// message's unanswered calls), then the instructions.
fn summary_history(messages: &[Message], prompt: &str) -> Vec<Message> {
    let mut history = without_dangling_calls(messages);
    match history.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(ContentBlock::Text {
            text: prompt.to_string(),
        }),
        _ => history.push(Message::user_text(prompt)),
    }
    history
}

/// Where a shorter summary request may start: a fifth of the way further
/// at least, at a user message that answers no tool call (so nothing is
/// left unpaired).
fn later_start(messages: &[Message], start: usize) -> Option<usize> {
    let skip = ((messages.len() - start) / 5).max(1);
    (start + skip..messages.len()).find(|&i| {
        messages[i].role == Role::User
            && !messages[i]
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
    })
}

/// The history with a last assistant message's unanswered tool calls left
/// out (the API refuses a tool_use without its result).
fn without_dangling_calls(messages: &[Message]) -> Vec<Message> {
    let mut history = messages.to_vec();
    if let Some(last) = history.last_mut()
        && last.role == Role::Assistant
    {
        last.content
            .retain(|b| !matches!(b, ContentBlock::ToolUse { .. }));
        if last.content.is_empty() {
            history.pop();
        }
    }
    history
}

async fn summarise(
    model: &dyn Model,
    request: &MessagesRequest,
) -> Result<(String, Usage), CompactError> {
    let summary = whole_response(model, request).await?;
    let text = summary.text();
    if text.trim().is_empty() {
        return Err(CompactError::EmptySummary);
    }
    Ok((text, summary.usage()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, text: &str) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: ToolResultContent::Text(text.into()),
            is_error: false,
        }
    }

    #[test]
    fn thresholds_follow_the_window_table_and_the_override() {
        let config = ContextConfig::for_model("claude-sonnet-4-5", 32_000, None);
        assert_eq!(config.window, 200_000);
        assert_eq!(config.autocompact_at, 167_000);
        assert_eq!(config.blocking_at, 177_000);
        let low = ContextConfig::for_model("claude-sonnet-4-5", 32_000, Some(10));
        assert_eq!(low.autocompact_at, 18_000);
        assert_eq!(low.blocking_at, 177_000);
        // An override never moves the threshold past the default.
        let high = ContextConfig::for_model("x", 32_000, Some(100));
        assert_eq!(high.autocompact_at, 167_000);
        assert_eq!(context_window("some-other-model"), DEFAULT_CONTEXT_WINDOW);
    }

    #[test]
    fn the_estimate_starts_from_the_last_usage() {
        let messages = vec![
            Message::user_text("a".repeat(400)),
            Message::user_text("b".repeat(400)),
        ];
        let fresh = ContextTracking::default();
        assert_eq!(fresh.estimate(&messages), 204);
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 50,
            ..Usage::default()
        };
        let measured = fresh.measured(0, &usage);
        assert_eq!(measured.estimate(&messages), 1_050 + 102);
    }

    #[test]
    fn microcompact_clears_old_large_results_only() {
        let big = "x".repeat(1_000);
        let mut messages = vec![Message {
            role: Role::User,
            content: vec![
                result("old", &big),
                result("small", "ok"),
                result("r1", &big),
                result("r2", &big),
                result("r3", &big),
            ],
        }];
        let done = microcompact(&mut messages);
        assert_eq!(done.cleared, vec!["old".to_string()]);
        assert!(done.freed_tokens > 200);
        assert_eq!(messages[0].content[0], result("old", CLEARED_TOOL_RESULT));
        assert_eq!(messages[0].content[4], result("r3", &big));
        // Twice is once.
        assert!(microcompact(&mut messages).cleared.is_empty());
    }

    /// Answers a summary only when the request holds at most `fits`
    /// messages; "prompt is too long" otherwise.
    struct SmallWindow {
        fits: usize,
        seen: std::sync::Mutex<Vec<usize>>,
    }

    impl Model for SmallWindow {
        fn stream<'a>(
            &'a self,
            request: &'a MessagesRequest,
        ) -> futures::future::BoxFuture<'a, Result<crate::model::EventStream, ModelError>> {
            Box::pin(async move {
                if let Ok(mut seen) = self.seen.lock() {
                    seen.push(request.messages.len());
                }
                if request.messages.len() > self.fits {
                    return Err(ModelError::Http {
                        status: 400,
                        message: "prompt is too long: 300000 tokens > 200000 maximum".into(),
                        retry_after: None,
                    });
                }
                let events = [
                    ("message_start", r#"{"type":"message_start","message":{"id":"m","model":"m","usage":{"input_tokens":5,"output_tokens":1}}}"#),
                    ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
                    ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"SHORT SUMMARY"}}"#),
                    ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
                    ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#),
                    ("message_stop", r#"{"type":"message_stop"}"#),
                ]
                .into_iter()
                .filter_map(|(name, data)| crate::model::StreamEvent::parse(name, data).transpose())
                .collect::<Vec<_>>();
                Ok(Box::pin(futures::stream::iter(events)) as crate::model::EventStream)
            })
        }
    }

    #[tokio::test]
    async fn a_history_too_long_to_summarise_loses_its_oldest_turns() -> Result<(), String> {
        let mut messages = Vec::new();
        for n in 0..10 {
            messages.push(Message::user_text(format!("prompt {n}")));
            messages.push(Message {
                role: Role::Assistant,
                content: vec![ContentBlock::Text {
                    text: format!("answer {n}"),
                }],
            });
        }
        let model = SmallWindow {
            fits: 13,
            seen: Default::default(),
        };
        let request = CompactRequest {
            model: &model,
            model_name: "m",
            system_prompt: "s",
            max_tokens: 100,
            tools: &[],
            hooks: &super::super::NoLoopHooks,
            trigger: CompactTrigger::Auto,
            instructions: None,
        };
        let compacted = compact(request, &messages, 1_000)
            .await
            .map_err(|e| e.to_string())?;
        let seen = model.seen.lock().map(|s| s.clone()).unwrap_or_default();
        // 20 + the prompt joined as a message, then from prompt 2, then prompt 4.
        assert_eq!(seen, vec![21, 17, 13]);
        let text = match &compacted.messages[0].content[0] {
            ContentBlock::Text { text } => text.clone(),
            other => format!("{other:?}"),
        };
        assert!(
            text.contains("SHORT SUMMARY") && text.contains(LEFT_OUT_NOTE),
            "{text}"
        );

        // Too long however short: the error, after three tries.
        let never = SmallWindow {
            fits: 0,
            seen: Default::default(),
        };
        let request = CompactRequest {
            model: &never,
            model_name: "m",
            system_prompt: "s",
            max_tokens: 100,
            tools: &[],
            hooks: &super::super::NoLoopHooks,
            trigger: CompactTrigger::Auto,
            instructions: None,
        };
        let error = compact(request, &messages, 1_000).await;
        assert!(matches!(error, Err(CompactError::Model(_))), "{error:?}");
        assert_eq!(never.seen.lock().map(|s| s.len()).unwrap_or_default(), 3);
        Ok(())
    }

    #[test]
    fn rapid_refills_are_counted_and_broken() {
        let mut tracking = ContextTracking::default().compacted(2, 100, 1);
        assert_eq!(tracking.rapid_refills, 0);
        assert!(!tracking.refilling_too_fast(3));
        tracking = tracking.compacted(3, 100, 1);
        assert_eq!(tracking.rapid_refills, 1);
        tracking = tracking.compacted(4, 100, 1);
        assert_eq!(tracking.rapid_refills, 2);
        assert!(tracking.refilling_too_fast(5));
        // A compaction that held for a while resets the count.
        assert!(!tracking.refilling_too_fast(9));
        assert_eq!(tracking.compacted(9, 100, 1).rapid_refills, 0);
    }
}
