//! The capability decision for one call: what the call needs, against the
//! deny, ask and allow rules, the permission mode, protected paths, secrets
//! and the plugin's ceiling — and a PreToolUse hook's answer, which stands
//! in for the user's on the default question only.
//!
//! [`Policy::decide`] is the one entry point. An `Ask` carries the grant an
//! approval would give, decided in the same pass, so that approving never
//! decides a second time.

use super::bash::{Analysis, analyse};
use super::ceiling::{Ceiling, SECRET_ENV};
use super::modes::{ModeCell, PermissionMode};
use super::paths::TreeTooLarge;
use super::paths::{lexical_absolute, multiply_linked, resolve_symlinks};
use super::protected::{protected_entries, protected_reason};
use super::rules::{self, Rule, RuleKind, RuleSet, Subject};
use crate::sandbox::{Capability, FileAccess, FileFacts, FileId, Grant, HostPattern, file_facts};
use serde::Serialize;
use std::path::{Path, PathBuf};

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

impl BasisKind {
    /// The name printed as `decided_by` and in the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            BasisKind::Rule => "rule",
            BasisKind::Mode => "mode",
            BasisKind::Default => "default",
            BasisKind::Ceiling => "ceiling",
            BasisKind::Protected => "protected",
            BasisKind::Secret => "secret",
            BasisKind::Input => "input",
            BasisKind::Approval => "approval",
            BasisKind::Hook => "hook",
        }
    }
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

    pub(super) fn of(kind: BasisKind) -> Self {
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

/// A PreToolUse hook's answer, as far as the decision goes (a deny or a
/// defer settles the call before the policy is asked).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HookAnswer {
    #[default]
    None,
    /// The hook allowed the call: it answers the default question, no more.
    Allow,
    /// The hook wants the user asked, with this reason.
    Ask(String),
}

/// What the user said about this call before it was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Approval {
    #[default]
    None,
    /// Approved beforehand (`tool call --yes`): what would be asked is
    /// granted; the ceiling, secrets and deny rules still deny.
    Given,
}

/// One call, as the policy is asked about it.
#[derive(Debug, Clone)]
pub struct CallRequest<'a> {
    pub tool: &'a str,
    /// What the call names that rules may single out (the skill a Skill
    /// call starts: `Skill(deploy)`).
    pub named: Option<&'a str>,
    pub needs: &'a [Capability],
    pub ceiling: &'a Ceiling,
    pub hook: HookAnswer,
    pub approval: Approval,
}

impl<'a> CallRequest<'a> {
    pub fn new(tool: &'a str, needs: &'a [Capability], ceiling: &'a Ceiling) -> Self {
        Self {
            tool,
            named: None,
            needs,
            ceiling,
            hook: HookAnswer::None,
            approval: Approval::None,
        }
    }

    pub fn naming(mut self, named: &'a str) -> Self {
        self.named = Some(named);
        self
    }

    pub fn with_hook(mut self, hook: HookAnswer) -> Self {
        self.hook = hook;
        self
    }

    pub fn with_approval(mut self, approval: Approval) -> Self {
        self.approval = approval;
        self
    }
}

/// Which questions count as answered "yes" while deciding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answered {
    Nothing,
    /// The user approved the call.
    Everything,
    /// A hook allowed the call: the default questions only.
    DefaultQuestions,
}

/// The outcome for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Allow(Grant),
    /// Needs the user's approval.
    Ask(Question),
    Deny(String),
}

/// What the user is asked, and what approving grants — decided with the
/// question, so that an approval never decides again.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// What needs approval, and why.
    pub text: String,
    on_approval: Grant,
}

impl Question {
    /// The user said yes: what that grants.
    pub fn approve(self) -> Grant {
        self.on_approval
    }
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
    /// Whether the mode may later become bypassPermissions
    /// (`--allow-dangerously-skip-permissions`; always when it starts there).
    pub bypass_allowed: bool,
    pub rules: RuleSet,
    pub cwd: PathBuf,
    /// Further working directories (`permissions.additionalDirectories`).
    pub additional_dirs: Vec<PathBuf>,
    pub home: PathBuf,
    /// carapace's configuration directory (`~/.carapace`), always protected.
    pub config_dir: PathBuf,
    /// Hosts a granted HTTP capability may reach although they are internal
    /// addresses (`sandbox.allowInternalAddresses`, user settings only).
    pub internal_hosts: Vec<HostPattern>,
}

impl PolicyConfig {
    /// Mode and working directory only, no rules (tests, simple embedders).
    pub fn new(mode: PermissionMode, cwd: &Path) -> Self {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        Self {
            mode,
            bypass_allowed: false,
            rules: RuleSet::default(),
            cwd: cwd.to_path_buf(),
            additional_dirs: Vec::new(),
            config_dir: home.join(".carapace"),
            home,
            internal_hosts: Vec::new(),
        }
    }
}

/// Trees larger than this cannot be vouched free of protected paths, so a
/// write grant on them asks.
const PROTECTED_SCAN_LIMIT: usize = 20_000;

/// Trees larger than this cannot be listed for hard links (when deny or ask
/// rules name paths), so a grant on them asks.
const LINKED_SCAN_LIMIT: usize = 100_000;

#[derive(Debug, Clone)]
pub struct Policy {
    mode: ModeCell,
    rules: RuleSet,
    /// The working directories, symlinks resolved.
    working_dirs: Vec<PathBuf>,
    home: PathBuf,
    config_dir: PathBuf,
    internal_hosts: Vec<HostPattern>,
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
            mode: ModeCell::new(config.mode, config.bypass_allowed),
            rules: config.rules,
            working_dirs,
            home: real(&config.home),
            config_dir: resolve_symlinks(&config.config_dir),
            internal_hosts: config.internal_hosts,
        }
    }

    pub fn mode(&self) -> PermissionMode {
        self.mode.get()
    }

    /// The session's mode, shared: changing it changes every later
    /// decision (and what hooks are told).
    pub fn mode_cell(&self) -> &ModeCell {
        &self.mode
    }

    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// The working directories, symlinks resolved: the session's own first.
    pub fn working_dirs(&self) -> &[PathBuf] {
        &self.working_dirs
    }

    /// What a rule written for this session resolves relative paths against.
    pub fn anchors(&self) -> rules::Anchors {
        let cwd = self.working_dirs.first().cloned().unwrap_or_default();
        rules::Anchors {
            project: cwd.clone(),
            cwd,
            home: self.home.clone(),
        }
    }

    /// This policy with `allows` added (a skill's `allowed-tools`): the
    /// same mode, deny and ask rules, so it can only answer what this one
    /// would ask.
    pub fn with_allows(&self, allows: impl IntoIterator<Item = Rule>) -> Policy {
        let mut wider = self.clone();
        for rule in allows.into_iter().filter(|r| r.kind == RuleKind::Allow) {
            wider.rules.push(rule);
        }
        wider
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

    /// Grants the call's needs, asks, or denies the whole call: the one
    /// entry point of the decision.
    pub fn decide(&self, request: &CallRequest<'_>) -> Verdict {
        let answered = match (&request.approval, &request.hook) {
            (Approval::Given, _) => Answered::Everything,
            (Approval::None, HookAnswer::Allow) => Answered::DefaultQuestions,
            (Approval::None, HookAnswer::None | HookAnswer::Ask(_)) => Answered::Nothing,
        };
        let verdict = self.decide_with(request, answered);
        match (&request.hook, verdict.outcome) {
            // A hook's ask turns what would be allowed into a question; it
            // never loosens a deny or an ask of the policy's own.
            (HookAnswer::Ask(reason), Outcome::Allow(grant))
                if request.approval == Approval::None =>
            {
                let why = if reason.is_empty() {
                    "no reason given"
                } else {
                    reason.as_str()
                };
                ask(
                    format!(
                        "A PreToolUse hook asks for approval of this {} call ({why}).",
                        request.tool
                    ),
                    grant,
                    Basis::hook(None, None),
                )
            }
            (_, outcome) => Verdict {
                outcome,
                basis: verdict.basis,
            },
        }
    }

    fn decide_with(&self, request: &CallRequest<'_>, approval: Answered) -> Verdict {
        let (tool, needs, ceiling) = (request.tool, request.needs, request.ceiling);
        let approved = approval == Answered::Everything;
        // A rule for the whole tool, or for what this call names.
        let rule_for = |kind| {
            self.rules.tool_rule(kind, tool).or_else(|| {
                request
                    .named
                    .and_then(|name| self.rules.named_rule(kind, tool, name))
            })
        };
        if let Some(rule) = rule_for(RuleKind::Deny) {
            return deny(
                format!(
                    "Permission to use {tool} was denied by {}.",
                    Basis::rule(rule).describe()
                ),
                Basis::rule(rule),
            );
        }
        let tool_ask = rule_for(RuleKind::Ask);
        let tool_allow = rule_for(RuleKind::Allow);

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
                    if approval == Answered::DefaultQuestions
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
            // What an approval would grant is decided with the rest: an
            // asked need is granted exactly as an allowed one.
            match self.grant(grant, &resolved) {
                Ok(next) => grant = next,
                Err(message) => return deny(message, Basis::of(BasisKind::Input)),
            }
        }
        let mode = self.mode.get();
        if let Some((message, basis)) = pending_ask {
            if mode == PermissionMode::DontAsk {
                return deny(
                    format!("{message} Permission mode `dontAsk` denies what it would ask."),
                    Basis::of(BasisKind::Mode),
                );
            }
            return ask(message, grant, basis);
        }
        if needs.is_empty()
            && !approved
            && let Some(rule) = tool_ask
        {
            return ask(
                format!("{tool} needs approval by {}.", Basis::rule(rule).describe()),
                grant,
                Basis::rule(rule),
            );
        }
        if needs.is_empty() && !approved && ceiling.calls_need_approval() && tool_allow.is_none() {
            match (mode, approval) {
                (PermissionMode::BypassPermissions, _) => {}
                (_, Answered::DefaultQuestions) => allow_basis = Some(Basis::of(BasisKind::Hook)),
                (PermissionMode::DontAsk, _) => {
                    return deny(
                        format!(
                            "{tool} needs approval, and permission mode `dontAsk` denies what it would ask."
                        ),
                        Basis::of(BasisKind::Mode),
                    );
                }
                (PermissionMode::Plan, _) if !ceiling.ends_plan_mode() => {
                    return deny(
                        format!(
                            "Plan mode is read-only: {tool} needs approval (an MCP tool may change things; WebSearch asks), and plan mode gives none. A rule allowing {tool} lets it run."
                        ),
                        Basis::of(BasisKind::Mode),
                    );
                }
                _ => {
                    return ask(
                        format!(
                            "{tool} needs approval: MCP tools ask unless a rule allows them (e.g. `{tool}` or `mcp__<server>__*`)."
                        ),
                        grant,
                        Basis::of(BasisKind::Default),
                    );
                }
            }
        }
        let basis = allow_basis
            .or_else(|| tool_allow.map(Basis::rule))
            .unwrap_or_else(|| {
                if mode == PermissionMode::BypassPermissions {
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
        let needs = [Capability::Process(command.to_string())];
        self.decide(&CallRequest::new("Bash", &needs, ceiling))
    }

    fn decide_command_need(&self, command: &str) -> Need {
        if let Some(rule) = self.rules.tool_rule(RuleKind::Deny, "Bash") {
            return Need::Deny(
                format!("Bash was denied by {}.", Basis::rule(rule).describe()),
                Basis::rule(rule),
            );
        }
        let analysis = analyse(command);
        if let Analysis::Exceeds(exceeded) = &analysis {
            // Nothing could be checked: refused in every mode. A long
            // script is better written to a file and run.
            return Need::Deny(
                format!(
                    "The command was not run: {exceeded}. Write a long or deeply nested script to a file with Write, then run the file."
                ),
                Basis::of(BasisKind::Input),
            );
        }
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
        match self.mode.get() {
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
        if let Resolved::Tree {
            linked: Err(too_large),
            ..
        } = need
        {
            return Need::Ask(
                format!(
                    "Permission to {} needs approval: {too_large}, too many to check for hard links to files the deny and ask rules cover.",
                    need.describe()
                ),
                Basis::of(BasisKind::Default),
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
        match self.mode.get() {
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
            _ => format!("permission mode `{}` asks first", self.mode.get().as_str()),
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
                // The file the decision is about, opened without following
                // a link: what gets staged must be this one.
                let file = file_facts(&resolved).map_err(|e| format!("{tool}: {e}"))?;
                let is_dir = file.is_some_and(|f| f.is_dir);
                Resolved::File {
                    requested,
                    resolved,
                    is_dir,
                    write: matches!(need, Capability::WriteFile(_)),
                    file,
                }
            }
            Capability::ReadTree(p) | Capability::WriteTree(p) => {
                let dir = resolve_symlinks(&path(p)?);
                // Another name for a denied file inside the tree would
                // expose it: list the tree's hard links when rules limit
                // paths at all.
                let linked = if self.rules.has_path_limits() {
                    multiply_linked(&dir, LINKED_SCAN_LIMIT)
                } else {
                    Ok(Vec::new())
                };
                Resolved::Tree {
                    dir,
                    write: matches!(need, Capability::WriteTree(_)),
                    linked,
                }
            }
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
                file,
                ..
            } => grant
                .read_file_as(requested, resolved, file.map(|f| f.id))
                .map_err(|e| e.to_string()),
            Resolved::File {
                requested,
                resolved,
                write: true,
                file,
                ..
            } => grant
                .write_file_as(requested, resolved, file.map(|f| f.id))
                .map_err(|e| e.to_string()),
            Resolved::Tree { dir, write, .. } => grant
                .tree(
                    dir,
                    if *write {
                        FileAccess::Write
                    } else {
                        FileAccess::Read
                    },
                )
                .map_err(|e| e.to_string()),
            // Reaching an internal address is for what the user's own
            // settings name, never for whatever a model or plugin asks.
            Resolved::Host(host) if self.internal_hosts.iter().any(|i| i.covers(host)) => {
                Ok(grant.http_internal(host.clone()))
            }
            Resolved::Host(host) => Ok(grant.http_host(host.clone())),
            Resolved::Env(name) => Ok(match std::env::var(name) {
                Ok(value) => grant.env_var(name, value),
                Err(_) => grant,
            }),
            Resolved::Command(command) => Ok(grant.command(command.clone())),
        }
    }
}

fn ask(text: String, on_approval: Grant, basis: Basis) -> Verdict {
    Verdict {
        outcome: Outcome::Ask(Question { text, on_approval }),
        basis,
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
        /// What is at `resolved`, if anything.
        file: Option<FileFacts>,
    },
    Tree {
        dir: PathBuf,
        write: bool,
        /// The tree's files with more than one name, or the tree was too
        /// large to list them.
        linked: Result<Vec<FileId>, TreeTooLarge>,
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
            Resolved::Tree { dir, write, .. } => ceiling.allows_file(dir, access(*write)),
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
                file,
            } => Some(Subject::Path {
                requested,
                resolved,
                is_dir: *is_dir,
                write: *write,
                file: *file,
            }),
            Resolved::Tree {
                dir, write, linked, ..
            } => Some(Subject::Tree {
                dir,
                write: *write,
                linked: linked.as_deref().unwrap_or(&[]),
            }),
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
        let needs = [Capability::ReadFile(file.to_string_lossy().into())];
        let verdict = policy.decide(&CallRequest::new("Read", &needs, &read_anywhere()));
        // Bound to the very file that was there when it was decided.
        let decided = file_facts(&file)?.map(|f| f.id);
        assert!(decided.is_some());
        assert_eq!(
            verdict.outcome,
            Outcome::Allow(Grant::none().read_file_as(&file, &file, decided)?)
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
        let ceiling = read_anywhere();
        let request = CallRequest::new("Read", &need, &ceiling);
        let default = Policy::new(PermissionMode::Default, cwd.path()).decide(&request);
        let Outcome::Ask(question) = default.outcome else {
            return Err(format!("expected an ask: {default:?}").into());
        };
        assert!(question.text.contains("outside the working directory"));
        // Approving grants what was asked, decided in the same pass.
        let decided = file_facts(&file)?.map(|f| f.id);
        assert_eq!(
            question.approve(),
            Grant::none().read_file_as(&file, &file, decided)?
        );
        let dont_ask = Policy::new(PermissionMode::DontAsk, cwd.path()).decide(&request);
        assert!(matches!(dont_ask.outcome, Outcome::Deny(_)));
        let bypass = Policy::new(PermissionMode::BypassPermissions, cwd.path()).decide(&request);
        assert_eq!(
            bypass.outcome,
            Outcome::Allow(Grant::none().read_file_as(&file, &file, decided)?)
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
            let verdict =
                Policy::new(mode, cwd.path()).decide(&CallRequest::new("Probe", &need, &ceiling));
            assert_eq!(is_allow(&verdict), allowed, "{mode:?}: {verdict:?}");
        }
        let read_only = Ceiling::none().with_files("/", FileAccess::Read);
        let verdict = Policy::new(PermissionMode::BypassPermissions, cwd.path())
            .decide(&CallRequest::new("Probe", &need, &read_only));
        assert_eq!(verdict.basis.kind, BasisKind::Ceiling);
        Ok(())
    }

    #[test]
    fn lexical_absolute_resolves_dots_and_rejects_relative() {
        assert_eq!(lexical_absolute("/a/./b/../c"), Some(PathBuf::from("/a/c")));
        assert_eq!(lexical_absolute("/../../etc"), Some(PathBuf::from("/etc")));
        assert_eq!(lexical_absolute("a/b"), None);
    }

    #[test]
    fn a_hooks_answer_and_an_approval_go_through_the_one_entry_point()
    -> Result<(), Box<dyn std::error::Error>> {
        let cwd = tempfile::tempdir()?;
        let inside = std::fs::canonicalize(cwd.path())?.join("a.txt");
        let outside = tempfile::tempdir()?;
        let far = std::fs::canonicalize(outside.path())?.join("b.txt");
        let ceiling = read_anywhere();
        let policy = Policy::new(PermissionMode::Default, cwd.path());
        let near = [Capability::ReadFile(inside.to_string_lossy().into())];
        let away = [Capability::ReadFile(far.to_string_lossy().into())];
        // A hook's ask turns an allow into a question whose approval grants
        // exactly the allow's grant.
        let asked = policy.decide(
            &CallRequest::new("Read", &near, &ceiling).with_hook(HookAnswer::Ask("why".into())),
        );
        assert_eq!(asked.basis.kind, BasisKind::Hook);
        let Outcome::Ask(question) = asked.outcome else {
            return Err(format!("expected an ask: {asked:?}").into());
        };
        let decided = file_facts(&inside)?.map(|f| f.id);
        assert_eq!(
            question.approve(),
            Grant::none().read_file_as(&inside, &inside, decided)?
        );
        // A hook's allow answers the default question (outside the working
        // directory), no more.
        let hook_allowed =
            policy.decide(&CallRequest::new("Read", &away, &ceiling).with_hook(HookAnswer::Allow));
        assert_eq!(hook_allowed.basis.kind, BasisKind::Hook);
        assert!(matches!(hook_allowed.outcome, Outcome::Allow(_)));
        // A prior approval grants what would be asked.
        let given = policy
            .decide(&CallRequest::new("Read", &away, &ceiling).with_approval(Approval::Given));
        assert_eq!(given.basis.kind, BasisKind::Approval);
        // The mode is read at each decision: changing the session's mode
        // changes the next verdict.
        policy.mode_cell().change(
            PermissionMode::DontAsk,
            crate::policy::ModeChangeBy::ControlRequest,
        )?;
        let denied = policy.decide(&CallRequest::new("Read", &away, &ceiling));
        assert!(matches!(denied.outcome, Outcome::Deny(_)));
        Ok(())
    }
}
