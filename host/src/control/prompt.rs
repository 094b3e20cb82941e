//! `--permission-prompt-tool stdio`: the policy's questions go to the SDK's
//! `can_use_tool` callback. The callback answers only what the policy asks
//! — a deny rule, a ceiling or a protected path is decided before any
//! question, and an input it rewrites is decided again by the pipeline.

use super::ControlChannel;
use crate::policy::{ModeCell, ModeChangeBy, PermissionMode};
use crate::tools::{PermissionPrompter, PromptAnswer, PromptRequest};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Tool-wide rules the SDK added for the session (`updatedPermissions`).
#[derive(Default)]
struct SessionRules {
    allow: Vec<String>,
    deny: Vec<String>,
}

pub struct SdkPrompter {
    channel: Arc<ControlChannel>,
    mode: ModeCell,
    rules: Mutex<SessionRules>,
}

impl SdkPrompter {
    pub fn new(channel: Arc<ControlChannel>, mode: ModeCell) -> Self {
        Self {
            channel,
            mode,
            rules: Mutex::default(),
        }
    }

    /// Applies what the SDK asked to change with its answer: the mode, and
    /// tool-wide allow/deny rules for the rest of the session. Anything
    /// else is said in a warning and left as it was.
    fn apply(&self, updates: &Value) {
        for update in updates.as_array().into_iter().flatten() {
            match update["type"].as_str() {
                Some("setMode") => match update["mode"].as_str().and_then(PermissionMode::parse) {
                    Some(mode) => {
                        if let Err(refused) = self.mode.change(mode, ModeChangeBy::PermissionAnswer)
                        {
                            eprintln!("carapace: warning: {refused}; the mode stays as it was");
                        }
                    }
                    None => eprintln!(
                        "carapace: warning: the SDK's permission update {update} names no known mode; nothing changed"
                    ),
                },
                Some("addRules") => {
                    let behavior = update["behavior"].as_str().unwrap_or_default();
                    for rule in update["rules"].as_array().into_iter().flatten() {
                        let Some(tool) = rule["toolName"].as_str() else {
                            continue;
                        };
                        if rule["ruleContent"].as_str().is_some_and(|c| !c.is_empty()) {
                            eprintln!(
                                "carapace: warning: the SDK's rule {tool}({}) is not applied: only tool-wide rules are kept for the session",
                                rule["ruleContent"].as_str().unwrap_or_default()
                            );
                            continue;
                        }
                        if let Ok(mut rules) = self.rules.lock() {
                            match behavior {
                                "allow" => rules.allow.push(tool.to_string()),
                                "deny" => rules.deny.push(tool.to_string()),
                                _ => {}
                            }
                        }
                    }
                }
                _ => eprintln!(
                    "carapace: warning: the SDK's permission update {update} is not supported; nothing changed"
                ),
            }
        }
    }

    fn session_rule(&self, tool: &str) -> Option<bool> {
        let rules = self.rules.lock().ok()?;
        if rules.deny.iter().any(|t| t == tool) {
            return Some(false);
        }
        rules.allow.iter().any(|t| t == tool).then_some(true)
    }
}

impl PermissionPrompter for SdkPrompter {
    fn ask<'a>(&'a self, request: PromptRequest<'a>) -> BoxFuture<'a, PromptAnswer> {
        Box::pin(async move {
            let call = request.call;
            // A rule the SDK added earlier answers what a rule may answer.
            if request.rules_may_answer {
                match self.session_rule(&call.name) {
                    Some(true) => {
                        return PromptAnswer::Allow {
                            updated_input: None,
                        };
                    }
                    Some(false) => {
                        return PromptAnswer::Deny {
                            message: format!(
                                "{} is denied for this session by the SDK's permission callback.",
                                call.name
                            ),
                            interrupt: false,
                        };
                    }
                    None => {}
                }
            }
            let answer = self
                .channel
                .request(json!({
                    "subtype": "can_use_tool",
                    "tool_name": call.name,
                    "input": call.input,
                    "tool_use_id": call.id,
                    "decision_reason": request.question,
                    "permission_suggestions": [{
                        "type": "addRules",
                        "rules": [{"toolName": call.name}],
                        "behavior": "allow",
                        "destination": "session",
                    }],
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
}

/// A command's connection to a host the network lists do not name, asked
/// as Claude Code asks it: `can_use_tool` for `SandboxNetworkAccess` with
/// the host, suggesting a `WebFetch(domain:…)` rule. Only an `allow`
/// answer lets it through, for the rest of the session.
impl crate::sandbox::egress::EgressAsker for SdkPrompter {
    fn allow_host<'a>(&'a self, host: &'a str) -> BoxFuture<'a, bool> {
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
            matches!(answer, Ok(answer) if answer["behavior"] == "allow")
        })
    }
}

/// The name Claude Code gives a command's network connection when it asks.
pub const NETWORK_ACCESS: &str = "SandboxNetworkAccess";
