//! What the SDK may ask of a running session, and the answers.

use super::ControlChannel;
use super::request_error::RequestError;
use crate::hooks::{HookCallbacks, HookRuntime};
use crate::policy::{ModeCell, ModeChangeBy, PermissionMode, RuleKind};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The `system`/`status` line Claude Code prints when the permission mode
/// changes (the SDK's `set_permission_mode`, an approved ExitPlanMode).
pub fn mode_status_line(session_id: &str, mode: PermissionMode) -> Value {
    json!({
        "type": "system",
        "subtype": "status",
        "status": null,
        "permissionMode": mode.as_str(),
        "uuid": uuid::Uuid::new_v4().to_string(),
        "session_id": session_id,
    })
}

/// The running turn's cancellation: print mode sets it at each turn;
/// `interrupt` cancels it (the session goes on with the next message).
#[derive(Clone, Default)]
pub struct TurnSlot(Arc<Mutex<Option<CancellationToken>>>);

impl TurnSlot {
    pub fn begin(&self, token: CancellationToken) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(token);
        }
    }

    pub fn end(&self) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = None;
        }
    }

    /// Cancels the running turn; false when none runs.
    pub fn interrupt(&self) -> bool {
        match self.0.lock().ok().and_then(|slot| slot.clone()) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

/// The session's handles the SDK's requests act on.
pub struct SessionControl {
    pub session_id: String,
    pub mode: ModeCell,
    /// The model the next turn uses (`set_model`).
    pub model: Arc<Mutex<String>>,
    /// What `set_model` with no model goes back to.
    pub default_model: String,
    pub turn: TurnSlot,
    /// `mcp_status`: the servers as `system`/`init` lists them (the SDK's
    /// own join once connected).
    pub mcp_servers: Arc<Mutex<Vec<Value>>>,
    /// Sets and reconnects servers while the session runs.
    pub mcp: Option<Arc<super::mcp_servers::McpServers>>,
    pub api_key_source: String,
    /// Where `initialize` registers the SDK's hook callbacks.
    pub hooks: Arc<HookRuntime>,
    /// Takes the SDK's agent definitions (`initialize`'s `agents`).
    pub add_agents: Option<AgentAdder>,
    /// Told what `initialize` set for the session's start.
    pub start: super::start::StartSignal,
    /// What the SDK changed for the turns to come.
    pub overrides: Arc<super::turn::TurnOverrides>,
    /// The reminders `reload_skills` changes.
    pub skills: Option<SkillsControl>,
    /// What `get_context_usage` answers from.
    pub usage: Arc<super::usage::ContextMeter>,
    /// Stops a background agent or shell by its task id (`stop_task`).
    pub stop_task: Option<TaskStopper>,
    /// What `rewind_files` restores from (none: checkpointing is off).
    pub checkpoints: Option<Arc<crate::checkpoints::FileCheckpoints>>,
    /// The session's tools: its skills and MCP servers (`reload_skills`,
    /// `mcp_toggle`, `initialize`'s commands), its rules
    /// (`apply_flag_settings`).
    pub tools: Option<Arc<crate::tools::ToolPipeline>>,
}

/// Stops one background task; `Err` says why it could not.
pub type TaskStopper = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The reminders a reload of the skills changes.
pub struct SkillsControl {
    /// The reminders the session started with.
    pub user_context: Vec<String>,
    /// Whether the first of them is the skills listing.
    pub listed: bool,
}

impl SkillsControl {
    /// Reads the skills again; the next turn offers and lists the new set.
    fn reload(
        &self,
        pipeline: &crate::tools::ToolPipeline,
        overrides: &super::turn::TurnOverrides,
    ) -> Result<Value, RequestError> {
        let current = pipeline.catalogue().ok_or_else(|| {
            RequestError::unavailable("reload_skills: this session loads no skills")
        })?;
        let fresh = Arc::new(current.reload());
        for warning in &fresh.warnings {
            eprintln!("carapace: warning: {warning}");
        }
        pipeline.replace_catalogue(fresh.clone());
        if self.listed {
            let mut context = self.user_context.clone();
            match fresh.listing() {
                Some(listing) => context[0] = listing,
                None => {
                    context.remove(0);
                }
            }
            overrides.set_user_context(context);
        }
        Ok(json!({"skills": fresh.described(true)}))
    }
}

/// Adds agent types from their JSON (the `--agents` shape).
pub type AgentAdder = Box<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

impl SessionControl {
    /// The answer to a request that takes its time (servers to start), to
    /// be awaited apart; `None` for every other request.
    pub fn handle_later(
        &self,
        request: &Value,
    ) -> Option<futures::future::BoxFuture<'static, Result<Value, super::ErrorAnswer>>> {
        let subtype = request["subtype"].as_str()?;
        if subtype == "set_model" {
            return self.switch_model_later(request);
        }
        if !matches!(subtype, "mcp_set_servers" | "mcp_reconnect") {
            return None;
        }
        let Some(servers) = self.mcp.clone() else {
            return Some(Box::pin(std::future::ready(Err(format!(
                "{subtype}: this session cannot start MCP servers"
            )
            .into()))));
        };
        let request = request.clone();
        Some(Box::pin(async move {
            let answer = match request["subtype"].as_str() {
                Some("mcp_set_servers") => servers.set(&request["servers"]).await,
                _ => match request["serverName"].as_str() {
                    Some(name) => servers.reconnect(name).await,
                    None => Err("mcp_reconnect: no serverName".into()),
                },
            };
            answer.map_err(super::ErrorAnswer::from)
        }))
    }

    /// `set_permission_mode`. The gate announces the change (the session's
    /// listener prints the status line).
    fn set_permission_mode(&self, request: &Value) -> Result<Value, RequestError> {
        let wanted = request["mode"].as_str().unwrap_or_default();
        let mode = PermissionMode::parse(wanted).ok_or_else(|| {
            RequestError::invalid(format!(
                "unknown permission mode `{wanted}` (default, acceptEdits, plan, dontAsk, bypassPermissions)"
            ))
        })?;
        self.mode.change(mode, ModeChangeBy::ControlRequest)?;
        Ok(json!({"mode": mode.as_str()}))
    }

    /// `mcp_toggle`: a server's tools offered again, or no longer, from
    /// the next turn; `mcp_status` says so.
    fn toggle_mcp(&self, request: &Value) -> Result<Value, RequestError> {
        let name = request["serverName"]
            .as_str()
            .ok_or_else(|| RequestError::invalid("mcp_toggle: no serverName"))?;
        let enabled = request["enabled"]
            .as_bool()
            .ok_or_else(|| RequestError::invalid("mcp_toggle: `enabled` is not true or false"))?;
        let tools = self
            .tools
            .as_ref()
            .ok_or_else(|| RequestError::unavailable("mcp_toggle: this session has no tools"))?;
        tools
            .toggle_mcp(name, enabled)
            .map_err(|e| RequestError::Failed(e.to_string()))?;
        if let Ok(mut servers) = self.mcp_servers.lock() {
            for server in servers.iter_mut().filter(|s| s["name"] == name) {
                server["status"] = json!(if enabled { "connected" } else { "disabled" });
            }
        }
        Ok(Value::Null)
    }

    /// The answer to one request from the SDK (`Err`: an error response).
    pub fn handle(
        &self,
        request: &Value,
        channel: &Arc<ControlChannel>,
    ) -> Result<Value, RequestError> {
        match request["subtype"].as_str() {
            Some("initialize") => self.initialize(request, channel),
            Some("interrupt") => {
                let interrupted = self.turn.interrupt();
                tracing::debug!(interrupted, "interrupt requested");
                Ok(Value::Null)
            }
            Some("set_permission_mode") => self.set_permission_mode(request),
            Some("set_model") => {
                let model = match &request["model"] {
                    Value::Null => self.default_model.clone(),
                    Value::String(model) if !model.trim().is_empty() => {
                        crate::model::resolve_model(model)
                    }
                    other => {
                        return Err(RequestError::invalid(format!(
                            "set_model: not a model name: {other}"
                        )));
                    }
                };
                self.set_model(model);
                Ok(Value::Null)
            }
            Some("mcp_status") => {
                let servers = self
                    .mcp_servers
                    .lock()
                    .map(|s| s.clone())
                    .unwrap_or_default();
                Ok(json!({"mcpServers": servers}))
            }
            Some("set_max_thinking_tokens") => {
                let tokens = match &request["max_thinking_tokens"] {
                    Value::Null => None,
                    value => Some(
                        value
                            .as_u64()
                            .and_then(|n| u32::try_from(n).ok())
                            .ok_or_else(|| {
                                RequestError::invalid(format!(
                                    "set_max_thinking_tokens: not a number of tokens: {value}"
                                ))
                            })?,
                    ),
                };
                self.overrides.set_thinking_tokens(tokens);
                Ok(Value::Null)
            }
            Some("get_context_usage") => Ok(self.usage.answer()),
            Some("apply_flag_settings") => self.apply_flag_settings(&request["settings"]),
            Some("mcp_toggle") => self.toggle_mcp(request),
            Some("rewind_files") => {
                let id = request["user_message_id"]
                    .as_str()
                    .ok_or_else(|| RequestError::invalid("rewind_files: no user_message_id"))?;
                let dry_run = request["dry_run"].as_bool().unwrap_or(false);
                match &self.checkpoints {
                    Some(checkpoints) => serde_json::to_value(checkpoints.rewind(id, dry_run))
                        .map_err(|e| RequestError::Failed(e.to_string())),
                    None => Err(RequestError::unavailable(
                        "File checkpointing is not enabled for this session (the SDK's enableFileCheckpointing).",
                    )),
                }
            }
            Some("stop_task") => {
                let task = request["task_id"]
                    .as_str()
                    .ok_or_else(|| RequestError::invalid("stop_task: no task_id"))?;
                match &self.stop_task {
                    Some(stop) => stop(task)
                        .map(|()| Value::Null)
                        .map_err(RequestError::Failed),
                    None => Err(RequestError::unavailable(format!(
                        "stop_task: no task `{task}` in this session"
                    ))),
                }
            }
            Some("reload_skills") => match (&self.tools, &self.skills) {
                (Some(tools), Some(skills)) => skills.reload(tools, &self.overrides),
                _ => Err(RequestError::unavailable(
                    "reload_skills: this session loads no skills",
                )),
            },
            Some(other) => Err(RequestError::unavailable(format!(
                "Unsupported control request subtype: {other}"
            ))),
            None => Err(RequestError::invalid("a control request without a subtype")),
        }
    }

    /// `apply_flag_settings`: the settings a running session can change
    /// take effect from the next turn (`null` goes back to the session's
    /// own); any other key is read only when a session starts, so it is
    /// named in a warning and left as it was.
    fn apply_flag_settings(&self, settings: &Value) -> Result<Value, RequestError> {
        let settings = settings.as_object().ok_or_else(|| {
            RequestError::invalid("apply_flag_settings: `settings` is not an object")
        })?;
        for (key, value) in settings {
            match (key.as_str(), value) {
                ("model", Value::Null) => self.set_model(self.default_model.clone()),
                ("model", Value::String(model)) if !model.trim().is_empty() => {
                    self.set_model(model.trim().to_string())
                }
                ("alwaysThinkingEnabled", Value::Null) => self.overrides.clear_thinking(),
                ("alwaysThinkingEnabled", Value::Bool(on)) => {
                    self.overrides.set_thinking(match on {
                        true => crate::model::ThinkingChoice::Default,
                        false => crate::model::ThinkingChoice::Off,
                    })
                }
                ("permissions", Value::Object(permissions)) => {
                    self.apply_permissions(permissions)?
                }
                ("model" | "alwaysThinkingEnabled" | "permissions", other) => {
                    return Err(RequestError::invalid(format!(
                        "apply_flag_settings: `{key}` cannot be {other}"
                    )));
                }
                _ => eprintln!(
                    "carapace: warning: apply_flag_settings: `{key}` is read when a session starts (pass it with --settings); it is unchanged"
                ),
            }
        }
        Ok(Value::Null)
    }

    fn apply_permissions(
        &self,
        permissions: &serde_json::Map<String, Value>,
    ) -> Result<(), RequestError> {
        for (key, value) in permissions {
            match (key.as_str(), value.as_str()) {
                ("defaultMode", Some(wanted)) => {
                    let mode = PermissionMode::parse(wanted).ok_or_else(|| {
                        RequestError::invalid(format!(
                            "apply_flag_settings: unknown permission mode `{wanted}`"
                        ))
                    })?;
                    self.mode.change(mode, ModeChangeBy::ControlRequest)?;
                }
                ("allow" | "deny" | "ask", _) => {
                    let kind = match key.as_str() {
                        "allow" => RuleKind::Allow,
                        "deny" => RuleKind::Deny,
                        _ => RuleKind::Ask,
                    };
                    let pipeline = self.tools.as_ref().ok_or_else(|| {
                        RequestError::unavailable(
                            "apply_flag_settings: this session has no tools to apply rules to",
                        )
                    })?;
                    super::flag_rules::apply_flag_rules(pipeline, key, kind, value)
                        .map_err(RequestError::Invalid)?;
                }
                _ => eprintln!(
                    "carapace: warning: apply_flag_settings: `permissions.{key}` is read when a session starts (pass it with --settings); it is unchanged"
                ),
            }
        }
        Ok(())
    }

    fn set_model(&self, model: String) {
        if let Ok(mut current) = self.model.lock() {
            *current = model;
        }
    }

    fn initialize(
        &self,
        request: &Value,
        channel: &Arc<ControlChannel>,
    ) -> Result<Value, RequestError> {
        let options = super::start::StartOptions::of(request).map_err(RequestError::Invalid)?;
        let callbacks: Arc<dyn HookCallbacks> = channel.clone();
        let registered = self
            .hooks
            .add_callbacks(&request["hooks"], callbacks)
            .map_err(RequestError::Invalid)?;
        if request["agents"].as_object().is_some_and(|a| !a.is_empty()) {
            match &self.add_agents {
                Some(add) => add(&request["agents"]).map_err(RequestError::Invalid)?,
                None => {
                    return Err(RequestError::unavailable(
                        "agents: this session has no Agent tool",
                    ));
                }
            }
        }
        tracing::debug!(registered, "SDK hook callbacks");
        self.start.initialized(options);
        let model = self
            .model
            .lock()
            .map(|m| m.clone())
            .unwrap_or_else(|_| self.default_model.clone());
        let commands = self
            .tools
            .as_ref()
            .and_then(|t| t.catalogue())
            .map(|c| c.described(false))
            .unwrap_or_default();
        Ok(json!({
            "commands": commands,
            "agents": [],
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [{
                "value": model,
                "resolvedModel": model,
                "displayName": model,
                "description": "the session's model",
            }],
            "account": {"apiKeySource": self.api_key_source},
            "pid": std::process::id(),
            // onFailure "block" is honoured, and these callbacks run.
            "hook_on_failure_supported": true,
            "hooks_applied": true,
        }))
    }
}
