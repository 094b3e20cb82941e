//! What the screen shows of a session, one cell per thing that happened:
//! the user's prompt, the answer (markdown), thinking (folded), each tool
//! call with its state and duration, its diff or output's tail, notices.
//! A cell renders to rows for a width; finished cells go to the
//! terminal's scrollback and are never drawn again.

use super::markdown;
use super::text::wrap;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use std::time::Duration;

/// A tool call's state, as its line shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    Running,
    Done,
    /// The policy, a hook or the user refused it.
    Refused,
    Failed,
}

/// How much of a call's output the screen shows under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputRows {
    /// Its first lines.
    #[default]
    Head,
    /// Its last lines (a command's: the end is what matters).
    Tail,
    /// How many lines it had (a read's: what it brought is the model's).
    Count,
}

/// A call as the screen shows it: made by the session from its tool's
/// presentation, so the screen keeps no table of tool names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallFace {
    /// The input in a few words (the command, the file, the pattern).
    pub subject: String,
    /// What approving lets it do, after "wants to".
    pub action: String,
    /// A file's text before and after the call.
    pub change: Option<(String, String)>,
    /// A plan to approve, in markdown.
    pub plan: Option<String>,
    pub rows: OutputRows,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCell {
    pub id: String,
    pub name: String,
    pub face: CallFace,
    pub state: ToolState,
    pub duration: Option<Duration>,
    /// The result's text (or the refusal's reason).
    pub output: String,
    /// A child agent's call: shown indented under its Agent call.
    pub nested: bool,
    /// How far a running call has got, as its server reports it.
    pub progress: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    User(String),
    Answer(String),
    Thinking(String),
    Tool(Box<ToolCell>),
    Notice(NoticeLevel, String),
}

const DIM: Style = Style::new().add_modifier(Modifier::DIM);
/// Lines of a long prompt shown in the scrollback (the model gets all).
const USER_ROWS: usize = 20;
/// Rows of a tool's output shown under its line.
const OUTPUT_ROWS: usize = 5;

impl Cell {
    /// The cell as rows at most `width` columns wide.
    pub fn render(&self, width: usize) -> Vec<Line<'static>> {
        match self {
            Cell::User(text) => {
                let style = Style::new().add_modifier(Modifier::BOLD);
                let lines = text.lines().count();
                if lines <= USER_ROWS {
                    return prefixed(text, "> ", style, width);
                }
                let head: Vec<&str> = text.lines().take(USER_ROWS).collect();
                let mut rows = prefixed(&head.join("\n"), "> ", style, width);
                let more = lines - USER_ROWS;
                rows.push(Line::styled(
                    format!("  … {more} more line{}", plural(more)),
                    DIM,
                ));
                rows
            }
            Cell::Answer(text) => {
                let mut rows = markdown::render(text, width.saturating_sub(2));
                for (i, row) in rows.iter_mut().enumerate() {
                    let lead = if i == 0 { "⏺ " } else { "  " };
                    row.spans.insert(0, Span::raw(lead));
                }
                rows
            }
            Cell::Thinking(text) => {
                let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let summary = format!("✻ Thinking ({lines} line{}): {first}", plural(lines));
                let style = DIM.add_modifier(Modifier::ITALIC);
                let mut rows = wrap(&Line::styled(summary, style), width, "  ");
                rows.truncate(2);
                rows
            }
            Cell::Tool(tool) => tool.render(width),
            Cell::Notice(level, text) => {
                let style = match level {
                    NoticeLevel::Info => DIM,
                    NoticeLevel::Warning => Style::new().fg(Color::Yellow),
                    NoticeLevel::Error => Style::new().fg(Color::Red),
                };
                prefixed(text, "  ", style, width)
            }
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Each line of `text` wrapped, the first row led by `lead`.
fn prefixed(text: &str, lead: &str, style: Style, width: usize) -> Vec<Line<'static>> {
    let indent = " ".repeat(super::text::width(lead));
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let head = if i == 0 { lead } else { indent.as_str() };
        let line = Line::from(vec![Span::styled(format!("{head}{line}"), style)]);
        rows.extend(wrap(&line, width, &indent));
    }
    if rows.is_empty() {
        rows.push(Line::styled(lead.to_string(), style));
    }
    rows
}

impl ToolCell {
    fn render(&self, width: usize) -> Vec<Line<'static>> {
        let (glyph, color) = match self.state {
            ToolState::Running => ("◌", Color::Yellow),
            ToolState::Done => ("⏺", Color::Green),
            ToolState::Refused => ("⊘", Color::Yellow),
            ToolState::Failed => ("✗", Color::Red),
        };
        let indent = if self.nested { "    " } else { "" };
        let state = match (self.state, self.duration) {
            (ToolState::Running, _) => match &self.progress {
                Some(progress) => format!(" running… {progress}"),
                None => " running…".to_string(),
            },
            (ToolState::Refused, _) => " refused".to_string(),
            (ToolState::Failed, Some(d)) => format!(" failed · {}", duration(d)),
            (ToolState::Failed, None) => " failed".to_string(),
            (ToolState::Done, Some(d)) => format!(" · {}", duration(d)),
            (ToolState::Done, None) => String::new(),
        };
        let head = Line::from(vec![
            Span::raw(indent.to_string()),
            Span::styled(format!("{glyph} "), Style::new().fg(color)),
            Span::styled(self.name.clone(), Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(format!("({})", summary(&self.face))),
            Span::styled(state, DIM),
        ]);
        let body_indent = format!("{indent}  ⎿  ");
        let mut rows = wrap(&head, width, &format!("{indent}  "));
        let body = self.body();
        let pad = " ".repeat(super::text::width(&body_indent));
        for (i, line) in body.into_iter().enumerate() {
            let lead = if i == 0 {
                body_indent.clone()
            } else {
                pad.clone()
            };
            let mut spans = vec![Span::styled(lead, DIM)];
            spans.extend(line.spans);
            rows.extend(wrap(&Line::from(spans), width, &pad));
        }
        rows
    }

    /// What shows under the call's line: a diff for an edit, the tail of
    /// a command's output, the first lines of anything else.
    fn body(&self) -> Vec<Line<'static>> {
        if self.state == ToolState::Running {
            return Vec::new();
        }
        if self.state == ToolState::Done
            && let Some((old, new)) = &self.face.change
        {
            return diff_rows(old, new);
        }
        if self.state == ToolState::Done && self.face.rows == OutputRows::Count {
            let lines = self.output.lines().count();
            return vec![Line::styled(
                format!("Read {lines} line{}", plural(lines)),
                DIM,
            )];
        }
        let style = match self.state {
            ToolState::Failed => Style::new().fg(Color::Red),
            ToolState::Refused => Style::new().fg(Color::Yellow),
            _ => DIM,
        };
        let lines: Vec<&str> = self.output.lines().collect();
        let tail = self.face.rows == OutputRows::Tail;
        let shown: Vec<&str> = if tail {
            lines[lines.len().saturating_sub(OUTPUT_ROWS)..].to_vec()
        } else {
            lines.iter().take(OUTPUT_ROWS).copied().collect()
        };
        let mut body: Vec<Line<'static>> = shown
            .iter()
            .map(|l| Line::styled(clip(l, 400), style))
            .collect();
        let more = lines.len() - shown.len();
        if more > 0 && tail {
            let note = format!("… {more} earlier line{}", plural(more));
            body.insert(0, Line::styled(note, DIM));
        } else if more > 0 {
            body.push(Line::styled(
                format!("… {more} more line{}", plural(more)),
                DIM,
            ));
        }
        if body.is_empty() && self.state == ToolState::Done {
            body.push(Line::styled("(no output)", DIM));
        }
        body
    }
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

pub fn duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d < Duration::from_secs(60) {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}m {}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

/// The call's subject on one line, clipped.
pub fn summary(face: &CallFace) -> String {
    clip(&face.subject.replace('\n', " ⏎ "), 160)
}

/// Lines removed and added, each marked and coloured, with a line of
/// context around each change.
pub fn diff_rows(old: &str, new: &str) -> Vec<Line<'static>> {
    use similar::{ChangeTag, TextDiff};
    let diff = TextDiff::from_lines(old, new);
    let mut rows = Vec::new();
    for group in diff.grouped_ops(1) {
        for op in group {
            for change in diff.iter_changes(&op) {
                let text = change.value().trim_end_matches('\n').to_string();
                let (mark, style) = match change.tag() {
                    ChangeTag::Delete => ("- ", Style::new().fg(Color::Red)),
                    ChangeTag::Insert => ("+ ", Style::new().fg(Color::Green)),
                    ChangeTag::Equal => ("  ", DIM),
                };
                rows.push(Line::styled(format!("{mark}{text}"), style));
            }
        }
    }
    const MAX_DIFF_ROWS: usize = 40;
    if rows.len() > MAX_DIFF_ROWS {
        let more = rows.len() - MAX_DIFF_ROWS;
        rows.truncate(MAX_DIFF_ROWS);
        rows.push(Line::styled(
            format!("… {more} more line{}", plural(more)),
            DIM,
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::text::plain;

    fn tool(name: &str, face: CallFace, state: ToolState, output: &str) -> Cell {
        Cell::Tool(Box::new(ToolCell {
            id: "toolu_1".into(),
            name: name.into(),
            face,
            state,
            duration: Some(Duration::from_millis(1234)),
            output: output.into(),
            nested: false,
            progress: None,
        }))
    }

    #[test]
    fn a_tool_line_for_each_state() {
        let face = CallFace {
            subject: "cargo test".into(),
            rows: OutputRows::Tail,
            ..CallFace::default()
        };
        let bash = |state, output: &str| tool("Bash", face.clone(), state, output);
        let output = (1..=8)
            .map(|n| format!("line {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        let rows: Vec<String> = [
            bash(ToolState::Running, ""),
            bash(ToolState::Done, &output),
            bash(ToolState::Refused, "Permission to use Bash was denied."),
            bash(ToolState::Failed, "exit status 101"),
        ]
        .iter()
        .map(|c| plain(&c.render(60)))
        .collect();
        insta::assert_snapshot!("tool_lines", rows.join("\n---\n"));
    }

    #[test]
    fn an_edit_shows_its_diff() {
        let edit = tool(
            "Edit",
            CallFace {
                subject: "/ws/src/main.rs".into(),
                change: Some((
                    "fn main() {\n    println!(\"hi\");\n}".into(),
                    "fn main() {\n    println!(\"hello\");\n}".into(),
                )),
                ..CallFace::default()
            },
            ToolState::Done,
            "The file was updated.",
        );
        insta::assert_snapshot!("edit_diff", plain(&edit.render(60)));
    }

    #[test]
    fn answers_and_notices_wrap_to_narrow_terminals() {
        let answer = Cell::Answer(
            "A **long** answer that has to wrap at forty columns, with `code`.".into(),
        );
        let error = Cell::Notice(NoticeLevel::Error, "API Error: 529 overloaded".into());
        let rows = [answer.render(40), error.render(40)].concat();
        for row in &rows {
            assert!(crate::tui::text::line_width(row) <= 40, "{row:?}");
        }
        insta::assert_snapshot!("answer_and_error_at_40", plain(&rows));
    }
}
