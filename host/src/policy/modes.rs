//! Claude Code's permission modes, and the one place a session keeps its
//! current mode.

use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

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

    const ALL: [PermissionMode; 5] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::DontAsk,
        PermissionMode::BypassPermissions,
    ];
}

/// A session's permission mode: stored once, shared by everything that
/// decides or reports it (the policy, the hooks' input, `system`/`init`),
/// and changeable while the session runs (the SDK's `set_permission_mode`).
/// Clones share the mode.
#[derive(Debug, Clone)]
pub struct ModeCell(Arc<AtomicU8>);

impl ModeCell {
    pub fn new(mode: PermissionMode) -> Self {
        Self(Arc::new(AtomicU8::new(Self::index(mode))))
    }

    pub fn get(&self) -> PermissionMode {
        let index = usize::from(self.0.load(Ordering::Acquire));
        PermissionMode::ALL
            .get(index)
            .copied()
            .unwrap_or(PermissionMode::Default)
    }

    /// Changes the mode for every holder, from the next decision on.
    pub fn set(&self, mode: PermissionMode) {
        self.0.store(Self::index(mode), Ordering::Release);
    }

    fn index(mode: PermissionMode) -> u8 {
        match mode {
            PermissionMode::Default => 0,
            PermissionMode::AcceptEdits => 1,
            PermissionMode::Plan => 2,
            PermissionMode::DontAsk => 3,
            PermissionMode::BypassPermissions => 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_and_clones_share_changes() {
        for mode in PermissionMode::ALL {
            assert_eq!(ModeCell::new(mode).get(), mode);
        }
        let cell = ModeCell::new(PermissionMode::Default);
        let shared = cell.clone();
        cell.set(PermissionMode::Plan);
        assert_eq!(shared.get(), PermissionMode::Plan);
    }
}
