//! A session's settings a client may change: its permission mode (also
//! told as the older `modes`) and its model, as ACP's config options
//! (`session/set_config_option`, `config_option_update`).

use crate::policy::{ModeChangeBy, PermissionMode};
use crate::session::Session;
use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption, SessionMode, SessionModeState,
};

pub const MODE: &str = "mode";
pub const MODEL: &str = "model";

/// The Claude models offered besides the session's own (and its
/// fallbacks): the current generation's, by the names the Messages API
/// takes.
const CLAUDE_MODELS: [(&str, &str); 3] = [
    ("claude-opus-4-5", "Claude Opus 4.5"),
    ("claude-sonnet-4-5", "Claude Sonnet 4.5"),
    ("claude-haiku-4-5", "Claude Haiku 4.5"),
];

/// The modes a client may switch among: Claude Code's, bypass only when
/// the flags allow it.
fn available_modes(bypass: bool) -> Vec<SessionMode> {
    let mut available = vec![
        SessionMode::new("default", "Default")
            .description("Ask before edits and commands".to_string()),
        SessionMode::new("acceptEdits", "Accept edits")
            .description("Edits in the working directories without asking".to_string()),
        SessionMode::new("plan", "Plan").description("Read and plan; change nothing".to_string()),
        SessionMode::new("dontAsk", "Don't ask")
            .description("Refuse what the rules do not allow, without asking".to_string()),
    ];
    if bypass {
        available.push(
            SessionMode::new("bypassPermissions", "Bypass permissions")
                .description("Everything the sandbox allows, without asking".to_string()),
        );
    }
    available.push(
        SessionMode::new("auto", "Auto").description(
            "A classifier judges what the rules would ask about; what it leaves open is asked"
                .to_string(),
        ),
    );
    available
}

pub fn modes(session: &Session) -> SessionModeState {
    let policy = session.pipeline.policy();
    let cell = policy.mode_cell();
    SessionModeState::new(cell.get().as_str(), available_modes(cell.bypass_allowed()))
}

/// The session's model now, if it has one.
fn current_model(session: &Session) -> Option<String> {
    let run = session.run.as_ref()?;
    run.model_name.lock().ok().map(|m| m.clone())
}

/// The models this session may switch to. A replayed model is the only
/// one its session has: its client plays a recording, not the API.
fn models(session: &Session) -> Vec<(String, String)> {
    let Some(current) = current_model(session) else {
        return Vec::new();
    };
    if current.starts_with("replay:") {
        return vec![(current.clone(), current)];
    }
    let mut models = vec![(current.clone(), current)];
    let fallbacks = session
        .run
        .as_ref()
        .map(|run| run.config.fallback_models.clone())
        .unwrap_or_default();
    for fallback in fallbacks {
        models.push((fallback.clone(), fallback));
    }
    for (id, name) in CLAUDE_MODELS {
        models.push((id.to_string(), name.to_string()));
    }
    let mut seen = std::collections::HashSet::new();
    models.retain(|(id, _)| seen.insert(id.clone()));
    models
}

/// Every option with its current value.
pub fn options(session: &Session) -> Vec<SessionConfigOption> {
    let state = modes(session);
    let mode_values: Vec<SessionConfigSelectOption> = state
        .available_modes
        .iter()
        .map(|m| {
            SessionConfigSelectOption::new(m.id.0.clone(), m.name.clone())
                .description(m.description.clone())
        })
        .collect();
    let mut options = vec![
        SessionConfigOption::select(MODE, "Mode", state.current_mode_id.0, mode_values)
            .description("When carapace asks before a tool runs".to_string())
            .category(SessionConfigOptionCategory::Mode),
    ];
    if let Some(current) = current_model(session) {
        let values: Vec<SessionConfigSelectOption> = models(session)
            .into_iter()
            .map(|(id, name)| SessionConfigSelectOption::new(id, name))
            .collect();
        options.push(
            SessionConfigOption::select(MODEL, "Model", current, values)
                .description("The model the next requests go to".to_string())
                .category(SessionConfigOptionCategory::Model),
        );
    }
    options
}

/// The mode named `id`, as `session/set_mode` and the `mode` option set it.
pub fn set_mode(session: &Session, id: &str) -> Result<(), String> {
    let mode = PermissionMode::parse(id).ok_or_else(|| format!("no mode `{id}`"))?;
    session
        .set_permission_mode(mode, ModeChangeBy::ControlRequest)
        .map_err(|e| e.to_string())
}

/// `session/set_config_option`: the value checked against what the
/// option offers, then applied (a model for the next request, a mode as
/// `session/set_mode` sets it).
pub fn set(
    session: &Session,
    config_id: &str,
    value: &SessionConfigOptionValue,
) -> Result<(), String> {
    let Some(value) = value.as_value_id() else {
        return Err(format!(
            "`{config_id}` takes one of its values, not a boolean"
        ));
    };
    let value = value.0.as_ref();
    match config_id {
        MODE => set_mode(session, value),
        MODEL => {
            if !models(session).iter().any(|(id, _)| id == value) {
                return Err(format!("this session cannot use the model `{value}`"));
            }
            if let Some(run) = &session.run
                && let Ok(mut current) = run.model_name.lock()
            {
                *current = value.to_string();
            }
            Ok(())
        }
        other => Err(format!(
            "no config option `{other}` (there are `mode` and `model`)"
        )),
    }
}
