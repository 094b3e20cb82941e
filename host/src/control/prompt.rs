//! `--permission-prompt-tool stdio`: the policy's questions go to the SDK's
//! `can_use_tool` callback. The callback answers only what the policy asks
//! — a deny rule, a ceiling or a protected path is decided before any
//! question, and an input it rewrites is decided again by the pipeline.

use super::ControlChannel;
use crate::policy::{
    LivePolicy, ModeChangeBy, PermissionMode, Rule, RuleKind, RuleOrigin, RuleSource, SourceKind,
};
pub use crate::sandbox::egress::NETWORK_ACCESS;
use crate::tools::{PermissionPrompter, PromptAnswer, PromptRequest};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;

pub struct SdkPrompter {
    channel: Arc<ControlChannel>,
    /// Where the rules its answers add join the session's.
    permissions: Arc<LivePolicy>,
}

impl SdkPrompter {
    pub fn new(channel: Arc<ControlChannel>, permissions: Arc<LivePolicy>) -> Self {
        Self {
            channel,
            permissions,
        }
    }

    /// Applies what the SDK asked to change with its answer: the mode, and
    /// rules for the rest of the session. Anything else is said in a
    /// warning and left as it was.
    fn apply(&self, updates: &Value) {
        for update in updates.as_array().into_iter().flatten() {
            match update["type"].as_str() {
                Some("setMode") => match update["mode"].as_str().and_then(PermissionMode::parse) {
                    Some(mode) => {
                        if let Err(refused) = self
                            .permissions
                            .current()
                            .mode_cell()
                            .change(mode, ModeChangeBy::PermissionAnswer)
                        {
                            eprintln!("carapace: warning: {refused}; the mode stays as it was");
                        }
                    }
                    None => eprintln!(
                        "carapace: warning: the SDK's permission update {update} names no known mode; nothing changed"
                    ),
                },
                Some("addRules") => self.add_rules(update),
                _ => eprintln!(
                    "carapace: warning: the SDK's permission update {update} is not supported; nothing changed"
                ),
            }
        }
    }

    /// An `addRules` update: its rules join the session's policy, kept as
    /// the SDK's, and answer later calls as any rule does. A rule that
    /// does not parse is named in a warning; the others are kept.
    fn add_rules(&self, update: &Value) {
        let kind = match update["behavior"].as_str() {
            Some("allow") => RuleKind::Allow,
            Some("deny") => RuleKind::Deny,
            Some("ask") => RuleKind::Ask,
            _ => {
                eprintln!("carapace: warning: the SDK's rules {update} have no behavior; not kept");
                return;
            }
        };
        let anchors = self.permissions.anchors();
        let source = RuleSource {
            kind: SourceKind::CliSettings,
            file: None,
        };
        let mut rules = Vec::new();
        for rule in update["rules"].as_array().into_iter().flatten() {
            let Some(tool) = rule["toolName"].as_str() else {
                continue;
            };
            let text = match rule["ruleContent"].as_str().filter(|c| !c.is_empty()) {
                Some(content) => format!("{tool}({content})"),
                None => tool.to_string(),
            };
            match Rule::parse(&text, kind, source.clone(), &anchors) {
                Ok(rule) => rules.push(rule),
                Err(e) => eprintln!("carapace: warning: the SDK's rule {text} is not kept: {e}"),
            }
        }
        self.permissions.add(RuleOrigin::Sdk, rules);
    }
}

impl PermissionPrompter for SdkPrompter {
    fn ask<'a>(&'a self, request: PromptRequest<'a>) -> BoxFuture<'a, PromptAnswer> {
        Box::pin(async move {
            let call = request.call;
            let answer = self
                .channel
                .request(json!({
                    "subtype": "can_use_tool",
                    "tool_name": call.name,
                    "input": call.input,
                    "tool_use_id": call.id,
                    "decision_reason": request.question,
                    "permission_suggestions": request.suggestion.to_updates(),
                }))
                .await;
            match answer {
                Ok(answer) if answer["behavior"] == "allow" => {
                    self.apply(&answer["updatedPermissions"]);
                    PromptAnswer::Allow {
                        updated_input: answer
                            .get("updatedInput")
                            .filter(|input| input.is_object())
                            .cloned(),
                    }
                }
                Ok(answer) if answer["behavior"] == "deny" => PromptAnswer::Deny {
                    message: answer["message"]
                        .as_str()
                        .filter(|m| !m.is_empty())
                        .unwrap_or("The SDK's permission callback denied this call.")
                        .to_string(),
                    // The refusal is delivered, then the turn ends.
                    interrupt: answer["interrupt"] == true,
                },
                Ok(answer) => PromptAnswer::Deny {
                    message: format!(
                        "The SDK's permission callback gave no usable answer ({answer}); the call was not run."
                    ),
                    interrupt: false,
                },
                Err(e) => PromptAnswer::Deny {
                    message: format!(
                        "The SDK's permission callback failed ({e}); the call was not run."
                    ),
                    interrupt: false,
                },
            }
        })
    }

    /// An MCP server's question, as Claude Code puts it to the SDK: an
    /// `elicitation` control request, answered with `action` and
    /// `content`; an SDK that cannot answer cancels it.
    fn elicit<'a>(
        &'a self,
        request: &'a crate::mcp::ElicitRequest,
    ) -> BoxFuture<'a, crate::mcp::ElicitAnswer> {
        Box::pin(async move {
            let mut asked = json!({
                "subtype": "elicitation",
                "mcp_server_name": request.server,
                "message": request.message,
                "mode": request.mode(),
            });
            if let Some(url) = &request.url {
                asked["url"] = json!(url);
            }
            if let Some(id) = &request.elicitation_id {
                asked["elicitation_id"] = json!(id);
            }
            if let Some(schema) = &request.requested_schema {
                asked["requested_schema"] = schema.clone();
            }
            match self.channel.request(asked).await {
                Ok(answer) => crate::mcp::ElicitAnswer::from_action(
                    answer["action"].as_str().unwrap_or("cancel"),
                    answer.get("content").cloned(),
                ),
                Err(e) => {
                    tracing::warn!("the SDK did not answer an elicitation: {e}");
                    crate::mcp::ElicitAnswer::Cancel
                }
            }
        })
    }
}

/// A command's connection to a host the network lists do not name, asked
/// as Claude Code asks it: `can_use_tool` for `SandboxNetworkAccess` with
/// the host, suggesting a `WebFetch(domain:…)` rule. Only an `allow`
/// answer lets it through, for the rest of the session.
/// A command's connection to a host no rule names: allowed for the rest of
/// the turn, or — when the answer adds rules (`updatedPermissions`, e.g.
/// the suggested WebFetch domain rule) — for the session, the rules kept.
impl crate::sandbox::egress::EgressAsker for SdkPrompter {
    fn allow_host<'a>(
        &'a self,
        host: &'a str,
    ) -> BoxFuture<'a, crate::sandbox::egress::HostAnswer> {
        use crate::sandbox::egress::HostAnswer;
        Box::pin(async move {
            let answer = self
                .channel
                .request(json!({
                    "subtype": "can_use_tool",
                    "tool_name": NETWORK_ACCESS,
                    "display_name": NETWORK_ACCESS,
                    "input": {"host": host},
                    "permission_suggestions": [{
                        "type": "addRules",
                        "rules": [{"toolName": "WebFetch", "ruleContent": format!("domain:{host}")}],
                        "behavior": "allow",
                        "destination": "localSettings",
                    }],
                    "tool_use_id": format!("network_{}", uuid::Uuid::new_v4().simple()),
                    "description": format!("Allow network connection to {host}?"),
                }))
                .await;
            match answer {
                Ok(answer) if answer["behavior"] == "allow" => {
                    let updates = &answer["updatedPermissions"];
                    if updates.as_array().is_some_and(|u| !u.is_empty()) {
                        self.apply(updates);
                        HostAnswer::ForSession
                    } else {
                        HostAnswer::ForTurn
                    }
                }
                _ => HostAnswer::Refused,
            }
        })
    }
}
