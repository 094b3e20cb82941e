//! Where a middleware hook is seated: an organisation's hooks run first
//! and last, a user's inside them, a project's innermost but one.

use crate::policy::SourceKind;

/// A middleware hook's seat, in chain order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Managed settings, before everyone else (the default seat).
    ManagedFirst,
    /// The user's settings, `--settings`, `--plugin-dir`, and plugins the
    /// user's settings enable.
    User,
    /// The project's settings and plugins they enable.
    Project,
    /// Managed settings, `"seat": "last"`: they see a call as it will run.
    ManagedLast,
}

impl Tier {
    /// The seat of a hook configured in settings of `kind`; `last` asks
    /// for the managed tier's last seat (honoured in managed settings
    /// only).
    pub fn of(kind: SourceKind, last: bool) -> Self {
        match kind {
            SourceKind::Managed if last => Tier::ManagedLast,
            SourceKind::Managed => Tier::ManagedFirst,
            SourceKind::Project | SourceKind::Local => Tier::Project,
            SourceKind::User | SourceKind::CliSettings | SourceKind::CliFlag => Tier::User,
        }
    }

    /// How much the tier outranks others: a hook cannot skip or undo one
    /// of a higher rank.
    pub(super) fn rank(self) -> u8 {
        match self {
            Tier::ManagedFirst | Tier::ManagedLast => 2,
            Tier::User => 1,
            Tier::Project => 0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tier::ManagedFirst => "managed (first)",
            Tier::User => "user",
            Tier::Project => "project",
            Tier::ManagedLast => "managed (last)",
        }
    }
}
