//! Print mode's input as the SDKs send it: stream-json user lines (and the
//! control protocol's) read from stdin into the session's queue.

use crate::agent::{AgentEvent, CommandState, EventSink, InputQueue, QueuedInput};
use crate::control::Controller;
use crate::model::ImageSource;
use crate::output::SharedPrinter;
use std::io::Write;
use std::sync::Arc;

/// Parses one stream-json input line: `{"type": "user", "message": {"role":
/// "user", "content": TEXT | [BLOCKS]}, "uuid"?: ID}`. Other line types are
/// not user messages (`Ok(None)`).
pub fn parse_input_line(line: &str) -> Result<Option<QueuedInput>, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    user_line(&value)
}

/// A parsed input line as a user message (`Ok(None)` for other types).
fn user_line(value: &serde_json::Value) -> Result<Option<QueuedInput>, String> {
    if value.get("type").and_then(|t| t.as_str()) != Some("user") {
        return Ok(None);
    }
    let content = value
        .pointer("/message/content")
        .ok_or("a user line without message.content")?;
    let (text, images) = match content {
        serde_json::Value::String(text) => (text.clone(), Vec::new()),
        serde_json::Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
                .collect();
            let images = blocks
                .iter()
                .filter(|b| b["type"] == "image")
                .map(|b| input_image(&b["source"]))
                .collect::<Result<Vec<_>, _>>()?;
            (texts.join("\n"), images)
        }
        _ => return Err("message.content is neither a string nor a list of blocks".into()),
    };
    let uuid = value
        .get("uuid")
        .and_then(|u| u.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    Ok(Some(QueuedInput { uuid, text, images }))
}

/// An image block's source as the Messages API takes it inline: base64
/// data of a type it reads.
fn input_image(source: &serde_json::Value) -> Result<ImageSource, String> {
    if source["type"] != "base64" {
        return Err(format!(
            "an image's source must be base64 data (not {})",
            source["type"]
        ));
    }
    let media_type = source["media_type"].as_str().unwrap_or_default();
    ImageSource::base64(media_type, source["data"].as_str().unwrap_or_default())
        .map_err(|e| e.to_string())
}

/// Reads stream-json lines from `reader` until EOF: user messages into
/// `queue` (each reported as queued), control protocol lines to
/// `controller`; a bad line is reported on stderr and skipped.
pub async fn read_input_lines<R, W>(
    reader: R,
    queue: Arc<InputQueue>,
    mut sink: SharedPrinter<W>,
    controller: Option<Arc<Controller>>,
) where
    R: tokio::io::AsyncBufRead + Unpin,
    W: Write + Send,
{
    use tokio::io::AsyncBufReadExt;
    let mut lines = reader.lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) if line.trim().is_empty() => {}
            Ok(Some(line)) => match serde_json::from_str::<serde_json::Value>(&line)
                .map_err(|e| format!("not JSON: {e}"))
                .and_then(|value| {
                    if controller.as_ref().is_some_and(|c| c.take(&value)) {
                        Ok(None)
                    } else {
                        user_line(&value)
                    }
                }) {
                Ok(Some(input)) => {
                    if let Some(controller) = &controller {
                        controller.session.start.without_initialize();
                    }
                    sink.emit(AgentEvent::CommandLifecycle {
                        uuid: input.uuid.clone(),
                        state: CommandState::Queued,
                    });
                    queue.push(input);
                }
                Ok(None) => {
                    tracing::debug!("ignoring a stream-json input line that is not a user message")
                }
                Err(e) => eprintln!("carapace: skipping an input line: {e}"),
            },
            Ok(None) => break,
            Err(e) => {
                eprintln!("carapace: reading stdin failed: {e}");
                break;
            }
        }
    }
    if let Some(controller) = controller {
        controller.session.start.without_initialize();
        controller.channel.close();
    }
    queue.close();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_lines_in_claude_codes_shape() {
        let line = r#"{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u-1"}"#;
        assert_eq!(
            parse_input_line(line),
            Ok(Some(QueuedInput::text("u-1", "hi")))
        );
        let blocks = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#;
        assert_eq!(
            parse_input_line(blocks).ok().flatten().map(|i| i.text),
            Some("a\nb".to_string())
        );
        assert_eq!(parse_input_line(r#"{"type":"control_request"}"#), Ok(None));
        let image = r#"{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"what is this?"}]}}"#;
        let input = parse_input_line(image).ok().flatten();
        assert_eq!(
            input.as_ref().map(|i| i.text.as_str()),
            Some("what is this?")
        );
        assert_eq!(
            input.map(|i| i.images),
            Some(vec![ImageSource {
                kind: "base64".into(),
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            }])
        );
        for refused in [
            r#"{"type":"base64","media_type":"image/tiff","data":"iVBORw0KGgo="}"#,
            r#"{"type":"base64","media_type":"image/png","data":"not base64!"}"#,
            r#"{"type":"url","url":"https://example.com/a.png"}"#,
        ] {
            let line = format!(
                r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"image","source":{refused}}}]}}}}"#
            );
            assert!(parse_input_line(&line).is_err(), "{line}");
        }
        assert!(parse_input_line("{oops").is_err());
        assert!(parse_input_line(r#"{"type":"user","message":{}}"#).is_err());
    }
}
