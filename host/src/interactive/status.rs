//! The status line under the composer: the model, the mode, the context
//! and cost so far, what runs in the background, and what the turn is
//! doing now (a hook's `statusMessage` while it runs).

use crate::policy::PermissionMode;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use std::time::Instant;

/// What the status line shows.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub model: String,
    pub mode: Option<PermissionMode>,
    /// The context the last request sent, in tokens.
    pub context_tokens: u64,
    pub cost_usd: f64,
    /// Background shells running now.
    pub shells: usize,
    /// Background agents running now.
    pub agents: usize,
    /// Hooks running now that have a `statusMessage`: (hook id, message).
    pub hooks: Vec<(String, String)>,
}

/// The line for `status`; `running`: since when a turn runs; `exit_armed`:
/// a first Ctrl-C was pressed.
pub(super) fn status_line(
    status: &Status,
    running: Option<Instant>,
    exit_armed: bool,
    color: bool,
) -> Line<'static> {
    let mode = status.mode.map(|m| m.as_str()).unwrap_or("default");
    let mut parts = vec![status.model.clone(), mode.to_string()];
    if status.context_tokens > 0 {
        parts.push(format!("{} tokens", thousands(status.context_tokens)));
    }
    parts.push(format!("${:.4}", status.cost_usd));
    for (count, what) in [(status.shells, "shell"), (status.agents, "agent")] {
        if count > 0 {
            parts.push(format!(
                "{count} background {what}{} running",
                if count == 1 { "" } else { "s" }
            ));
        }
    }
    if let Some((_, message)) = status.hooks.last() {
        parts.push(format!("{message}…"));
    }
    if let Some(since) = running {
        parts.push(format!(
            "working {}s · esc to interrupt",
            since.elapsed().as_secs()
        ));
    }
    if exit_armed {
        parts.push("press Ctrl-C again to exit".into());
    }
    let style = match (color, status.mode) {
        (true, Some(PermissionMode::AcceptEdits)) => Style::new().fg(Color::Magenta),
        (true, Some(PermissionMode::Plan)) => Style::new().fg(Color::Cyan),
        (true, Some(PermissionMode::BypassPermissions)) => Style::new().fg(Color::Red),
        _ => Style::new().add_modifier(Modifier::DIM),
    };
    Line::styled(format!("  {}", parts.join(" · ")), style)
}

fn thousands(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        _ => format!("{:.1}k", n as f64 / 1000.0),
    }
}
