//! How the session's events and the person's answers are said as lines
//! of the scrollback.

use crate::agent::AgentEvent;
use crate::tui::approval::{ApprovalChoice, ApprovalRequest};
use crate::tui::cells::NoticeLevel;

/// How an event is said as a line of its own, when it is.
pub(super) fn notice(event: AgentEvent) -> Option<(NoticeLevel, String)> {
    use NoticeLevel::{Error, Info, Warning};
    Some(match event {
        AgentEvent::ApiRetry {
            attempt,
            max_retries,
            delay,
            error_status,
            ..
        } => {
            let status = error_status.map(|s| format!(" ({s})")).unwrap_or_default();
            let wait = delay.as_secs_f64();
            (
                Warning,
                format!(
                    "The API failed{status}; retrying in {wait:.0}s (attempt {attempt} of {max_retries})"
                ),
            )
        }
        AgentEvent::ModelFallback { from, to, .. } => {
            (Warning, format!("{from} failed; {to} takes over"))
        }
        AgentEvent::Warning { message } => (Warning, message),
        AgentEvent::Informational { content, level, .. } => {
            (if level == "warning" { Warning } else { Info }, content)
        }
        AgentEvent::SyntheticUser { text } => (Info, text),
        AgentEvent::Error { message, .. } => (Error, message),
        AgentEvent::CompactBoundary {
            pre_tokens,
            post_tokens,
            ..
        } => (
            Info,
            format!("The conversation was compacted ({pre_tokens} → {post_tokens} tokens)."),
        ),
        AgentEvent::TaskStarted { description, .. } => {
            (Info, format!("Background agent started: {description}"))
        }
        AgentEvent::TaskNotification {
            status, summary, ..
        } => (Info, format!("Background agent {status}: {summary}")),
        _ => return None,
    })
}

/// The record an answered question leaves in the scrollback.
pub(super) fn answered(request: &ApprovalRequest, choice: &ApprovalChoice) -> String {
    use crate::tui::approval::{AlwaysAllow, RuleScope};
    let call = format!(
        "{}({})",
        request.tool,
        crate::tui::cells::summary(&request.face)
    );
    match choice {
        ApprovalChoice::Once => format!("Allowed once: {call}"),
        ApprovalChoice::Always(AlwaysAllow::AcceptEdits, _) => {
            format!("Allowed: {call} · edits are allowed for the rest of the session")
        }
        ApprovalChoice::Always(AlwaysAllow::Rule(rule), RuleScope::Session) => {
            format!("Allowed: {call} · {rule} for the rest of the session")
        }
        ApprovalChoice::Always(AlwaysAllow::Rule(rule), RuleScope::LocalSettings) => {
            format!("Allowed: {call} · {rule} saved to .carapace/settings.local.json")
        }
        ApprovalChoice::Always(AlwaysAllow::Rule(rule), RuleScope::UserSettings) => {
            format!("Allowed: {call} · {rule} saved to your user settings")
        }
        ApprovalChoice::Partly(kept, scope) => {
            let given: Vec<&str> = request
                .grants
                .iter()
                .zip(kept)
                .filter(|(_, k)| **k)
                .map(|(g, _)| g.as_str())
                .collect();
            let how = match scope {
                None => "",
                Some(RuleScope::Session) => " for the rest of the session",
                Some(RuleScope::LocalSettings) => ", saved to .carapace/settings.local.json",
                Some(RuleScope::UserSettings) => ", saved to your user settings",
            };
            format!("Allowed in part: {call} · {}{how}", given.join("; "))
        }
        ApprovalChoice::Refuse(Some(instead)) => format!("Refused: {call} · {instead}"),
        ApprovalChoice::Refuse(None) => format!("Refused: {call}"),
    }
}
