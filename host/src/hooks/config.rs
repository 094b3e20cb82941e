//! The `hooks` settings: Claude Code's shape (event → matcher groups →
//! handlers), with handler types for carapace's two kinds of hook
//! components, a timeout, fail-open/closed, and optional grants.
//!
//! ```json
//! "hooks": {
//!   "PreToolUse": [
//!     {"matcher": "Bash|Edit", "hooks": [
//!       {"type": "wasm", "path": "hooks/policy.wasm", "timeout": 10,
//!        "failClosed": true, "grants": {"write": ["/var/log/agent"]}}
//!     ]}
//!   ],
//!   "Stop": [{"hooks": [{"type": "wasm-command", "path": "hooks/stop.wasm"}]}]
//! }
//! ```
//!
//! `wasm` is a typed `carapace:hook` component; `wasm-command` a WASI
//! command component speaking Claude Code's hook protocol. Paths are relative
//! to the directory of the settings file that names them. A hook gets no
//! capability unless `grants` lists it.

use super::HookEventKind;
use crate::policy::RuleSource;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Hooks run at most this long unless their settings say otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookConfigError {
    #[error("hooks settings in {source_file}: {reason}")]
    Invalid { source_file: String, reason: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerKind {
    /// A typed `carapace:hook` component.
    Component,
    /// A WASI command speaking Claude Code's hook protocol.
    Command,
    /// A function in the Agent SDK's process, registered by `initialize`
    /// and called over the control protocol.
    Callback,
    /// Claude Code's `command` hook: a shell line, run in the command
    /// sandbox (see `hooks::shell`).
    Shell,
}

/// What a `command` hook runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellLine {
    /// The line for `/bin/sh -c`.
    Run(String),
    /// Why it cannot run here (kept, to be refused when it would run: a
    /// guard that cannot run must not look like one that passed).
    Refused(String),
}

/// Claude Code's default timeout for a `command` hook.
pub const SHELL_DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What a hook is allowed to reach. Nothing by default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookGrants {
    #[serde(default)]
    pub read: Vec<PathBuf>,
    #[serde(default)]
    pub write: Vec<PathBuf>,
    #[serde(default)]
    pub env: Vec<String>,
}

/// Which tools (or sources) a matcher group applies to.
#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    Names(Vec<String>),
    Regex(regex::Regex),
}

impl Matcher {
    /// Claude Code's matcher grammar: empty or `*` matches everything, plain
    /// names (`Bash`, `Edit|Write`) match exactly, anything else is an
    /// anchored regular expression (`mcp__.*`, `Notebook.*`).
    pub fn parse(text: Option<&str>) -> Result<Self, String> {
        let text = text.unwrap_or("").trim();
        if text.is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        if text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '|')
        {
            return Ok(Matcher::Names(
                text.split('|')
                    .map(str::to_string)
                    .filter(|s| !s.is_empty())
                    .collect(),
            ));
        }
        regex::Regex::new(&format!("^(?:{text})$"))
            .map(Matcher::Regex)
            .map_err(|e| format!("matcher `{text}` is not a valid regular expression: {e}"))
    }

    pub fn matches(&self, subject: Option<&str>) -> bool {
        match (self, subject) {
            (Matcher::All, _) | (_, None) => true,
            (Matcher::Names(names), Some(s)) => names.iter().any(|n| n == s),
            (Matcher::Regex(re), Some(s)) => re.is_match(s),
        }
    }
}

/// One configured handler.
#[derive(Debug, Clone)]
pub struct HookSpec {
    pub event: HookEventKind,
    pub matcher: Matcher,
    pub kind: HandlerKind,
    pub path: PathBuf,
    pub timeout: Duration,
    /// A timeout or crash blocks (deny, block) instead of letting the run go on.
    pub fail_closed: bool,
    pub grants: HookGrants,
    pub source: RuleSource,
    /// A `command` hook's line (`Shell` only).
    pub command: Option<ShellLine>,
    /// The plugin a hook comes from (`CLAUDE_PLUGIN_ROOT`).
    pub plugin_root: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Group {
    matcher: Option<String>,
    hooks: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Handler {
    #[serde(rename = "type")]
    kind: String,
    path: PathBuf,
    /// Seconds.
    timeout: Option<f64>,
    #[serde(default)]
    fail_closed: bool,
    #[serde(default)]
    grants: HookGrants,
}

/// Claude Code's `command` handler, as its settings write it; `grants` and
/// `failClosed` are carapace's.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShellHandler {
    #[serde(rename = "type")]
    _kind: String,
    command: String,
    #[serde(default)]
    args: Vec<String>,
    /// Seconds.
    timeout: Option<f64>,
    #[serde(default)]
    fail_closed: bool,
    #[serde(default)]
    grants: HookGrants,
    shell: Option<String>,
}

/// Fields of a `command` hook that carapace reads but does not honour
/// as Claude Code does, and what it does instead.
const SHELL_FIELDS_NOT_HONOURED: &[(&str, &str)] = &[
    ("async", "it runs to its end before the call goes on"),
    ("asyncRewake", "it runs to its end before the call goes on"),
    ("if", "it runs for every call its matcher matches"),
    ("statusMessage", "no message is shown while it runs"),
    ("once", "it runs every time"),
];

/// Parses one settings file's `hooks` value.
pub fn parse(
    value: &Value,
    source: &RuleSource,
) -> Result<(Vec<HookSpec>, Vec<String>), HookConfigError> {
    let shown = source.describe();
    let invalid = |reason: String| HookConfigError::Invalid {
        source_file: shown.clone(),
        reason,
    };
    let base = source
        .file
        .as_ref()
        .and_then(|f| f.parent())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    let by_event: BTreeMap<String, Vec<Group>> = serde_json::from_value(value.clone())
        .map_err(|e| invalid(format!("expected event → matcher groups: {e}")))?;
    let mut specs = Vec::new();
    let mut warnings = Vec::new();
    for (event_name, groups) in by_event {
        let event = HookEventKind::parse(&event_name)
            .ok_or_else(|| invalid(format!("unknown hook event `{event_name}`")))?;
        for group in groups {
            let matcher = Matcher::parse(group.matcher.as_deref()).map_err(&invalid)?;
            for raw in group.hooks {
                if raw.get("type").and_then(Value::as_str) == Some("command") {
                    let spec = shell_spec(raw, event, &matcher, source, &base, &mut warnings)
                        .map_err(|e| invalid(format!("{event_name} command hook: {e}")))?;
                    specs.push(spec);
                    continue;
                }
                let handler: Handler = serde_json::from_value(raw)
                    .map_err(|e| invalid(format!("{event_name} handler: {e}")))?;
                let kind = match handler.kind.as_str() {
                    "wasm" => HandlerKind::Component,
                    "wasm-command" => HandlerKind::Command,
                    other => {
                        return Err(invalid(format!(
                            "unknown hook type `{other}` (use `wasm` or `wasm-command`)"
                        )));
                    }
                };
                let timeout = match handler.timeout {
                    None => DEFAULT_TIMEOUT,
                    Some(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => {
                        Duration::from_secs_f64(s)
                    }
                    Some(s) => {
                        return Err(invalid(format!(
                            "timeout {s} is not a number of seconds between 0 and 3600"
                        )));
                    }
                };
                let path = if handler.path.is_absolute() {
                    handler.path
                } else {
                    base.join(handler.path)
                };
                specs.push(HookSpec {
                    event,
                    matcher: matcher.clone(),
                    kind,
                    path,
                    timeout,
                    fail_closed: handler.fail_closed,
                    grants: handler.grants,
                    source: source.clone(),
                    command: None,
                    plugin_root: None,
                });
            }
        }
    }
    Ok((specs, warnings))
}

/// A PreToolUse guard that stands for hooks carapace could not read: it
/// matches every call and refuses it with `reason`, so that guards which
/// could not be loaded are not mistaken for guards that allowed.
pub fn unreadable_guard(reason: String, source: &RuleSource) -> HookSpec {
    HookSpec {
        event: HookEventKind::PreToolUse,
        matcher: Matcher::All,
        kind: HandlerKind::Shell,
        path: PathBuf::new(),
        timeout: SHELL_DEFAULT_TIMEOUT,
        fail_closed: true,
        grants: HookGrants::default(),
        source: source.clone(),
        command: Some(ShellLine::Refused(reason)),
        plugin_root: None,
    }
}

/// A `command` hook's spec; what it sets that carapace does not honour is
/// a warning, the hook still loads.
fn shell_spec(
    raw: Value,
    event: HookEventKind,
    matcher: &Matcher,
    source: &RuleSource,
    base: &Path,
    warnings: &mut Vec<String>,
) -> Result<HookSpec, String> {
    let shown = source.describe();
    let mut unread = Vec::new();
    let handler: ShellHandler =
        serde_ignored::deserialize(raw, |path| unread.push(path.to_string()))
            .map_err(|e| e.to_string())?;
    for field in unread {
        let why = SHELL_FIELDS_NOT_HONOURED
            .iter()
            .find(|(name, _)| *name == field)
            .map_or("it is not used by carapace", |(_, why)| why);
        warnings.push(format!(
            "{shown}: {} command hook `{}`: `{field}` is not honoured ({why})",
            event.name(),
            handler.command
        ));
    }
    let timeout = match handler.timeout {
        None => SHELL_DEFAULT_TIMEOUT,
        Some(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Duration::from_secs_f64(s),
        Some(s) => {
            return Err(format!(
                "timeout {s} is not a number of seconds between 0 and 3600"
            ));
        }
    };
    let command = match handler.shell.as_deref() {
        None | Some("bash") | Some("sh") => {
            ShellLine::Run(super::shell::command_line(&handler.command, &handler.args))
        }
        Some(other) => ShellLine::Refused(format!(
            "it asks for the `{other}` shell, which carapace does not run hooks with"
        )),
    };
    Ok(HookSpec {
        event,
        matcher: matcher.clone(),
        kind: HandlerKind::Shell,
        path: base.join("hooks"),
        timeout,
        fail_closed: handler.fail_closed,
        grants: handler.grants,
        source: source.clone(),
        command: Some(command),
        plugin_root: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::SourceKind;
    use serde_json::json;

    fn source() -> RuleSource {
        RuleSource {
            kind: SourceKind::Project,
            file: Some(PathBuf::from("/proj/.carapace/settings.json")),
        }
    }

    #[test]
    fn matchers_follow_claude_codes_grammar() -> Result<(), String> {
        assert!(Matcher::parse(None)?.matches(Some("Anything")));
        assert!(Matcher::parse(Some("*"))?.matches(Some("Bash")));
        let names = Matcher::parse(Some("Edit|Write"))?;
        assert!(
            names.matches(Some("Write"))
                && !names.matches(Some("WriteX"))
                && !names.matches(Some("Read"))
        );
        let regex = Matcher::parse(Some("mcp__.*"))?;
        assert!(regex.matches(Some("mcp__github__x")) && !regex.matches(Some("Bash")));
        assert!(Matcher::parse(Some("(unclosed")).is_err());
        Ok(())
    }

    #[test]
    fn parses_handlers_relative_to_the_settings_file() -> Result<(), HookConfigError> {
        let value = json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "wasm", "path": "hooks/p.wasm", "timeout": 5, "failClosed": true, "grants": {"write": ["/audit"]}},
                {"type": "command", "command": "echo shell", "async": true, "timeout": 3}
            ]}],
            "Stop": [{"hooks": [{"type": "wasm-command", "path": "/abs/stop.wasm"}]}]
        });
        let (specs, warnings) = parse(&value, &source())?;
        assert_eq!(specs.len(), 3);
        let shell = specs
            .iter()
            .find(|s| s.kind == HandlerKind::Shell)
            .ok_or_else(|| HookConfigError::Invalid {
                source_file: "test".into(),
                reason: "no shell spec".into(),
            })?;
        assert_eq!(shell.command, Some(ShellLine::Run("echo shell".into())));
        assert_eq!(shell.timeout, Duration::from_secs(3));
        assert_eq!(
            warnings.len(),
            1,
            "what the shell hook sets and carapace does not honour is a warning"
        );
        let pre = specs
            .iter()
            .find(|s| s.event == HookEventKind::PreToolUse)
            .ok_or(HookConfigError::Invalid {
                source_file: String::new(),
                reason: "missing".into(),
            })?;
        assert_eq!(pre.path, PathBuf::from("/proj/.carapace/hooks/p.wasm"));
        assert_eq!(
            (pre.kind, pre.timeout, pre.fail_closed),
            (HandlerKind::Component, Duration::from_secs(5), true)
        );
        assert_eq!(pre.grants.write, vec![PathBuf::from("/audit")]);
        for bad in [
            json!({"NoSuchEvent": []}),
            json!({"Stop": [{"hooks": [{"type": "python", "path": "x"}]}]}),
            json!({"Stop": [{"hooks": [{"type": "wasm", "path": "x", "timeout": -1}]}]}),
            json!({"Stop": [{"hooks": [{"type": "wasm", "path": "x", "grants": {"network": true}}]}]}),
        ] {
            assert!(parse(&bad, &source()).is_err(), "{bad}");
        }
        Ok(())
    }
}
