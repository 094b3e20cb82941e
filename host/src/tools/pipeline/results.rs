//! How the pipeline words what it hands back: a tool's output as a
//! `tool_result`, hook context as system reminders, a hook's replacement
//! output checked, denials with what decided them.

use crate::agent::{DenialSource, HookNotes, PermissionDenial, ToolCall, ToolCallResult};
use crate::hooks::HookToolCall;
use crate::model::{ImageSource, ToolResultBlock, ToolResultContent};
use crate::policy::Basis;
use crate::sandbox::{Capability, ToolContent, ToolOutput};
use base64::Engine as _;
use serde_json::Value;

/// The tool's output as a `tool_result`: a plain string when it is one text,
/// blocks (images base64-encoded) otherwise.
pub(super) fn to_result(id: &str, output: ToolOutput) -> ToolCallResult {
    let content = match output.content.as_slice() {
        [ToolContent::Text(text)] => ToolResultContent::Text(text.clone()),
        [] => ToolResultContent::Text(String::new()),
        blocks => ToolResultContent::Blocks(
            blocks
                .iter()
                .map(|block| match block {
                    ToolContent::Text(text) => ToolResultBlock::Text { text: text.clone() },
                    ToolContent::Image { media_type, data } => {
                        match image_problem(media_type, data) {
                            None => ToolResultBlock::Image {
                                source: ImageSource {
                                    kind: "base64".into(),
                                    media_type: media_type.clone(),
                                    data: base64::engine::general_purpose::STANDARD.encode(data),
                                },
                            },
                            Some(problem) => ToolResultBlock::Text {
                                text: format!(
                                    "[The tool returned an image that was not sent: {problem}.]"
                                ),
                            },
                        }
                    }
                })
                .collect(),
        ),
    };
    ToolCallResult {
        tool_use_id: id.to_string(),
        content,
        is_error: output.is_error,
        // A structured result that is not a JSON object is not one.
        structured: output
            .structured
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .filter(Value::is_object),
        denial: None,
        hooks: Default::default(),
        follow_up: None,
    }
}

/// The media types the Messages API accepts for images.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The API's limit on one image, base64-encoded.
const MAX_IMAGE_BASE64_BYTES: usize = 5 << 20;

/// Why an image block must not reach the model, if it must not: a media
/// type the API does not take, bytes that are not that kind of image (by
/// their signature), or an image over the API's size limit.
fn image_problem(media_type: &str, data: &[u8]) -> Option<String> {
    if !IMAGE_TYPES.contains(&media_type) {
        return Some(format!(
            "`{media_type}` is not an image type the model accepts ({})",
            IMAGE_TYPES.join(", ")
        ));
    }
    let is = match media_type {
        "image/png" => data.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => data.starts_with(&[0xff, 0xd8, 0xff]),
        "image/gif" => data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a"),
        _ => data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP",
    };
    if !is {
        return Some(format!("its bytes are not a {media_type} image"));
    }
    let encoded = data.len().div_ceil(3) * 4;
    if encoded > MAX_IMAGE_BASE64_BYTES {
        return Some(format!(
            "it is {encoded} bytes encoded, over the model's limit of {MAX_IMAGE_BASE64_BYTES}"
        ));
    }
    None
}

/// What decided a denial, as the loop's `permission_denied` line shows it.
pub(super) fn denial_source(basis: &Basis) -> DenialSource {
    DenialSource {
        decided_by: basis.kind.as_str().to_string(),
        rule: basis.rule.clone(),
        source: basis.source.clone(),
    }
}

/// A PreToolUse hook's deny: the tool_result is the hook's reason, as is
/// (models read it as the hook wrote it).
pub(super) fn hook_denied(call: &ToolCall, reason: String, errored: bool) -> ToolCallResult {
    let reason = if reason.trim().is_empty() {
        format!("A PreToolUse hook denied this {} call.", call.name)
    } else if errored {
        // As Claude Code: a deny from a hook that failed says so.
        format!("PreToolUse:{} hook error: {reason}", call.name)
    } else {
        reason
    };
    ToolCallResult {
        tool_use_id: call.id.clone(),
        content: ToolResultContent::Text(reason.clone()),
        is_error: true,
        structured: None,
        denial: Some(Box::new(PermissionDenial {
            tool_name: call.name.clone(),
            tool_use_id: call.id.clone(),
            tool_input: call.input.clone(),
            reason,
            source: Some(denial_source(&Basis::hook(None, None))),
            interrupts_turn: false,
        })),
        hooks: HookNotes::default(),
        follow_up: None,
    }
}

pub(super) fn hook_call(call: &ToolCall) -> HookToolCall {
    HookToolCall {
        tool_name: call.name.clone(),
        tool_input: call.input.clone(),
        tool_use_id: call.id.clone(),
    }
}

/// A hook's additional context, as the model sees it next to the results.
pub(super) fn contexts(event: &str, tool: &str, context: &[String]) -> Vec<String> {
    context
        .iter()
        .filter(|c| !c.trim().is_empty())
        .map(|c| format!("<system-reminder>\n{event} hook context for the {tool} call: {c}\n</system-reminder>"))
        .collect()
}

/// A PostToolUse replacement output: a string, or content blocks the API
/// accepts in a tool_result (text, base64 images).
pub(super) fn replacement_output(output: Value) -> Result<ToolResultContent, String> {
    match output {
        Value::String(text) => Ok(ToolResultContent::Text(text)),
        Value::Array(_) => serde_json::from_value::<Vec<ToolResultBlock>>(output)
            .map(ToolResultContent::Blocks)
            .map_err(|e| format!("content blocks must be text or base64 images: {e}")),
        other => Err(format!(
            "expected a string or an array of content blocks, got {}",
            match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                _ => "an object",
            }
        )),
    }
}

/// The text of a result, for PostToolUseFailure's `error`.
pub(super) fn result_text(content: &ToolResultContent) -> String {
    match content {
        ToolResultContent::Text(text) => text.clone(),
        ToolResultContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ToolResultBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

pub(super) fn describe_need(need: &Capability) -> String {
    match need {
        Capability::ReadFile(p) => format!("read {p}"),
        Capability::WriteFile(p) => format!("write {p}"),
        Capability::ReadTree(p) => format!("read tree {p}"),
        Capability::WriteTree(p) => format!("write tree {p}"),
        Capability::Http(h) => format!("http {h}"),
        Capability::Env(n) => format!("env {n}"),
        Capability::Process(c) => format!("run {c}"),
    }
}

/// The known tool name closest to `name`, if it is close enough to be a typo.
pub(super) fn closest_name<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| {
            (
                strsim::levenshtein(&name.to_lowercase(), &k.to_lowercase()),
                k,
            )
        })
        .filter(|(distance, k)| *distance <= (k.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k.as_str())
}

/// `result` with carapace's own credentials replaced wherever they appear
/// (a file the model read, a command's output, a hook's words): the model,
/// the stream and the transcript see a marker that names the secret.
pub(super) fn redacted(mut result: ToolCallResult) -> ToolCallResult {
    let redactor = crate::secrets::own_credentials();
    if redactor.is_empty() {
        return result;
    }
    let mut found = Vec::new();
    match &mut result.content {
        ToolResultContent::Text(text) => {
            if let Some((clean, names)) = redactor.redact(text) {
                *text = clean;
                found.extend(names);
            }
        }
        ToolResultContent::Blocks(_) => {
            if let Ok(mut value) = serde_json::to_value(&result.content) {
                let names = redactor.redact_json(&mut value);
                if !names.is_empty()
                    && let Ok(clean) = serde_json::from_value(value)
                {
                    result.content = clean;
                    found.extend(names);
                }
            }
        }
    }
    if let Some(structured) = &mut result.structured {
        found.extend(redactor.redact_json(structured));
    }
    if !found.is_empty() {
        tracing::warn!(id = %result.tool_use_id, ?found, "a secret was replaced in a tool's result");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_tool_names_only() {
        let known = vec!["Read".to_string(), "Write".to_string(), "Grep".to_string()];
        assert_eq!(closest_name("read", &known), Some("Read"));
        assert_eq!(closest_name("Reed", &known), Some("Read"));
        assert_eq!(closest_name("Delete", &known), None);
    }

    fn blocks(content: Vec<ToolContent>) -> Vec<ToolResultBlock> {
        let output = ToolOutput {
            content,
            is_error: false,
            structured: None,
        };
        match to_result("toolu_1", output).content {
            ToolResultContent::Blocks(blocks) => blocks,
            other => panic!("blocks expected: {other:?}"),
        }
    }

    #[test]
    fn only_real_images_of_accepted_types_reach_the_model() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        let mut big = png.clone();
        big.resize(4 << 20, 0);
        let cases: [(&str, Vec<u8>, Option<&str>); 7] = [
            ("image/png", png.clone(), None),
            (
                "image/png",
                b"<svg onload=x>".to_vec(),
                Some("not a image/png"),
            ),
            (
                "image/svg+xml",
                b"<svg/>".to_vec(),
                Some("not an image type"),
            ),
            ("image/jpeg", png.clone(), Some("not a image/jpeg")),
            ("image/gif", b"GIF89a....".to_vec(), None),
            ("image/webp", b"RIFF\0\0\0\0WEBPVP8 ".to_vec(), None),
            ("image/png", big, Some("over the model's limit")),
        ];
        for (media_type, data, problem) in cases {
            let out = blocks(vec![
                ToolContent::Text("x".into()),
                ToolContent::Image {
                    media_type: media_type.into(),
                    data,
                },
            ]);
            match (&out[1], problem) {
                (ToolResultBlock::Image { source }, None) => {
                    assert_eq!(source.media_type, media_type)
                }
                (ToolResultBlock::Text { text }, Some(why)) => {
                    assert!(text.contains(why), "{media_type}: {text}")
                }
                (block, _) => panic!("{media_type}: {block:?}"),
            }
        }
    }
}
