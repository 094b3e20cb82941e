//! What a decision says: the outcome (allow with a grant, ask with the
//! grant an approval would give, deny), what decided it ([`Basis`]), and
//! the request it answers ([`CallRequest`]).

use super::ceiling::Ceiling;
use super::rules::Rule;
use crate::sandbox::{Capability, Grant};
use serde::Serialize;

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
    /// A command line that only reads inside the working directories.
    ReadOnly,
    /// The auto mode's classifier decided.
    AutoMode,
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
            BasisKind::ReadOnly => "read-only",
            BasisKind::AutoMode => "auto_mode",
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

    /// The auto mode's classifier's decision.
    pub fn auto_mode() -> Self {
        Self::of(BasisKind::AutoMode)
    }

    pub(super) fn of(kind: BasisKind) -> Self {
        Self {
            kind,
            rule: None,
            source: None,
        }
    }

    pub(super) fn rule(rule: &Rule) -> Self {
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
            (BasisKind::AutoMode, _, _) => "the auto mode's classifier".into(),
            (BasisKind::ReadOnly, _, _) => {
                "the default policy for commands that only read in the working directories".into()
            }
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

/// How a tool's calls are asked about beyond what each needs: a property
/// of the tool, not of what its plugin may be granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallApproval {
    /// Decided by what each call needs.
    #[default]
    ByNeeds,
    /// Every call asks unless a rule allows the tool, whatever it needs
    /// (MCP tools: what they do is the server's business; WebSearch; a
    /// skill that pre-approves tools).
    Asks,
    /// Asks, in plan mode too: how plan mode ends (the host's
    /// ExitPlanMode).
    EndsPlanMode,
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
    /// How the tool's calls are asked about.
    pub asking: CallApproval,
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
            asking: CallApproval::ByNeeds,
            hook: HookAnswer::None,
            approval: Approval::None,
        }
    }

    pub fn asking(mut self, asking: CallApproval) -> Self {
        self.asking = asking;
        self
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
pub(super) enum Answered {
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
    pub(super) on_approval: Grant,
}

impl Question {
    /// The user said yes: what that grants.
    pub fn approve(self) -> Grant {
        self.on_approval
    }

    /// What approving grants, said for a person.
    pub fn grants(&self) -> Vec<String> {
        self.on_approval.describe()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub outcome: Outcome,
    pub basis: Basis,
}

/// What one need comes to.
pub(super) enum Need {
    Allow(Basis),
    Ask(String, Basis),
    Deny(String, Basis),
}

pub(super) fn ask(text: String, on_approval: Grant, basis: Basis) -> Verdict {
    Verdict {
        outcome: Outcome::Ask(Question { text, on_approval }),
        basis,
    }
}

pub(super) fn deny(message: String, basis: Basis) -> Verdict {
    Verdict {
        outcome: Outcome::Deny(message),
        basis,
    }
}

pub(super) fn one_line(command: &str) -> String {
    let line: String = command.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}
