//! The capability decision for one call: what the call needs, against the
//! deny, ask and allow rules, the permission mode, protected paths, secrets
//! and the plugin's ceiling — and a PreToolUse hook's answer, which stands
//! in for the user's on the default question only.
//!
//! [`Policy::decide`] is the one entry point. An `Ask` carries the grant an
//! approval would give, decided in the same pass, so that approving never
//! decides a second time. The order of the questions, for the whole call,
//! is Claude Code's and reads as the rungs of [`Policy::decide_with`]; what
//! one need comes to is in `needs`, what it grants in `grant`.

use super::ceiling::Ceiling;
use super::modes::{ModeCell, PermissionMode};
use super::paths::resolve_symlinks;
use super::rules::{self, Rule, RuleKind, RuleSet};
use super::verdict::{
    Answered, Approval, Basis, BasisKind, CallApproval, CallRequest, HookAnswer, Need, Outcome,
    Verdict, ask, deny,
};
use super::withheld::Withheld;
use crate::sandbox::{Capability, Grant, HostPattern};
use crate::secrets::CredentialFiles;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// What settings add to the credential files withheld from every tool
    /// (`sandbox.credentials.files`, the user's own settings only).
    pub credential_files: Vec<PathBuf>,
    /// Those of them commands read as stand-in copies (masked): a command
    /// may name them.
    pub masked_files: Vec<PathBuf>,
    /// `autoMode.hard_deny` entries written as rules: deny rules in auto
    /// mode, decided before its classifier is asked.
    pub auto_hard_deny: Vec<Rule>,
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
            credential_files: Vec::new(),
            masked_files: Vec::new(),
            auto_hard_deny: Vec::new(),
        }
    }
}

/// Trees larger than this cannot be vouched free of protected paths, so a
/// write grant on them asks.
pub(super) const PROTECTED_SCAN_LIMIT: usize = 20_000;

/// Trees larger than this cannot be listed for hard links (when deny or ask
/// rules name paths), so a grant on them asks.
pub(super) const LINKED_SCAN_LIMIT: usize = 100_000;

#[derive(Debug, Clone)]
pub struct Policy {
    mode: ModeCell,
    pub(super) rules: RuleSet,
    /// The working directories, symlinks resolved.
    pub(super) working_dirs: Vec<PathBuf>,
    pub(super) home: PathBuf,
    pub(super) config_dir: PathBuf,
    pub(super) internal_hosts: Vec<HostPattern>,
    /// The credential files, and the rules that name some: rebuilt with
    /// the rules.
    pub(super) withheld: Arc<Withheld>,
    /// `autoMode.hard_deny`'s rules, and this policy with them as deny
    /// rules: what decides in auto mode.
    auto_hard_deny: Vec<Rule>,
    hard_denying: Option<Arc<Policy>>,
}

impl Policy {
    pub fn new(mode: PermissionMode, cwd: &Path) -> Self {
        Self::from_config(PolicyConfig::new(mode, cwd))
    }

    pub fn from_config(config: PolicyConfig) -> Self {
        let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let mut working_dirs = vec![real(&config.cwd)];
        working_dirs.extend(config.additional_dirs.iter().map(|d| real(d)));
        let home = real(&config.home);
        let files =
            CredentialFiles::new(&home, config.credential_files).masking(&config.masked_files);
        Self {
            mode: ModeCell::new(config.mode, config.bypass_allowed),
            withheld: Arc::new(Withheld::new(files, &home, &config.rules)),
            rules: config.rules,
            working_dirs,
            home,
            config_dir: resolve_symlinks(&config.config_dir),
            internal_hosts: config.internal_hosts,
            auto_hard_deny: config.auto_hard_deny,
            hard_denying: None,
        }
        .with_hard_denying()
    }

    /// Makes the policy auto mode decides with: this one, the hard_deny
    /// rules added as deny rules.
    fn with_hard_denying(mut self) -> Self {
        self.hard_denying = None;
        if self.auto_hard_deny.is_empty() {
            return self;
        }
        let mut strict = self.clone();
        for rule in &self.auto_hard_deny {
            strict.rules.push(rule.clone());
        }
        self.hard_denying = Some(Arc::new(strict.rejudged()));
        self
    }

    /// The credential files withheld from this policy's calls, and the
    /// rules that name some.
    pub fn withheld(&self) -> Arc<Withheld> {
        self.withheld.clone()
    }

    /// The withheld files judged against the rules as they are now.
    fn rejudged(mut self) -> Self {
        self.withheld = Arc::new(Withheld::new(
            self.withheld.files().clone(),
            &self.home,
            &self.rules,
        ));
        self
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

    /// This policy with `rules` instead of its own (the same mode and
    /// directories): the session's rules once more have joined them.
    pub fn with_rules(&self, rules: RuleSet) -> Policy {
        let mut changed = self.clone();
        changed.rules = rules;
        changed.rejudged().with_hard_denying()
    }

    /// This policy with `allows` added (a skill's `allowed-tools`): the
    /// same mode, deny and ask rules, so it can only answer what this one
    /// would ask.
    pub fn with_allows(&self, allows: impl IntoIterator<Item = Rule>) -> Policy {
        let mut wider = self.clone();
        for rule in allows.into_iter().filter(|r| r.kind == RuleKind::Allow) {
            wider.rules.push(rule);
        }
        wider.rejudged().with_hard_denying()
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
        // In auto mode the hard_deny rules are deny rules like any other,
        // so no answer (the classifier's, a hook's) reaches past them.
        let deciding = match (self.mode.get(), &self.hard_denying) {
            (PermissionMode::Auto, Some(strict)) => strict.as_ref(),
            _ => self,
        };
        let verdict = deciding.decide_with(request, answered);
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

    /// The questions for the whole call, in Claude Code's order, the mode
    /// read once: a deny rule for the tool; each need (see `needs`); a need
    /// that asks; an ask rule for a call that needs nothing; a tool whose
    /// calls ask; then allowed, saying why.
    fn decide_with(&self, request: &CallRequest<'_>, answered: Answered) -> Verdict {
        let mode = self.mode.get();
        let rules = self.tool_rules(request);
        if let Some(rule) = rules.deny {
            return deny(
                format!(
                    "Permission to use {} was denied by {}.",
                    request.tool,
                    Basis::rule(rule).describe()
                ),
                Basis::rule(rule),
            );
        }
        let decided = match self.decide_needs(request, &rules, mode, answered) {
            Ok(decided) => decided,
            Err(verdict) => return *verdict,
        };
        let NeedsDecided {
            grant,
            mut allow_basis,
            pending_ask,
        } = decided;
        if let Some((message, basis)) = pending_ask {
            return asked(message, grant, basis, mode);
        }
        let approved = answered == Answered::Everything;
        if request.needs.is_empty() && !approved {
            if let Some(rule) = rules.ask {
                let text = format!(
                    "{} needs approval by {}.",
                    request.tool,
                    Basis::rule(rule).describe()
                );
                return ask(text, grant, Basis::rule(rule));
            }
            if request.asking != CallApproval::ByNeeds && rules.allow.is_none() {
                match asking_tool(request, mode, answered, &grant) {
                    Asking::Allowed(Some(basis)) => allow_basis = Some(basis),
                    Asking::Allowed(None) => {}
                    Asking::Settled(verdict) => return verdict,
                }
            }
        }
        let basis = allow_basis
            .or_else(|| rules.allow.map(Basis::rule))
            .unwrap_or_else(|| match mode {
                PermissionMode::BypassPermissions => Basis::of(BasisKind::Mode),
                _ => Basis::of(BasisKind::Default),
            });
        Verdict {
            outcome: Outcome::Allow(grant),
            basis,
        }
    }

    /// The rules for the whole tool, or for what this call names.
    fn tool_rules<'p>(&'p self, request: &CallRequest<'_>) -> ToolRules<'p> {
        let rule_for = |kind| {
            self.rules.tool_rule(kind, request.tool).or_else(|| {
                request
                    .named
                    .and_then(|name| self.rules.named_rule(kind, request.tool, name))
            })
        };
        ToolRules {
            deny: rule_for(RuleKind::Deny),
            ask: rule_for(RuleKind::Ask),
            allow: rule_for(RuleKind::Allow),
        }
    }

    /// Each need decided, and what approving all of them would grant: an
    /// asked need is granted exactly as an allowed one. A need denied, or
    /// one the request cannot name, denies the call.
    fn decide_needs(
        &self,
        request: &CallRequest<'_>,
        rules: &ToolRules<'_>,
        mode: PermissionMode,
        answered: Answered,
    ) -> Result<NeedsDecided, Box<Verdict>> {
        let mut decided = NeedsDecided {
            grant: Grant::none(),
            allow_basis: None,
            pending_ask: None,
        };
        let input = |message| Box::new(deny(message, Basis::of(BasisKind::Input)));
        for need in request.needs {
            let resolved = self.resolve(request.tool, need).map_err(input)?;
            match self.decide_need(request.tool, &resolved, request.ceiling, rules, mode) {
                Need::Deny(message, basis) => return Err(Box::new(deny(message, basis))),
                Need::Ask(..) if answered == Answered::Everything => {
                    decided.allow_basis = Some(Basis::of(BasisKind::Approval));
                }
                Need::Ask(_, basis)
                    if answered == Answered::DefaultQuestions
                        && basis.kind == BasisKind::Default =>
                {
                    decided.allow_basis = Some(Basis::of(BasisKind::Hook));
                }
                Need::Ask(message, basis) => {
                    decided.pending_ask.get_or_insert((message, basis));
                }
                Need::Allow(basis) => decided.prefer(basis),
            }
            let grant = std::mem::replace(&mut decided.grant, Grant::none());
            decided.grant = self.grant(grant, &resolved).map_err(input)?;
        }
        Ok(decided)
    }

    /// The verdict on one Bash command line: deny/ask rules catch any part
    /// of the line, allow needs every part allowed; a line the analysis
    /// cannot follow is never allowed by a rule.
    pub fn decide_command(&self, command: &str, ceiling: &Ceiling) -> Verdict {
        let needs = [Capability::Process(command.to_string())];
        self.decide(&CallRequest::new("Bash", &needs, ceiling))
    }
}

/// The rules that name the whole tool (or what the call names).
pub(super) struct ToolRules<'p> {
    pub deny: Option<&'p Rule>,
    pub ask: Option<&'p Rule>,
    pub allow: Option<&'p Rule>,
}

/// What the call's needs came to, together.
struct NeedsDecided {
    /// What allowing (or approving) every need grants.
    grant: Grant,
    /// Why the allowed needs are allowed, the most specific reason.
    allow_basis: Option<Basis>,
    /// The first need that asks.
    pending_ask: Option<(String, Basis)>,
}

impl NeedsDecided {
    /// The most specific reason wins: a rule over the mode over the default.
    fn prefer(&mut self, basis: Basis) {
        let better = match (&self.allow_basis, basis.kind) {
            (None, _) => true,
            (Some(current), BasisKind::Rule) => current.kind != BasisKind::Rule,
            (Some(current), BasisKind::Mode) => current.kind == BasisKind::Default,
            _ => false,
        };
        if better {
            self.allow_basis = Some(basis);
        }
    }
}

/// A need asked: the call asks, unless the mode is dontAsk, which denies
/// what it would ask.
fn asked(message: String, grant: Grant, basis: Basis, mode: PermissionMode) -> Verdict {
    if mode == PermissionMode::DontAsk {
        return deny(
            format!("{message} Permission mode `dontAsk` denies what it would ask."),
            Basis::of(BasisKind::Mode),
        );
    }
    ask(message, grant, basis)
}

/// What a tool whose calls ask comes to.
enum Asking {
    /// It runs (said by a hook's answer, when that is why).
    Allowed(Option<Basis>),
    Settled(Verdict),
}

/// A tool whose calls ask, whatever they need: bypassed, allowed by a
/// hook's answer, or settled — dontAsk denies, plan mode denies all but
/// the tool that ends it, else the user is asked.
fn asking_tool(
    request: &CallRequest<'_>,
    mode: PermissionMode,
    answered: Answered,
    grant: &Grant,
) -> Asking {
    let tool = request.tool;
    match (mode, answered) {
        (PermissionMode::BypassPermissions, _) => Asking::Allowed(None),
        (_, Answered::DefaultQuestions) => Asking::Allowed(Some(Basis::of(BasisKind::Hook))),
        (PermissionMode::DontAsk, _) => Asking::Settled(deny(
            format!(
                "{tool} needs approval, and permission mode `dontAsk` denies what it would ask."
            ),
            Basis::of(BasisKind::Mode),
        )),
        (PermissionMode::Plan, _) if request.asking != CallApproval::EndsPlanMode => {
            Asking::Settled(deny(
                format!(
                    "Plan mode is read-only: {tool} needs approval (an MCP tool may change things; WebSearch asks), and plan mode gives none. A rule allowing {tool} lets it run."
                ),
                Basis::of(BasisKind::Mode),
            ))
        }
        _ => Asking::Settled(ask(
            format!(
                "{tool} needs approval: MCP tools ask unless a rule allows them (e.g. `{tool}` or `mcp__<server>__*`)."
            ),
            grant.clone(),
            Basis::of(BasisKind::Default),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Ceiling;
    use crate::policy::paths::lexical_absolute;
    use crate::sandbox::{Capability, FileAccess, file_facts};

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

    /// `/dev/fd/N` is a link into carapace's own open files; resolving it
    /// lands on an ordinary name (here the file carapace holds open), so it
    /// must be refused as written, even in bypassPermissions mode.
    #[test]
    fn a_descriptor_link_is_refused_even_when_it_names_an_ordinary_file()
    -> Result<(), Box<dyn std::error::Error>> {
        use std::os::fd::AsRawFd;
        let cwd = tempfile::tempdir()?;
        let file = std::fs::canonicalize(cwd.path())?.join("open.txt");
        std::fs::write(&file, "x")?;
        let held = std::fs::File::open(&file)?;
        let policy = Policy::new(PermissionMode::BypassPermissions, cwd.path());
        let ceiling = Ceiling::none().with_files("/", FileAccess::Write);
        // Through a link of the workspace's own, too.
        let link = cwd.path().join("link");
        std::os::unix::fs::symlink(format!("/dev/fd/{}", held.as_raw_fd()), &link)?;
        let fd = held.as_raw_fd();
        for (tool, need) in [
            ("Read", Capability::ReadFile(format!("/dev/fd/{fd}"))),
            ("Read", Capability::ReadFile(format!("/proc/self/fd/{fd}"))),
            (
                "Read",
                Capability::ReadFile(format!("{}/../../dev/fd/{fd}", cwd.path().display())),
            ),
            ("Read", Capability::ReadFile(link.to_string_lossy().into())),
            ("Write", Capability::WriteFile(format!("/dev/fd/{fd}"))),
            ("Glob", Capability::ReadTree("/dev/fd".into())),
            ("Glob", Capability::ReadTree("/dev/fd/".into())),
        ] {
            let spelling = format!("{tool} {need:?}");
            let needs = [need];
            let verdict = policy.decide(&CallRequest::new(tool, &needs, &ceiling));
            let Outcome::Deny(message) = &verdict.outcome else {
                return Err(format!("{spelling} was not refused: {verdict:?}").into());
            };
            assert!(message.contains("process information"), "{message}");
        }
        // Control: the same file by its own name is granted.
        let needs = [Capability::ReadFile(file.to_string_lossy().into())];
        let verdict = policy.decide(&CallRequest::new("Read", &needs, &ceiling));
        assert!(is_allow(&verdict), "{verdict:?}");
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
