//! `carapace` in a terminal: the interactive screen. The session is opened
//! from the spec the command line made, as print mode's is, and runs the
//! same turns (print mode's stream of user messages, so typing while a
//! turn runs queues the message and the loop takes it between tool
//! batches); its events come to the screen, its questions are asked
//! there, and the person's keys send prompts, interrupt, change the mode
//! and answer.
//!
//! A front end, beside `acp`, `worker` and `mcp_serve`: it imports no
//! other front end, and only `cli` imports it. It is an edge too: its
//! errors end the screen with a message (`anyhow`). Imports: `agent`,
//! `control`, `conversation`, `output`, `policy`, `session`, `tools`,
//! `tui` and the rooms they stand on.

mod app;
mod commands;
mod faces;
mod history;
mod picker;
mod prompter;
mod said;
mod sign_in;
mod status;

pub use app::UiEvent;

use crate::agent::{AgentEvent, EventSink, QueryOutcome, QueuedInput};
use crate::control::TurnSlot;
use crate::conversation::mentions;
use crate::conversation::{PrintSession, Prompts, run_print};
use crate::output::RunOutput;
use crate::session::{Asker, Resume, Session, SessionAsker, SessionOutput, SessionSpec, Sessions};
use crate::tui::screen::Screen;
use crate::tui::terminal::TerminalGuard;
use anyhow::{Context, bail};
use app::{Action, App, Status, TurnSummary};
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::StreamExt;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The session's events and turn ends, sent to the screen.
#[derive(Clone)]
struct ScreenOutput(mpsc::UnboundedSender<UiEvent>);

impl EventSink for ScreenOutput {
    fn emit(&mut self, event: AgentEvent) {
        let _ = self.0.send(UiEvent::Agent(event));
    }
}

impl RunOutput for ScreenOutput {
    fn start(&self) {}

    fn finish(&self, outcome: &QueryOutcome) {
        let error = outcome.is_error().then(|| {
            outcome
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_else(|| outcome.result.clone())
        });
        let _ = self.0.send(UiEvent::TurnEnded(TurnSummary {
            terminal: outcome.terminal,
            cost_usd: outcome.cost_usd,
            error,
        }));
    }
}

/// How a session on the screen ended, and what comes next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The person left (or a signal came).
    Leave,
    /// `/clear`: a new session, empty.
    Clear,
    /// `/resume`: choose a session of this project, then go on with it.
    Pick,
    /// `/resume ID`.
    Resume(String),
}

/// What the screen opens with.
pub struct ScreenStart {
    /// The first session; later ones are the same, new or resumed.
    pub spec: SessionSpec,
    /// Choose the session to resume first (`--resume` without an id).
    pub pick: bool,
    /// `/name` runs a command (not with `--disable-slash-commands`).
    pub slash_commands: bool,
    /// The first session's first prompt.
    pub prompt: Option<String>,
}

/// The screen, one session after another until the person leaves.
pub async fn run(start: ScreenStart, sessions: &Sessions) -> anyhow::Result<ExitCode> {
    let mut ending = match start.pick {
        true => Ending::Pick,
        false => Ending::Clear,
    };
    let mut spec = start.spec;
    // The person at the screen answers.
    spec.permissions.asker = Asker::Prompter { hosts: false };
    let mut screen = ScreenSession {
        sessions,
        spec,
        slash_commands: start.slash_commands,
        prompt: start.prompt,
    };
    let mut last_id = None;
    // From here to the end, keys typed while no screen reads them (a
    // session being built) wait, as typed, for the next one.
    let _held = crate::tui::terminal::KeysHeld::hold();
    // One key stream for every screen of the run. Dropping one wakes the
    // terminal reader it shares with the next; a wake that lands with keys
    // already waiting takes their (edge-triggered) readiness along, and
    // they would sit unread until the next key.
    let mut keys = EventStream::new();
    loop {
        match ending {
            Ending::Leave => break,
            Ending::Clear if last_id.is_some() => screen.follow(None),
            Ending::Clear => {}
            Ending::Pick => match choose_session(sessions, &screen.spec)? {
                Some(id) => screen.follow(Some(id)),
                None if last_id.is_none() => return Ok(ExitCode::SUCCESS),
                None => break,
            },
            Ending::Resume(id) => screen.follow(Some(id)),
        }
        let (next, id) = screen.one(&mut keys).await?;
        ending = next;
        last_id = Some(id);
    }
    if let Some(id) = last_id {
        println!("Resume this session with: carapace --resume {id}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The picker over this project's sessions; `None` when the person leaves.
fn choose_session(sessions: &Sessions, spec: &SessionSpec) -> anyhow::Result<Option<String>> {
    let paths = &spec.paths;
    let store = sessions.store(spec.history.store.as_deref())?;
    let listed = picker::listings(paths, &store)?;
    if listed.is_empty() {
        bail!("there is no session to resume in {}", paths.cwd.display());
    }
    picker::pick(&listed)
}

/// The sessions the screen opens, one after another.
struct ScreenSession<'a> {
    sessions: &'a Sessions,
    spec: SessionSpec,
    slash_commands: bool,
    /// The first session's prompt (the command line's).
    prompt: Option<String>,
}

impl ScreenSession<'_> {
    /// The next session: new (`None`) or resuming `id`.
    fn follow(&mut self, resume: Option<String>) {
        self.spec.history.resume = resume.map(Resume::Id);
        self.spec.id = None;
        self.prompt = None;
    }

    /// One session on the screen, from its build to its end; how it ended
    /// and its id.
    async fn one(&mut self, keys: &mut EventStream) -> anyhow::Result<(Ending, String)> {
        let session = self.sessions.open(self.spec.clone()).await?;
        crate::conversation::print_warnings(&session);
        let Some(run) = &session.run else {
            bail!("the session was built without a model");
        };
        let (ui, events) = mpsc::unbounded_channel();
        let output = ScreenOutput(ui.clone());
        start_output(&session, &ui, &output);
        let Some(deps) = session.deps(true) else {
            bail!("the session was built without a model");
        };
        let turn = TurnSlot::default();
        let print_session = PrintSession::of(&session, run, turn.clone(), self.slash_commands);
        let history = commands::PromptHistory::for_project(&session.paths);
        let mut app = opening(&session, run, &history);
        if let Some(prompt) = self.prompt.take().filter(|p| !p.trim().is_empty()) {
            send(&session, &mut app, &history, prompt);
        }
        let guard = TerminalGuard::take().context("taking the terminal")?;
        let screen = ScreenLoop {
            session: &session,
            ui,
            turn: &turn,
            history: &history,
        };
        let queue = Prompts::Stream(session.queue.clone());
        let runner = run_print(&deps, &run.config, output, queue, print_session);
        let (_, ending) = tokio::join!(runner, screen.run(app, events, keys));
        drop(guard);
        session.shutdown().await;
        Ok((ending?, session.id.clone()))
    }
}

/// The session's output joins the screen: its events, its mode changes,
/// its questions.
fn start_output(session: &Session, ui: &mpsc::UnboundedSender<UiEvent>, output: &ScreenOutput) {
    let prompter = Arc::new(prompter::ScreenPrompter::new(
        ui.clone(),
        session.pipeline.clone(),
        (&session.paths.cwd, &session.paths.config_dir),
    ));
    let mode_ui = ui.clone();
    session.start(SessionOutput {
        events: Box::new(output.clone()),
        mode_changes: Some(Box::new(move |mode| {
            let _ = mode_ui.send(UiEvent::Mode(mode));
        })),
        asker: Some(SessionAsker {
            calls: prompter.clone(),
            hosts: prompter,
        }),
    });
}

/// The screen as a session opens: its status, earlier prompts, and a
/// resumed session's conversation.
fn opening(
    session: &Session,
    run: &crate::session::SessionRun,
    history: &commands::PromptHistory,
) -> App {
    let status = Status {
        model: run.config.model.clone(),
        mode: Some(session.mode()),
        ..Status::default()
    };
    let mut app = App::new(
        status,
        crate::tui::input::Composer::with_history(history.load()),
    );
    app.presentations = session.pipeline.presentations();
    for cell in self::history::cells(&session.history, &app.presentations) {
        app.say(cell);
    }
    app.commands = commands::offered(session);
    app.cwd = session.paths.cwd.clone();
    app
}

/// The user's message to the session: remembered, shown, queued (with
/// what their `!command`s printed since the last one, and the files it
/// mentions, read through the session's Read first).
fn send(session: &Session, app: &mut App, history: &commands::PromptHistory, text: String) {
    history.append(&text);
    app.sent(&text);
    let text = match app.take_command_context() {
        Some(context) => format!("{context}\n{text}"),
        None => text,
    };
    let uuid = uuid::Uuid::new_v4().to_string();
    let files = mentions::mentioned(&text, &session.paths.cwd, &session.pipeline);
    if files.is_empty() {
        session.queue.push(QueuedInput::text(uuid, text));
        return;
    }
    // Held open until the reads end, so the session does not finish first.
    let hold = session.queue.hold();
    let (queue, pipeline, cwd) = (
        session.queue.clone(),
        session.pipeline.clone(),
        session.paths.cwd.clone(),
    );
    tokio::spawn(async move {
        let read = mentions::read_mentions(&pipeline, &cwd, &files).await;
        queue.push(QueuedInput::text(uuid, format!("{read}\n{text}")));
        drop(hold);
    });
}

/// `!command`: run through the session's Bash as a call of the person's
/// own, on a task of its own so the screen stays live.
fn run_command(
    session: &Session,
    app: &mut App,
    ui: &mpsc::UnboundedSender<UiEvent>,
    command: &str,
) {
    let call = crate::agent::ToolCall {
        id: format!("user_{}", uuid::Uuid::new_v4().simple()),
        name: "Bash".into(),
        input: serde_json::json!({"command": command}),
        invalid_input: None,
    };
    app.say(crate::tui::cells::Cell::User(format!("!{command}")));
    app.command_started(&call);
    let (pipeline, ui, command) = (session.pipeline.clone(), ui.clone(), command.to_string());
    tokio::spawn(async move {
        let result = pipeline.run_nested(call).await;
        let _ = ui.send(UiEvent::CommandEnded { command, result });
    });
}

struct ScreenLoop<'a> {
    session: &'a Session,
    ui: mpsc::UnboundedSender<UiEvent>,
    turn: &'a TurnSlot,
    history: &'a commands::PromptHistory,
}

impl ScreenLoop<'_> {
    /// Draws and takes keys until the person leaves (or SIGTERM); then
    /// ends the session's turns: the queue closes, a running turn is
    /// interrupted, open questions are refused.
    async fn run(
        &self,
        mut app: App,
        mut events: mpsc::UnboundedReceiver<UiEvent>,
        keys: &mut EventStream,
    ) -> anyhow::Result<Ending> {
        use tokio::signal::unix::{SignalKind, signal};
        let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        let size = crossterm::terminal::size().context("reading the terminal's size")?;
        let mut screen = Screen::new(std::io::stdout(), color, size);
        let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
        let mut hangup = signal(SignalKind::hangup()).context("listening for SIGHUP")?;
        // Ctrl-C is a key here; a SIGINT comes from elsewhere (`kill`).
        let mut interrupt = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
        let outcome = loop {
            app.status.shells = self.session.sandbox.shells().map_or(0, |s| s.running());
            let frame = app.frame(screen.width(), screen.height(), color);
            screen.draw(&frame.finished, &frame.live, frame.cursor)?;
            let action = tokio::select! {
                Some(event) = events.recv() => {
                    app.on_event(event);
                    while let Ok(event) = events.try_recv() {
                        app.on_event(event);
                    }
                    Action::None
                }
                key = keys.next() => match key {
                    Some(Ok(Event::Paste(text))) => {
                        app.on_paste(&with_its_burst(text, keys).await);
                        Action::None
                    }
                    Some(Ok(event)) => self.terminal_event(&mut app, &mut screen, event),
                    Some(Err(e)) => break Err(anyhow::Error::new(e).context("reading the terminal")),
                    None => Action::Exit,
                },
                _ = terminate.recv() => Action::Exit,
                _ = hangup.recv() => Action::Exit,
                _ = interrupt.recv() => Action::Exit,
                _ = tick.tick(), if app.ticking() => Action::None,
            };
            if let Some(ending) = self.act(&mut app, action) {
                break Ok(ending);
            }
        };
        app.refuse_all();
        self.session.queue.close();
        self.turn.interrupt();
        let frame = app.frame(screen.width(), screen.height(), color);
        screen.draw(&frame.finished, &[], None)?;
        screen.leave()?;
        outcome
    }

    fn terminal_event(
        &self,
        app: &mut App,
        screen: &mut Screen<std::io::Stdout>,
        event: Event,
    ) -> Action {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => app.on_key(key),
            Event::Paste(text) => {
                app.on_paste(&text);
                Action::None
            }
            Event::Resize(width, height) => {
                screen.resize((width, height));
                Action::None
            }
            _ => Action::None,
        }
    }

    /// Does what a key asked; how the screen ends, when it does.
    fn act(&self, app: &mut App, action: Action) -> Option<Ending> {
        match action {
            Action::None => {}
            Action::Exit => return Some(Ending::Leave),
            Action::Interrupt => {
                self.turn.interrupt();
            }
            Action::CycleMode => commands::cycle_mode(self.session, app),
            Action::Submit(text) if text.trim().starts_with("/mcp login ") => {
                let name = text.trim().trim_start_matches("/mcp login ").trim();
                app.say(crate::tui::cells::Cell::User(text.clone()));
                sign_in::sign_in(self.session, &self.ui, name);
            }
            Action::Submit(text) if text.starts_with('!') && text.len() > 1 => {
                self.history.append(&text);
                run_command(self.session, app, &self.ui, text[1..].trim());
            }
            Action::Submit(text) => match commands::local(self.session, app, &text) {
                commands::Local::Done => {}
                commands::Local::End(ending) => return Some(ending),
                commands::Local::ForTheTurns => send(self.session, app, self.history, text),
            },
        }
        None
    }
}

/// A paste, with what arrived in the same burst after it — its end
/// marker included — taken as its text too: a paste that ends its bracket
/// early (a web page's `ESC[201~` before `rm -rf ~` and a return) types
/// that rest into the prompt, never presses Enter or any key with it.
/// Only events already read from the terminal are taken: what the user
/// types afterwards is keys again.
async fn with_its_burst(mut text: String, keys: &mut EventStream) -> String {
    use crossterm::event::{KeyCode, KeyModifiers};
    // Polled once each, with this task's waker (the stream's own, so that
    // it goes on waking this task): ready only for what is already read.
    while let Ok(Some(Ok(next))) =
        tokio::time::timeout(std::time::Duration::ZERO, keys.next()).await
    {
        match next {
            Event::Paste(more) => text.push_str(&more),
            Event::Key(key) if key.kind != KeyEventKind::Release => match key.code {
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
                KeyCode::Enter => text.push('\n'),
                KeyCode::Tab => text.push('\t'),
                // Anything else in the burst (an arrow, Esc, a control
                // key) is dropped: it was never the user's.
                _ => {}
            },
            _ => {}
        }
    }
    text
}
