//! How the pipeline words what it hands back: a tool's output as a
//! `tool_result`, hook context as system reminders, a hook's replacement
//! output checked, denials with what decided them.

use crate::agent::{DenialSource, HookNotes, PermissionDenial, ToolCall, ToolCallResult};
use crate::hooks::HandlerResult;
use crate::model::{ImageSource, ToolResultBlock, ToolResultContent};
use crate::policy::Basis;
use crate::sandbox::{Capability, HookToolCall, ToolContent, ToolOutput};
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
                    ToolContent::Image { media_type, data } => ToolResultBlock::Image {
                        source: ImageSource {
                            kind: "base64".into(),
                            media_type: media_type.clone(),
                            data: base64::engine::general_purpose::STANDARD.encode(data),
                        },
                    },
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
    }
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
pub(super) fn hook_denied(call: &ToolCall, reason: String) -> ToolCallResult {
    let reason = if reason.trim().is_empty() {
        format!("A PreToolUse hook denied this {} call.", call.name)
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
        })),
        hooks: HookNotes::default(),
    }
}

pub(super) fn hook_call(call: &ToolCall) -> HookToolCall {
    HookToolCall {
        tool_name: call.name.clone(),
        tool_input: call.input.to_string(),
        tool_use_id: call.id.clone(),
    }
}

/// A hook's additional context, as the model sees it next to the results.
pub(super) fn contexts(event: &str, tool: &str, answer: &HandlerResult) -> Vec<String> {
    answer
        .additional_context
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
}
