//! The interactive screen's state and what changes it: the session's
//! events (the answer streaming, calls starting and ending, questions,
//! turns ending) and the person's keys. An explicit state machine: the
//! screen is idle, running a turn, or asking; a key means something
//! according to which.

use super::faces::face;
use super::said::{answered, notice};
pub use super::status::Status;
use super::status::status_line;
use crate::agent::{AgentEvent, Terminal, ToolCallResult};
use crate::model::{ContentBlock, StreamEvent};
use crate::policy::PermissionMode;
use crate::tui::approval::{ApprovalChoice, ApprovalPrompt, ApprovalRequest};
use crate::tui::cells::{Cell, NoticeLevel, ToolCell, ToolState};
use crate::tui::form::{ElicitForm, FormAnswer, FormRequest};
use crate::tui::input::Composer;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// What reaches the screen from the session.
pub enum UiEvent {
    Agent(AgentEvent),
    TurnEnded(TurnSummary),
    Ask(ApprovalRequest, oneshot::Sender<ApprovalChoice>),
    /// An MCP server's question for the person.
    Elicit(FormRequest, oneshot::Sender<FormAnswer>),
    Mode(PermissionMode),
    Notice(String),
    /// A `!command` the person ran has ended.
    CommandEnded {
        command: String,
        result: ToolCallResult,
    },
}

/// A turn's end, as the screen reports it.
#[derive(Debug, Clone)]
pub struct TurnSummary {
    pub terminal: Terminal,
    pub cost_usd: f64,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// Where the screen is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Idle,
    /// A turn runs, since then.
    Running(Instant),
}

/// What a key asks of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    None,
    Submit(String),
    Interrupt,
    Exit,
    CycleMode,
}

pub struct App {
    pub phase: Phase,
    pub status: Status,
    pub composer: Composer,
    /// Cells finished since the last frame (to go to the scrollback).
    finished: Vec<Cell>,
    /// The answer streaming now.
    streaming: String,
    thinking: bool,
    /// Calls started and not yet ended, with when they started.
    running: Vec<(ToolCell, Instant)>,
    asking: Option<(ApprovalPrompt, oneshot::Sender<ApprovalChoice>)>,
    /// An MCP server's form, while it is filled in (before any question).
    form: Option<(ElicitForm, oneshot::Sender<FormAnswer>)>,
    /// Questions waiting behind the one shown.
    waiting: Vec<(ApprovalRequest, oneshot::Sender<ApprovalChoice>)>,
    /// A first Ctrl-C on an empty prompt, waiting for the second.
    exit_armed: Option<Instant>,
    /// Messages sent while a turn ran, not yet taken by it.
    queued: usize,
    /// The turn's failure was said already (its end need not repeat it).
    failure_shown: bool,
    /// What `!command`s printed, for the next message.
    command_context: Vec<String>,
    /// The commands `/` offers, with what each does.
    pub commands: Vec<(String, String)>,
    /// The project's folder, and its files once `@` asked for them.
    pub cwd: std::path::PathBuf,
    files: Option<Vec<String>>,
    /// How the session's tools' calls are shown.
    pub presentations: crate::tools::Presentations,
}

const EXIT_WINDOW: Duration = Duration::from_secs(2);
/// Lines of the prompt drawn either side of the cursor.
const PROMPT_ROWS: usize = 12;

impl App {
    pub fn new(status: Status, composer: Composer) -> Self {
        Self {
            phase: Phase::Idle,
            status,
            composer,
            finished: Vec::new(),
            streaming: String::new(),
            thinking: false,
            running: Vec::new(),
            asking: None,
            form: None,
            waiting: Vec::new(),
            exit_armed: None,
            queued: 0,
            failure_shown: false,
            command_context: Vec::new(),
            commands: Vec::new(),
            cwd: std::path::PathBuf::new(),
            files: None,
            presentations: crate::tools::Presentations::default(),
        }
    }

    /// A cell straight to the scrollback.
    pub fn say(&mut self, cell: Cell) {
        self.finished.push(cell);
    }

    /// The user's message, sent: shown, and the screen is running (or it
    /// waits for the running turn to take it).
    pub fn sent(&mut self, text: &str) {
        self.finished.push(Cell::User(text.to_string()));
        match self.phase {
            Phase::Idle => self.phase = Phase::Running(Instant::now()),
            Phase::Running(_) => self.queued += 1,
        }
    }

    pub fn on_event(&mut self, event: UiEvent) {
        match event {
            UiEvent::Agent(event) => self.on_agent(event, false),
            UiEvent::TurnEnded(summary) => self.turn_ended(summary),
            UiEvent::Ask(request, answer) => match self.asking {
                None => self.asking = Some((ApprovalPrompt::new(request), answer)),
                Some(_) => self.waiting.push((request, answer)),
            },
            UiEvent::Elicit(request, answer) => match &self.form {
                // One form at a time: a second is cancelled.
                Some(_) => {
                    let _ = answer.send(FormAnswer::Cancel);
                }
                None => self.form = Some((ElicitForm::new(request), answer)),
            },
            UiEvent::Mode(mode) => self.status.mode = Some(mode),
            UiEvent::Notice(text) => self.say(Cell::Notice(NoticeLevel::Warning, text)),
            UiEvent::CommandEnded { command, result } => {
                let output = result.content.text();
                self.tool_ended(result);
                self.command_context.push(format!(
                    "<bash-input>{command}</bash-input>\n<bash-stdout>{output}</bash-stdout>"
                ));
            }
        }
    }

    /// A `!command` started: shown running until it ends.
    pub fn command_started(&mut self, call: &crate::agent::ToolCall) {
        let tool = ToolCell {
            id: call.id.clone(),
            name: call.name.clone(),
            face: face(self.presentations.view(&call.name, &call.input)),
            state: ToolState::Running,
            duration: None,
            output: String::new(),
            nested: false,
            progress: None,
        };
        self.running.push((tool, Instant::now()));
    }

    /// What the person's commands printed since their last message, to go
    /// with the next one (as Claude Code's bash mode adds it).
    pub fn take_command_context(&mut self) -> Option<String> {
        let context = std::mem::take(&mut self.command_context);
        (!context.is_empty()).then(|| context.join("\n"))
    }

    fn on_agent(&mut self, event: AgentEvent, nested: bool) {
        match event {
            AgentEvent::Partial(event) if !nested => self.on_stream(event),
            AgentEvent::AssistantBlock { block, usage, .. } => {
                if !nested {
                    self.status.context_tokens = usage.input_tokens
                        + usage.cache_read_input_tokens
                        + usage.cache_creation_input_tokens
                        + usage.output_tokens;
                }
                self.on_block(block, nested);
            }
            AgentEvent::ToolResult(result) => self.tool_ended(result),
            AgentEvent::ToolProgress {
                tool_use_id,
                progress,
                total,
                message,
            } => {
                if let Some((tool, _)) = self.running.iter_mut().find(|(t, _)| t.id == tool_use_id)
                {
                    tool.progress = Some(crate::agent::progress_text(
                        progress,
                        total,
                        message.as_deref(),
                    ));
                }
            }
            AgentEvent::PermissionDenied(denial) => {
                if let Some((tool, _)) = self
                    .running
                    .iter_mut()
                    .find(|(t, _)| t.id == denial.tool_use_id)
                {
                    tool.state = ToolState::Refused;
                }
            }
            AgentEvent::Child { event, .. } => self.on_agent(*event, true),
            AgentEvent::Tombstone {
                tool_use_ids,
                reason,
                ..
            } => {
                self.running.retain(|(t, _)| !tool_use_ids.contains(&t.id));
                self.streaming.clear();
                self.say(Cell::Notice(
                    NoticeLevel::Warning,
                    format!("(the partial answer was discarded: {reason})"),
                ));
            }
            other if !nested => self.on_notice(other),
            _ => {}
        }
    }

    fn on_stream(&mut self, event: StreamEvent) {
        match event {
            StreamEvent::ContentBlockStart { content_block, .. } => {
                self.thinking = content_block["type"] == "thinking";
            }
            StreamEvent::ContentBlockDelta { delta, .. } => {
                if let Some(text) = delta["text"].as_str() {
                    self.streaming.push_str(text);
                }
            }
            _ => {}
        }
    }

    fn on_block(&mut self, block: ContentBlock, nested: bool) {
        match block {
            ContentBlock::Text { text } if !nested => {
                self.streaming.clear();
                if !text.trim().is_empty() {
                    self.say(Cell::Answer(text));
                }
            }
            ContentBlock::Thinking { thinking, .. } if !nested => {
                self.thinking = false;
                self.say(Cell::Thinking(thinking));
            }
            ContentBlock::ToolUse { id, name, input } => {
                let tool = ToolCell {
                    id,
                    face: face(self.presentations.view(&name, &input)),
                    name,
                    state: ToolState::Running,
                    duration: None,
                    output: String::new(),
                    nested,
                    progress: None,
                };
                self.running.push((tool, Instant::now()));
            }
            _ => {}
        }
    }

    fn tool_ended(&mut self, result: ToolCallResult) {
        let Some(at) = self
            .running
            .iter()
            .position(|(t, _)| t.id == result.tool_use_id)
        else {
            return;
        };
        let (mut tool, started) = self.running.remove(at);
        tool.duration = Some(started.elapsed());
        tool.state = match (tool.state, result.is_error) {
            (ToolState::Refused, _) => ToolState::Refused,
            (_, _) if result.denial.is_some() => ToolState::Refused,
            (_, true) => ToolState::Failed,
            (_, false) => ToolState::Done,
        };
        tool.output = result.content.text();
        self.say(Cell::Tool(Box::new(tool)));
    }

    /// Events that change the screen's counts, or are said as a line of
    /// their own.
    fn on_notice(&mut self, event: AgentEvent) {
        match &event {
            AgentEvent::TaskStarted { .. } => self.status.agents += 1,
            AgentEvent::HookStarted {
                hook_id,
                status_message: Some(message),
                ..
            } => self.status.hooks.push((hook_id.clone(), message.clone())),
            AgentEvent::HookResponse { hook_id, .. } => {
                self.status.hooks.retain(|(id, _)| id != hook_id);
            }
            AgentEvent::TaskNotification { .. } => {
                self.status.agents = self.status.agents.saturating_sub(1);
            }
            AgentEvent::Error { .. } => self.failure_shown = true,
            AgentEvent::CommandLifecycle {
                state: crate::agent::CommandState::Started,
                ..
            } => self.queued = self.queued.saturating_sub(1),
            AgentEvent::LocalAnswer { text } => {
                self.say(Cell::Answer(text.clone()));
                return;
            }
            _ => {}
        }
        if let Some((level, text)) = notice(event) {
            self.say(Cell::Notice(level, text));
        }
    }

    fn turn_ended(&mut self, summary: TurnSummary) {
        self.status.cost_usd += summary.cost_usd;
        self.streaming.clear();
        self.thinking = false;
        for (mut tool, started) in std::mem::take(&mut self.running) {
            tool.state = ToolState::Failed;
            tool.duration = Some(started.elapsed());
            tool.output = "(interrupted)".into();
            self.say(Cell::Tool(Box::new(tool)));
        }
        match summary.terminal {
            Terminal::AbortedStreaming | Terminal::AbortedTools => self.say(Cell::Notice(
                NoticeLevel::Warning,
                "Interrupted · what should carapace do instead?".into(),
            )),
            _ => {
                if let Some(error) = summary.error.filter(|_| !self.failure_shown) {
                    self.say(Cell::Notice(NoticeLevel::Error, error));
                }
            }
        }
        self.failure_shown = false;
        self.phase = match self.queued {
            0 => Phase::Idle,
            _ => Phase::Running(Instant::now()),
        };
    }
}

impl App {
    /// A key: the question's while one is open, else the prompt's.
    pub fn on_key(&mut self, key: KeyEvent) -> Action {
        if let Some((form, _)) = &mut self.form {
            if let Some(given) = form.key(key)
                && let Some((form, answer)) = self.form.take()
            {
                let said = match &given {
                    FormAnswer::Accept(_) => "answered",
                    FormAnswer::Decline => "declined",
                    FormAnswer::Cancel => "cancelled",
                };
                let server = &form.request.server;
                self.say(Cell::Notice(
                    NoticeLevel::Info,
                    format!("{server}'s question {said}"),
                ));
                let _ = answer.send(given);
            }
            return Action::None;
        }
        if let Some((prompt, _)) = &mut self.asking {
            if let Some(choice) = prompt.key(key)
                && let Some((prompt, answer)) = self.asking.take()
            {
                self.say(Cell::Notice(
                    NoticeLevel::Info,
                    answered(&prompt.request, &choice),
                ));
                let _ = answer.send(choice);
                if !self.waiting.is_empty() {
                    let (request, answer) = self.waiting.remove(0);
                    self.asking = Some((ApprovalPrompt::new(request), answer));
                }
            }
            return Action::None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if !(ctrl && key.code == KeyCode::Char('c')) {
            self.exit_armed = None;
        }
        match key.code {
            KeyCode::Char('c') if ctrl => return self.ctrl_c(),
            KeyCode::Char('d') if ctrl && self.composer.is_empty() => return Action::Exit,
            KeyCode::Esc if matches!(self.phase, Phase::Running(_)) => return Action::Interrupt,
            KeyCode::BackTab => return Action::CycleMode,
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                self.composer.insert('\n')
            }
            KeyCode::Char('j') if ctrl => self.composer.insert('\n'),
            KeyCode::Tab if !self.suggestions().is_empty() => {
                let completion = self.suggestions()[0].0.clone();
                self.composer.complete_last_word(&completion);
            }
            KeyCode::Enter => {
                return match self.composer.enter() {
                    Some(text) if !text.trim().is_empty() => Action::Submit(text),
                    _ => Action::None,
                };
            }
            _ => self.edit(key, ctrl),
        }
        Action::None
    }

    fn edit(&mut self, key: KeyEvent, ctrl: bool) {
        let composer = &mut self.composer;
        match key.code {
            KeyCode::Char('a') if ctrl => composer.home(),
            KeyCode::Char('e') if ctrl => composer.end(),
            KeyCode::Char('u') if ctrl => composer.kill_line(),
            KeyCode::Char(c) if !ctrl => composer.insert(c),
            KeyCode::Backspace => composer.backspace(),
            KeyCode::Delete => composer.delete(),
            KeyCode::Left => composer.left(),
            KeyCode::Right => composer.right(),
            KeyCode::Home => composer.home(),
            KeyCode::End => composer.end(),
            KeyCode::Up => composer.up(),
            KeyCode::Down => composer.down(),
            KeyCode::Tab => composer.insert(' '),
            _ => {}
        }
    }

    /// Ctrl-C clears the prompt; on an empty prompt, twice exits.
    fn ctrl_c(&mut self) -> Action {
        if !self.composer.is_empty() {
            self.composer.clear();
            return Action::None;
        }
        match self.exit_armed {
            Some(at) if at.elapsed() < EXIT_WINDOW => Action::Exit,
            _ => {
                self.exit_armed = Some(Instant::now());
                Action::None
            }
        }
    }

    pub fn on_paste(&mut self, text: &str) {
        match (&mut self.form, &mut self.asking) {
            (Some((form, _)), _) => form.paste(text),
            (None, Some((prompt, _))) => prompt.paste(text),
            (None, None) => self.composer.paste(text),
        }
    }

    /// Ends every open question with a refusal (the screen is closing).
    pub fn refuse_all(&mut self) {
        if let Some((_, answer)) = self.form.take() {
            let _ = answer.send(FormAnswer::Cancel);
        }
        if let Some((_, answer)) = self.asking.take() {
            let _ = answer.send(ApprovalChoice::Refuse(None));
        }
        for (_, answer) in self.waiting.drain(..) {
            let _ = answer.send(ApprovalChoice::Refuse(None));
        }
    }
}

/// A frame: rows for the scrollback, the live area's rows, and where the
/// cursor goes among them.
pub struct Frame {
    pub finished: Vec<Line<'static>>,
    pub live: Vec<Line<'static>>,
    pub cursor: Option<(usize, usize)>,
}

impl App {
    /// The frame for a screen `width` columns wide and `height` rows high.
    pub fn frame(&mut self, width: usize, height: usize, color: bool) -> Frame {
        let mut finished = Vec::new();
        for cell in self.finished.drain(..) {
            finished.extend(cell.render(width));
            finished.push(Line::default());
        }
        let mut live = Vec::new();
        if self.thinking && self.streaming.is_empty() {
            live.push(Line::styled(
                "✻ Thinking…",
                Style::new().add_modifier(Modifier::DIM | Modifier::ITALIC),
            ));
        } else if !self.streaming.is_empty() && !self.thinking {
            live.extend(Cell::Answer(self.streaming.clone()).render(width));
        }
        for (tool, started) in &self.running {
            let mut shown = tool.clone();
            shown.duration = Some(started.elapsed());
            live.extend(Cell::Tool(Box::new(shown)).render(width));
        }
        if !live.is_empty() {
            live.push(Line::default());
        }
        if let Some((form, _)) = &self.form {
            live.extend(form.render(width));
            return Frame {
                finished,
                live,
                cursor: None,
            };
        }
        let cursor = match &self.asking {
            Some((prompt, _)) => {
                // The question first: what runs while it is asked gives
                // way to it, and it never scrolls what it asks about away.
                let room = height.saturating_sub(2).max(1);
                let asked = prompt.render_within(width, room);
                let keep = room.saturating_sub(asked.len());
                let cut = live.len().saturating_sub(keep);
                live.drain(..cut);
                live.extend(asked);
                None
            }
            None => {
                let rule = Style::new().add_modifier(Modifier::DIM);
                live.push(Line::styled("─".repeat(width), rule));
                let placeholder = if self.queued > 0 {
                    "(queued; type more or wait)"
                } else {
                    ""
                };
                let (rows, (row, column)) = self.composer.render(width, placeholder, PROMPT_ROWS);
                let at = live.len();
                live.extend(rows);
                live.push(Line::styled("─".repeat(width), rule));
                let suggestions = self.suggestion_rows(width);
                live.extend(suggestions);
                Some((at + row, column))
            }
        };
        let running = match self.phase {
            Phase::Running(since) => Some(since),
            _ => None,
        };
        live.push(status_line(
            &self.status,
            running,
            self.exit_armed.is_some(),
            color,
        ));
        Frame {
            finished,
            live,
            cursor,
        }
    }

    /// What Tab may complete the last word to, with a label: the commands
    /// matching `/name` (while only a name is typed), the project's files
    /// matching `@path`.
    fn suggestions(&mut self) -> Vec<(String, String)> {
        let text = self.composer.text().to_string();
        if let Some(typed) = text
            .strip_prefix('/')
            .filter(|t| !t.contains(char::is_whitespace))
        {
            return self
                .commands
                .iter()
                .filter(|(name, _)| name.starts_with(typed))
                .map(|(name, what)| (format!("/{name} "), format!("/{name:<14} {what}")))
                .collect();
        }
        let Some(typed) = crate::conversation::mentions::typed_mention(&text) else {
            return Vec::new();
        };
        let cwd = self.cwd.clone();
        let files = self
            .files
            .get_or_insert_with(|| crate::conversation::mentions::project_files(&cwd));
        crate::conversation::mentions::matching(files, typed)
            .into_iter()
            .map(|file| (format!("@{file} "), format!("@{file}")))
            .collect()
    }

    /// Up to eight suggestions under the prompt, the first (what Tab
    /// takes) marked.
    fn suggestion_rows(&mut self, width: usize) -> Vec<Line<'static>> {
        let dim = Style::new().add_modifier(Modifier::DIM);
        let suggestions = self.suggestions();
        let mut rows: Vec<Line<'static>> = suggestions
            .iter()
            .take(8)
            .enumerate()
            .map(|(i, (_, label))| {
                let lead = if i == 0 { "❯ " } else { "  " };
                let row: String = format!("{lead}{label}").chars().take(width).collect();
                if i == 0 {
                    Line::raw(row)
                } else {
                    Line::styled(row, dim)
                }
            })
            .collect();
        if suggestions.len() > 8 {
            rows.push(Line::styled(
                format!("  … {} more", suggestions.len() - 8),
                dim,
            ));
        }
        let text = self.composer.text();
        if suggestions.is_empty() && text.starts_with('/') && !text.contains(char::is_whitespace) {
            rows.push(Line::styled("  no command by that name", dim));
        }
        rows
    }

    /// Whether the screen changes with time alone (a turn's clock, the
    /// exit prompt), so it is drawn again every half second.
    pub fn ticking(&self) -> bool {
        matches!(self.phase, Phase::Running(_)) || self.exit_armed.is_some()
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
