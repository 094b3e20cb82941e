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
//!
//! Imports: `files`, `sandbox`, `secrets` — folders below it; nothing that imports it.

mod audit;
pub mod bash;
mod ceiling;
mod credential_listing;
mod decision;
mod grant;
mod live;
mod modes;
mod needs;
mod paths;
mod protected;
mod read_denials;
mod rules;
mod suggestion;
mod verdict;
mod withheld;
mod withheld_rung;

pub use crate::sandbox::{HostPattern, HostPatternError, is_internal};
pub use audit::{AuditEntry, AuditLog};
pub use bash::{Analysis, analyse};
pub use ceiling::{Ceiling, SECRET_ENV};
pub use decision::{Policy, PolicyConfig};
pub use live::{LivePolicy, NotKept, RuleOrigin};
pub use modes::{ModeCell, ModeChangeBy, ModeListener, ModeRefused, PermissionMode};
pub use paths::{TreeTooLarge, lexical_absolute, resolve_symlinks};
pub use protected::{
    GIT_CONTROL, HOME_START_UP, PROTECTED_NAMES, SHELL_START_UP, command_protected_names,
    hooks_paths, is_git_dir, protected_entries, protected_reason,
};
pub use read_denials::{LiveReadDenials, ReadDenials};
pub use rules::{
    Anchors, Family, Rule, RuleError, RuleKind, RuleSet, RuleSource, SourceKind, Subject,
    split_rules,
};
pub use suggestion::Suggestion;
pub use verdict::{
    Approval, Basis, BasisKind, CallApproval, CallRequest, HookAnswer, Outcome, Question, Verdict,
};
pub use withheld::Withheld;
pub use withheld_rung::credential_within;
