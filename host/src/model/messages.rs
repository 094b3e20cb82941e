//! The Messages API's wire types, as far as carapace sends and keeps them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: ToolResultContent,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    Image {
        source: ImageSource,
    },
    /// A server tool's call (the API ran it: web search).
    ServerToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// What the API's web search found, as it sent it.
    WebSearchToolResult {
        tool_use_id: String,
        content: Value,
    },
}

/// The ids of the tool calls among `blocks`, in order.
pub fn tool_use_ids(blocks: &[ContentBlock]) -> Vec<String> {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// A tool result's content: a plain string when it is one text, else blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    Text(String),
    Blocks(Vec<ToolResultBlock>),
}

impl ToolResultContent {
    /// The text of the result, images left out.
    pub fn text(&self) -> String {
        match self {
            Self::Text(t) => t.clone(),
            Self::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    ToolResultBlock::Text { text } => Some(text.as_str()),
                    ToolResultBlock::Image { .. } => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResultBlock {
    Text { text: String },
    Image { source: ImageSource },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageSource {
    #[serde(rename = "type")]
    pub kind: String,
    pub media_type: String,
    pub data: String,
}

/// Why an image cannot go to the model.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImageError {
    #[error(
        "an image of type `{0}` cannot be sent; the model reads image/png, image/jpeg, image/gif and image/webp"
    )]
    Type(String),
    #[error("an image's data ({0}) is not base64")]
    NotBase64(String),
}

impl ImageSource {
    /// Inline image data, checked before it goes to the model: a type the
    /// Messages API reads, data that decodes.
    pub fn base64(media_type: &str, data: &str) -> Result<Self, ImageError> {
        use base64::Engine;
        const TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
        if !TYPES.contains(&media_type) {
            return Err(ImageError::Type(media_type.into()));
        }
        let decoded = base64::engine::general_purpose::STANDARD.decode(data);
        if decoded.map_or(true, |bytes| bytes.is_empty()) {
            return Err(ImageError::NotBase64(media_type.into()));
        }
        Ok(Self {
            kind: "base64".into(),
            media_type: media_type.into(),
            data: data.into(),
        })
    }
}

/// Token usage of one response (or a sum of several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
    }
}

/// A tool as declared to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// One `POST /v1/messages` body.
#[derive(Debug, Clone, PartialEq)]
pub struct MessagesRequest {
    pub model: String,
    pub max_tokens: u32,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// Tools the API runs itself (web search), declared as the API takes
    /// them; after `tools`.
    pub server_tools: Vec<Value>,
    /// `output_config.effort`, for a model that takes it (`--effort`).
    pub effort: Option<&'static str>,
    /// The `thinking` parameter, for a model that thinks.
    pub thinking: Option<super::Thinking>,
    /// `output_config.task_budget`: the tokens the model has for the
    /// whole task (`--task-budget`).
    pub task_budget: Option<u64>,
    /// `output_config.format`: the shape the answer must take (a prompt
    /// hook's verdict).
    pub output_format: Option<Value>,
    /// `tool_choice`: the tool the answer must call (the auto mode's
    /// classifier), when one is forced.
    pub tool_choice: Option<Value>,
}

impl MessagesRequest {
    /// The JSON body sent on the wire. Cache breakpoints go on the system
    /// prompt and on the last block of the last message, so that the next
    /// request (which only appends) shares this one's prefix byte for byte.
    ///
    /// Serialized straight from the history, without a `Value` tree of it:
    /// a long session sends thousands of messages with every request.
    pub fn body_text(&self) -> String {
        let body = Body {
            model: &self.model,
            max_tokens: self.max_tokens,
            system: (!self.system.is_empty()).then_some([SystemText {
                kind: "text",
                text: &self.system,
                cache_control: EPHEMERAL,
            }]),
            messages: WithBreakpoint(&self.messages),
            tools: ToolList(&self.tools, &self.server_tools),
            thinking: self.thinking.map(ThinkingParam::from),
            context_management: self
                .thinking
                .filter(|t| t.is_on())
                .map(|_| ContextManagement::KEEP_THINKING),
            // As Claude Code: a request that turns thinking off says so,
            // at the temperature thinking would have used.
            temperature: self.thinking.filter(|t| !t.is_on()).map(|_| 1),
            output_config: (self.effort.is_some()
                || self.task_budget.is_some()
                || self.output_format.is_some())
            .then_some(OutputConfig {
                effort: self.effort,
                task_budget: self.task_budget.map(|total| TaskBudget {
                    kind: "tokens",
                    total,
                }),
                format: self.output_format.as_ref(),
            }),
            tool_choice: self.tool_choice.as_ref(),
            stream: true,
        };
        // Serializing these types cannot fail: no map has non-string keys.
        serde_json::to_string(&body).unwrap_or_default()
    }

    /// [`Self::body_text`] as a value (tests, tools that inspect it).
    pub fn to_body(&self) -> Value {
        serde_json::from_str(&self.body_text()).unwrap_or(Value::Null)
    }
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[SystemText<'a>; 1]>,
    messages: WithBreakpoint<'a>,
    #[serde(skip_serializing_if = "ToolList::is_empty")]
    tools: ToolList<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<ThinkingParam>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_management: Option<ContextManagement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'a Value>,
    stream: bool,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ThinkingParam {
    Enabled { budget_tokens: u32 },
    Adaptive,
    Disabled,
}

impl From<super::Thinking> for ThinkingParam {
    fn from(thinking: super::Thinking) -> Self {
        match thinking {
            super::Thinking::Enabled { budget_tokens } => Self::Enabled { budget_tokens },
            super::Thinking::Adaptive => Self::Adaptive,
            super::Thinking::Disabled => Self::Disabled,
        }
    }
}

/// Thinking blocks are kept (none cleared) as the history grows.
#[derive(Serialize)]
struct ContextManagement {
    edits: [ContextEdit; 1],
}

#[derive(Serialize)]
struct ContextEdit {
    #[serde(rename = "type")]
    kind: &'static str,
    keep: &'static str,
}

impl ContextManagement {
    const KEEP_THINKING: Self = Self {
        edits: [ContextEdit {
            kind: "clear_thinking_20251015",
            keep: "all",
        }],
    };
}

/// The client tools, then the server tools, as one list.
struct ToolList<'a>(&'a [ToolSpec], &'a [Value]);

impl ToolList<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty() && self.1.is_empty()
    }
}

impl Serialize for ToolList<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.0.len() + self.1.len()))?;
        for tool in self.0 {
            seq.serialize_element(tool)?;
        }
        for tool in self.1 {
            seq.serialize_element(tool)?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct OutputConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    task_budget: Option<TaskBudget>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'a Value>,
}

#[derive(Serialize)]
struct TaskBudget {
    #[serde(rename = "type")]
    kind: &'static str,
    total: u64,
}

#[derive(Serialize)]
struct SystemText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: Ephemeral,
}

#[derive(Serialize, Clone, Copy)]
struct Ephemeral {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: Ephemeral = Ephemeral { kind: "ephemeral" };

/// The history, with a cache breakpoint on the last block of the last
/// message.
struct WithBreakpoint<'a>(&'a [Message]);

impl Serialize for WithBreakpoint<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        let Some((last, rest)) = self.0.split_last() else {
            return seq.end();
        };
        for message in rest {
            seq.serialize_element(message)?;
        }
        struct LastMessage<'a>(&'a Message);
        impl Serialize for LastMessage<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("role", &self.0.role)?;
                map.serialize_entry("content", &LastContent(&self.0.content))?;
                map.end()
            }
        }
        struct LastContent<'a>(&'a [ContentBlock]);
        impl Serialize for LastContent<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
                let Some((last, rest)) = self.0.split_last() else {
                    return seq.end();
                };
                for block in rest {
                    seq.serialize_element(block)?;
                }
                let mut block = serde_json::to_value(last).map_err(serde::ser::Error::custom)?;
                if let Some(fields) = block.as_object_mut() {
                    fields.insert(
                        "cache_control".into(),
                        serde_json::json!({"type": "ephemeral"}),
                    );
                }
                seq.serialize_element(&block)?;
                seq.end()
            }
        }
        seq.serialize_element(&LastMessage(last))?;
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn body_puts_cache_breakpoints_on_system_and_last_block() {
        let request = MessagesRequest {
            model: "m".into(),
            max_tokens: 10,
            system: "sys".into(),
            messages: vec![
                Message::user_text("first"),
                Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::ToolUse {
                        id: "t1".into(),
                        name: "Read".into(),
                        input: json!({"file_path": "/x"}),
                    }],
                },
                Message {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult {
                        tool_use_id: "t1".into(),
                        content: ToolResultContent::Text("1\tx".into()),
                        is_error: false,
                    }],
                },
            ],
            tools: vec![],
            server_tools: Vec::new(),
            effort: None,
            thinking: None,
            task_budget: None,
            output_format: None,
            tool_choice: None,
        };
        assert_eq!(
            request.to_body(),
            json!({
                "model": "m",
                "max_tokens": 10,
                "stream": true,
                "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "first"}]},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "1\tx",
                         "cache_control": {"type": "ephemeral"}}
                    ]}
                ]
            })
        );
    }
}
