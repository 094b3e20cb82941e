//! The `carapace` command line: Claude Code's print-mode flags, so that one
//! command line works for both. Print mode is flags → a
//! [`SessionBuilder`] → the built session, started with the printer as its
//! output → the loop's turns.
//!
//! This is the binary's edge: errors become a message on stderr and exit 1.
//! It may import every folder; none imports it.

/// `println!` that does not panic when stdout is closed (`| head`).
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = std::io::Write::write_fmt(&mut std::io::stdout(), format_args!("{}\n", format_args!($($arg)*)));
    }};
}

mod acp;
mod context;
mod flags;
mod interactive;
mod marketplace;
mod plugin;
mod sdk;
pub mod stream_input;
mod worker;

pub use flags::{Cli, Command, InputFormat, McpCommand, Unsupported};

use crate::control::{ControlChannel, SdkPrompter, TurnSlot};
use crate::conversation::{PrintSession, Prompts, run_print};
use crate::output::{OutputFormat, Printer, RunInfo, SharedPrinter};
use crate::policy::PermissionMode;
use crate::session::{
    HistorySetup, McpSetup, PromptChoice, Resume, RunSetup, Session, SessionAsker, SessionBuilder,
    SessionOutput, SessionPaths, SessionRun, ToolSet,
};
use anyhow::{Context, bail};
use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// `--bare`'s tools when `--tools` does not choose (as Claude Code's).
const BARE_TOOLS: [&str; 4] = ["Bash", "Read", "Edit", "Write"];

/// Prints what assembling the session had to say.
fn print_warnings(session: &Session) {
    for warning in &session.warnings {
        eprintln!("carapace: warning: {warning}");
    }
}

fn paths() -> anyhow::Result<SessionPaths> {
    SessionPaths::from_env().context("reading the working directory")
}

pub async fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command.take() {
        Some(Command::Plugin { action }) => plugin::plugin(action, &paths()?).await,
        Some(Command::Tool { action }) => plugin::tool_call(action.into(), paths()?).await,
        Some(Command::Mcp { action }) => mcp_serve(action, paths()?).await,
        Some(Command::Acp {
            max_sessions,
            max_running,
            permission_timeout,
            session_flags,
        }) => {
            let limits = acp::Limits {
                max_sessions: max_sessions.unwrap_or_else(acp::sessions_for_memory),
                max_running: max_running.unwrap_or_else(acp::turns_for_processors),
                permission_timeout: std::time::Duration::from_secs(permission_timeout),
            };
            acp::serve(acp_session_flags(&cli, session_flags)?, limits).await
        }
        // `carapace --model X acp`: clap takes `acp` after a flag as the
        // prompt, not the subcommand.
        None if cli.prompt.as_deref() == Some("acp") => {
            bail!("session flags go after `acp --`: carapace acp -- --model NAME")
        }
        None if interactive::wanted(&cli) => interactive::run(cli).await,
        Some(Command::Worker { job, listen, check }) => {
            worker::run(job.as_deref(), listen, check).await
        }
        None => print_mode(cli, None).await,
    }
}

/// The session flags of `carapace acp … -- FLAGS`, parsed as the main
/// command's; none may come before `acp` (clap takes a flag there as the
/// start of a prompt, not of a subcommand).
fn acp_session_flags(cli: &Cli, flags: Vec<String>) -> anyhow::Result<Cli> {
    use clap::Parser;
    if cli.prompt.is_some() || cli.model.is_some() {
        bail!("session flags go after `acp --`: carapace acp -- --model NAME");
    }
    let session = Cli::try_parse_from(std::iter::once("carapace".to_string()).chain(flags))?;
    if session.command.is_some() || session.prompt.is_some() {
        bail!("after `acp --` come session flags only, no prompt or subcommand");
    }
    Ok(session)
}

/// The session's warnings on stderr: a worker's as JSON lines, each with
/// the session id; anyone else's as text.
fn warn_about(session: &Session, worker: bool) {
    if worker {
        for warning in &session.warnings {
            worker::log("warn", Some(&session.id), warning);
        }
    } else {
        print_warnings(session);
    }
}

/// The SDK's `can_use_tool`, over the control protocol, as the session's
/// asker (`--permission-prompt-tool stdio`).
fn sdk_asker(session: &Session, channel: &Arc<ControlChannel>) -> SessionAsker {
    let mode = session.pipeline.policy().mode_cell().clone();
    let prompter = Arc::new(SdkPrompter::new(channel.clone(), mode));
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

/// `carapace -p`: one prompt, or the SDK's stream of messages; a worker's
/// `report` is told when the session is ready and what the result was.
async fn print_mode(cli: Cli, report: Option<&worker::WorkerReport>) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    check_flags(&cli)?;
    let prompt = read_prompt(&cli)?;
    let session = session_builder(&cli, prompt.is_none())?.build().await?;
    warn_about(&session, report.is_some());
    let Some(run) = &session.run else {
        bail!("the session was built without a model");
    };
    tracing::debug!(
        mark = "model_ready",
        ms = started.elapsed().as_secs_f64() * 1e3,
        "startup timing"
    );
    let printer = printer(&cli, &session, run, started);
    if let Some(report) = report {
        report.ready(&session.id);
    }
    // stream-json input: the SDK's control protocol rides along, and with
    // `--permission-prompt-tool stdio` it answers the policy's questions.
    let channel = prompt
        .is_none()
        .then(|| Arc::new(ControlChannel::new(Box::new(printer.clone()))));
    let asker = channel
        .as_ref()
        .filter(|_| cli.permission_prompt_tool.as_deref() == Some(crate::tools::STDIO_PROMPT))
        .map(|channel| sdk_asker(&session, channel));
    start_printing(&session, &printer, asker);
    spawn_signal_handler(session.abort.clone());
    let mut config = run.config.clone();
    let turn = TurnSlot::default();
    let overrides = Arc::new(crate::control::turn::TurnOverrides::default());
    // Only the SDK asks what the context holds (`get_context_usage`).
    let meter = prompt
        .is_none()
        .then(|| Arc::new(crate::control::usage::ContextMeter::default()));
    let prompts = match (prompt, channel) {
        (Some(prompt), _) => Prompts::One(prompt),
        (None, None) => bail!("no prompt and no control channel"),
        (None, Some(channel)) => {
            let wiring = sdk::SdkWiring {
                channel,
                cli: &cli,
                session: &session,
                run,
                printer: &printer,
                turn: &turn,
                overrides: &overrides,
                meter: meter.as_ref(),
            };
            sdk::connect(wiring, &mut config).await?
        }
    };
    if let Some(meter) = &meter {
        let parts = context::context_parts(&session, &config, session.loop_tools.as_ref());
        meter.set_parts(parts);
        let tokens = crate::agent::estimate_tokens(&session.history);
        meter.set_messages(tokens, &config.model);
    }
    let Some(deps) = session.deps(matches!(prompts, Prompts::Stream(_))) else {
        bail!("the session was built without a model");
    };
    let slash_commands = !cli.disable_slash_commands;
    let print_session = PrintSession {
        hooks: Some(session.hooks.as_ref()),
        history: session.history.clone(),
        source: session.source,
        transcript: session.transcript.as_deref(),
        turn: Some(turn),
        model: Some(run.model_name.clone()),
        overrides: Some(overrides.clone()),
        meter: meter.clone(),
        checkpoints: session.checkpoints.clone(),
        slash_commands,
        commands: slash_commands.then_some(crate::conversation::SlashCommands {
            pipeline: &session.pipeline,
        }),
        notifications: Some(session.queue.clone()),
        setup: cli.setup_run(),
    };
    let result_printer = printer.clone();
    let outcome = run_print(&deps, &config, printer, prompts, print_session).await;
    session.shutdown().await;
    if let Some(report) = report
        && let Some(line) = result_printer.printed_result()
    {
        report.finished(&line)?;
    }
    Ok(match outcome {
        Some(outcome) if !outcome.is_error() => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
        None => ExitCode::SUCCESS,
    })
}

/// Flags that cannot go together, and those carapace refuses by name.
fn check_flags(cli: &Cli) -> anyhow::Result<()> {
    if let Some(refusal) = cli.unsupported.refusal() {
        bail!("{refusal}");
    }
    if cli.output_format == OutputFormat::StreamJson && !cli.verbose {
        bail!("When using --print, --output-format=stream-json requires --verbose");
    }
    if cli.input_format == InputFormat::StreamJson && cli.output_format != OutputFormat::StreamJson
    {
        bail!("--input-format=stream-json requires --output-format=stream-json");
    }
    if cli.permission_prompt_tool.as_deref() == Some(crate::tools::STDIO_PROMPT)
        && cli.input_format != InputFormat::StreamJson
    {
        bail!(
            "--permission-prompt-tool stdio asks over the control protocol: it needs --input-format stream-json"
        );
    }
    Ok(())
}

/// The prompt: the argument, or stdin read whole; `None` when the SDK's
/// messages come on stdin.
fn read_prompt(cli: &Cli) -> anyhow::Result<Option<String>> {
    let prompt = match (&cli.input_format, cli.prompt.clone()) {
        (InputFormat::StreamJson, Some(_)) => {
            bail!(
                "with --input-format=stream-json the messages come from stdin, not the command line"
            )
        }
        (InputFormat::StreamJson, None) => None,
        (InputFormat::Text, Some(prompt)) => Some(prompt),
        (InputFormat::Text, None) if !std::io::stdin().is_terminal() => {
            let mut prompt = String::new();
            std::io::stdin()
                .read_to_string(&mut prompt)
                .context("reading the prompt from stdin")?;
            Some(prompt)
        }
        (InputFormat::Text, None) => {
            bail!("no prompt: pass one as an argument (carapace -p \"...\") or on stdin")
        }
    };
    if prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
        bail!("the prompt is empty");
    }
    if cli.fork_session && cli.resume.is_none() && !cli.continue_session {
        bail!("--fork-session goes with --resume or --continue");
    }
    Ok(prompt)
}

/// The session the flags describe; `sdk` when the Agent SDK connects on
/// stdin.
fn session_builder(cli: &Cli, sdk: bool) -> anyhow::Result<SessionBuilder> {
    session_builder_at(cli, sdk, paths()?)
}

/// The same, for a session whose working directory is not the process's
/// (an ACP client's `session/new`).
fn session_builder_at(cli: &Cli, sdk: bool, paths: SessionPaths) -> anyhow::Result<SessionBuilder> {
    if cli.resume.as_deref() == Some("") {
        bail!(
            "--resume without a session id lists sessions to choose from on the interactive screen; here, name the session (--resume ID) or use --continue"
        );
    }
    let resume = match (&cli.resume, cli.continue_session) {
        (Some(id), _) => Some(Resume::Id(id.clone())),
        (None, true) => Some(Resume::Latest),
        (None, false) => None,
    };
    let mode = if cli.dangerously_skip_permissions {
        Some(PermissionMode::BypassPermissions)
    } else {
        cli.permission_mode
    };
    let output_schema = cli
        .json_schema
        .as_deref()
        .map(crate::tools::structured_output::parse_schema)
        .transpose()?;
    Ok(SessionBuilder::new(paths)
        .agent_tool(!cli.bare || cli.agents.is_some())
        .web_search(true)
        .run(run_setup(cli, sdk)?)
        .output_schema(output_schema)
        .hooks(!cli.bare)
        .memory(!cli.bare)
        .skills(!cli.disable_slash_commands)
        .plugin_dirs(cli.plugin_dir.clone())
        .file_checkpoints(
            std::env::var("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING")
                .is_ok_and(|v| matches!(v.trim(), "1" | "true")),
        )
        .installed_plugins(!cli.bare)
        .agents(cli.agents.clone())
        .setting_sources(setting_sources(cli)?)
        .settings(cli.settings.clone())
        .trust_workspace(cli.trust_workspace)
        .mode(mode)
        .rules(cli.allowed_tools.clone(), cli.disallowed_tools.clone())
        .add_dirs(cli.add_dir.clone())
        .session_id(cli.session_id.map(|id| id.to_string()))
        .allow_bypass_mode(cli.allow_dangerously_skip_permissions)
        .tools(tool_set(cli))
        .mcp(McpSetup {
            configs: cli.mcp_config.clone(),
            strict: cli.strict_mcp_config || cli.bare,
        })
        .prompt_tool(cli.permission_prompt_tool.clone())
        .history(HistorySetup {
            resume,
            fork: cli.fork_session,
            persist: !cli.no_session_persistence,
            name: cli.name.clone(),
            store: transcript_store(cli)?,
        })
        // Verbose JSON output prints each result's `tool_use_result`.
        .structured_results(cli.verbose && cli.output_format != OutputFormat::Text))
}

/// The transcript store `--transcript-store` names: one connection per
/// URL for the whole process (the ACP server builds many sessions), made
/// again when it has ended.
fn transcript_store(cli: &Cli) -> anyhow::Result<crate::transcript::TranscriptStore> {
    use crate::transcript::TranscriptStore;
    use std::collections::HashMap;
    static STORES: std::sync::Mutex<Option<HashMap<String, TranscriptStore>>> =
        std::sync::Mutex::new(None);
    let url = cli.transcript_store.as_deref().unwrap_or("files");
    let mut stores = STORES
        .lock()
        .map_err(|_| anyhow::anyhow!("the transcript stores' lock is poisoned"))?;
    let stores = stores.get_or_insert_with(HashMap::new);
    if let Some(store) = stores.get(url).filter(|store| store.is_usable()) {
        return Ok(store.clone());
    }
    let store = TranscriptStore::from_url(url)?;
    stores.insert(url.to_string(), store.clone());
    Ok(store)
}

/// The model and the loop, as the flags choose them.
fn run_setup(cli: &Cli, sdk: bool) -> anyhow::Result<RunSetup> {
    Ok(RunSetup {
        model: cli.model.clone(),
        fallback_models: cli.fallback_model.clone(),
        max_turns: cli.max_turns,
        max_budget_usd: cli.max_budget_usd,
        betas: cli.betas.clone(),
        effort: cli.effort,
        task_budget: cli.task_budget,
        thinking: cli.unsupported.thinking.clone(),
        max_thinking_tokens: cli.unsupported.max_thinking_tokens.clone(),
        prompt: PromptChoice::from_flags(
            cli.system_prompt.clone(),
            cli.system_prompt_file.as_deref(),
            cli.append_system_prompt.clone(),
        )?,
        environment_elsewhere: cli.exclude_dynamic_system_prompt_sections,
        agent: cli.agent.clone(),
        sdk,
    })
}

/// As Claude Code: no `--tools` or `default` is every built-in tool, `""`
/// none of them; plugin and MCP tools are offered either way.
fn tool_set(cli: &Cli) -> ToolSet {
    let named: Vec<String> = cli
        .tools
        .iter()
        .flat_map(|t| t.split([',', ' ']))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    if cli.tools.is_empty() && cli.bare {
        let mut bare = BARE_TOOLS.map(String::from).to_vec();
        // Agents given explicitly are the one thing --bare still offers.
        if cli.agents.is_some() {
            bare.push(crate::tools::AGENT_TOOL.to_string());
        }
        ToolSet::Only(bare)
    } else if cli.tools.is_empty() || named == ["default"] {
        ToolSet::All
    } else {
        ToolSet::Only(named)
    }
}

/// `--setting-sources` (`--setting-sources=`, the TypeScript SDK's `[]`:
/// none).
fn setting_sources(cli: &Cli) -> anyhow::Result<Option<Vec<crate::policy::SourceKind>>> {
    let Some(names) = &cli.setting_sources else {
        return Ok(None);
    };
    let kinds = names
        .iter()
        .filter(|name| !name.trim().is_empty())
        .map(|name| match name.trim() {
            "user" => Ok(crate::policy::SourceKind::User),
            "project" => Ok(crate::policy::SourceKind::Project),
            "local" => Ok(crate::policy::SourceKind::Local),
            other => Err(anyhow::anyhow!(
                "--setting-sources: `{other}` is not one of user, project, local"
            )),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Some(kinds))
}

/// The printer of the session's lines, with what `system`/`init` says.
fn printer(
    cli: &Cli,
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
        slash_commands: if cli.disable_slash_commands {
            Vec::new()
        } else {
            std::iter::once("compact".to_string())
                .chain(session.commands.names())
                .collect()
        },
        skills: session.commands.skill_names(),
        output_style: session
            .output_style
            .as_ref()
            .map_or(crate::prompt::DEFAULT_STYLE.to_string(), |s| s.name.clone()),
    };
    SharedPrinter::new(
        Printer::new(cli.output_format, cli.verbose, std::io::stdout(), info)
            .with_hook_events(cli.include_hook_events)
            .with_partial_messages(cli.include_partial_messages)
            .with_replayed_user_messages(cli.replay_user_messages),
    )
}

/// `carapace mcp serve`: the session's tools, policy and hooks, served.
async fn mcp_serve(command: McpCommand, paths: SessionPaths) -> anyhow::Result<ExitCode> {
    let McpCommand::Serve {
        permission_mode,
        allowed_tools,
        disallowed_tools,
        trust_workspace,
        http,
    } = command;
    let session = SessionBuilder::new(paths)
        .trust_workspace(trust_workspace)
        .mode(permission_mode)
        .rules(allowed_tools, disallowed_tools)
        .build()
        .await?;
    print_warnings(&session);
    if let Some(addr) = http {
        let (bound, server) = crate::mcp_serve::http::bind(session.pipeline.clone(), addr).await?;
        eprintln!("carapace: serving MCP on http://{bound}/mcp");
        server.await;
        return Ok(ExitCode::SUCCESS);
    }
    crate::mcp_serve::serve(
        session.pipeline.clone(),
        tokio::io::BufReader::new(tokio::io::stdin()),
        tokio::io::stdout(),
    )
    .await
    .context("serving MCP on stdio")?;
    Ok(ExitCode::SUCCESS)
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
