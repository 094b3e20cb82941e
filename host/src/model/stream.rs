//! The streamed response: SSE event payloads, and their assembly into
//! complete content blocks.
//!
//! A block is complete at its `content_block_stop`, before the response ends:
//! that is when a `tool_use` may start executing.

use super::ModelError;
use super::messages::{ContentBlock, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One SSE event's `data`, as the Messages API sends it.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: usize,
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: Value,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ApiErrorBody,
    },
}

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
pub struct MessageStart {
    pub id: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
pub struct MessageDeltaBody {
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub stop_sequence: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
pub struct ApiErrorBody {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

impl StreamEvent {
    /// Parses one SSE event. Event types this version does not know are
    /// `Ok(None)`: the API may add events, and ignoring them is what its
    /// versioning policy asks of clients.
    pub fn parse(event_name: &str, data: &str) -> Result<Option<Self>, ModelError> {
        let value: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::Stream(format!("event `{event_name}` has invalid JSON data: {e}"))
        })?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event_name)
            .to_string();
        const KNOWN: &[&str] = &[
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
            "ping",
            "error",
        ];
        if !KNOWN.contains(&kind.as_str()) {
            return Ok(None);
        }
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| ModelError::Stream(format!("malformed `{kind}` event: {e}")))
    }
}

/// A block at its `content_block_stop`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedBlock {
    pub index: usize,
    pub block: ContentBlock,
    /// For a `tool_use` whose streamed input was not valid JSON: why, and
    /// the raw text. The block then carries an empty object as input.
    pub invalid_tool_input: Option<InvalidToolInput>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InvalidToolInput {
    pub raw: String,
    pub error: String,
}

/// What the assembler reports as events arrive.
#[derive(Debug, Clone, PartialEq)]
pub enum Assembled {
    MessageStarted { id: String, model: String },
    BlockCompleted(CompletedBlock),
    Nothing,
    MessageStopped,
}

#[derive(Debug)]
enum PartialBlock {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
        /// Bytes of input past [`MAX_TOOL_INPUT_BYTES`], not kept.
        dropped: usize,
    },
    /// A server tool's call: its input streams like a tool_use's.
    ServerToolUse {
        id: String,
        name: String,
        json: String,
    },
    /// A web search's results, whole in the start event.
    WebSearchResult {
        tool_use_id: String,
        content: Value,
    },
    /// A block type this version does not know; dropped at its stop.
    Unknown(String),
}

/// The most input one tool call may stream. A real response is bounded by
/// its max_tokens (well under 1 MiB); more is a broken or hostile server,
/// and keeping it would put it in every later request (the API takes 32 MB
/// a request). Past it the input is dropped as it arrives, and the call
/// fails as one whose input does not parse.
pub const MAX_TOOL_INPUT_BYTES: usize = 8 << 20;

/// How much of an input too large to keep is shown in its error.
const SHOWN_OF_DROPPED_INPUT: usize = 1024;

/// Builds the assistant message from the stream's events.
#[derive(Debug, Default)]
pub struct ResponseAssembler {
    id: Option<String>,
    model: String,
    open: BTreeMap<usize, PartialBlock>,
    completed: Vec<(usize, ContentBlock)>,
    stop_reason: Option<String>,
    usage: Usage,
    stopped: bool,
}

impl ResponseAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, event: StreamEvent) -> Result<Assembled, ModelError> {
        match event {
            StreamEvent::MessageStart { message } => {
                self.id = Some(message.id.clone());
                self.model = message.model.clone();
                self.usage = message.usage;
                Ok(Assembled::MessageStarted {
                    id: message.id,
                    model: message.model,
                })
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.block_started(index, content_block),
            StreamEvent::ContentBlockDelta { index, delta } => self.block_delta(index, delta),
            StreamEvent::ContentBlockStop { index } => self.block_stopped(index),
            StreamEvent::MessageDelta { delta, usage } => {
                self.message_delta(delta, usage);
                Ok(Assembled::Nothing)
            }
            StreamEvent::MessageStop => {
                self.require_started("message_stop")?;
                self.stopped = true;
                Ok(Assembled::MessageStopped)
            }
            StreamEvent::Ping => Ok(Assembled::Nothing),
            StreamEvent::Error { error } => Err(ModelError::Api {
                kind: error.kind,
                message: error.message,
            }),
        }
    }

    /// `content_block_start`: a block opens, as its type says.
    fn block_started(
        &mut self,
        index: usize,
        content_block: Value,
    ) -> Result<Assembled, ModelError> {
        self.require_started("content_block_start")?;
        let kind = content_block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("");
        let text_of = |field: &str| {
            content_block
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let partial = match kind {
            "text" => PartialBlock::Text(text_of("text")),
            "thinking" => PartialBlock::Thinking {
                thinking: text_of("thinking"),
                signature: text_of("signature"),
            },
            "redacted_thinking" => PartialBlock::RedactedThinking(text_of("data")),
            "tool_use" => {
                let id = text_of("id");
                let name = text_of("name");
                if id.is_empty() || name.is_empty() {
                    return Err(ModelError::Stream(
                        "tool_use block without an id or a name".into(),
                    ));
                }
                // The start event carries `input: {}`; the real input
                // arrives as `input_json_delta` fragments.
                PartialBlock::ToolUse {
                    id,
                    name,
                    json: String::new(),
                    dropped: 0,
                }
            }
            "server_tool_use" => PartialBlock::ServerToolUse {
                id: text_of("id"),
                name: text_of("name"),
                json: String::new(),
            },
            "web_search_tool_result" => PartialBlock::WebSearchResult {
                tool_use_id: text_of("tool_use_id"),
                content: content_block.get("content").cloned().unwrap_or(Value::Null),
            },
            other => PartialBlock::Unknown(other.to_string()),
        };
        if self.open.insert(index, partial).is_some() {
            return Err(ModelError::Stream(format!(
                "content block {index} started twice"
            )));
        }
        Ok(Assembled::Nothing)
    }

    /// `content_block_delta`: a fragment of an open block.
    fn block_delta(&mut self, index: usize, delta: Value) -> Result<Assembled, ModelError> {
        let Some(block) = self.open.get_mut(&index) else {
            return Err(ModelError::Stream(format!(
                "delta for content block {index}, which is not open"
            )));
        };
        let kind = delta.get("type").and_then(Value::as_str).unwrap_or("");
        let field = |name: &str| delta.get(name).and_then(Value::as_str).unwrap_or_default();
        match (block, kind) {
            (PartialBlock::Text(text), "text_delta") => text.push_str(field("text")),
            (PartialBlock::Thinking { thinking, .. }, "thinking_delta") => {
                thinking.push_str(field("thinking"))
            }
            (PartialBlock::Thinking { signature, .. }, "signature_delta") => {
                signature.push_str(field("signature"))
            }
            (PartialBlock::ToolUse { json, dropped, .. }, "input_json_delta") => {
                let fragment = field("partial_json");
                match *dropped == 0 && json.len() + fragment.len() <= MAX_TOOL_INPUT_BYTES {
                    true => json.push_str(fragment),
                    false => *dropped += fragment.len(),
                }
            }
            (PartialBlock::ServerToolUse { json, .. }, "input_json_delta") => {
                json.push_str(field("partial_json"))
            }
            // Citations and deltas of unknown blocks carry nothing we keep.
            (_, "citations_delta") | (PartialBlock::Unknown(_), _) => {}
            (_, other) => {
                return Err(ModelError::Stream(format!(
                    "delta `{other}` does not fit content block {index}"
                )));
            }
        }
        Ok(Assembled::Nothing)
    }

    /// `content_block_stop`: the block completes (a tool call's input is
    /// parsed now; one that does not parse is kept as invalid).
    fn block_stopped(&mut self, index: usize) -> Result<Assembled, ModelError> {
        let Some(partial) = self.open.remove(&index) else {
            return Err(ModelError::Stream(format!(
                "stop for content block {index}, which is not open"
            )));
        };
        let mut invalid_tool_input = None;
        let block = match partial {
            PartialBlock::Text(text) => ContentBlock::Text { text },
            PartialBlock::Thinking {
                thinking,
                signature,
            } => ContentBlock::Thinking {
                thinking,
                signature,
            },
            PartialBlock::RedactedThinking(data) => ContentBlock::RedactedThinking { data },
            PartialBlock::ToolUse {
                id,
                name,
                mut json,
                dropped,
            } if dropped > 0 => {
                let total = json.len() + dropped;
                json.truncate(floor_char_boundary(&json, SHOWN_OF_DROPPED_INPUT));
                json.push('…');
                invalid_tool_input = Some(InvalidToolInput {
                    raw: json,
                    error: format!(
                        "the input streamed for this call is {total} bytes, more than carapace takes ({} MiB); it was not read",
                        MAX_TOOL_INPUT_BYTES >> 20
                    ),
                });
                ContentBlock::ToolUse {
                    id,
                    name,
                    input: Value::Object(Default::default()),
                }
            }
            PartialBlock::ToolUse { id, name, json, .. } => {
                let input = if json.trim().is_empty() {
                    Value::Object(Default::default())
                } else {
                    match serde_json::from_str::<Value>(&json) {
                        Ok(value) => value,
                        Err(e) => {
                            invalid_tool_input = Some(InvalidToolInput {
                                raw: json,
                                error: e.to_string(),
                            });
                            Value::Object(Default::default())
                        }
                    }
                };
                ContentBlock::ToolUse { id, name, input }
            }
            PartialBlock::ServerToolUse { id, name, json } => ContentBlock::ServerToolUse {
                id,
                name,
                input: serde_json::from_str(&json)
                    .unwrap_or_else(|_| Value::Object(Default::default())),
            },
            PartialBlock::WebSearchResult {
                tool_use_id,
                content,
            } => ContentBlock::WebSearchToolResult {
                tool_use_id,
                content,
            },
            PartialBlock::Unknown(kind) => {
                tracing::debug!(kind, "dropping a content block of an unknown type");
                return Ok(Assembled::Nothing);
            }
        };
        self.completed.push((index, block.clone()));
        Ok(Assembled::BlockCompleted(CompletedBlock {
            index,
            block,
            invalid_tool_input,
        }))
    }

    /// `message_delta`: the stop reason, and usage (cumulative for output
    /// tokens; it may restate the input counts).
    fn message_delta(&mut self, delta: MessageDeltaBody, usage: Option<Usage>) {
        if delta.stop_reason.is_some() {
            self.stop_reason = delta.stop_reason;
        }
        if let Some(usage) = usage {
            // message_delta usage is cumulative for output tokens and
            // may restate the input counts.
            self.usage.output_tokens = usage.output_tokens;
            if usage.input_tokens > 0 {
                self.usage.input_tokens = usage.input_tokens;
            }
            if usage.cache_creation_input_tokens > 0 {
                self.usage.cache_creation_input_tokens = usage.cache_creation_input_tokens;
            }
            if usage.cache_read_input_tokens > 0 {
                self.usage.cache_read_input_tokens = usage.cache_read_input_tokens;
            }
        }
    }

    fn require_started(&self, event: &str) -> Result<(), ModelError> {
        if self.id.is_none() {
            return Err(ModelError::Stream(format!(
                "`{event}` before `message_start`"
            )));
        }
        Ok(())
    }

    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn stop_reason(&self) -> Option<&str> {
        self.stop_reason.as_deref()
    }

    pub fn usage(&self) -> Usage {
        self.usage
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The completed blocks, in index order.
    pub fn content(&self) -> Vec<ContentBlock> {
        let mut blocks = self.completed.clone();
        blocks.sort_by_key(|(index, _)| *index);
        blocks.into_iter().map(|(_, block)| block).collect()
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(value: Value) -> StreamEvent {
        let kind = value["type"].as_str().unwrap_or_default().to_string();
        match StreamEvent::parse(&kind, &value.to_string()) {
            Ok(Some(event)) => event,
            other => panic!("not an event: {other:?}"),
        }
    }

    #[test]
    fn a_tool_input_past_the_cap_is_dropped_as_it_streams_and_fails_the_call()
    -> Result<(), ModelError> {
        let mut a = ResponseAssembler::new();
        a.push(event(
            json!({"type":"message_start","message":{"id":"msg_1","model":"m","usage":{}}}),
        ))?;
        a.push(event(json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_big","name":"Write","input":{}}})))?;
        a.push(event(json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"content\":\"é"}})))?;
        let chunk = "x".repeat(1 << 20);
        for _ in 0..(MAX_TOOL_INPUT_BYTES >> 20) + 2 {
            a.push(event(json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":chunk}})))?;
        }
        a.push(event(json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"}"}})))?;
        let Assembled::BlockCompleted(done) =
            a.push(event(json!({"type":"content_block_stop","index":0})))?
        else {
            panic!("the block did not complete");
        };
        assert_eq!(
            done.block,
            ContentBlock::ToolUse {
                id: "toolu_big".into(),
                name: "Write".into(),
                input: json!({})
            }
        );
        let invalid = done
            .invalid_tool_input
            .unwrap_or_else(|| panic!("not refused"));
        assert!(
            invalid.error.contains("more than carapace takes"),
            "{}",
            invalid.error
        );
        assert!(invalid.raw.len() <= SHOWN_OF_DROPPED_INPUT + '…'.len_utf8());
        // Under the cap, the same stream is read.
        let mut a = ResponseAssembler::new();
        a.push(event(
            json!({"type":"message_start","message":{"id":"msg_2","model":"m","usage":{}}}),
        ))?;
        a.push(event(json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"Write","input":{}}})))?;
        a.push(event(json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":format!("{{\"content\":\"{chunk}\"}}")}})))?;
        let Assembled::BlockCompleted(done) =
            a.push(event(json!({"type":"content_block_stop","index":0})))?
        else {
            panic!("the block did not complete");
        };
        assert_eq!(done.invalid_tool_input, None);
        Ok(())
    }

    #[test]
    fn assembles_text_and_tool_use_completing_at_block_stop() -> Result<(), ModelError> {
        let mut a = ResponseAssembler::new();
        a.push(event(json!({"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":7}}})))?;
        a.push(event(json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})))?;
        a.push(event(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}})))?;
        a.push(event(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}})))?;
        let text = a.push(event(json!({"type":"content_block_stop","index":0})))?;
        assert_eq!(
            text,
            Assembled::BlockCompleted(CompletedBlock {
                index: 0,
                block: ContentBlock::Text {
                    text: "Hello".into()
                },
                invalid_tool_input: None
            })
        );
        a.push(event(json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}})))?;
        a.push(event(json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_"}})))?;
        a.push(event(json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"path\":\"/a\"}"}})))?;
        let tool = a.push(event(json!({"type":"content_block_stop","index":1})))?;
        assert_eq!(
            tool,
            Assembled::BlockCompleted(CompletedBlock {
                index: 1,
                block: ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "/a"})
                },
                invalid_tool_input: None
            })
        );
        a.push(event(json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":12}})))?;
        assert_eq!(
            a.push(event(json!({"type":"message_stop"})))?,
            Assembled::MessageStopped
        );
        assert_eq!(a.stop_reason(), Some("tool_use"));
        assert_eq!(
            a.usage(),
            Usage {
                input_tokens: 7,
                output_tokens: 12,
                ..Usage::default()
            }
        );
        Ok(())
    }

    #[test]
    fn invalid_tool_json_is_reported_not_fatal() -> Result<(), ModelError> {
        let mut a = ResponseAssembler::new();
        a.push(event(
            json!({"type":"message_start","message":{"id":"m","model":"m"}}),
        ))?;
        a.push(event(json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"Read","input":{}}})))?;
        a.push(event(json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\": "}})))?;
        let Assembled::BlockCompleted(done) =
            a.push(event(json!({"type":"content_block_stop","index":0})))?
        else {
            panic!("block not completed");
        };
        assert_eq!(
            done.block,
            ContentBlock::ToolUse {
                id: "t".into(),
                name: "Read".into(),
                input: json!({})
            }
        );
        assert_eq!(
            done.invalid_tool_input.map(|i| i.raw),
            Some("{\"file_path\": ".to_string())
        );
        Ok(())
    }

    #[test]
    fn protocol_violations_are_errors() {
        let mut a = ResponseAssembler::new();
        assert!(matches!(
            a.push(event(
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text"}})
            )),
            Err(ModelError::Stream(_))
        ));
        assert!(matches!(
            a.push(event(
                json!({"type":"error","error":{"type":"overloaded_error","message":"busy"}})
            )),
            Err(ModelError::Api { .. })
        ));
        assert_eq!(
            StreamEvent::parse("future_event", r#"{"type":"future_event"}"#).ok(),
            Some(None)
        );
    }
}
