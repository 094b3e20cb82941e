//! The policy layer: permission modes, rules and the per-call capability
//! decision.
//!
//! For each call the tool says what it needs; the policy grants the
//! intersection of that need, the rules and the mode, and the plugin's
//! ceiling — or asks, or denies — and says which rule, mode, default or
//! ceiling decided. The order is Claude Code's: deny → ask → mode → allow →
//! ask resolution, with the ceiling and secrets before everything and
//! protected paths asking whatever the mode or the allow rules.
//!
//! The policy never grants more than a call asked for, never anything outside
//! the ceiling, and never the model's credentials.

mod audit;
pub mod bash;
mod hosts;
mod protected;
mod rules;

pub use audit::{AuditEntry, AuditLog};
pub use bash::{Analysis, analyse};
pub use hosts::{HostPattern, HostPatternError, is_internal};
pub use protected::{TreeTooLarge, protected_entries, protected_reason};
pub use rules::{
    Anchors, Family, Rule, RuleError, RuleKind, RuleSet, RuleSource, SourceKind, Subject,
};

use crate::sandbox::{Capability, FileAccess, Grant};
use serde::Serialize;
use std::path::{Component, Path, PathBuf};

/// Claude Code's permission modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
pub enum PermissionMode {
    #[default]
    #[value(name = "default")]
    #[serde(rename = "default")]
    Default,
    #[value(name = "acceptEdits")]
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    #[value(name = "plan")]
    #[serde(rename = "plan")]
    Plan,
    #[value(name = "dontAsk")]
    #[serde(rename = "dontAsk")]
    DontAsk,
    #[value(name = "bypassPermissions")]
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        <Self as clap::ValueEnum>::from_str(text, false).ok()
    }
}

/// Environment variables no plugin is ever given, whatever it declares:
/// the model's credentials.
pub const SECRET_ENV: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
];

/// What a plugin may ever be granted, approved when it was installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ceiling {
    files: Vec<(PathBuf, FileAccess)>,
    hosts: Vec<HostPattern>,
    /// Any host (a first-party fetcher; the rules decide per call).
    any_host: bool,
    env: Vec<String>,
    process: bool,
    /// Every call needs approval unless a rule allows the tool, whatever it
    /// asks for (MCP tools: what they do is the server's business).
    calls_need_approval: bool,
}

impl Ceiling {
    pub fn none() -> Self {
        Self::default()
    }

    /// Files under `root`, up to `access` (write includes read).
    pub fn with_files(mut self, root: impl Into<PathBuf>, access: FileAccess) -> Self {
        self.files.push((root.into(), access));
        self
    }

    pub fn with_host(mut self, host: HostPattern) -> Self {
        self.hosts.push(host);
        self
    }

    /// Outgoing HTTP to any host, each call still decided by the rules.
    pub fn with_any_host(mut self) -> Self {
        self.any_host = true;
        self
    }

    pub fn with_env(mut self, name: impl Into<String>) -> Self {
        self.env.push(name.into());
        self
    }

    pub fn with_process(mut self) -> Self {
        self.process = true;
        self
    }

    /// Calls ask unless a rule allows the tool (MCP tools).
    pub fn with_calls_needing_approval(mut self) -> Self {
        self.calls_need_approval = true;
        self
    }

    pub fn allows_file(&self, path: &Path, access: FileAccess) -> bool {
        self.files
            .iter()
            .any(|(root, ceiling)| path.starts_with(root) && *ceiling >= access)
    }

    pub fn allows_host(&self, host: &HostPattern) -> bool {
        self.any_host || self.hosts.iter().any(|h| h.covers(host))
    }

    pub fn allows_env(&self, name: &str) -> bool {
        self.env.iter().any(|n| n == name)
    }

    pub fn allows_process(&self) -> bool {
        self.process
    }

    /// A short description, for `plugin inspect` and denials.
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .files
            .iter()
            .map(|(root, access)| {
                format!(
                    "{} {}",
                    if *access == FileAccess::Write {
                        "write"
                    } else {
                        "read"
                    },
                    root.display()
                )
            })
            .collect();
        if self.any_host {
            out.push("http any host".into());
        }
        out.extend(self.hosts.iter().map(|h| format!("http {h}")));
        out.extend(self.env.iter().map(|e| format!("env {e}")));
        if self.process {
            out.push("process".into());
        }
        out
    }
}

/// What decided a verdict: named in denials and in the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Basis {
    pub kind: BasisKind,
    /// The rule as written, when a rule decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where the rule (or the mode) came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BasisKind {
    Rule,
    Mode,
    Default,
    Ceiling,
    Protected,
    Secret,
    /// The request itself was unusable (a relative path, an unparsable host).
    Input,
    /// The user (or the permission prompt tool) approved what was asked.
    Approval,
    /// A PreToolUse hook decided (its path is the `rule`, its settings file
    /// the `source`).
    Hook,
}

impl Basis {
    /// A hook's decision.
    pub fn hook(hook: Option<String>, source: Option<String>) -> Self {
        Self {
            kind: BasisKind::Hook,
            rule: hook,
            source,
        }
    }

    fn of(kind: BasisKind) -> Self {
        Self {
            kind,
            rule: None,
            source: None,
        }
    }

    fn rule(rule: &Rule) -> Self {
        Self {
            kind: BasisKind::Rule,
            rule: Some(rule.text.clone()),
            source: Some(rule.source.describe()),
        }
    }

    /// "rule `X` (from F)", "the plugin's approved ceiling", …
    pub fn describe(&self) -> String {
        match (self.kind, &self.rule, &self.source) {
            (BasisKind::Rule, Some(rule), Some(source)) => format!("rule `{rule}` (from {source})"),
            (BasisKind::Rule, Some(rule), None) => format!("rule `{rule}`"),
            (BasisKind::Mode, _, _) => "the permission mode".into(),
            (BasisKind::Ceiling, _, _) => "the plugin's approved ceiling".into(),
            (BasisKind::Protected, _, _) => "carapace's protected paths".into(),
            (BasisKind::Secret, _, _) => "carapace's secrets policy".into(),
            (BasisKind::Input, _, _) => "the request itself".into(),
            (BasisKind::Approval, _, _) => "the user's approval".into(),
            (BasisKind::Hook, Some(hook), _) => format!("the PreToolUse hook {hook}"),
            (BasisKind::Hook, None, _) => "a PreToolUse hook".into(),
            (BasisKind::Default | BasisKind::Rule, _, _) => "the default policy".into(),
        }
    }
}

/// Which questions count as answered "yes" when deciding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Approval {
    None,
    /// The user approved the call.
    Everything,
    /// A hook allowed the call: the default questions only.
    DefaultQuestions,
}

/// The outcome for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Allow(Grant),
    /// Needs the user's approval; the message says what and why.
    Ask(String),
    Deny(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub outcome: Outcome,
    pub basis: Basis,
}

/// Everything the policy needs, fixed for a session.
#[derive(Debug, Clone)]
pub struct PolicyConfig {
    pub mode: PermissionMode,
    pub rules: RuleSet,
    pub cwd: PathBuf,
    /// Further working directories (`permissions.additionalDirectories`).
    pub additional_dirs: Vec<PathBuf>,
    pub home: PathBuf,
    /// carapace's configuration directory (`~/.carapace`), always protected.
    pub config_dir: PathBuf,
}

impl PolicyConfig {
    /// Mode and working directory only, no rules (tests, simple embedders).
    pub fn new(mode: PermissionMode, cwd: &Path) -> Self {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        Self {
            mode,
            rules: RuleSet::default(),
            cwd: cwd.to_path_buf(),
            additional_dirs: Vec::new(),
            config_dir: home.join(".carapace"),
            home,
        }
    }
}

/// Trees larger than this cannot be vouched free of protected paths, so a
/// write grant on them asks.
const PROTECTED_SCAN_LIMIT: usize = 20_000;

#[derive(Debug, Clone)]
pub struct Policy {
    mode: PermissionMode,
    rules: RuleSet,
    /// The working directories, symlinks resolved.
    working_dirs: Vec<PathBuf>,
    home: PathBuf,
    config_dir: PathBuf,
}

enum Need {
    Allow(Basis),
    Ask(String, Basis),
    Deny(String, Basis),
}

impl Policy {
    pub fn new(mode: PermissionMode, cwd: &Path) -> Self {
        Self::from_config(PolicyConfig::new(mode, cwd))
    }

    pub fn from_config(config: PolicyConfig) -> Self {
        let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let mut working_dirs = vec![real(&config.cwd)];
        working_dirs.extend(config.additional_dirs.iter().map(|d| real(d)));
        Self {
            mode: config.mode,
            rules: config.rules,
            working_dirs,
            home: real(&config.home),
            config_dir: resolve_symlinks(&config.config_dir),
        }
    }

    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// The home and configuration directories protected paths refer to.
    pub fn protected_roots(&self) -> (PathBuf, PathBuf) {
        (self.home.clone(), self.config_dir.clone())
    }

    /// `Some(rule)` when a bare deny rule removes `tool` from what the model
    /// is offered.
    pub fn hidden_by(&self, tool: &str) -> Option<&Rule> {
        self.rules.denies_tool(tool)
    }

    /// Grants `needs` for one call of `tool`, asks, or denies the whole call.
    pub fn decide(&self, tool: &str, needs: &[Capability], ceiling: &Ceiling) -> Verdict {
        self.decide_with(tool, needs, ceiling, Approval::None)
    }

    /// The grant for a call whose `Ask` the user approved: what was asked is
    /// granted; the ceiling, secrets and deny rules still deny.
    pub fn approve(&self, tool: &str, needs: &[Capability], ceiling: &Ceiling) -> Verdict {
        self.decide_with(tool, needs, ceiling, Approval::Everything)
    }

    /// The verdict when a PreToolUse hook allowed the call: the hook stands
    /// in for the user's answer to the default question only. Deny and ask
    /// rules, protected paths, secrets and the ceiling still decide.
    pub fn decide_hook_allowed(
        &self,
        tool: &str,
        needs: &[Capability],
        ceiling: &Ceiling,
    ) -> Verdict {
        self.decide_with(tool, needs, ceiling, Approval::DefaultQuestions)
    }

    fn decide_with(
        &self,
        tool: &str,
        needs: &[Capability],
        ceiling: &Ceiling,
        approval: Approval,
    ) -> Verdict {
        let approved = approval == Approval::Everything;
        if let Some(rule) = self.rules.tool_rule(RuleKind::Deny, tool) {
            return deny(
                format!(
                    "Permission to use {tool} was denied by {}.",
                    Basis::rule(rule).describe()
                ),
                Basis::rule(rule),
            );
        }
        let tool_ask = self.rules.tool_rule(RuleKind::Ask, tool);
        let tool_allow = self.rules.tool_rule(RuleKind::Allow, tool);

        let mut grant = Grant::none();
        let mut allow_basis: Option<Basis> = None;
        let mut pending_ask: Option<(String, Basis)> = None;
        for need in needs {
            let resolved = match self.resolve(tool, need) {
                Ok(resolved) => resolved,
                Err(message) => return deny(message, Basis::of(BasisKind::Input)),
            };
            match self.decide_need(tool, &resolved, ceiling, tool_ask, tool_allow) {
                Need::Deny(message, basis) => return deny(message, basis),
                Need::Ask(..) if approved => {
                    allow_basis = Some(Basis::of(BasisKind::Approval));
                }
                Need::Ask(_, basis)
                    if approval == Approval::DefaultQuestions
                        && basis.kind == BasisKind::Default =>
                {
                    allow_basis = Some(Basis::of(BasisKind::Hook));
                }
                Need::Ask(message, basis) => {
                    pending_ask.get_or_insert((message, basis));
                }
                Need::Allow(basis) => {
                    // The most specific reason wins: a rule over the mode
                    // over the default.
                    let better = match (&allow_basis, basis.kind) {
                        (None, _) => true,
                        (Some(current), BasisKind::Rule) => current.kind != BasisKind::Rule,
                        (Some(current), BasisKind::Mode) => current.kind == BasisKind::Default,
                        _ => false,
                    };
                    if better {
                        allow_basis = Some(basis);
                    }
                }
            }
            if pending_ask.is_none() {
                match self.grant(grant, &resolved) {
                    Ok(next) => grant = next,
                    Err(message) => return deny(message, Basis::of(BasisKind::Input)),
                }
            }
        }
        if let Some((message, basis)) = pending_ask {
            if self.mode == PermissionMode::DontAsk {
                return deny(
                    format!("{message} Permission mode `dontAsk` denies what it would ask."),
                    Basis::of(BasisKind::Mode),
                );
            }
            return Verdict {
                outcome: Outcome::Ask(message),
                basis,
            };
        }
        if needs.is_empty()
            && !approved
            && let Some(rule) = tool_ask
        {
            return Verdict {
                outcome: Outcome::Ask(format!(
                    "{tool} needs approval by {}.",
                    Basis::rule(rule).describe()
                )),
                basis: Basis::rule(rule),
            };
        }
        if needs.is_empty() && !approved && ceiling.calls_need_approval && tool_allow.is_none() {
            match (self.mode, approval) {
                (PermissionMode::BypassPermissions, _) => {}
                (_, Approval::DefaultQuestions) => allow_basis = Some(Basis::of(BasisKind::Hook)),
                (PermissionMode::DontAsk, _) => {
                    return deny(
                        format!(
                            "{tool} needs approval, and permission mode `dontAsk` denies what it would ask."
                        ),
                        Basis::of(BasisKind::Mode),
                    );
                }
                (PermissionMode::Plan, _) => {
                    return deny(
                        format!(
                            "Plan mode is read-only: {tool} is an MCP tool and may change things."
                        ),
                        Basis::of(BasisKind::Mode),
                    );
                }
                _ => {
                    return Verdict {
                        outcome: Outcome::Ask(format!(
                            "{tool} needs approval: MCP tools ask unless a rule allows them (e.g. `{tool}` or `mcp__<server>__*`)."
                        )),
                        basis: Basis::of(BasisKind::Default),
                    };
                }
            }
        }
        let basis = allow_basis
            .or_else(|| tool_allow.map(Basis::rule))
            .unwrap_or_else(|| {
                if self.mode == PermissionMode::BypassPermissions {
                    Basis::of(BasisKind::Mode)
                } else {
                    Basis::of(BasisKind::Default)
                }
            });
        Verdict {
            outcome: Outcome::Allow(grant),
            basis,
        }
    }

    /// The verdict on one Bash command line: deny/ask rules catch any part
    /// of the line, allow needs every part allowed; a line the analysis
    /// cannot follow is never allowed by a rule.
    pub fn decide_command(&self, command: &str, ceiling: &Ceiling) -> Verdict {
        self.decide("Bash", &[Capability::Process(command.to_string())], ceiling)
    }

    fn decide_command_need(&self, command: &str) -> Need {
        if let Some(rule) = self.rules.tool_rule(RuleKind::Deny, "Bash") {
            return Need::Deny(
                format!("Bash was denied by {}.", Basis::rule(rule).describe()),
                Basis::rule(rule),
            );
        }
        let analysis = analyse(command);
        if let Some(rule) = self
            .rules
            .matching(RuleKind::Deny, Subject::Command(&analysis))
        {
            return Need::Deny(
                format!(
                    "The command was denied by {} ({}).",
                    Basis::rule(rule).describe(),
                    analysis.describe()
                ),
                Basis::rule(rule),
            );
        }
        if let Some(rule) = self.rules.tool_rule(RuleKind::Ask, "Bash").or_else(|| {
            self.rules
                .matching(RuleKind::Ask, Subject::Command(&analysis))
        }) {
            return Need::Ask(
                format!(
                    "The command needs approval by {}.",
                    Basis::rule(rule).describe()
                ),
                Basis::rule(rule),
            );
        }
        match self.mode {
            PermissionMode::BypassPermissions => return Need::Allow(Basis::of(BasisKind::Mode)),
            PermissionMode::Plan => {
                return Need::Deny(
                    "Plan mode does not run commands.".into(),
                    Basis::of(BasisKind::Mode),
                );
            }
            PermissionMode::Default | PermissionMode::AcceptEdits | PermissionMode::DontAsk => {}
        }
        if let Some(rule) = self.rules.tool_rule(RuleKind::Allow, "Bash") {
            return Need::Allow(Basis::rule(rule));
        }
        if let Analysis::Commands(commands) = &analysis {
            let allowed: Option<Vec<&Rule>> = commands
                .iter()
                .map(|command| {
                    self.rules.iter().find(|rule| {
                        rule.kind == RuleKind::Allow
                            && matches!(&rule.specifier, Some(rules::Specifier::Command(p)) if p.allows_command(command))
                    })
                })
                .collect();
            if let Some(rules) = allowed
                && let Some(first) = rules.first()
            {
                return Need::Allow(Basis::rule(first));
            }
        }
        Need::Ask(
            format!(
                "Running `{}` needs approval ({}).",
                one_line(command),
                analysis.describe()
            ),
            Basis::of(BasisKind::Default),
        )
    }

    fn decide_need(
        &self,
        tool: &str,
        need: &Resolved,
        ceiling: &Ceiling,
        tool_ask: Option<&Rule>,
        tool_allow: Option<&Rule>,
    ) -> Need {
        // The ceiling and secrets bound everything, rules and modes included.
        if !need.within(ceiling) {
            return Need::Deny(
                format!(
                    "{tool} asked to {}, which is outside the plugin's approved ceiling ({}).",
                    need.describe(),
                    ceiling.describe().join(", ")
                ),
                Basis::of(BasisKind::Ceiling),
            );
        }
        if let Resolved::Command(command) = need {
            return self.decide_command_need(command);
        }
        if let Resolved::Env(name) = need
            && SECRET_ENV.contains(&name.as_str())
        {
            return Need::Deny(
                format!("{tool} asked for `{name}`: the model's credentials never reach a plugin."),
                Basis::of(BasisKind::Secret),
            );
        }
        let subject = need.subject();
        if let Some(subject) = subject
            && let Some(rule) = self.rules.matching(RuleKind::Deny, subject)
        {
            return Need::Deny(
                format!(
                    "Permission to {} was denied by {}.",
                    need.describe(),
                    Basis::rule(rule).describe()
                ),
                Basis::rule(rule),
            );
        }
        if need.is_write()
            && let Some(reason) = self.protection(need)
        {
            return Need::Ask(
                format!(
                    "{} is protected ({reason}): writing it always needs the user's explicit approval.",
                    need.path_shown()
                ),
                Basis::of(BasisKind::Protected),
            );
        }
        if let Some(rule) =
            tool_ask.or_else(|| subject.and_then(|s| self.rules.matching(RuleKind::Ask, s)))
        {
            return Need::Ask(
                format!(
                    "Permission to {} needs approval by {}.",
                    need.describe(),
                    Basis::rule(rule).describe()
                ),
                Basis::rule(rule),
            );
        }
        match self.mode {
            PermissionMode::BypassPermissions => return Need::Allow(Basis::of(BasisKind::Mode)),
            PermissionMode::Plan if !need.is_read() => {
                return Need::Deny(
                    format!(
                        "Plan mode is read-only: {tool} may not {}.",
                        need.describe()
                    ),
                    Basis::of(BasisKind::Mode),
                );
            }
            PermissionMode::AcceptEdits if need.is_write() && self.inside_working_dirs(need) => {
                return Need::Allow(Basis::of(BasisKind::Mode));
            }
            _ => {}
        }
        if let Some(rule) =
            tool_allow.or_else(|| subject.and_then(|s| self.rules.matching(RuleKind::Allow, s)))
        {
            return Need::Allow(Basis::rule(rule));
        }
        match need {
            Resolved::File { write: false, .. } | Resolved::Tree { write: false, .. }
                if self.inside_working_dirs(need) =>
            {
                return Need::Allow(Basis::of(BasisKind::Default));
            }
            Resolved::Env(_) => return Need::Allow(Basis::of(BasisKind::Default)), // approved with the ceiling
            _ => {}
        }
        let why = match need {
            Resolved::File { .. } | Resolved::Tree { .. } if !self.inside_working_dirs(need) => {
                format!(
                    "it is outside the working directory {}",
                    self.working_dirs
                        .first()
                        .map(|d| d.display().to_string())
                        .unwrap_or_default()
                )
            }
            _ => format!("permission mode `{}` asks first", self.mode.as_str()),
        };
        Need::Ask(
            format!("Permission to {} needs approval: {why}.", need.describe()),
            Basis::of(BasisKind::Default),
        )
    }

    fn protection(&self, need: &Resolved) -> Option<String> {
        match need {
            Resolved::File {
                requested,
                resolved,
                ..
            } => protected_reason(resolved, &self.home, &self.config_dir)
                .or_else(|| protected_reason(requested, &self.home, &self.config_dir)),
            Resolved::Tree { dir, .. } => {
                if let Some(reason) = protected_reason(dir, &self.home, &self.config_dir) {
                    return Some(reason);
                }
                if self.config_dir.starts_with(dir) {
                    return Some("the tree contains carapace's configuration directory".into());
                }
                match protected_entries(dir, &self.home, &self.config_dir, PROTECTED_SCAN_LIMIT) {
                    Ok(found) if found.is_empty() => None,
                    Ok(found) => Some(format!("the tree contains {}", found[0].display())),
                    Err(e) => Some(format!("it cannot be checked for protected files ({e})")),
                }
            }
            Resolved::Host(_) | Resolved::Env(_) | Resolved::Command(_) => None,
        }
    }

    fn inside_working_dirs(&self, need: &Resolved) -> bool {
        let path = match need {
            Resolved::File { resolved, .. } => resolved,
            Resolved::Tree { dir, .. } => dir,
            Resolved::Host(_) | Resolved::Env(_) | Resolved::Command(_) => return false,
        };
        self.working_dirs.iter().any(|d| path.starts_with(d))
    }

    /// Turns a capability into the values the decision works on: paths made
    /// absolute-and-normal and resolved through symlinks, hosts parsed.
    fn resolve(&self, tool: &str, need: &Capability) -> Result<Resolved, String> {
        let path = |p: &str| {
            lexical_absolute(p)
                .ok_or_else(|| format!("{tool} asked for `{p}`, which is not an absolute path"))
        };
        Ok(match need {
            Capability::ReadFile(p) | Capability::WriteFile(p) => {
                let requested = path(p)?;
                let resolved = resolve_symlinks(&requested);
                let is_dir = resolved.is_dir();
                Resolved::File {
                    requested,
                    resolved,
                    is_dir,
                    write: matches!(need, Capability::WriteFile(_)),
                }
            }
            Capability::ReadTree(p) | Capability::WriteTree(p) => Resolved::Tree {
                dir: resolve_symlinks(&path(p)?),
                write: matches!(need, Capability::WriteTree(_)),
            },
            Capability::Http(host) => {
                Resolved::Host(HostPattern::parse(host).map_err(|e| format!("{tool}: {e}"))?)
            }
            Capability::Env(name) => Resolved::Env(name.clone()),
            Capability::Process(command) => Resolved::Command(command.clone()),
        })
    }

    fn grant(&self, grant: Grant, need: &Resolved) -> Result<Grant, String> {
        match need {
            Resolved::File {
                requested,
                resolved,
                write: false,
                ..
            } => grant
                .read_file_as(requested, resolved)
                .map_err(|e| e.to_string()),
            Resolved::File {
                requested,
                resolved,
                write: true,
                ..
            } => grant
                .write_file_as(requested, resolved)
                .map_err(|e| e.to_string()),
            Resolved::Tree { dir, write } => grant
                .tree(
                    dir,
                    if *write {
                        FileAccess::Write
                    } else {
                        FileAccess::Read
                    },
                )
                .map_err(|e| e.to_string()),
            Resolved::Host(host) => Ok(grant.http_host(host.clone())),
            Resolved::Env(name) => Ok(match std::env::var(name) {
                Ok(value) => grant.env_var(name, value),
                Err(_) => grant,
            }),
            Resolved::Command(command) => Ok(grant.command(command.clone())),
        }
    }
}

fn deny(message: String, basis: Basis) -> Verdict {
    Verdict {
        outcome: Outcome::Deny(message),
        basis,
    }
}

fn one_line(command: &str) -> String {
    let line: String = command.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// A capability made concrete.
#[derive(Debug, Clone)]
enum Resolved {
    File {
        requested: PathBuf,
        resolved: PathBuf,
        is_dir: bool,
        write: bool,
    },
    Tree {
        dir: PathBuf,
        write: bool,
    },
    Host(HostPattern),
    Env(String),
    Command(String),
}

impl Resolved {
    fn is_write(&self) -> bool {
        matches!(
            self,
            Resolved::File { write: true, .. } | Resolved::Tree { write: true, .. }
        )
    }

    fn is_read(&self) -> bool {
        matches!(
            self,
            Resolved::File { write: false, .. }
                | Resolved::Tree { write: false, .. }
                | Resolved::Env(_)
        )
    }

    fn within(&self, ceiling: &Ceiling) -> bool {
        let access = |write: bool| {
            if write {
                FileAccess::Write
            } else {
                FileAccess::Read
            }
        };
        match self {
            Resolved::File {
                requested,
                resolved,
                write,
                ..
            } => {
                ceiling.allows_file(resolved, access(*write))
                    && ceiling.allows_file(requested, access(*write))
            }
            Resolved::Tree { dir, write } => ceiling.allows_file(dir, access(*write)),
            Resolved::Host(host) => ceiling.allows_host(host),
            Resolved::Env(name) => ceiling.allows_env(name),
            Resolved::Command(_) => ceiling.allows_process(),
        }
    }

    fn subject(&self) -> Option<Subject<'_>> {
        match self {
            Resolved::File {
                requested,
                resolved,
                is_dir,
                write,
            } => Some(Subject::Path {
                requested,
                resolved,
                is_dir: *is_dir,
                write: *write,
            }),
            Resolved::Tree { dir, write } => Some(Subject::Tree { dir, write: *write }),
            Resolved::Host(host) => Some(Subject::Host(host.host())),
            Resolved::Env(_) | Resolved::Command(_) => None,
        }
    }

    fn path_shown(&self) -> String {
        match self {
            Resolved::File {
                requested,
                resolved,
                ..
            } if requested != resolved => {
                format!("{} (a link to {})", requested.display(), resolved.display())
            }
            Resolved::File { requested, .. } => requested.display().to_string(),
            Resolved::Tree { dir, .. } => dir.display().to_string(),
            Resolved::Host(host) => host.to_string(),
            Resolved::Env(name) => name.clone(),
            Resolved::Command(command) => one_line(command),
        }
    }

    fn describe(&self) -> String {
        match self {
            Resolved::File { write: false, .. } => format!("read {}", self.path_shown()),
            Resolved::File { write: true, .. } => format!("write {}", self.path_shown()),
            Resolved::Tree { write: false, .. } => format!("read the tree {}", self.path_shown()),
            Resolved::Tree { write: true, .. } => {
                format!("write in the tree {}", self.path_shown())
            }
            Resolved::Host(host) => format!("reach {host} over HTTP"),
            Resolved::Env(name) => format!("read the environment variable {name}"),
            Resolved::Command(command) => format!("run `{}`", one_line(command)),
        }
    }
}

/// `path` made absolute-and-normal without touching the filesystem, or
/// `None` if it is relative.
pub fn lexical_absolute(path: &str) -> Option<PathBuf> {
    let path = Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    let mut normal = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::Normal(name) => normal.push(name),
            Component::ParentDir => {
                normal.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(normal)
}

/// The real location of `path`: every symlink resolved. For a path that does
/// not exist yet, the deepest existing ancestor is resolved and the rest
/// appended, so a link in a parent directory cannot hide where a new file
/// would go.
pub fn resolve_symlinks(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let mut rest = Vec::new();
    let mut ancestor = path;
    while let Some(parent) = ancestor.parent() {
        if let Some(name) = ancestor.file_name() {
            rest.push(name.to_owned());
        }
        if let Ok(real) = std::fs::canonicalize(parent) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        ancestor = parent;
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_anywhere() -> Ceiling {
        Ceiling::none().with_files("/", FileAccess::Read)
    }

    fn is_allow(verdict: &Verdict) -> bool {
        matches!(verdict.outcome, Outcome::Allow(_))
    }

    #[test]
    fn reads_inside_the_working_directory_are_granted_for_that_file_only()
    -> Result<(), Box<dyn std::error::Error>> {
        let cwd = tempfile::tempdir()?;
        let cwd_real = std::fs::canonicalize(cwd.path())?;
        let file = cwd_real.join("a.txt");
        std::fs::write(&file, "x")?;
        let policy = Policy::new(PermissionMode::Default, cwd.path());
        let verdict = policy.decide(
            "Read",
            &[Capability::ReadFile(file.to_string_lossy().into())],
            &read_anywhere(),
        );
        assert_eq!(
            verdict.outcome,
            Outcome::Allow(Grant::none().read_file(&file)?)
        );
        assert_eq!(verdict.basis.kind, BasisKind::Default);
        Ok(())
    }

    #[test]
    fn reads_outside_the_working_directory_ask_unless_bypassed()
    -> Result<(), Box<dyn std::error::Error>> {
        let cwd = tempfile::tempdir()?;
        let other = tempfile::tempdir()?;
        let file = std::fs::canonicalize(other.path())?.join("secret.txt");
        std::fs::write(&file, "x")?;
        let need = [Capability::ReadFile(file.to_string_lossy().into())];
        let default = Policy::new(PermissionMode::Default, cwd.path()).decide(
            "Read",
            &need,
            &read_anywhere(),
        );
        assert!(
            matches!(&default.outcome, Outcome::Ask(m) if m.contains("outside the working directory"))
        );
        let dont_ask = Policy::new(PermissionMode::DontAsk, cwd.path()).decide(
            "Read",
            &need,
            &read_anywhere(),
        );
        assert!(matches!(dont_ask.outcome, Outcome::Deny(_)));
        let bypass = Policy::new(PermissionMode::BypassPermissions, cwd.path()).decide(
            "Read",
            &need,
            &read_anywhere(),
        );
        assert_eq!(
            bypass.outcome,
            Outcome::Allow(Grant::none().read_file(&file)?)
        );
        Ok(())
    }

    #[test]
    fn write_trees_follow_the_mode() -> Result<(), Box<dyn std::error::Error>> {
        let cwd = tempfile::tempdir()?;
        let inside = std::fs::canonicalize(cwd.path())?.join("out");
        std::fs::create_dir(&inside)?;
        let need = [Capability::WriteTree(inside.to_string_lossy().into())];
        let ceiling = Ceiling::none().with_files("/", FileAccess::Write);
        for (mode, allowed) in [
            (PermissionMode::Default, false),
            (PermissionMode::Plan, false),
            (PermissionMode::DontAsk, false),
            (PermissionMode::AcceptEdits, true),
            (PermissionMode::BypassPermissions, true),
        ] {
            let verdict = Policy::new(mode, cwd.path()).decide("Probe", &need, &ceiling);
            assert_eq!(is_allow(&verdict), allowed, "{mode:?}: {verdict:?}");
        }
        let read_only = Ceiling::none().with_files("/", FileAccess::Read);
        let verdict = Policy::new(PermissionMode::BypassPermissions, cwd.path())
            .decide("Probe", &need, &read_only);
        assert_eq!(verdict.basis.kind, BasisKind::Ceiling);
        Ok(())
    }

    #[test]
    fn lexical_absolute_resolves_dots_and_rejects_relative() {
        assert_eq!(lexical_absolute("/a/./b/../c"), Some(PathBuf::from("/a/c")));
        assert_eq!(lexical_absolute("/../../etc"), Some(PathBuf::from("/etc")));
        assert_eq!(lexical_absolute("a/b"), None);
    }
}
