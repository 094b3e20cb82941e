//! Skills and custom commands, started by the model's Skill call or by the
//! user's `/name`. Starting one puts its arguments and the session's values
//! into its body and runs each `` !`command` `` span as a Bash call through
//! this pipeline — the rules, hooks, OS sandbox and approval of a Bash call
//! the model makes, never around them — its output taking the span's
//! place. A span that is refused or fails stops the skill, which says why.
//!
//! A skill's `allowed-tools` are allow rules from the moment it starts, for
//! the rest of the session, as in Claude Code — only for a skill from the
//! user's own folders or from a trusted workspace, so a cloned repository
//! cannot grant itself tools. They answer only what the policy would ask:
//! a deny rule, a protected path or plan mode still refuse.

use super::ToolPipeline;
use super::results::result_text;
use crate::agent::{ToolCall, ToolCallResult};
use crate::commands::expand::{ShellSpan, fill, shell_spans};
use crate::commands::{CustomCommand, CustomCommands, Origin};
use crate::hooks::{HookEvent, HookEventKind, HookPermission, HookToolCall};
use crate::model::ToolResultContent;
use crate::policy::{CallApproval, Rule, RuleKind, RuleOrigin, RuleSource, SourceKind};
use crate::tools::registry::RegisteredTool;
use serde_json::json;
use std::sync::{Arc, RwLock};

#[derive(Default)]
pub(super) struct Skills {
    /// Replaced whole when the SDK asks to reload skills.
    catalogue: RwLock<Option<Arc<CustomCommands>>>,
    /// Whether the project's skills may pre-approve tools.
    workspace_trusted: bool,
}

impl Skills {
    fn current(&self) -> Option<Arc<CustomCommands>> {
        self.catalogue.read().ok().and_then(|c| c.clone())
    }
}

impl ToolPipeline {
    /// What the Skill tool and `/name` start; `workspace_trusted` lets the
    /// project's skills pre-approve tools.
    pub fn with_skills(mut self, catalogue: Arc<CustomCommands>, workspace_trusted: bool) -> Self {
        self.skills.catalogue = RwLock::new(Some(catalogue));
        self.skills.workspace_trusted = workspace_trusted;
        self
    }

    /// The skills and commands as they are now.
    pub fn catalogue(&self) -> Option<Arc<CustomCommands>> {
        self.skills.current()
    }

    /// Starts from `catalogue` from now on (what was pre-approved stays).
    pub fn replace_catalogue(&self, catalogue: Arc<CustomCommands>) {
        if let Ok(mut current) = self.skills.catalogue.write() {
            *current = Some(catalogue);
        }
    }

    pub(super) fn runs_skill(&self, tool: &RegisteredTool) -> bool {
        tool.starts_skills() && self.skills.current().is_some()
    }

    /// A Skill call naming a skill that only describes itself is decided
    /// by its needs (none: its start is allowed), not asked as the tool's
    /// other calls are.
    pub(super) fn skill_approval(
        &self,
        tool: &RegisteredTool,
        call: &ToolCall,
    ) -> Option<CallApproval> {
        if !tool.starts_skills() {
            return None;
        }
        let catalogue = self.skills.current()?;
        let entry = catalogue.get(skill_name(call))?;
        (!entry.asks).then_some(CallApproval::ByNeeds)
    }

    /// The model's Skill call, allowed: the skill's instructions follow the
    /// result, as Claude Code sends them.
    pub(super) async fn call_skill(&self, call: &ToolCall) -> ToolCallResult {
        let name = skill_name(call);
        let catalogue = self.skills.current().unwrap_or_default();
        let Some(entry) = catalogue.get(name) else {
            return ToolCallResult::error(&call.id, format!("Unknown skill: {name}"));
        };
        if !entry.model_invocable {
            return ToolCallResult::error(
                &call.id,
                format!(
                    "Skill {name} cannot be used with Skill tool due to disable-model-invocation"
                ),
            );
        }
        let args = call.input["args"].as_str().unwrap_or_default().trim();
        match self.start_by(entry, args, "model").await {
            Ok(instructions) => {
                let mut structured = json!({"success": true, "commandName": entry.name});
                if !entry.allowed_tools.is_empty() {
                    structured["allowedTools"] = json!(entry.allowed_tools);
                }
                ToolCallResult {
                    tool_use_id: call.id.clone(),
                    content: ToolResultContent::Text(format!("Launching skill: {}", entry.name)),
                    is_error: false,
                    structured: Some(structured),
                    denial: None,
                    hooks: Default::default(),
                    follow_up: Some(instructions),
                }
            }
            Err(message) => ToolCallResult {
                tool_use_id: call.id.clone(),
                content: ToolResultContent::Text(message),
                is_error: true,
                structured: None,
                denial: None,
                hooks: Default::default(),
                follow_up: None,
            },
        }
    }

    /// Starts `entry` with `args`: its pre-approvals take effect, then its
    /// spans run in order. Returns its instructions, or why it stopped.
    /// (`/name`: the user starts it.)
    pub async fn start(&self, entry: &CustomCommand, args: &str) -> Result<String, String> {
        self.start_by(entry, args, "user").await
    }

    /// [`Self::start`], by `invoked_by` (`user` or `model`).
    async fn start_by(
        &self,
        entry: &CustomCommand,
        args: &str,
        invoked_by: &str,
    ) -> Result<String, String> {
        self.grant_allowed_tools(entry)?;
        let text = entry.instructions(args, &self.session_id);
        let spans = shell_spans(&text);
        let mut outputs = Vec::with_capacity(spans.len());
        let started = uuid::Uuid::new_v4();
        for (index, span) in spans.iter().enumerate() {
            let call = ToolCall {
                // Claude Code's id for a span's call.
                id: format!("{started}:inner:preamble-{index}"),
                name: "Bash".into(),
                input: json!({"command": span.command}),
                invalid_input: None,
            };
            if let Some(reason) = self.span_refused(entry, &call, invoked_by).await {
                outputs.push(format!("[not run: blocked by hook: {reason}]"));
                continue;
            }
            outputs.push(self.run_span(span, call).await?);
        }
        Ok(fill(&text, &spans, &outputs))
    }

    /// PreSkillShellCommand hooks on one span: why they refused it, when
    /// they did (the user is told; the span's place says it did not run).
    async fn span_refused(
        &self,
        entry: &CustomCommand,
        call: &ToolCall,
        invoked_by: &str,
    ) -> Option<String> {
        let hooks = self.hooks_for(HookEventKind::PreSkillShellCommand)?;
        let answer = hooks
            .run(HookEvent::PreSkillShellCommand {
                call: HookToolCall {
                    tool_name: call.name.clone(),
                    tool_input: call.input.clone(),
                    tool_use_id: call.id.clone(),
                },
                command_name: entry.name.clone(),
                command_source: match entry.origin {
                    Origin::Project => "projectSettings".into(),
                    Origin::User => "userSettings".into(),
                },
                invoked_by: invoked_by.into(),
            })
            .await;
        if answer.decision != Some(HookPermission::Deny) {
            return None;
        }
        let reason = answer.reason.unwrap_or_default();
        let command = call.input["command"].as_str().unwrap_or_default();
        hooks.inform(format!(
            "Not run in /{}: {command} (blocked by hook: {reason})",
            entry.name
        ));
        Some(reason)
    }

    async fn run_span(&self, span: &ShellSpan, call: ToolCall) -> Result<String, String> {
        let result = self.run_nested(call).await;
        let text = result_text(&result.content);
        let text = text
            .strip_prefix("<tool_use_error>")
            .and_then(|t| t.strip_suffix("</tool_use_error>"))
            .unwrap_or(&text);
        match (result.denial.is_some(), result.is_error) {
            (true, _) => Err(format!(
                "Shell command permission check failed for pattern \"{}\": {text}",
                span.pattern
            )),
            (false, true) => Err(format!(
                "Shell command failed for pattern \"{}\": {text}",
                span.pattern
            )),
            (false, false) => Ok(text.trim_end().to_string()),
        }
    }

    /// `entry`'s `allowed-tools` become allow rules, when its origin may
    /// grant them; a rule that does not parse stops the skill.
    fn grant_allowed_tools(&self, entry: &CustomCommand) -> Result<(), String> {
        let may_grant = entry.origin == Origin::User || self.skills.workspace_trusted;
        if entry.allowed_tools.is_empty() || !may_grant {
            return Ok(());
        }
        let source = RuleSource {
            kind: match entry.origin {
                Origin::User => SourceKind::User,
                Origin::Project => SourceKind::Project,
            },
            file: Some(entry.path.clone()),
        };
        let anchors = self.policy().anchors();
        let rules = entry
            .allowed_tools
            .iter()
            .map(|text| Rule::parse(text, RuleKind::Allow, source.clone(), &anchors))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("Skill {}: allowed-tools: {e}", entry.name))?;
        // They answer only what the rest would ask (see `LivePolicy::decide`).
        self.permissions().add(RuleOrigin::Skill, rules);
        Ok(())
    }
}

pub(super) fn skill_name(call: &ToolCall) -> &str {
    call.input["skill"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .trim_start_matches('/')
}
