//! The `hooks` settings: Claude Code's shape (event → matcher groups →
//! handlers), the matcher grammar, and what one entry that cannot be read
//! or run comes to. Each handler type's own fields are read in
//! `handlers`: Claude Code's `command`, `http`, `prompt` and `mcp_tool`,
//! and carapace's two kinds of hook components, with a timeout,
//! fail-open/closed, and optional grants.
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
    /// Claude Code's `http` hook: the input POSTed to a URL (see
    /// `hooks::http`).
    Http,
    /// Claude Code's `prompt` hook: one model request decides (see
    /// `hooks::prompt`).
    Prompt,
    /// Claude Code's `mcp_tool` hook: a connected server's tool answers
    /// (see `hooks::mcp_tool`).
    McpTool,
    /// Claude Code's `agent` hook: a read-only verifier decides (see
    /// `hooks::agent_hook`).
    Agent,
    /// A `carapace:hook@0.2.0` middleware component (see
    /// `hooks::middleware`): registered for engine events, seated in a
    /// tier, handed a `next`.
    Middleware,
}

/// A middleware hook's seat and what its entry passes it.
#[derive(Debug, Clone, PartialEq)]
pub struct MiddlewareEntry {
    pub tier: super::tier::Tier,
    /// The entry's `options` (`null` when it has none).
    pub options: Value,
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
    /// Claude Code's matcher grammar: empty or `*` matches everything; a
    /// text of only letters, digits, `_`, `-`, spaces, `|` and `,` is a list
    /// of exact names (`Bash`, `Edit|Write`, `Glob, Write`); anything else
    /// is a regular expression searched for in the name (`^Gl` matches
    /// `Glob`, `mcp__.*` every MCP tool) — anchored only where it says so.
    pub fn parse(text: Option<&str>) -> Result<Self, String> {
        let text = text.unwrap_or("");
        if text.trim().is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|' | ',' | ' ');
        if text.chars().all(plain) {
            return Ok(Matcher::Names(
                text.split(['|', ','])
                    .map(|name| name.trim().to_string())
                    .filter(|name| !name.is_empty())
                    .collect(),
            ));
        }
        regex::Regex::new(text)
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
    /// Claude Code's `if`: a permission rule the call must fall under for
    /// the hook to run (tool events only).
    pub condition: Option<crate::policy::Rule>,
    /// Claude Code's `once`: the hook runs at most once a session.
    pub once: bool,
    /// An `http` hook's target.
    pub http: Option<super::http::HttpTarget>,
    /// A `prompt` hook's text and model.
    pub prompt: Option<super::prompt::PromptTarget>,
    /// Claude Code's `async`: the hook runs in the background and the
    /// event does not wait for it (nor can it decide anything).
    pub in_background: bool,
    /// An `mcp_tool` hook's server, tool and input.
    pub mcp_tool: Option<super::mcp_tool::McpToolTarget>,
    /// An `agent` hook's task and model.
    pub agent: Option<super::agent_hook::AgentTarget>,
    /// A middleware hook's seat and options (`Middleware` only; such a spec
    /// stands as a PreToolUse spec matching every call, so that one held
    /// back or unreadable refuses the calls it would have seen).
    pub middleware: Option<MiddlewareEntry>,
    /// Claude Code's `statusMessage`: what the screen shows while the hook
    /// runs.
    pub status_message: Option<String>,
}

impl HookSpec {
    /// A hook of `kind` for `event`, configured in `source`, with nothing
    /// else set: the default timeout, failing open, no grant, no `if`.
    pub fn new(
        event: HookEventKind,
        matcher: Matcher,
        kind: HandlerKind,
        path: PathBuf,
        source: &RuleSource,
    ) -> Self {
        Self {
            event,
            matcher,
            kind,
            path,
            timeout: DEFAULT_TIMEOUT,
            fail_closed: false,
            grants: HookGrants::default(),
            source: source.clone(),
            command: None,
            plugin_root: None,
            condition: None,
            once: false,
            http: None,
            prompt: None,
            in_background: false,
            mcp_tool: None,
            agent: None,
            middleware: None,
            status_message: None,
        }
    }
}

#[derive(Deserialize)]
struct Group {
    matcher: Option<String>,
    hooks: Vec<Value>,
}

/// Parses one settings file's `hooks` value. One entry carapace cannot
/// read or run never takes the rest down: it is named in a warning, and
/// where it is a PreToolUse hook it stands as a guard refusing the calls
/// it would have judged. Only a value that is not an object of events is
/// an error.
pub fn parse(
    value: &Value,
    source: &RuleSource,
) -> Result<(Vec<HookSpec>, Vec<String>), HookConfigError> {
    let shown = source.describe();
    let base = source
        .file
        .as_ref()
        .and_then(|f| f.parent())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    let by_event: BTreeMap<String, Value> =
        serde_json::from_value(value.clone()).map_err(|e| HookConfigError::Invalid {
            source_file: shown.clone(),
            reason: format!("expected event → matcher groups: {e}"),
        })?;
    let mut parsed = Parsed {
        specs: Vec::new(),
        warnings: Vec::new(),
        source,
        base,
    };
    for (event_name, groups) in by_event {
        if event_name == MIDDLEWARE_KEY {
            parsed.middleware_entries(groups);
            continue;
        }
        let Some(event) = HookEventKind::parse(&event_name) else {
            parsed.warnings.push(format!(
                "{shown}: `{event_name}` hooks do not run: carapace does not fire that event"
            ));
            continue;
        };
        let groups = match serde_json::from_value::<Vec<Group>>(groups) {
            Ok(groups) => groups,
            Err(e) => {
                parsed.cannot_run(event, Matcher::All, format!("its matcher groups: {e}"));
                continue;
            }
        };
        for group in groups {
            let matcher = match Matcher::parse(group.matcher.as_deref()) {
                Ok(matcher) => matcher,
                Err(e) => {
                    parsed.cannot_run(event, Matcher::All, e);
                    continue;
                }
            };
            for raw in group.hooks {
                let spec = parsed.handler(raw, event, &matcher);
                if let Err(why) = spec.map(|spec| parsed.specs.push(spec)) {
                    parsed.cannot_run(event, matcher.clone(), why);
                }
            }
        }
    }
    Ok((parsed.specs, parsed.warnings))
}

/// The `hooks` key whose entries are middleware components, not Claude
/// Code matcher groups: `"Middleware": [{"path": "…", "seat": "last"}]`.
pub const MIDDLEWARE_KEY: &str = "Middleware";

/// What one settings file's hooks came to, as they are read.
pub(super) struct Parsed<'a> {
    pub(super) specs: Vec<HookSpec>,
    pub(super) warnings: Vec<String>,
    pub(super) source: &'a RuleSource,
    /// Relative handler paths start here (the settings file's folder).
    pub(super) base: PathBuf,
}

impl Parsed<'_> {
    /// A hook that cannot run: a warning, and for PreToolUse a guard that
    /// refuses what it matches — a guard that cannot run must not look
    /// like one that passed.
    pub(super) fn cannot_run(&mut self, event: HookEventKind, matcher: Matcher, why: String) {
        let shown = self.source.describe();
        let guards = event == HookEventKind::PreToolUse;
        self.warnings.push(format!(
            "{shown}: a {} hook cannot run ({why}){}",
            event.name(),
            if guards {
                "; the calls it matches are refused until it is fixed"
            } else {
                ""
            }
        ));
        if guards {
            self.specs.push(HookSpec {
                matcher,
                ..unreadable_guard(
                    format!("{shown} has a PreToolUse hook that cannot run ({why})"),
                    self.source,
                )
            });
        }
    }
}

/// A PreToolUse guard that stands for hooks carapace could not read: it
/// matches every call and refuses it with `reason`, so that guards which
/// could not be loaded are not mistaken for guards that allowed.
pub fn unreadable_guard(reason: String, source: &RuleSource) -> HookSpec {
    HookSpec {
        timeout: SHELL_DEFAULT_TIMEOUT,
        fail_closed: true,
        command: Some(ShellLine::Refused(reason)),
        ..HookSpec::new(
            HookEventKind::PreToolUse,
            Matcher::All,
            HandlerKind::Shell,
            PathBuf::new(),
            source,
        )
    }
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
        // As Claude Code 2.1.332: a regex is searched for, not anchored…
        let start = Matcher::parse(Some("^Gl"))?;
        assert!(start.matches(Some("Glob")) && !start.matches(Some("Grep")));
        let inside = Matcher::parse(Some("Out.ut"))?;
        assert!(inside.matches(Some("BashOutput")));
        // …and a plain list may be split by commas and spaced.
        let list = Matcher::parse(Some("Glob, Write"))?;
        assert!(list.matches(Some("Glob")) && list.matches(Some("Write")));
        assert!(!list.matches(Some("Glo")) && !list.matches(Some("TodoWrite")));
        Ok(())
    }

    #[test]
    fn parses_handlers_relative_to_the_settings_file() -> Result<(), HookConfigError> {
        let value = json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "wasm", "path": "hooks/p.wasm", "timeout": 5, "failClosed": true, "grants": {"write": ["/audit"]}},
                {"type": "command", "command": "echo shell", "statusMessage": "checking", "timeout": 3, "retryOnFailure": true}
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
        assert_eq!(shell.status_message.as_deref(), Some("checking"));
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
        assert!(parse(&json!(["not", "events"]), &source()).is_err());
        Ok(())
    }

    /// One entry carapace cannot run never takes the others down; a
    /// PreToolUse one stands as a guard refusing what it matches.
    #[test]
    fn an_entry_that_cannot_run_is_a_warning_or_a_refusing_guard() -> Result<(), HookConfigError> {
        let good = json!({"type": "command", "command": "true"});
        for (bad, guards) in [
            (json!({"NoSuchEvent": [{"hooks": [good.clone()]}]}), false),
            (
                json!({"Stop": [{"hooks": [{"type": "function", "path": "check.wasm"}]}]}),
                false,
            ),
            (
                json!({"Stop": [{"hooks": [{"type": "wasm", "path": "x", "timeout": -1}]}]}),
                false,
            ),
            (
                json!({"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "function", "path": "ok.wasm"}]}]}),
                true,
            ),
            (
                json!({"PreToolUse": [{"matcher": "(unclosed", "hooks": [good.clone()]}]}),
                true,
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "wasm", "path": "x", "grants": {"network": true}}]}]}),
                true,
            ),
        ] {
            let mut value = bad.clone();
            value["SessionStart"] = json!([{"hooks": [good.clone()]}]);
            let (specs, warnings) = parse(&value, &source())?;
            assert_eq!(warnings.len(), 1, "{bad}: {warnings:?}");
            let kept = specs
                .iter()
                .filter(|s| s.event == HookEventKind::SessionStart)
                .count();
            assert_eq!(kept, 1, "the good hook beside it loads: {bad}");
            let refusing: Vec<_> = specs
                .iter()
                .filter(|s| matches!(s.command, Some(ShellLine::Refused(_))))
                .collect();
            assert_eq!(refusing.len(), usize::from(guards), "{bad}: {specs:?}");
            if let Some(guard) = refusing.first() {
                assert_eq!(guard.event, HookEventKind::PreToolUse);
                let write_only =
                    guard.matcher.matches(Some("Write")) && !guard.matcher.matches(Some("Read"));
                assert!(
                    write_only
                        || bad.to_string().contains("unclosed")
                        || bad.to_string().contains("network")
                );
            }
        }
        Ok(())
    }
}
