//! Each handler type's settings, as Claude Code writes them (and
//! carapace's `wasm` and `wasm-command`): read into a [`HookSpec`], with
//! the fields every type shares — `timeout`, `if`, `once`, `onFailure`
//! (and carapace's `failClosed`) — and a warning for each field carapace
//! reads but does not honour.

use super::HookEventKind;
use super::config::{
    DEFAULT_TIMEOUT, HandlerKind, HookGrants, HookSpec, Matcher, Parsed, SHELL_DEFAULT_TIMEOUT,
    ShellLine,
};
use crate::policy::RuleSource;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Handler {
    #[serde(rename = "type")]
    _kind: String,
    path: PathBuf,
    /// Seconds.
    timeout: Option<f64>,
    #[serde(default)]
    fail_closed: bool,
    /// Claude Code's `onFailure`: anything but `continue` blocks.
    on_failure: Option<String>,
    #[serde(default)]
    grants: HookGrants,
    /// Claude Code's `if` (a permission rule).
    #[serde(rename = "if")]
    condition: Option<String>,
    #[serde(default)]
    once: bool,
    /// Claude Code's `statusMessage`.
    status_message: Option<String>,
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
    /// Claude Code's `onFailure`: anything but `continue` blocks.
    on_failure: Option<String>,
    #[serde(default)]
    grants: HookGrants,
    shell: Option<String>,
    /// Claude Code's `async`: runs in the background, deciding nothing.
    #[serde(rename = "async", default)]
    in_background: bool,
    /// Claude Code's `asyncRewake`: in the background, but its exit 2
    /// reaches the model. carapace waits for it, as Claude Code's print
    /// mode does, so that its objection goes with the call's result.
    #[serde(default)]
    async_rewake: bool,
    /// Claude Code's `if` (a permission rule).
    #[serde(rename = "if")]
    condition: Option<String>,
    #[serde(default)]
    once: bool,
    /// Claude Code's `statusMessage`.
    status_message: Option<String>,
}

/// Claude Code's `http` handler.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HttpHandler {
    #[serde(rename = "type")]
    _kind: String,
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    allowed_env_vars: Vec<String>,
    /// Seconds.
    timeout: Option<f64>,
    #[serde(default)]
    fail_closed: bool,
    /// Claude Code's `onFailure`: anything but `continue` blocks.
    on_failure: Option<String>,
    /// Claude Code's `if` (a permission rule).
    #[serde(rename = "if")]
    condition: Option<String>,
    #[serde(default)]
    once: bool,
    /// Claude Code's `statusMessage`.
    status_message: Option<String>,
}

/// Claude Code's `prompt` handler.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptHandler {
    #[serde(rename = "type")]
    _kind: String,
    prompt: String,
    model: Option<String>,
    /// Seconds.
    timeout: Option<f64>,
    #[serde(default)]
    fail_closed: bool,
    /// Claude Code's `onFailure`: anything but `continue` blocks.
    on_failure: Option<String>,
    #[serde(rename = "if")]
    condition: Option<String>,
    #[serde(default)]
    once: bool,
    /// Claude Code's `statusMessage`.
    status_message: Option<String>,
}

/// Claude Code's `mcp_tool` handler.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct McpToolHandler {
    #[serde(rename = "type")]
    _kind: String,
    server: String,
    tool: String,
    #[serde(default)]
    input: serde_json::Map<String, Value>,
    /// Seconds.
    timeout: Option<f64>,
    #[serde(default)]
    fail_closed: bool,
    /// Claude Code's `onFailure`: anything but `continue` blocks.
    on_failure: Option<String>,
    #[serde(rename = "if")]
    condition: Option<String>,
    #[serde(default)]
    once: bool,
    /// Claude Code's `statusMessage`.
    status_message: Option<String>,
}

/// A `Middleware` entry: a `carapace:hook@0.2.0` component.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MiddlewareHandler {
    path: PathBuf,
    /// Seconds, for the hook's own work (not what its `next` runs).
    timeout: Option<f64>,
    #[serde(default)]
    grants: HookGrants,
    /// `first` (the default) or `last`: managed settings only.
    seat: Option<String>,
    #[serde(default)]
    options: Value,
}

/// A middleware hook's own work is small: it has this long by default.
const MIDDLEWARE_DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Claude Code's default timeout for a `prompt` hook.
const PROMPT_DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Claude Code's `onFailure`: `continue` (its default) lets the action go
/// on; any other value blocks it, as Claude Code reads it.
fn blocks_on_failure(value: Option<&str>) -> bool {
    value.is_some_and(|v| v != "continue")
}

/// A timeout in seconds, or `default`.
fn seconds(value: Option<f64>, default: Duration) -> Result<Duration, String> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(format!(
            "timeout {s} is not a number of seconds between 0 and 3600"
        )),
    }
}

/// Fields of a `command` hook that carapace reads but does not honour
/// as Claude Code does, and what it does instead.
const SHELL_FIELDS_NOT_HONOURED: &[(&str, &str)] = &[];

/// The fields every handler type shares, as one handler wrote them.
struct Shared<'a> {
    status_message: Option<String>,
    timeout: Option<f64>,
    default_timeout: Duration,
    fail_closed: bool,
    on_failure: Option<&'a str>,
    condition: Option<&'a str>,
    once: bool,
}

impl Parsed<'_> {
    /// One handler's spec, or why it cannot run.
    pub(super) fn handler(
        &mut self,
        raw: Value,
        event: HookEventKind,
        matcher: &Matcher,
    ) -> Result<HookSpec, String> {
        match raw.get("type").and_then(Value::as_str) {
            Some("command") => self.shell(raw, event, matcher),
            Some("http") => self.http(raw, event, matcher),
            Some("prompt") => self.judged(raw, event, matcher, HandlerKind::Prompt),
            Some("agent") => self.judged(raw, event, matcher, HandlerKind::Agent),
            Some("mcp_tool") => self.mcp_tool(raw, event, matcher),
            Some("wasm") => self.component(raw, event, matcher, HandlerKind::Component),
            Some("wasm-command") => self.component(raw, event, matcher, HandlerKind::Command),
            Some(other) => Err(format!(
                "carapace does not run `{other}` hooks; it runs `command`, `http`, `prompt`, `mcp_tool`, `agent`, `wasm` and `wasm-command`"
            )),
            None => Err("it has no `type`".into()),
        }
    }

    /// Reads a handler of type `H`; each field carapace does not read is a
    /// warning, saying why when `why` knows.
    fn read<H: serde::de::DeserializeOwned>(
        &mut self,
        raw: Value,
        event: HookEventKind,
        what: &str,
        why: &dyn Fn(&str) -> &'static str,
    ) -> Result<H, String> {
        let mut unread = Vec::new();
        let handler = serde_ignored::deserialize(raw, |path| unread.push(path.to_string()))
            .map_err(|e| e.to_string())?;
        for field in unread {
            self.warnings.push(format!(
                "{}: {} {what}: `{field}` is not honoured ({})",
                self.source.describe(),
                event.name(),
                why(&field)
            ));
        }
        Ok(handler)
    }

    /// `spec` with the fields every handler type shares.
    fn shared(&self, spec: HookSpec, shared: Shared<'_>) -> Result<HookSpec, String> {
        Ok(HookSpec {
            timeout: seconds(shared.timeout, shared.default_timeout)?,
            fail_closed: shared.fail_closed || blocks_on_failure(shared.on_failure),
            condition: condition(shared.condition, spec.event, &self.base, self.source)?,
            once: shared.once,
            status_message: shared.status_message,
            ..spec
        })
    }

    /// A `command` handler; what it sets that carapace does not honour is
    /// a warning, the hook still loads.
    fn shell(
        &mut self,
        raw: Value,
        event: HookEventKind,
        matcher: &Matcher,
    ) -> Result<HookSpec, String> {
        let why = |field: &str| {
            SHELL_FIELDS_NOT_HONOURED
                .iter()
                .find(|(name, _)| *name == field)
                .map_or("it is not used by carapace", |(_, why)| why)
        };
        let handler: ShellHandler = self.read(raw, event, "command hook", &why)?;
        let command = match handler.shell.as_deref() {
            None | Some("bash") | Some("sh") => {
                ShellLine::Run(super::shell::command_line(&handler.command, &handler.args))
            }
            Some(other) => ShellLine::Refused(format!(
                "it asks for the `{other}` shell, which carapace does not run hooks with"
            )),
        };
        let spec = HookSpec {
            grants: handler.grants,
            command: Some(command),
            in_background: handler.in_background && !handler.async_rewake,
            ..HookSpec::new(
                event,
                matcher.clone(),
                HandlerKind::Shell,
                self.base.join("hooks"),
                self.source,
            )
        };
        self.shared(
            spec,
            Shared {
                status_message: handler.status_message,
                timeout: handler.timeout,
                default_timeout: SHELL_DEFAULT_TIMEOUT,
                fail_closed: handler.fail_closed,
                on_failure: handler.on_failure.as_deref(),
                condition: handler.condition.as_deref(),
                once: handler.once,
            },
        )
    }

    /// An `http` handler.
    fn http(
        &mut self,
        raw: Value,
        event: HookEventKind,
        matcher: &Matcher,
    ) -> Result<HookSpec, String> {
        let handler: HttpHandler =
            self.read(raw, event, "http hook", &|_| "not used by carapace")?;
        let spec = HookSpec {
            http: Some(super::http::HttpTarget {
                url: handler.url.clone(),
                headers: handler.headers,
                allowed_env: handler.allowed_env_vars,
                limits: super::http::HttpHookLimits::default(),
            }),
            ..HookSpec::new(
                event,
                matcher.clone(),
                HandlerKind::Http,
                PathBuf::from(&handler.url),
                self.source,
            )
        };
        self.shared(
            spec,
            Shared {
                status_message: handler.status_message,
                timeout: handler.timeout,
                default_timeout: DEFAULT_TIMEOUT,
                fail_closed: handler.fail_closed,
                on_failure: handler.on_failure.as_deref(),
                condition: handler.condition.as_deref(),
                once: handler.once,
            },
        )
    }

    /// A `prompt` or `agent` handler: a model decides, asked once or as a
    /// read-only verifier.
    fn judged(
        &mut self,
        raw: Value,
        event: HookEventKind,
        matcher: &Matcher,
        kind: HandlerKind,
    ) -> Result<HookSpec, String> {
        let (what, default_timeout) = match kind {
            HandlerKind::Agent => ("agent hook", DEFAULT_TIMEOUT),
            _ => ("prompt hook", PROMPT_DEFAULT_TIMEOUT),
        };
        let handler: PromptHandler = self.read(raw, event, what, &|_| "not used by carapace")?;
        let model = handler.model.map(|m| crate::model::resolve_model(&m));
        let prompt = handler.prompt;
        let base = HookSpec::new(
            event,
            matcher.clone(),
            kind,
            PathBuf::from(what),
            self.source,
        );
        let spec = match kind {
            HandlerKind::Agent => HookSpec {
                agent: Some(super::agent_hook::AgentTarget { prompt, model }),
                ..base
            },
            _ => HookSpec {
                prompt: Some(super::prompt::PromptTarget { prompt, model }),
                ..base
            },
        };
        self.shared(
            spec,
            Shared {
                status_message: handler.status_message,
                timeout: handler.timeout,
                default_timeout,
                fail_closed: handler.fail_closed,
                on_failure: handler.on_failure.as_deref(),
                condition: handler.condition.as_deref(),
                once: handler.once,
            },
        )
    }

    /// An `mcp_tool` handler.
    fn mcp_tool(
        &mut self,
        raw: Value,
        event: HookEventKind,
        matcher: &Matcher,
    ) -> Result<HookSpec, String> {
        let handler: McpToolHandler =
            self.read(raw, event, "mcp_tool hook", &|_| "not used by carapace")?;
        let path = PathBuf::from(format!("mcp:{}:{}", handler.server, handler.tool));
        let spec = HookSpec {
            mcp_tool: Some(super::mcp_tool::McpToolTarget {
                server: handler.server,
                tool: handler.tool,
                input: handler.input,
            }),
            ..HookSpec::new(
                event,
                matcher.clone(),
                HandlerKind::McpTool,
                path,
                self.source,
            )
        };
        self.shared(
            spec,
            Shared {
                status_message: handler.status_message,
                timeout: handler.timeout,
                default_timeout: DEFAULT_TIMEOUT,
                fail_closed: handler.fail_closed,
                on_failure: handler.on_failure.as_deref(),
                condition: handler.condition.as_deref(),
                once: handler.once,
            },
        )
    }

    /// A `wasm` or `wasm-command` handler.
    fn component(
        &mut self,
        raw: Value,
        event: HookEventKind,
        matcher: &Matcher,
        kind: HandlerKind,
    ) -> Result<HookSpec, String> {
        let handler: Handler = self.read(raw, event, "hook", &|_| "not used by carapace")?;
        let path = if handler.path.is_absolute() {
            handler.path
        } else {
            self.base.join(handler.path)
        };
        let spec = HookSpec {
            grants: handler.grants,
            ..HookSpec::new(event, matcher.clone(), kind, path, self.source)
        };
        self.shared(
            spec,
            Shared {
                status_message: handler.status_message,
                timeout: handler.timeout,
                default_timeout: DEFAULT_TIMEOUT,
                fail_closed: handler.fail_closed,
                on_failure: handler.on_failure.as_deref(),
                condition: handler.condition.as_deref(),
                once: handler.once,
            },
        )
    }
}

impl Parsed<'_> {
    /// The `Middleware` entries of one file. One that cannot be read is a
    /// warning and a guard refusing every call: a middleware hook may be
    /// what stands between the model and a tool.
    pub(super) fn middleware_entries(&mut self, entries: Value) {
        let entries = match serde_json::from_value::<Vec<Value>>(entries) {
            Ok(entries) => entries,
            Err(e) => {
                let why = format!("`Middleware` is not a list of hooks: {e}");
                return self.cannot_run(HookEventKind::PreToolUse, Matcher::All, why);
            }
        };
        for raw in entries {
            match self.middleware(raw) {
                Ok(spec) => self.specs.push(spec),
                Err(why) => self.cannot_run(HookEventKind::PreToolUse, Matcher::All, why),
            }
        }
    }

    fn middleware(&mut self, raw: Value) -> Result<HookSpec, String> {
        let event = HookEventKind::PreToolUse;
        let handler: MiddlewareHandler =
            self.read(raw, event, "middleware hook", &|_| "not used by carapace")?;
        let managed = self.source.kind == crate::policy::SourceKind::Managed;
        let last = match handler.seat.as_deref() {
            None | Some("first") => false,
            Some("last") => true,
            Some(other) => return Err(format!("seat `{other}` is neither `first` nor `last`")),
        };
        if handler.seat.is_some() && !managed {
            self.warnings.push(format!(
                "{}: a middleware hook's `seat` is honoured in managed settings only; it sits in the {} tier",
                self.source.describe(),
                super::tier::Tier::of(self.source.kind, false).name()
            ));
        }
        let path = if handler.path.is_absolute() {
            handler.path
        } else {
            self.base.join(handler.path)
        };
        Ok(HookSpec {
            grants: handler.grants,
            timeout: seconds(handler.timeout, MIDDLEWARE_DEFAULT_TIMEOUT)?,
            // What cannot answer refuses: middleware may be a guard.
            fail_closed: true,
            middleware: Some(super::config::MiddlewareEntry {
                tier: super::tier::Tier::of(self.source.kind, last),
                options: handler.options,
            }),
            ..HookSpec::new(
                event,
                Matcher::All,
                HandlerKind::Middleware,
                path,
                self.source,
            )
        })
    }
}

/// A handler's `if`: a permission rule (`Bash(git *)`), for tool events;
/// one that cannot be read makes the hook one that cannot run (a
/// PreToolUse guard then refuses what it matches).
fn condition(
    text: Option<&str>,
    event: HookEventKind,
    base: &Path,
    source: &RuleSource,
) -> Result<Option<crate::policy::Rule>, String> {
    let Some(text) = text else {
        return Ok(None);
    };
    let tool_event = matches!(
        event,
        HookEventKind::PreToolUse | HookEventKind::PostToolUse | HookEventKind::PostToolUseFailure
    );
    if !tool_event {
        return Err(format!(
            "`if` applies to tool events only, not {}",
            event.name()
        ));
    }
    // `.claude/settings.json` belongs to the folder holding `.claude`.
    let project = match base.file_name().and_then(|n| n.to_str()) {
        Some(".claude" | ".carapace") => base.parent().unwrap_or(base),
        _ => base,
    };
    let anchors = crate::policy::Anchors {
        cwd: std::env::current_dir().unwrap_or_else(|_| project.to_path_buf()),
        home: std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default(),
        project: project.to_path_buf(),
    };
    crate::policy::Rule::parse(text, crate::policy::RuleKind::Ask, source.clone(), &anchors)
        .map(Some)
        .map_err(|e| format!("its `if` is not a permission rule: {e}"))
}
