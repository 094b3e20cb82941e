//! The replay provider: `--model replay:FILE` answers each request with the
//! next scripted response, streamed through the same events and assembly as
//! the real API. For demos and for machines with no network or API key.
//!
//! The script is JSON:
//!
//! ```json
//! {
//!   "responses": [
//!     {"content": [
//!        {"type": "text", "text": "Let me read it."},
//!        {"type": "tool_use", "name": "Read", "input": {"file_path": "${SCRIPT_DIR}/notes.txt"}}
//!      ]},
//!     {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"}
//!   ]
//! }
//! ```
//!
//! Request N gets response N. `stop_reason` defaults to `tool_use` when the
//! response has a `tool_use` block and `end_turn` otherwise; a `tool_use`
//! without an `id` gets `toolu_replay_<response>_<block>`. In every string,
//! `${CWD}` is the working directory and `${SCRIPT_DIR}` the script's
//! directory. Asking for more responses than the script holds is an error.

use super::stream::{MessageDeltaBody, MessageStart};
use super::{EventStream, MessagesRequest, Model, ModelError, StreamEvent, Usage};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    responses: Vec<ScriptedResponse>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedResponse {
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug)]
pub struct ReplayModel {
    responses: Vec<ScriptedResponse>,
    next: AtomicUsize,
}

/// Text deltas are cut to this many characters, so a replay streams like the
/// real API does.
const TEXT_CHUNK_CHARS: usize = 24;

impl ReplayModel {
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Replay(format!("cannot read {}: {e}", path.display())))?;
        let script_dir = path
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        let cwd = std::env::current_dir().unwrap_or_default();
        let text = text
            .replace("${SCRIPT_DIR}", &json_escape(&script_dir.to_string_lossy()))
            .replace("${CWD}", &json_escape(&cwd.to_string_lossy()));
        Self::from_json(&text).map_err(|e| ModelError::Replay(format!("{}: {e}", path.display())))
    }

    pub fn from_json(text: &str) -> Result<Self, String> {
        let script: Script =
            serde_json::from_str(text).map_err(|e| format!("invalid script: {e}"))?;
        for (n, response) in script.responses.iter().enumerate() {
            for block in &response.content {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") if block.get("text").is_some_and(Value::is_string) => {}
                    Some("tool_use")
                        if block.get("name").is_some_and(Value::is_string)
                            && block.get("input").is_some_and(Value::is_object) => {}
                    Some("thinking") if block.get("thinking").is_some_and(Value::is_string) => {}
                    _ => {
                        return Err(format!(
                            "response {} has a block that is not text {{text}}, thinking {{thinking}} or tool_use {{name, input}}: {block}",
                            n + 1
                        ));
                    }
                }
            }
        }
        Ok(Self {
            responses: script.responses,
            next: AtomicUsize::new(0),
        })
    }

    fn events(&self, n: usize, response: &ScriptedResponse) -> Vec<StreamEvent> {
        let mut events = vec![StreamEvent::MessageStart {
            message: MessageStart {
                id: format!("msg_replay_{}", n + 1),
                model: "replay".into(),
                usage: Usage::default(),
            },
        }];
        let mut has_tool_use = false;
        let mut output_chars = 0;
        for (index, block) in response.content.iter().enumerate() {
            let kind = block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match kind {
                "tool_use" => {
                    has_tool_use = true;
                    let id = block
                        .get("id")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("toolu_replay_{}_{}", n + 1, index + 1));
                    let input = block.get("input").cloned().unwrap_or(json!({})).to_string();
                    output_chars += input.len();
                    events.push(StreamEvent::ContentBlockStart {
                        index,
                        content_block: json!({"type": "tool_use", "id": id, "name": block["name"], "input": {}}),
                    });
                    events.push(StreamEvent::ContentBlockDelta {
                        index,
                        delta: json!({"type": "input_json_delta", "partial_json": input}),
                    });
                }
                "thinking" => {
                    let text = block["thinking"].as_str().unwrap_or_default();
                    output_chars += text.len();
                    events.push(StreamEvent::ContentBlockStart {
                        index,
                        content_block: json!({"type": "thinking", "thinking": "", "signature": ""}),
                    });
                    events.push(StreamEvent::ContentBlockDelta {
                        index,
                        delta: json!({"type": "thinking_delta", "thinking": text}),
                    });
                }
                _ => {
                    let text = block["text"].as_str().unwrap_or_default();
                    output_chars += text.len();
                    events.push(StreamEvent::ContentBlockStart {
                        index,
                        content_block: json!({"type": "text", "text": ""}),
                    });
                    let chars: Vec<char> = text.chars().collect();
                    for chunk in chars.chunks(TEXT_CHUNK_CHARS) {
                        events.push(StreamEvent::ContentBlockDelta {
                            index,
                            delta: json!({"type": "text_delta", "text": chunk.iter().collect::<String>()}),
                        });
                    }
                }
            }
            events.push(StreamEvent::ContentBlockStop { index });
        }
        let stop_reason = response
            .stop_reason
            .clone()
            .unwrap_or_else(|| if has_tool_use { "tool_use" } else { "end_turn" }.to_string());
        events.push(StreamEvent::MessageDelta {
            delta: MessageDeltaBody {
                stop_reason: Some(stop_reason),
                stop_sequence: None,
            },
            usage: Some(Usage {
                // A rough count: replays have no tokenizer.
                output_tokens: (output_chars as u64).div_ceil(4),
                ..Usage::default()
            }),
        });
        events.push(StreamEvent::MessageStop);
        events
    }
}

impl Model for ReplayModel {
    fn stream<'a>(
        &'a self,
        _request: &'a MessagesRequest,
    ) -> BoxFuture<'a, Result<EventStream, ModelError>> {
        async move {
            let n = self.next.fetch_add(1, Ordering::SeqCst);
            let Some(response) = self.responses.get(n) else {
                return Err(ModelError::Replay(format!(
                    "the script has {} responses and request {} asked for another",
                    self.responses.len(),
                    n + 1
                )));
            };
            let events = self.events(n, response);
            let stream: EventStream = Box::pin(futures::stream::iter(events.into_iter().map(Ok)));
            Ok(stream)
        }
        .boxed()
    }
}

fn json_escape(s: &str) -> String {
    let quoted = Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Assembled, ContentBlock, ResponseAssembler};
    use futures::StreamExt;

    #[tokio::test]
    async fn replays_scripted_responses_in_order_then_errors()
    -> Result<(), Box<dyn std::error::Error>> {
        let model = ReplayModel::from_json(
            r#"{"responses": [
                {"content": [{"type": "text", "text": "a fairly long text that spans several deltas"},
                             {"type": "tool_use", "name": "Read", "input": {"file_path": "/x"}}]},
                {"content": [{"type": "text", "text": "done"}]}
            ]}"#,
        )?;
        let request = MessagesRequest {
            model: "replay".into(),
            max_tokens: 1,
            system: String::new(),
            messages: vec![],
            tools: vec![],
            server_tools: Vec::new(),
            effort: None,
            thinking: None,
            task_budget: None,
            output_format: None,
            tool_choice: None,
        };
        let mut assembler = ResponseAssembler::new();
        let mut stream = model.stream(&request).await?;
        let mut completed = 0;
        while let Some(event) = stream.next().await {
            if let Assembled::BlockCompleted(_) = assembler.push(event?)? {
                completed += 1;
            }
        }
        assert_eq!(completed, 2);
        assert_eq!(assembler.stop_reason(), Some("tool_use"));
        assert_eq!(
            assembler.content()[1],
            ContentBlock::ToolUse {
                id: "toolu_replay_1_2".into(),
                name: "Read".into(),
                input: json!({"file_path": "/x"})
            }
        );
        let _second = model.stream(&request).await?;
        assert!(matches!(
            model.stream(&request).await,
            Err(ModelError::Replay(_))
        ));
        Ok(())
    }

    #[test]
    fn rejects_malformed_scripts() {
        assert!(
            ReplayModel::from_json(r#"{"responses": [{"content": [{"type": "tool_use"}]}]}"#)
                .is_err()
        );
        assert!(ReplayModel::from_json(r#"{"replies": []}"#).is_err());
    }
}
