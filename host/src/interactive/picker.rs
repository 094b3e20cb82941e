//! `carapace --resume` without an id: this project's sessions, newest
//! first, each with when it was last written and how it began; arrows and
//! Enter choose, Esc leaves.

use crate::session::SessionPaths;
use crate::transcript::{TranscriptPlace, TranscriptStore};
use crate::tui::screen::Screen;
use crate::tui::terminal::TerminalGuard;
use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use std::time::SystemTime;

/// Sessions shown at once.
const SHOWN: usize = 12;

pub struct Listing {
    pub id: String,
    pub modified: SystemTime,
    /// The first prompt's first line.
    pub first_prompt: String,
}

/// This project's sessions, newest first.
pub fn listings(paths: &SessionPaths, store: &TranscriptStore) -> anyhow::Result<Vec<Listing>> {
    let sessions = store.sessions(&paths.config_dir, &paths.cwd)?;
    Ok(sessions
        .into_iter()
        .map(|(modified, id)| Listing {
            first_prompt: first_prompt(&store.place(&paths.config_dir, &paths.cwd, &id)),
            id,
            modified,
        })
        .collect())
}

/// The first user text of a transcript (read from its first 256 KiB).
fn first_prompt(place: &TranscriptPlace) -> String {
    let head = place.head(256 << 10);
    String::from_utf8_lossy(&head)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|entry| entry["type"] == "user")
        .find_map(|entry| {
            let content = &entry["message"]["content"];
            let text = match content.as_str() {
                Some(text) => Some(text.to_string()),
                None => content
                    .as_array()?
                    .iter()
                    .rev()
                    .find_map(|b| b["text"].as_str().map(str::to_string)),
            }?;
            text.lines()
                .find(|l| !l.trim().is_empty() && !l.starts_with('<'))
                .map(str::to_string)
        })
        .unwrap_or_else(|| "(no prompt)".into())
}

/// Asks which session to resume; `None` when the person leaves.
pub fn pick(sessions: &[Listing]) -> anyhow::Result<Option<String>> {
    let _guard = TerminalGuard::take()?;
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut screen = Screen::new(std::io::stdout(), color, crossterm::terminal::size()?);
    let mut selected = 0;
    let chosen = loop {
        screen.draw(&[], &rows(sessions, selected, screen.width(), color), None)?;
        match crossterm::event::read()? {
            Event::Key(key) if key.kind != KeyEventKind::Release => match key.code {
                KeyCode::Up => selected = selected.saturating_sub(1),
                KeyCode::Down => selected = (selected + 1).min(sessions.len().saturating_sub(1)),
                KeyCode::Enter => break sessions.get(selected).map(|s| s.id.clone()),
                KeyCode::Esc => break None,
                KeyCode::Char('c' | 'd') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                    break None;
                }
                _ => {}
            },
            Event::Resize(width, height) => screen.resize((width, height)),
            _ => {}
        }
    };
    screen.leave()?;
    Ok(chosen)
}

fn rows(sessions: &[Listing], selected: usize, width: usize, color: bool) -> Vec<Line<'static>> {
    let accent = if color {
        Style::new().fg(Color::Cyan)
    } else {
        Style::new().add_modifier(Modifier::REVERSED)
    };
    let mut rows = vec![Line::styled(
        "Resume a session (↑/↓, Enter; Esc to leave)",
        Style::new().add_modifier(Modifier::BOLD),
    )];
    let first = selected.saturating_sub(SHOWN - 1);
    for (i, session) in sessions.iter().enumerate().skip(first).take(SHOWN) {
        let age = ago(session.modified);
        let lead = if i == selected { "❯ " } else { "  " };
        let text = format!("{lead}{age:>8}  {}", session.first_prompt);
        let text: String = text.chars().take(width).collect();
        rows.push(if i == selected {
            Line::styled(text, accent)
        } else {
            Line::raw(text)
        });
    }
    rows.push(Line::styled(
        format!(
            "  {} session{}",
            sessions.len(),
            if sessions.len() == 1 { "" } else { "s" }
        ),
        Style::new().add_modifier(Modifier::DIM),
    ));
    rows
}

fn ago(when: SystemTime) -> String {
    let secs = SystemTime::now()
        .duration_since(when)
        .map_or(0, |d| d.as_secs());
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86400),
    }
}
