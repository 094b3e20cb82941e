//! Print mode's run, whoever asks for it — `carapace -p` (with the Agent
//! SDK on stdin or not) and a worker's job: the session opened from its
//! spec, its lines printed, the SDK connected when it drives the run, the
//! turns run, the session shut down.

use super::print_error::PrintError;
use super::sdk::{self, SdkWiring};
use super::turns::{PrintSession, Prompts, SetupRun, run_print};
use crate::control::{ControlChannel, SdkPrompter, TurnSlot};
use crate::output::{OutputFormat, Printer, RunInfo, SharedPrinter};
use crate::session::{
    Asker, Session, SessionAsker, SessionOutput, SessionRun, SessionSpec, Sessions,
};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// How the run prints, and what it runs besides the session.
#[derive(Debug, Clone)]
pub struct PrintOptions {
    pub format: OutputFormat,
    pub verbose: bool,
    /// `--include-hook-events`.
    pub hook_events: bool,
    /// `--include-partial-messages`.
    pub partial_messages: bool,
    /// `--replay-user-messages`.
    pub replay_user_messages: bool,
    /// `/name` runs a command (not with `--disable-slash-commands`).
    pub slash_commands: bool,
    /// `--init`, `--maintenance`: Setup hooks first.
    pub setup: Option<SetupRun>,
    /// The prompt; `None`: the SDK's messages on stdin, its control
    /// protocol riding along.
    pub prompt: Option<String>,
}

/// Told what a run does, for someone watching it (a worker's probes and
/// its result file).
pub trait RunReport: Send + Sync {
    /// Something assembling the session had to say.
    fn warning(&self, session_id: &str, warning: &str);
    /// The session is built.
    fn ready(&self, session_id: &str);
    /// The run's result line.
    fn finished(&self, line: &serde_json::Value) -> Result<(), PrintError>;
}

/// How the run ended: an error result or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    Success,
    Failure,
}

/// Opens the session `spec` describes and runs it as print mode does.
pub async fn run_printed(
    sessions: &Sessions,
    spec: SessionSpec,
    options: PrintOptions,
    report: Option<&dyn RunReport>,
) -> Result<RunEnd, PrintError> {
    let started = Instant::now();
    let model_given = spec.run.as_ref().is_some_and(|r| r.model.is_some());
    let session = sessions.open(spec).await?;
    match report {
        Some(report) => {
            for warning in &session.warnings {
                report.warning(&session.id, warning);
            }
        }
        None => print_warnings(&session),
    }
    let Some(run) = &session.run else {
        return Err(PrintError::NoModel);
    };
    tracing::debug!(
        mark = "model_ready",
        ms = started.elapsed().as_secs_f64() * 1e3,
        "startup timing"
    );
    let printer = printer(&options, &session, run, started);
    if let Some(report) = report {
        report.ready(&session.id);
    }
    // stream-json input: the SDK's control protocol rides along, and when
    // it is the asker it answers the policy's questions.
    let channel = options
        .prompt
        .is_none()
        .then(|| Arc::new(ControlChannel::new(Box::new(printer.clone()))));
    let asker = channel
        .as_ref()
        .filter(|_| matches!(session.pipeline.asker(), Asker::Prompter { .. }))
        .map(|channel| sdk_asker(&session, channel));
    // An MCP server's questions go to the SDK whoever answers for calls.
    if let Some(channel) = &channel {
        let permissions = session.pipeline.permissions().clone();
        let sdk = Arc::new(SdkPrompter::new(channel.clone(), permissions));
        session.pipeline.set_elicitor(sdk);
    }
    start_printing(&session, &printer, asker);
    spawn_signal_handler(session.abort.clone());
    let turns = Turns {
        session: &session,
        run,
        printer,
        model_given,
    };
    let outcome = turns.run(&options, channel).await;
    session.shutdown().await;
    let (outcome, result) = outcome?;
    if let (Some(report), Some(line)) = (report, result) {
        report.finished(&line)?;
    }
    Ok(match outcome {
        Some(outcome) if outcome.is_error() => RunEnd::Failure,
        _ => RunEnd::Success,
    })
}

/// Prints on stderr what assembling the session had to say.
pub fn print_warnings(session: &Session) {
    for warning in &session.warnings {
        eprintln!("carapace: warning: {warning}");
    }
}

/// A started session's turns, printed.
struct Turns<'a> {
    session: &'a Session,
    run: &'a SessionRun,
    printer: SharedPrinter<std::io::Stdout>,
    model_given: bool,
}

type Printed = (
    Option<crate::agent::QueryOutcome>,
    Option<serde_json::Value>,
);

impl Turns<'_> {
    /// The turns, from the prompt or the SDK's messages; what they ended
    /// with and the result line printed.
    async fn run(
        self,
        options: &PrintOptions,
        channel: Option<Arc<ControlChannel>>,
    ) -> Result<Printed, PrintError> {
        let (session, run) = (self.session, self.run);
        let mut config = run.config.clone();
        let turn = TurnSlot::default();
        let overrides = Arc::new(crate::control::turn::TurnOverrides::default());
        // Only the SDK asks what the context holds (`get_context_usage`).
        let meter = channel
            .is_some()
            .then(|| Arc::new(crate::control::usage::ContextMeter::default()));
        let prompts = match (options.prompt.clone(), channel) {
            (Some(prompt), _) => Prompts::One(prompt),
            (None, None) => return Err(PrintError::NoPrompt),
            (None, Some(channel)) => {
                let wiring = SdkWiring {
                    channel,
                    model_given: self.model_given,
                    session,
                    run,
                    printer: &self.printer,
                    turn: &turn,
                    overrides: &overrides,
                    meter: meter.as_ref(),
                };
                sdk::connect(wiring, &mut config).await?
            }
        };
        if let Some(meter) = &meter {
            let parts =
                super::context::context_parts(session, &config, session.loop_tools.as_ref());
            meter.set_parts(parts);
            let tokens = crate::agent::estimate_tokens(&session.history);
            meter.set_messages(tokens, &config.model);
        }
        let deps = session
            .deps(matches!(prompts, Prompts::Stream(_)))
            .ok_or(PrintError::NoModel)?;
        let print_session = PrintSession {
            overrides: Some(overrides.clone()),
            meter: meter.clone(),
            notifications: Some(session.queue.clone()),
            setup: options.setup,
            ..PrintSession::of(session, run, turn, options.slash_commands)
        };
        let printer = self.printer.clone();
        let outcome = run_print(&deps, &config, self.printer, prompts, print_session).await;
        Ok((outcome, printer.printed_result()))
    }
}

/// The SDK's `can_use_tool`, over the control protocol, as the session's
/// asker (`--permission-prompt-tool stdio`).
fn sdk_asker(session: &Session, channel: &Arc<ControlChannel>) -> SessionAsker {
    let prompter = Arc::new(SdkPrompter::new(
        channel.clone(),
        session.pipeline.permissions().clone(),
    ));
    SessionAsker {
        calls: prompter.clone(),
        hosts: prompter,
    }
}

/// The session's output joins `printer`: its events, and — as Claude Code
/// prints them — a `system`/`status` line for every mode change, whoever
/// made it (the mode's gate tells).
fn start_printing<P>(session: &Session, printer: &P, asker: Option<SessionAsker>)
where
    P: crate::agent::EventSink + crate::control::LineOut + Clone + Send + Sync + 'static,
{
    let (out, session_id) = (printer.clone(), session.id.clone());
    session.start(SessionOutput {
        events: Box::new(printer.clone()),
        mode_changes: Some(Box::new(move |mode| {
            out.line(crate::control::mode_status_line(&session_id, mode));
        })),
        asker,
    });
}

/// The printer of the session's lines, with what `system`/`init` says.
fn printer(
    options: &PrintOptions,
    session: &Session,
    run: &SessionRun,
    started: Instant,
) -> SharedPrinter<std::io::Stdout> {
    let tools: Vec<String> = session
        .loop_tools
        .specs()
        .into_iter()
        .map(|s| s.name)
        .collect();
    let info = RunInfo {
        session_id: session.id.clone(),
        cwd: session.paths.cwd.display().to_string(),
        model: run.config.model.clone(),
        tools,
        permission_mode: session.mode().as_str().to_string(),
        api_key_source: run.api_key_source.to_string(),
        started,
        plugins: session.plugins.clone(),
        mcp_servers: session.mcp_status(),
        agents: session.agents.iter().map(|a| a.name.clone()).collect(),
        slash_commands: match options.slash_commands {
            false => Vec::new(),
            true => std::iter::once("compact".to_string())
                .chain(session.commands.names())
                .chain(
                    session
                        .pipeline
                        .mcp_servers()
                        .prompt_commands()
                        .into_iter()
                        .map(|(name, _)| name),
                )
                .collect(),
        },
        skills: session.commands.skill_names(),
        output_style: session
            .output_style
            .as_ref()
            .map_or(crate::prompt::DEFAULT_STYLE.to_string(), |s| s.name.clone()),
    };
    SharedPrinter::new(
        Printer::new(options.format, options.verbose, std::io::stdout(), info)
            .with_hook_events(options.hook_events)
            .with_partial_messages(options.partial_messages)
            .with_replayed_user_messages(options.replay_user_messages),
    )
}

/// SIGINT / SIGTERM end the run cleanly (the loop sees the token); a second
/// signal ends the process at once.
fn spawn_signal_handler(abort: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        tracing::warn!("cannot install signal handlers; SIGINT will end the process abruptly");
        return;
    };
    tokio::spawn(async move {
        let mut seen = 0;
        loop {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            seen += 1;
            if seen > 1 {
                eprintln!("carapace: second signal, exiting now");
                std::process::exit(130);
            }
            abort.cancel();
        }
    });
}
