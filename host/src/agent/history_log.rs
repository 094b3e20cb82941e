//! The loop's seam for a durable copy of its history (the session's
//! transcript file, or nothing): told what the history is before it is
//! acted on, so that a crash loses at most what was being written.

use super::loop_hooks::CompactTrigger;
use crate::model::{ContentBlock, Message};

pub trait HistoryLog: Send + Sync {
    /// The history as it stands before it is acted on (sent to the model,
    /// or ended with). The loop only appends messages or extends the last
    /// one between calls, or says otherwise ([`Self::cleared`],
    /// [`Self::compacted`]).
    fn sync(&self, messages: &[Message]);

    /// A response that streamed to its end, before its calls' results are
    /// waited for: a crash while tools run does not lose it. The next
    /// [`Self::sync`] finds it as the next message.
    fn response(&self, content: &[ContentBlock]);

    /// Microcompact cleared these results' content.
    fn cleared(&self, tool_use_ids: &[String]);

    /// A compaction replaced the whole history by `messages`.
    fn compacted(&self, trigger: CompactTrigger, pre_tokens: u64, messages: &[Message]);
}

/// Where decisions made on the session's behalf are kept beside its
/// history (the transcript): auto mode's classifier's, each a JSON object
/// with its `type`.
pub trait DecisionLog: Send + Sync {
    fn decided(&self, decision: serde_json::Value);
}

/// Nothing is kept (`--no-session-persistence`, tests).
pub struct NoHistoryLog;

impl HistoryLog for NoHistoryLog {
    fn sync(&self, _messages: &[Message]) {}
    fn response(&self, _content: &[ContentBlock]) {}
    fn cleared(&self, _tool_use_ids: &[String]) {}
    fn compacted(&self, _trigger: CompactTrigger, _pre_tokens: u64, _messages: &[Message]) {}
}
