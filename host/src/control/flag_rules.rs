//! `apply_flag_settings`' permission rules: the rules the SDK sets while
//! the session runs, as the `--settings` source's. A kind it gives
//! (`permissions.allow`, `deny`, `ask`) replaces what it set for that kind
//! before; the session's own rules stay. From the next call on, every
//! decision, and what later commands cannot see, follow them.

use crate::policy::{Rule, RuleKind, RuleOrigin, RuleSource, SourceKind};
use crate::tools::ToolPipeline;
use serde_json::Value;

/// Replaces the SDK's rules of `kind` with `texts` (a list of rules in
/// Claude Code's syntax), kept by the session's live policy apart from
/// every other source's; a rule that does not parse changes nothing.
pub fn apply_flag_rules(
    pipeline: &ToolPipeline,
    key: &str,
    kind: RuleKind,
    texts: &Value,
) -> Result<(), String> {
    let texts = texts.as_array().ok_or_else(|| {
        format!("apply_flag_settings: `permissions.{key}` must be a list of rules")
    })?;
    let permissions = pipeline.permissions();
    let anchors = permissions.anchors();
    let source = RuleSource {
        kind: SourceKind::CliSettings,
        file: None,
    };
    let parsed = texts
        .iter()
        .map(|text| {
            let text = text.as_str().ok_or_else(|| {
                format!("apply_flag_settings: `permissions.{key}` holds a rule that is not text")
            })?;
            Rule::parse(text, kind, source.clone(), &anchors)
                .map_err(|e| format!("apply_flag_settings: `permissions.{key}`: {e}"))
        })
        .collect::<Result<Vec<Rule>, String>>()?;
    permissions.replace(RuleOrigin::FlagSettings, kind, parsed);
    Ok(())
}
