//! A granted RequestPermissions call, applied: what the user granted (the
//! call's input, as the answer left it) joins the live permissions as
//! allow rules — kept apart, and dropped at the user's next prompt when
//! granted for the turn —; the command sandbox's proxy follows the rules,
//! so granted hosts open for commands too. Deny rules, protected paths and withheld secrets still decide
//! first: a grant only answers what would have been asked.

use super::ToolPipeline;
use crate::agent::{ToolCall, ToolCallResult};
use crate::model::ToolResultContent;
use crate::policy::{RuleOrigin, Suggestion};
use crate::tools::request_permissions::{GrantScope, REQUEST_PERMISSIONS_TOOL, Requested};

/// How a RequestPermissions call is put to the user.
pub(super) struct GrantQuestion {
    pub question: String,
    pub grants: Vec<String>,
    pub always: Suggestion,
}

impl ToolPipeline {
    /// Applies the granted request `call` carries.
    pub(super) fn apply_grant(&self, call: &ToolCall) -> ToolCallResult {
        match self.grant(call) {
            Ok(said) => ToolCallResult {
                content: ToolResultContent::Text(said),
                is_error: false,
                ..ToolCallResult::error(&call.id, "")
            },
            Err(why) => ToolCallResult::error(&call.id, why),
        }
    }

    fn grant(&self, call: &ToolCall) -> Result<String, String> {
        let requested = Requested::read(&call.input)?;
        let permissions = self.permissions();
        let grants = requested.grants(&permissions.anchors().cwd)?;
        let origin = match requested.scope() {
            GrantScope::Turn => RuleOrigin::GrantedForTurn,
            GrantScope::Session => RuleOrigin::Granted,
        };
        // Kept as "don't ask again" keeps a suggestion, under the grant's
        // own origin; the proxy follows the rules, so the hosts open too.
        let rules = grants
            .iter()
            .flat_map(|g| g.rules.iter().cloned())
            .collect();
        (permissions.accept(origin, &Suggestion::Grant(rules), None))
            .map_err(|e| format!("the grant cannot be kept: {e}"))?;
        let mut said: Vec<String> = grants.iter().map(|g| g.said.clone()).collect();
        if !permissions.opens_network() && !requested.domains.is_empty() {
            said.push(
                "(the hosts for WebFetch only: commands reach no host this session does not list)"
                    .into(),
            );
        }
        let how_long = match requested.scope() {
            GrantScope::Turn => "until the user's next message",
            GrantScope::Session => "for the rest of the session",
        };
        Ok(format!(
            "The user granted, {how_long}: {}. Only that was granted; each later call is still checked on its own.",
            said.join("; ")
        ))
    }

    /// A RequestPermissions question as the user reads it: its reason,
    /// what saying yes grants, and what "don't ask again" adds — the
    /// rules it becomes, for the session (or saved).
    pub(super) fn grant_question(&self, call: &ToolCall) -> Option<GrantQuestion> {
        if call.name != REQUEST_PERMISSIONS_TOOL {
            return None;
        }
        let requested = Requested::read(&call.input).ok()?;
        let grants = requested.grants(&self.permissions().anchors().cwd).ok()?;
        let how_long = match requested.scope() {
            GrantScope::Turn => "until your next message",
            GrantScope::Session => "for the rest of the session",
        };
        Some(GrantQuestion {
            question: format!(
                "The model asks for these permissions {how_long}, because: {}",
                requested.reason.trim()
            ),
            grants: grants.iter().map(|g| g.said.clone()).collect(),
            always: Suggestion::Grant(grants.into_iter().flat_map(|g| g.rules).collect()),
        })
    }

    /// The user's next prompt: what was granted for the turn ends.
    pub(super) fn end_turn_grants(&self) {
        self.permissions().end_turn();
    }
}
