//! Claude Code's permission modes, and the one place a session keeps its
//! current mode.

use serde::Serialize;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// Claude Code's permission modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
pub enum PermissionMode {
    #[default]
    #[value(name = "default", alias = "manual")]
    #[serde(rename = "default", alias = "manual")]
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
    /// What the rules would ask about goes to a classifier first, which
    /// allows it, asks the user, or (where nobody can be asked) refuses.
    #[value(name = "auto")]
    #[serde(rename = "auto")]
    Auto,
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::Auto => "auto",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        <Self as clap::ValueEnum>::from_str(text, false).ok()
    }

    const ALL: [PermissionMode; 6] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::DontAsk,
        PermissionMode::BypassPermissions,
        PermissionMode::Auto,
    ];
}

/// Who asks for a mode change: every way the mode can change goes through
/// [`ModeCell::change`], so the same gate and the same announcement apply
/// to each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeChangeBy {
    /// The SDK's `set_permission_mode` control request.
    ControlRequest,
    /// A `setMode` in the SDK's `can_use_tool` answer (`updatedPermissions`).
    PermissionAnswer,
    /// An approved ExitPlanMode call.
    ExitPlanMode,
    /// The person at the interactive screen (Shift+Tab, an approval's
    /// "allow all edits").
    User,
}

impl ModeChangeBy {
    fn as_str(self) -> &'static str {
        match self {
            ModeChangeBy::ControlRequest => "set_permission_mode",
            ModeChangeBy::PermissionAnswer => "the permission callback's setMode",
            ModeChangeBy::ExitPlanMode => "ExitPlanMode",
            ModeChangeBy::User => "the user",
        }
    }
}

/// A mode change the gate refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeRefused {
    #[error(
        "{by} cannot switch to bypassPermissions: the session must start with --dangerously-skip-permissions or --allow-dangerously-skip-permissions",
        by = .0.as_str()
    )]
    BypassNotAllowed(ModeChangeBy),
}

/// Told of every mode change the gate let through (print mode: the
/// `system`/`status` line Claude Code prints).
pub type ModeListener = Box<dyn Fn(PermissionMode) + Send + Sync>;

/// A session's permission mode: stored once, shared by everything that
/// decides or reports it (the policy, the hooks' input, `system`/`init`),
/// and changed while the session runs only through [`ModeCell::change`],
/// the one gate that refuses bypassPermissions unless the session was
/// started allowing it, and announces each change. Clones share the mode.
#[derive(Clone)]
pub struct ModeCell(Arc<ModeState>);

struct ModeState {
    mode: AtomicU8,
    /// Whether a change may lead to bypassPermissions.
    bypass_allowed: bool,
    listeners: Mutex<Vec<ModeListener>>,
}

impl std::fmt::Debug for ModeCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModeCell")
            .field("mode", &self.get())
            .field("bypass_allowed", &self.0.bypass_allowed)
            .finish()
    }
}

impl ModeCell {
    /// A session starting in `mode`; bypassPermissions is reachable later
    /// only when it starts there or `bypass_allowed` (the user's
    /// `--allow-dangerously-skip-permissions`).
    pub fn new(mode: PermissionMode, bypass_allowed: bool) -> Self {
        Self(Arc::new(ModeState {
            mode: AtomicU8::new(Self::index(mode)),
            bypass_allowed: bypass_allowed || mode == PermissionMode::BypassPermissions,
            listeners: Mutex::new(Vec::new()),
        }))
    }

    pub fn get(&self) -> PermissionMode {
        let index = usize::from(self.0.mode.load(Ordering::Acquire));
        PermissionMode::ALL
            .get(index)
            .copied()
            .unwrap_or(PermissionMode::Default)
    }

    /// Changes the mode for every holder, from the next decision on, and
    /// tells the listeners; refused (nothing changes) where the gate says
    /// no.
    pub fn change(&self, mode: PermissionMode, by: ModeChangeBy) -> Result<(), ModeRefused> {
        if mode == PermissionMode::BypassPermissions && !self.0.bypass_allowed {
            return Err(ModeRefused::BypassNotAllowed(by));
        }
        self.0.mode.store(Self::index(mode), Ordering::Release);
        tracing::debug!(
            mode = mode.as_str(),
            by = by.as_str(),
            "permission mode changed"
        );
        if let Ok(listeners) = self.0.listeners.lock() {
            for listener in listeners.iter() {
                listener(mode);
            }
        }
        Ok(())
    }

    /// Whether bypassPermissions may be reached (Shift+Tab offers it).
    pub fn bypass_allowed(&self) -> bool {
        self.0.bypass_allowed
    }

    /// Adds a listener told of every later change.
    pub fn on_change(&self, listener: ModeListener) {
        if let Ok(mut listeners) = self.0.listeners.lock() {
            listeners.push(listener);
        }
    }

    fn index(mode: PermissionMode) -> u8 {
        match mode {
            PermissionMode::Default => 0,
            PermissionMode::AcceptEdits => 1,
            PermissionMode::Plan => 2,
            PermissionMode::DontAsk => 3,
            PermissionMode::BypassPermissions => 4,
            PermissionMode::Auto => 5,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_and_clones_share_changes() {
        for mode in PermissionMode::ALL {
            assert_eq!(ModeCell::new(mode, false).get(), mode);
        }
        let cell = ModeCell::new(PermissionMode::Default, false);
        let shared = cell.clone();
        assert_eq!(
            cell.change(PermissionMode::Plan, ModeChangeBy::ExitPlanMode),
            Ok(())
        );
        assert_eq!(shared.get(), PermissionMode::Plan);
    }

    #[test]
    fn bypass_is_reached_only_when_the_session_allows_it_whoever_asks() {
        let told = Arc::new(Mutex::new(Vec::new()));
        for by in [
            ModeChangeBy::ControlRequest,
            ModeChangeBy::PermissionAnswer,
            ModeChangeBy::ExitPlanMode,
        ] {
            let cell = ModeCell::new(PermissionMode::Default, false);
            let seen = told.clone();
            cell.on_change(Box::new(move |mode| {
                if let Ok(mut seen) = seen.lock() {
                    seen.push(mode);
                }
            }));
            assert_eq!(
                cell.change(PermissionMode::BypassPermissions, by),
                Err(ModeRefused::BypassNotAllowed(by))
            );
            assert_eq!(cell.get(), PermissionMode::Default);
            // Weakened: the same request in a session that allows it.
            let allowed = ModeCell::new(PermissionMode::Default, true);
            assert_eq!(
                allowed.change(PermissionMode::BypassPermissions, by),
                Ok(())
            );
            assert_eq!(allowed.get(), PermissionMode::BypassPermissions);
            assert_eq!(cell.change(PermissionMode::AcceptEdits, by), Ok(()));
        }
        // Only the changes that went through were announced.
        let told = told.lock().map(|t| t.clone()).unwrap_or_default();
        assert_eq!(told, vec![PermissionMode::AcceptEdits; 3]);
        // A session started in bypass may come back to it.
        let started = ModeCell::new(PermissionMode::BypassPermissions, false);
        assert_eq!(
            started.change(PermissionMode::Default, ModeChangeBy::ControlRequest),
            Ok(())
        );
        assert_eq!(
            started.change(
                PermissionMode::BypassPermissions,
                ModeChangeBy::PermissionAnswer
            ),
            Ok(())
        );
    }
}
