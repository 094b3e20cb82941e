//! A granted RequestPermissions call, applied: what the user granted (the
//! call's input, as the answer left it) joins the live permissions as
//! allow rules — kept apart, and dropped at the user's next prompt when
//! granted for the turn — and its hosts open in the command sandbox's
//! proxy. Deny rules, protected paths and withheld secrets still decide
//! first: a grant only answers what would have been asked.

use super::ToolPipeline;
use crate::agent::{ToolCall, ToolCallResult};
use crate::model::ToolResultContent;
use crate::policy::{Rule, RuleKind, RuleOrigin, RuleSource, SourceKind};
use crate::sandbox::egress::GrantScope;
use crate::tools::request_permissions::Requested;

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
        let anchors = permissions.anchors();
        let grants = requested.grants(&anchors.cwd)?;
        let source = RuleSource {
            kind: SourceKind::Local,
            file: None,
        };
        let mut rules = Vec::new();
        for text in grants.iter().flat_map(|g| g.rules.iter()) {
            let rule = Rule::parse(text, RuleKind::Allow, source.clone(), &anchors)
                .map_err(|e| format!("`{text}` cannot be granted: {e}"))?;
            rules.push(rule);
        }
        let scope = requested.scope();
        let origin = match scope {
            GrantScope::Turn => RuleOrigin::GrantedForTurn,
            GrantScope::Session => RuleOrigin::Granted,
        };
        permissions.add(origin, rules);
        if let Some(network) = &self.network {
            for host in requested.hosts() {
                network.grant(host, scope);
            }
        }
        let mut said: Vec<String> = grants.iter().map(|g| g.said.clone()).collect();
        if self.network.is_none() && !requested.domains.is_empty() {
            said.push(
                "(the hosts for WebFetch only: commands reach no host this session does not list)"
                    .into(),
            );
        }
        let how_long = match scope {
            GrantScope::Turn => "until the user's next message",
            GrantScope::Session => "for the rest of the session",
        };
        Ok(format!(
            "The user granted, {how_long}: {}. Only that was granted; each later call is still checked on its own.",
            said.join("; ")
        ))
    }

    /// The user's next prompt: what was granted for the turn ends.
    pub(super) fn end_turn_grants(&self) {
        self.permissions().clear(RuleOrigin::GrantedForTurn);
        if let Some(network) = &self.network {
            network.end_turn();
        }
    }
}
