//! The `carapace` command line: Claude Code's print-mode flags, so that one
//! command line works for both, and the dispatch to the front ends. The
//! flags become a [`SessionSpec`](crate::session::SessionSpec) here and
//! nowhere else (`spec.rs`); print mode runs it through the conversation's
//! [`run_printed`], the screen, ACP and a worker through their own rooms.
//!
//! This is the binary's edge: errors become a message on stderr and exit 1.
//! It may import every folder; none imports it.

/// `println!` that does not panic when stdout is closed (`| head`).
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = std::io::Write::write_fmt(&mut std::io::stdout(), format_args!("{}\n", format_args!($($arg)*)));
    }};
}

mod flags;
mod marketplace;
mod plugin;
mod spec;

pub use flags::{Cli, Command, InputFormat, McpCommand, Unsupported};

use crate::conversation::{PrintOptions, RunEnd, print_warnings, run_printed};
use crate::output::OutputFormat;
use crate::session::{PermissionSpec, SessionPaths, SessionSpec, Sessions};
use anyhow::{Context, bail};
use std::io::{IsTerminal, Read};
use std::process::ExitCode;

fn paths() -> anyhow::Result<SessionPaths> {
    SessionPaths::from_env().context("reading the working directory")
}

pub async fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    let sessions = Sessions::new();
    match cli.command.take() {
        Some(Command::Plugin { action }) => plugin::plugin(action, &paths()?).await,
        Some(Command::Tool { action }) => plugin::tool_call(action.into(), paths()?).await,
        Some(Command::Mcp { action }) => mcp_serve(action, paths()?, &sessions).await,
        Some(Command::Acp {
            max_sessions,
            max_running,
            permission_timeout,
            session_flags,
        }) => {
            let limits = crate::acp::Limits {
                max_sessions: max_sessions.unwrap_or_else(crate::acp::sessions_for_memory),
                max_running: max_running.unwrap_or_else(crate::acp::turns_for_processors),
                permission_timeout: std::time::Duration::from_secs(permission_timeout),
            };
            crate::acp::serve(acp_session_spec(&cli, session_flags)?, limits).await
        }
        // `carapace --model X acp`: clap takes `acp` after a flag as the
        // prompt, not the subcommand.
        None if cli.prompt.as_deref() == Some("acp") => {
            bail!("session flags go after `acp --`: carapace acp -- --model NAME")
        }
        None if screen_wanted(&cli) => screen(cli, &sessions).await,
        Some(Command::Worker { job, listen, check }) => {
            crate::worker::run(job.as_deref(), listen, check, &sessions).await
        }
        None => print_mode(cli, &sessions).await,
    }
}

/// The session `carapace acp … -- FLAGS` describes, its flags parsed as
/// the main command's; none may come before `acp` (clap takes a flag there
/// as the start of a prompt, not of a subcommand).
fn acp_session_spec(cli: &Cli, flags: Vec<String>) -> anyhow::Result<SessionSpec> {
    use clap::Parser;
    if cli.prompt.is_some() || cli.model.is_some() {
        bail!("session flags go after `acp --`: carapace acp -- --model NAME");
    }
    let session = Cli::try_parse_from(std::iter::once("carapace".to_string()).chain(flags))?;
    if session.command.is_some() || session.prompt.is_some() {
        bail!("after `acp --` come session flags only, no prompt or subcommand");
    }
    check_flags(&session)?;
    // Every session is new, with an id of its own; prompts come from the
    // client.
    if session.resume.is_some() || session.continue_session || session.session_id.is_some() {
        bail!(
            "--resume, --continue and --session-id are for one session; an ACP client resumes with session/load"
        );
    }
    spec::session_spec(&session, false, paths()?)
}

/// Whether `carapace` with these flags opens the screen: no `-p`, text
/// input, and a terminal on both ends.
fn screen_wanted(cli: &Cli) -> bool {
    !cli.print
        && cli.input_format == InputFormat::Text
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
}

/// `carapace` in a terminal: the interactive screen.
async fn screen(mut cli: Cli, sessions: &Sessions) -> anyhow::Result<ExitCode> {
    check_flags(&cli)?;
    if cli.permission_prompt_tool.is_some() {
        bail!("--permission-prompt-tool is for print mode: the interactive screen asks you itself");
    }
    // `--resume` without an id: the screen's picker chooses.
    let pick = cli.resume.as_deref() == Some("");
    if pick {
        cli.resume = None;
    }
    let start = crate::interactive::ScreenStart {
        spec: spec::session_spec(&cli, false, paths()?)?,
        pick,
        slash_commands: !cli.disable_slash_commands,
        prompt: cli.prompt.take(),
    };
    crate::interactive::run(start, sessions).await
}

/// `carapace -p`: one prompt, or the SDK's stream of messages.
async fn print_mode(cli: Cli, sessions: &Sessions) -> anyhow::Result<ExitCode> {
    check_flags(&cli)?;
    let prompt = read_prompt(&cli)?;
    let spec = spec::session_spec(&cli, prompt.is_none(), paths()?)?;
    let options = PrintOptions {
        format: cli.output_format,
        verbose: cli.verbose,
        hook_events: cli.include_hook_events,
        partial_messages: cli.include_partial_messages,
        replay_user_messages: cli.replay_user_messages,
        slash_commands: !cli.disable_slash_commands,
        setup: cli.setup_run(),
        prompt,
    };
    Ok(match run_printed(sessions, spec, options, None).await? {
        RunEnd::Success => ExitCode::SUCCESS,
        RunEnd::Failure => ExitCode::FAILURE,
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

/// `carapace mcp login NAME`: signs in to the configured HTTP server
/// `NAME`. The configurations are read as a session reads them.
async fn mcp_login(
    name: &str,
    (mcp_config, trust_workspace): (&[String], bool),
    paths: SessionPaths,
    sessions: &Sessions,
) -> anyhow::Result<ExitCode> {
    let config_dir = paths.config_dir.clone();
    let mut spec = SessionSpec::new(paths);
    spec.settings.trust_workspace = trust_workspace;
    spec.mcp = Some(crate::session::McpSetup {
        given: (mcp_config.iter())
            .map(|c| spec::mcp_given(c))
            .collect::<anyhow::Result<_>>()?,
        strict: false,
    });
    let session = sessions.open(spec).await?;
    let found = session.mcp_configs.iter().find(|c| c.name == name);
    let Some(crate::mcp::Transport::Http { url, .. }) = found.map(|c| &c.transport) else {
        bail!("no HTTP MCP server named `{name}` is configured here");
    };
    let http = crate::mcp::oauth::http_client()?;
    let pending = crate::mcp::oauth::begin(&http, url)
        .await
        .with_context(|| format!("starting the sign-in to `{name}`"))?;
    eprintln!(
        "carapace: open this page to sign in to `{name}`:\n{}",
        pending.url
    );
    let store = crate::mcp::Credentials::in_folder(&config_dir);
    pending
        .finish(&http, &store)
        .await
        .with_context(|| format!("signing in to `{name}`"))?;
    eprintln!("carapace: signed in to `{name}`");
    session.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// `carapace mcp serve`: the session's tools, policy and hooks, served.
async fn mcp_serve(
    command: McpCommand,
    paths: SessionPaths,
    sessions: &Sessions,
) -> anyhow::Result<ExitCode> {
    let (permission_mode, allowed_tools, disallowed_tools, trust_workspace, http) = match command {
        McpCommand::Serve {
            permission_mode,
            allowed_tools,
            disallowed_tools,
            trust_workspace,
            http,
        } => (
            permission_mode,
            allowed_tools,
            disallowed_tools,
            trust_workspace,
            http,
        ),
        McpCommand::Login {
            name,
            mcp_config,
            trust_workspace,
        } => return mcp_login(&name, (&mcp_config, trust_workspace), paths, sessions).await,
    };
    let mut spec = SessionSpec::new(paths);
    spec.settings.trust_workspace = trust_workspace;
    spec.permissions = PermissionSpec {
        mode: permission_mode,
        allowed: allowed_tools,
        disallowed: disallowed_tools,
        ..PermissionSpec::default()
    };
    let session = sessions.open(spec).await?;
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
