//! `autoMode`: what the auto mode's classifier is told, and the rules it
//! can never override.
//!
//! As in Claude Code, the lists are sentences for the classifier: `allow`
//! (what the user is happy to have done), `soft_deny` (what needs the
//! user's own say), `hard_deny` (what is refused whatever the user asked),
//! `environment` (facts about where the agent runs). A `hard_deny` entry
//! written as a permission rule (`Bash(git push:*)`) is also enforced by
//! carapace itself in auto mode, before the classifier is asked, so no
//! answer of the classifier lets such a call through. A project's file may
//! only tighten: its `allow`, `environment` and `model` are ignored (a
//! repository must not talk the classifier into allowing more).

use super::merge::Source;
use crate::policy::{Anchors, Rule, RuleKind, RuleSource};
use serde::Deserialize;

/// `autoMode` as a settings file writes it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct AutoModeFile {
    /// The classifier's model (`--auto-mode-model` wins).
    model: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default, rename = "soft_deny")]
    soft_deny: Vec<String>,
    #[serde(default, rename = "hard_deny")]
    hard_deny: Vec<String>,
    #[serde(default)]
    environment: Vec<String>,
}

/// `autoMode` merged across the settings files, highest first.
#[derive(Debug, Clone, Default)]
pub struct AutoModeSettings {
    pub model: Option<String>,
    pub allow: Vec<String>,
    pub soft_deny: Vec<String>,
    /// Every `hard_deny` entry, as the classifier reads it.
    pub hard_deny: Vec<String>,
    pub environment: Vec<String>,
    /// The `hard_deny` entries written as permission rules, which carapace
    /// enforces in auto mode before asking the classifier.
    pub hard_deny_rules: Vec<Rule>,
}

/// Claude Code's marker for its built-in entries: carapace's own are
/// always in the classifier's instructions, so the marker adds nothing.
const DEFAULTS_MARKER: &str = "$defaults";

impl AutoModeSettings {
    /// Adds one file's `autoMode`.
    pub(super) fn merge(
        &mut self,
        file: &AutoModeFile,
        source: &Source,
        anchors: &Anchors,
        warnings: &mut Vec<String>,
    ) {
        let kept = |list: &[String]| -> Vec<String> {
            list.iter()
                .map(|e| e.trim().to_string())
                .filter(|e| !e.is_empty() && e != DEFAULTS_MARKER)
                .collect()
        };
        if source.is_project() {
            if file.model.is_some() || !file.allow.is_empty() || !file.environment.is_empty() {
                warnings.push(format!(
                    "{}: autoMode.allow, autoMode.environment and autoMode.model are honoured only in user or managed settings (a project may only tighten the auto mode); ignored",
                    source.shown()
                ));
            }
        } else {
            if self.model.is_none() {
                self.model = file.model.clone();
            }
            self.allow.extend(kept(&file.allow));
            self.environment.extend(kept(&file.environment));
        }
        self.soft_deny.extend(kept(&file.soft_deny));
        let rule_source = source.rule_source();
        for entry in kept(&file.hard_deny) {
            if let Some(rule) = as_rule(&entry, &rule_source, anchors) {
                self.hard_deny_rules.push(rule);
            }
            self.hard_deny.push(entry);
        }
    }
}

/// `entry` as a deny rule, when it is written as one: a tool's name
/// (capitalised, or an MCP tool's `mcp__…`), optionally with what it names
/// in parentheses — not a sentence.
fn as_rule(entry: &str, source: &RuleSource, anchors: &Anchors) -> Option<Rule> {
    let tool = entry.split('(').next().unwrap_or_default();
    let named_like_a_tool = (tool.starts_with(|c: char| c.is_ascii_uppercase())
        || tool.starts_with("mcp__"))
        && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !named_like_a_tool || (entry.contains('(') && !entry.ends_with(')')) {
        return None;
    }
    Rule::parse(entry, RuleKind::Deny, source.clone(), anchors).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::SourceKind;

    #[test]
    fn only_entries_written_as_rules_become_rules() {
        let source = RuleSource {
            kind: SourceKind::User,
            file: None,
        };
        let anchors = Anchors {
            project: "/ws".into(),
            cwd: "/ws".into(),
            home: "/home/u".into(),
        };
        let rule = |e: &str| as_rule(e, &source, &anchors).map(|r| r.text);
        assert_eq!(
            rule("Bash(git push:*)").as_deref(),
            Some("Bash(git push:*)")
        );
        assert_eq!(rule("WebFetch").as_deref(), Some("WebFetch"));
        assert_eq!(rule("Never push to main"), None);
        assert_eq!(rule("Deleting files outside the project"), None);
        assert_eq!(rule("Bash(rm -rf"), None);
    }
}
