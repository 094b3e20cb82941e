//! `apply_flag_settings`' permission rules: the rules the SDK sets while
//! the session runs, as the `--settings` source's. A kind it gives
//! (`permissions.allow`, `deny`, `ask`) replaces what it set for that kind
//! before; the session's own rules stay. From the next call on, every
//! decision, and what later commands cannot see, follow them.

use crate::policy::{Rule, RuleKind, RuleSource, SourceKind};
use crate::tools::ToolPipeline;
use serde_json::Value;
use std::sync::Mutex;

/// The SDK's rules so far, by kind.
#[derive(Default)]
pub struct FlagRules(Mutex<Vec<Rule>>);

impl FlagRules {
    /// Replaces the rules of `kind` with `texts` (a list of rules in
    /// Claude Code's syntax) and applies them all; a rule that does not
    /// parse changes nothing.
    pub fn apply(
        &self,
        pipeline: &ToolPipeline,
        key: &str,
        kind: RuleKind,
        texts: &Value,
    ) -> Result<(), String> {
        let texts = texts.as_array().ok_or_else(|| {
            format!("apply_flag_settings: `permissions.{key}` must be a list of rules")
        })?;
        let anchors = pipeline.policy().anchors();
        let source = RuleSource {
            kind: SourceKind::CliSettings,
            file: None,
        };
        let parsed = texts
            .iter()
            .map(|text| {
                let text = text.as_str().ok_or_else(|| {
                    format!(
                        "apply_flag_settings: `permissions.{key}` holds a rule that is not text"
                    )
                })?;
                Rule::parse(text, kind, source.clone(), &anchors)
                    .map_err(|e| format!("apply_flag_settings: `permissions.{key}`: {e}"))
            })
            .collect::<Result<Vec<Rule>, String>>()?;
        let mut rules = self
            .0
            .lock()
            .map_err(|_| "apply_flag_settings: the session's rules are unusable".to_string())?;
        rules.retain(|rule| rule.kind != kind);
        rules.extend(parsed);
        pipeline.set_flag_rules(rules.clone());
        Ok(())
    }
}
