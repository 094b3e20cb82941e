//! The `carapace` command line: Claude Code's print-mode flags, so that one
//! command line works for both.
//!
//! This is the binary's edge: errors become a message on stderr and exit 1.

mod context;
mod plugin;
pub mod print;
mod sdk;

use crate::agent::{
    ContextConfig, DEFAULT_STRUCTURED_OUTPUT_ATTEMPTS, HistoryLog, InputQueue, NoHistoryLog,
    QueryConfig, QueryDeps, StructuredOutputConfig,
};
use crate::control::TurnSlot;
use crate::control::start::Start;
use crate::model::{AnthropicModel, Model, ReplayModel, RetryPolicy, price};
use crate::output::{OutputFormat, Printer, RunInfo, SharedPrinter};
use crate::policy::PermissionMode;
use crate::session::{
    HistorySetup, McpSetup, Resume, Session, SessionBuilder, SessionPaths, ToolSet,
};
use crate::subagents::{AgentTool, SubagentRunner};
use anyhow::{Context, bail};
use clap::Parser;
use context::{PromptChoice, context_parts, session_system_prompt};
use print::{PrintSession, Prompts, run_print};
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
const DEFAULT_STOP_HOOK_BLOCK_CAP: u32 = 8;
/// `--bare`'s tools when `--tools` does not choose (as Claude Code's).
const BARE_TOOLS: [&str; 4] = ["Bash", "Read", "Edit", "Write"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum InputFormat {
    #[default]
    Text,
    #[value(name = "stream-json")]
    StreamJson,
}

#[derive(Debug, Parser)]
#[command(
    name = "carapace",
    version,
    disable_version_flag = true,
    args_conflicts_with_subcommands = true,
    about = "An agent host whose tools run as sandboxed WebAssembly components",
    after_help = "With no API key, try the replay demo: carapace -p 'Read the notes' --model replay:examples/demo/replay.json\n\n\
Environment: ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, ANTHROPIC_MODEL, \
CARAPACE_MAX_RETRIES (10), CARAPACE_RETRY_BASE_DELAY_MS (500), CARAPACE_MAX_OUTPUT_TOKENS (32000), \
CARAPACE_STOP_HOOK_BLOCK_CAP (8), CARAPACE_AUTOCOMPACT_PCT_OVERRIDE (1-100: compact at that share \
of the context window), CARAPACE_DISABLE_AUTO_COMPACT, CARAPACE_CACHE_DIR, CARAPACE_CONFIG_DIR, CARAPACE_LOG."
)]
pub struct Cli {
    /// Print the version.
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version)]
    pub version: Option<bool>,

    /// Print the response and exit (non-interactive; the only mode so far).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// The prompt. Read from stdin when absent and stdin is not a terminal.
    pub prompt: Option<String>,

    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub output_format: OutputFormat,

    /// Input format: a text prompt, or Claude Code's stream-json user
    /// messages on stdin (messages that arrive while tools run are queued).
    #[arg(long, value_enum, default_value = "text")]
    pub input_format: InputFormat,

    /// Print every message, not only the result (required by stream-json).
    #[arg(long)]
    pub verbose: bool,

    /// The model: an Anthropic model name, or `replay:FILE` to play a script.
    #[arg(long, env = "ANTHROPIC_MODEL")]
    pub model: Option<String>,

    /// Models to fall back to, in order, when the model keeps failing.
    #[arg(long, value_delimiter = ',')]
    pub fallback_model: Vec<String>,

    /// The built-in tools offered to the model, comma- or space-separated;
    /// "" for none, "default" for all. Plugin and MCP tools are offered
    /// whatever it says (the rules decide about them).
    #[arg(long, num_args = 1)]
    pub tools: Vec<String>,

    /// Maximum number of model iterations.
    #[arg(long)]
    pub max_turns: Option<u32>,

    /// Stop when the run has cost this many US dollars.
    #[arg(long)]
    pub max_budget_usd: Option<f64>,

    /// Permission mode.
    #[arg(long, value_enum)]
    pub permission_mode: Option<PermissionMode>,

    /// Same as --permission-mode bypassPermissions.
    #[arg(long)]
    pub dangerously_skip_permissions: bool,

    /// Permission rules that allow, e.g. "Read" "Bash(git log:*)" (comma- or
    /// argument-separated).
    #[arg(long = "allowedTools", alias = "allowed-tools", num_args = 1..)]
    pub allowed_tools: Vec<String>,

    /// Permission rules that deny; a bare tool name also hides the tool.
    #[arg(long = "disallowedTools", alias = "disallowed-tools", num_args = 1..)]
    pub disallowed_tools: Vec<String>,

    /// A loaded tool that answers permission questions (print mode cannot
    /// ask a person).
    #[arg(long)]
    pub permission_prompt_tool: Option<String>,

    /// More working directories the policy treats like the current one.
    #[arg(long = "add-dir", num_args = 1..)]
    pub add_dir: Vec<PathBuf>,

    /// Trust this workspace: hooks, plugins and MCP servers that its project
    /// settings bring may load.
    #[arg(long)]
    pub trust_workspace: bool,

    /// Use this session id (a UUID) instead of a new one.
    #[arg(long)]
    pub session_id: Option<uuid::Uuid>,

    /// Resume the session with this id (in this workspace): its history
    /// goes with the prompt.
    #[arg(short = 'r', long, conflicts_with = "continue_session")]
    pub resume: Option<String>,

    /// Continue the most recent session of this workspace.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,

    /// With --resume or --continue: start a new session (a new id) from
    /// the resumed one's history, leaving it as it was.
    #[arg(long)]
    pub fork_session: bool,

    /// Write no transcript of this session (it cannot be resumed).
    #[arg(long)]
    pub no_session_persistence: bool,

    /// Replace carapace's system prompt ("" for none, as the Agent SDK
    /// passes by default).
    #[arg(long, conflicts_with = "system_prompt_file")]
    pub system_prompt: Option<String>,

    /// Replace carapace's system prompt with this file's text.
    #[arg(long)]
    pub system_prompt_file: Option<PathBuf>,

    /// Text added after the system prompt.
    #[arg(long)]
    pub append_system_prompt: Option<String>,

    /// Settings as a JSON file or a JSON string.
    #[arg(long)]
    pub settings: Option<String>,

    /// MCP servers, from a JSON file or a JSON string (Claude Code's
    /// `.mcp.json` shape); may be given more than once.
    #[arg(long = "mcp-config", num_args = 1..)]
    pub mcp_config: Vec<String>,

    /// Use only the servers of --mcp-config, not `.mcp.json` nor
    /// `~/.carapace/mcp.json`.
    #[arg(long)]
    pub strict_mcp_config: bool,

    /// Print hook lines (`hook_started`, `hook_response`) in stream-json.
    #[arg(long)]
    pub include_hook_events: bool,

    /// Print each event of a response as it streams (`stream_event` lines).
    #[arg(long)]
    pub include_partial_messages: bool,

    /// Print each user message read from stdin back on stdout, as it is
    /// taken (stream-json in and out).
    #[arg(long)]
    pub replay_user_messages: bool,

    /// Beta flags sent with every request (the `anthropic-beta` header).
    #[arg(long, num_args = 1.., value_delimiter = ',')]
    pub betas: Vec<String>,

    /// Treat `/compact` as an ordinary prompt.
    #[arg(long)]
    pub disable_slash_commands: bool,

    /// A display name for the session (kept in its transcript).
    #[arg(short = 'n', long)]
    pub name: Option<String>,

    /// Write the debug log to this file (implies --debug).
    #[arg(long)]
    pub debug_file: Option<PathBuf>,

    /// Let the session switch to bypassPermissions later (the SDK's
    /// set_permission_mode) without starting in it.
    #[arg(long)]
    pub allow_dangerously_skip_permissions: bool,

    /// Tokens the model has for the whole task, told to it on every request
    /// (`output_config.task_budget`).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub task_budget: Option<u64>,

    /// A folder in Claude Code's plugin layout (.claude-plugin/plugin.json,
    /// skills/, commands/, agents/), offered as `plugin:name` (repeatable).
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dir: Vec<PathBuf>,

    /// Which settings files load, comma-separated: user, project, local
    /// (managed settings and --settings always do); empty: none of them.
    #[arg(long, value_delimiter = ',')]
    pub setting_sources: Option<Vec<String>>,

    /// Agent types for the Agent tool, as JSON: {"name": {"description",
    /// "prompt", "tools"?, "model"?}}.
    #[arg(long)]
    pub agents: Option<String>,

    /// How much effort the model spends (sent to models that have the
    /// setting; others ignore it, as with Claude Code).
    #[arg(long, value_enum)]
    pub effort: Option<crate::model::Effort>,

    /// A JSON Schema (an object's) the final answer must match: the model
    /// gives it through the StructuredOutput tool, and the result line
    /// carries it as `structured_output`.
    #[arg(long)]
    pub json_schema: Option<String>,

    /// Minimal mode: the built-in Bash, Read, Edit and Write only (unless
    /// --tools says), no hooks, no installed plugins, MCP servers only from
    /// --mcp-config, the Agent tool only with --agents. Settings files
    /// still load (their rules apply).
    #[arg(long)]
    pub bare: bool,

    /// Run the session as this agent type (its prompt, tools and model);
    /// overrides the `agent` setting.
    #[arg(long)]
    pub agent: Option<String>,

    /// Accepted: carapace's system prompt has no dynamic sections.
    #[arg(long, hide = true)]
    pub exclude_dynamic_system_prompt_sections: bool,

    /// Claude Code features carapace does not have: refused by name.
    #[command(flatten)]
    pub unsupported: Unsupported,

    /// Log what the host does, with timing marks, to stderr.
    #[arg(long)]
    pub debug: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Claude Code flags with no carapace counterpart. Each is accepted by the
/// parser only to be refused with why (never an "unknown argument").
#[derive(Debug, Default, clap::Args)]
pub struct Unsupported {
    #[arg(long, hide = true)]
    chrome: bool,
    #[arg(long, hide = true)]
    no_chrome: bool,
    #[arg(long, hide = true)]
    ide: bool,
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "")]
    tmux: Option<String>,
    #[arg(short = 'w', long, hide = true, num_args = 0..=1, default_missing_value = "")]
    worktree: Option<String>,
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "")]
    remote_control: Option<String>,
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "")]
    from_pr: Option<String>,
    #[arg(long = "background", alias = "bg", hide = true)]
    background: bool,
    #[arg(long, hide = true)]
    brief: bool,
    #[arg(long, hide = true)]
    ax_screen_reader: bool,
    #[arg(long, hide = true, num_args = 1..)]
    file: Vec<String>,
    #[arg(long, hide = true)]
    plugin_url: Vec<String>,
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "")]
    prompt_suggestions: Option<String>,
    #[arg(long, hide = true)]
    safe_mode: bool,
    /// Hidden in Claude Code's help too; honoured (see `model::Thinking`).
    #[arg(long, hide = true)]
    pub max_thinking_tokens: Option<String>,
    #[arg(long, hide = true)]
    pub thinking: Option<String>,
}

impl Unsupported {
    /// The first unsupported flag given, with why carapace refuses it.
    fn refusal(&self) -> Option<String> {
        let refusals: [(bool, &str, &str); 14] = [
            (
                self.chrome,
                "--chrome",
                "carapace has no browser integration",
            ),
            (
                self.no_chrome,
                "--no-chrome",
                "carapace has no browser integration",
            ),
            (self.ide, "--ide", "carapace does not connect to IDEs"),
            (
                self.tmux.is_some(),
                "--tmux",
                "carapace does not manage tmux sessions",
            ),
            (
                self.worktree.is_some(),
                "--worktree",
                "carapace does not create git worktrees; run it in the worktree you want",
            ),
            (
                self.remote_control.is_some(),
                "--remote-control",
                "carapace has no remote-control service",
            ),
            (
                self.from_pr.is_some(),
                "--from-pr",
                "carapace keeps no link between sessions and pull requests; use --resume ID",
            ),
            (
                self.background,
                "--background",
                "carapace has no background agents yet",
            ),
            (
                self.brief,
                "--brief",
                "carapace has no SendUserMessage tool",
            ),
            (
                self.ax_screen_reader,
                "--ax-screen-reader",
                "carapace has no interactive interface (print mode only)",
            ),
            (
                !self.file.is_empty(),
                "--file",
                "carapace does not download file resources",
            ),
            (
                !self.plugin_url.is_empty(),
                "--plugin-url",
                "carapace's plugins are WebAssembly components: install them with `carapace plugin add URL`",
            ),
            (
                self.prompt_suggestions.is_some(),
                "--prompt-suggestions",
                "carapace makes no prompt suggestions",
            ),
            (
                self.safe_mode,
                "--safe-mode",
                "carapace loads only what it is told to: use --strict-mcp-config and --settings",
            ),
        ];
        refusals
            .into_iter()
            .find(|(given, _, _)| *given)
            .map(|(_, flag, why)| format!("{flag} is not supported: {why}"))
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Install, list, inspect and remove third-party tool plugins.
    Plugin {
        #[command(subcommand)]
        action: plugin::PluginCommand,
    },
    /// Run one tool call by hand (for plugin authors).
    Tool {
        #[command(subcommand)]
        action: plugin::ToolCommand,
    },
    /// carapace as an MCP server.
    Mcp {
        #[command(subcommand)]
        action: McpCommand,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum McpCommand {
    /// Serve the first-party and installed tools to an MCP client over
    /// stdio; every call runs sandboxed with what the policy grants, and
    /// what it would ask about is refused (nobody is there to answer).
    Serve {
        /// The permission mode (else the settings' default).
        #[arg(long, value_enum)]
        permission_mode: Option<PermissionMode>,
        /// Rules that allow, as in a session.
        #[arg(long = "allowedTools", alias = "allowed-tools", num_args = 1..)]
        allowed_tools: Vec<String>,
        /// Rules that deny; a bare tool name also hides the tool.
        #[arg(long = "disallowedTools", alias = "disallowed-tools", num_args = 1..)]
        disallowed_tools: Vec<String>,
        /// Load the project's plugins too.
        #[arg(long)]
        trust_workspace: bool,
        /// Serve Streamable HTTP on this loopback address (e.g.
        /// 127.0.0.1:8931) instead of stdio.
        #[arg(long)]
        http: Option<std::net::SocketAddr>,
    },
}

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
        Some(Command::Plugin { action }) => {
            return plugin::plugin(action, &paths()?).await;
        }
        Some(Command::Tool { action }) => {
            return plugin::tool_call(action.into(), paths()?).await;
        }
        Some(Command::Mcp { action }) => return mcp_serve(action, paths()?).await,
        None => {}
    }
    let started = Instant::now();
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
    let named: Vec<String> = cli
        .tools
        .iter()
        .flat_map(|t| t.split([',', ' ']))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    // As Claude Code: no flag or `default` is every built-in tool, `""`
    // none of them; plugin and MCP tools are offered either way.
    let tools = if cli.tools.is_empty() && cli.bare {
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
    };
    let setting_sources = match &cli.setting_sources {
        None => None,
        Some(names) => Some(
            names
                .iter()
                // `--setting-sources=` (the TypeScript SDK's `[]`): none.
                .filter(|name| !name.trim().is_empty())
                .map(|name| match name.trim() {
                    "user" => Ok(crate::policy::SourceKind::User),
                    "project" => Ok(crate::policy::SourceKind::Project),
                    "local" => Ok(crate::policy::SourceKind::Local),
                    other => Err(anyhow::anyhow!(
                        "--setting-sources: `{other}` is not one of user, project, local"
                    )),
                })
                .collect::<anyhow::Result<Vec<_>>>()?,
        ),
    };
    let output_schema = cli
        .json_schema
        .as_deref()
        .map(crate::tools::structured_output::parse_schema)
        .transpose()?;
    let wants_structured_output = output_schema.is_some();
    let agent_tool = Arc::new(AgentTool::default());
    let mut builder = SessionBuilder::new(paths()?);
    if !cli.bare || cli.agents.is_some() {
        builder = builder.agent_tool(agent_tool.clone());
    }
    let web_search = Arc::new(crate::tools::web_search::WebSearchTool::default());
    builder = builder.web_search(web_search.clone());
    let session = builder
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
        .setting_sources(setting_sources)
        .settings(cli.settings.clone())
        .trust_workspace(cli.trust_workspace)
        .mode(mode)
        .rules(cli.allowed_tools.clone(), cli.disallowed_tools.clone())
        .add_dirs(cli.add_dir.clone())
        .session_id(cli.session_id.map(|id| id.to_string()))
        .allow_bypass_mode(cli.allow_dangerously_skip_permissions)
        .tools(tools)
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
        })
        // Verbose JSON output prints each result's `tool_use_result`.
        .structured_results(cli.verbose && cli.output_format != OutputFormat::Text)
        .build()
        .await?;
    print_warnings(&session);
    let env = |name: &str| session.env(name);
    // The Agent SDK defines its agents in `initialize`: an `--agent` not
    // defined yet is looked for again once the SDK is connected.
    let (mut main_agent, deferred_agent) = main_agent(&cli, &session, prompt.is_none())?;

    let model_name = cli
        .model
        .clone()
        .or_else(|| {
            main_agent
                .as_ref()
                .and_then(|a| a.model.clone())
                .filter(|m| m != "inherit")
        })
        .or(session.settings.model.clone())
        .or_else(|| env("ANTHROPIC_MODEL"))
        .unwrap_or_else(|| DEFAULT_MODEL.to_string());
    if let Some(budget) = cli.max_budget_usd {
        if !(budget.is_finite() && budget > 0.0) {
            bail!("--max-budget-usd must be a positive number of dollars");
        }
        if price(&model_name).is_none() && !model_name.starts_with("replay:") {
            bail!(
                "--max-budget-usd: no price is known for model `{model_name}`, so spending cannot be tracked"
            );
        }
    }
    let (model, api_key_source): (Arc<dyn Model>, &str) = match model_name.strip_prefix("replay:") {
        Some(path) => (
            Arc::new(ReplayModel::from_file(&PathBuf::from(path))?),
            "none",
        ),
        None => {
            let source = if env("ANTHROPIC_API_KEY").is_some() {
                "ANTHROPIC_API_KEY"
            } else {
                "ANTHROPIC_AUTH_TOKEN"
            };
            (
                Arc::new(AnthropicModel::from_lookup(env)?.with_betas(cli.betas.clone())),
                source,
            )
        }
    };

    tracing::debug!(
        mark = "model_ready",
        ms = started.elapsed().as_secs_f64() * 1e3,
        "startup timing"
    );
    // The main agent's tools, when it names them, are all the loop offers
    // (StructuredOutput stays: the session's answer needs it).
    let agent_tools = main_agent.as_ref().and_then(|a| a.tools.as_ref());
    let loop_subset = (agent_tools.is_some() || deferred_agent.is_some()).then(|| {
        Arc::new(crate::agent::ToolSubset::new(
            session.pipeline.clone(),
            agent_tools.map(|names| main_agent_tools(names)).as_deref(),
            &[],
        ))
    });
    let loop_tools: Arc<dyn crate::agent::ToolRuntime> = match &loop_subset {
        Some(subset) => subset.clone(),
        None => session.pipeline.clone(),
    };
    let tool_names: Vec<String> = loop_tools.specs().into_iter().map(|s| s.name).collect();
    let cwd = &session.paths.cwd;
    let info = RunInfo {
        session_id: session.id.clone(),
        cwd: cwd.display().to_string(),
        model: model_name.clone(),
        tools: tool_names.clone(),
        permission_mode: session.mode().as_str().to_string(),
        api_key_source: api_key_source.to_string(),
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
    let printer = SharedPrinter::new(
        Printer::new(cli.output_format, cli.verbose, std::io::stdout(), info)
            .with_hook_events(cli.include_hook_events)
            .with_partial_messages(cli.include_partial_messages)
            .with_replayed_user_messages(cli.replay_user_messages),
    );
    session.hooks.observe(Box::new(printer.clone()));

    let max_tokens = env_number(
        &env,
        "CARAPACE_MAX_OUTPUT_TOKENS",
        crate::model::default_max_tokens(&model_name),
    )?;
    let autocompact_pct = match env("CARAPACE_AUTOCOMPACT_PCT_OVERRIDE") {
        Some(pct) => match pct.trim().parse::<u8>() {
            Ok(pct) if (1..=100).contains(&pct) => Some(pct),
            _ => bail!(
                "CARAPACE_AUTOCOMPACT_PCT_OVERRIDE must be a percentage from 1 to 100, got `{pct}`"
            ),
        },
        None => None,
    };
    let mut context = ContextConfig::for_model(&model_name, max_tokens, autocompact_pct);
    if env("CARAPACE_DISABLE_AUTO_COMPACT").is_some_and(|v| !v.is_empty() && v != "0") {
        context = context.without_autocompact();
    }
    // The user's other working directories, not the session's own.
    let own = std::fs::canonicalize(&session.dir).unwrap_or_else(|_| session.dir.clone());
    let other_dirs: Vec<std::path::PathBuf> = session
        .pipeline
        .policy()
        .working_dirs()
        .iter()
        .skip(1)
        .filter(|d| !d.starts_with(&own) && !d.starts_with(&session.dir))
        .cloned()
        .collect();
    let environment =
        crate::prompt::Environment::detect(cwd, &other_dirs, &model_name, &crate::agent::today());
    let mut prompt_choice = PromptChoice::from_flags(&cli)?;
    let prompt_for = |choice: &PromptChoice,
                      tools: &[String],
                      agent: Option<&crate::subagents::AgentDefinition>| {
        session_system_prompt(
            choice,
            &crate::prompt::PromptInputs {
                environment: &environment,
                tools,
                style: session.output_style.as_ref(),
                environment_elsewhere: cli.exclude_dynamic_system_prompt_sections,
            },
            agent,
        )
    };
    let mut user_context = session.user_context.clone();
    if cli.exclude_dynamic_system_prompt_sections {
        user_context.push(crate::prompt::environment_reminder(&environment));
    }
    let mut config = QueryConfig {
        model: model_name,
        fallback_models: cli.fallback_model.clone(),
        system_prompt: prompt_for(&prompt_choice, &tool_names, main_agent.as_ref()),
        max_tokens,
        max_turns: cli.max_turns,
        retry: RetryPolicy {
            max_retries: env_number(
                &env,
                "CARAPACE_MAX_RETRIES",
                RetryPolicy::default().max_retries,
            )?,
            base_delay: Duration::from_millis(env_number(
                &env,
                "CARAPACE_RETRY_BASE_DELAY_MS",
                500u64,
            )?),
            ..RetryPolicy::default()
        },
        stop_hook_block_cap: env_number(
            &env,
            "CARAPACE_STOP_HOOK_BLOCK_CAP",
            DEFAULT_STOP_HOOK_BLOCK_CAP,
        )?,
        max_budget_usd: cli.max_budget_usd,
        context,
        structured_output: match wants_structured_output {
            // Claude Code's variable, so that scripts carry over.
            true => Some(StructuredOutputConfig {
                max_attempts: env_number(
                    &env,
                    "MAX_STRUCTURED_OUTPUT_RETRIES",
                    DEFAULT_STRUCTURED_OUTPUT_ATTEMPTS,
                )?
                .max(1),
            }),
            false => None,
        },
        // As Claude Code: `high` unless said, for the models that take it.
        effort: Some(cli.effort.unwrap_or(crate::model::Effort::High)),
        user_context,
        task_budget: cli.task_budget,
        thinking: crate::model::ThinkingChoice::from_knobs(
            cli.unsupported.thinking.as_deref(),
            cli.unsupported.max_thinking_tokens.as_deref(),
            env("MAX_THINKING_TOKENS").as_deref(),
            session.settings.always_thinking,
        )
        .map_err(|e| anyhow::anyhow!(e))?,
    };

    let abort = CancellationToken::new();
    spawn_signal_handler(abort.clone());
    let queue = Arc::new(InputQueue::new());
    let turn = TurnSlot::default();
    let model_cell = Arc::new(std::sync::Mutex::new(config.model.clone()));
    let overrides = Arc::new(crate::control::turn::TurnOverrides::default());
    // Only the SDK asks what the context holds (`get_context_usage`).
    let meter = prompt
        .is_none()
        .then(|| Arc::new(crate::control::usage::ContextMeter::default()));
    {
        // As Claude Code: a `system`/`status` line for every mode change,
        // whoever made it (the mode's gate tells).
        let (out, session_id) = (printer.clone(), session.id.clone());
        session
            .pipeline
            .policy()
            .mode_cell()
            .on_change(Box::new(move |mode| {
                use crate::control::LineOut;
                out.line(crate::control::mode_status_line(&session_id, mode));
            }));
    }
    web_search.connect(crate::tools::web_search::SearchModel {
        model: model.clone(),
        name: model_cell.clone(),
    });
    // Subagents: child loops on the same model, tools, hooks and output.
    let parent_tools = loop_tools.clone();
    agent_tool.connect(Arc::new(SubagentRunner {
        model: model.clone(),
        parent_tools: Arc::downgrade(&parent_tools),
        hooks: session.hooks.clone(),
        sink: Arc::new(std::sync::Mutex::new(Box::new(printer.clone()))),
        config: config.clone(),
        current_model: Some(model_cell.clone()),
        cwd: cwd.to_path_buf(),
        abort: abort.clone(),
        notifications: queue.clone(),
        tasks_dir: session.dir.join("tasks"),
        agents: std::sync::RwLock::new(session.agents.clone()),
        transcripts: session
            .transcript
            .as_ref()
            .map(|t| t.path().with_extension("").join("subagents")),
        running: Default::default(),
    }));
    let prompts = match prompt {
        Some(prompt) => Prompts::One(prompt),
        None => {
            // stream-json input: the SDK's control protocol rides along.
            let controller = sdk::controller(sdk::SdkWiring {
                cli: &cli,
                session: &session,
                printer: &printer,
                model: &model_cell,
                default_model: &config.model,
                turn: &turn,
                api_key_source,
                agent_tool: &agent_tool,
                overrides: &overrides,
                meter: meter.as_ref(),
                user_context: &config.user_context,
                loop_tools: &loop_tools,
            });
            let reader = tokio::io::BufReader::new(tokio::io::stdin());
            tokio::spawn(print::read_input_lines(
                reader,
                queue.clone(),
                printer.clone(),
                Some(controller.clone()),
            ));
            // What the TypeScript SDK's `initialize` sets, before the first
            // turn and the init line.
            let mut sdk_servers = session.sdk_mcp_servers.clone();
            if let Start::Initialized(options) = controller.session.start.settled().await {
                prompt_choice = prompt_choice.with_start(&options);
                for name in options.sdk_mcp_servers {
                    if !sdk_servers.contains(&name) {
                        sdk_servers.push(name);
                    }
                }
                let agents = agent_tool.agent_names();
                if !agents.is_empty() {
                    printer.update_info(|info| info.agents = agents);
                }
            }
            if let Some(name) = &deferred_agent {
                let agent = agent_tool.definition(name).ok_or_else(|| {
                    anyhow::anyhow!(
                        "--agent: no agent type `{name}` is defined, by the session or the SDK (known: {})",
                        agent_tool.agent_names().join(", ")
                    )
                })?;
                if let (Some(subset), Some(names)) = (&loop_subset, &agent.tools) {
                    subset.restrict(main_agent_tools(names));
                }
                // The agent's model, unless the flags name one.
                if cli.model.is_none()
                    && let Some(model) = agent.model.clone()
                {
                    config.model = model.clone();
                    if let Ok(mut current) = model_cell.lock() {
                        *current = model;
                    }
                }
                main_agent = Some(agent);
            }
            let tools: Vec<String> = loop_tools.specs().into_iter().map(|s| s.name).collect();
            config.system_prompt = prompt_for(&prompt_choice, &tools, main_agent.as_ref());
            printer.update_info(|info| {
                info.tools = tools;
                info.model = config.model.clone();
            });
            // The SDK's in-process MCP servers, now that it can answer.
            if !sdk_servers.is_empty() {
                sdk::connect_sdk_servers(&session, &sdk_servers, &controller).await?;
                let tools: Vec<String> = loop_tools.specs().into_iter().map(|s| s.name).collect();
                config.system_prompt = prompt_for(&prompt_choice, &tools, main_agent.as_ref());
                let servers = controller
                    .session
                    .mcp_servers
                    .lock()
                    .map(|s| s.clone())
                    .unwrap_or_default();
                printer.update_info(|info| {
                    info.tools = tools;
                    info.mcp_servers = servers;
                });
            }
            Prompts::Stream(queue.clone())
        }
    };
    if let Some(meter) = &meter {
        meter.set_parts(context_parts(&session, &config, loop_tools.as_ref()));
        meter.set_messages(
            crate::agent::estimate_tokens(&session.history),
            &config.model,
        );
    }
    let deps = QueryDeps {
        model: model.as_ref(),
        tools: loop_tools.clone(),
        hooks: session.hooks.as_ref(),
        history: match &session.transcript {
            Some(transcript) => transcript.as_ref() as &dyn HistoryLog,
            None => &NoHistoryLog,
        },
        input: matches!(prompts, Prompts::Stream(_)).then_some(queue.as_ref()),
        abort,
    };
    let outcome = run_print(
        &deps,
        &config,
        printer,
        prompts,
        PrintSession {
            hooks: Some(session.hooks.as_ref()),
            history: session.history.clone(),
            source: session.source,
            transcript: session.transcript.as_deref(),
            turn: Some(turn),
            model: Some(model_cell),
            overrides: Some(overrides.clone()),
            meter: meter.clone(),
            checkpoints: session.checkpoints.clone(),
            slash_commands: !cli.disable_slash_commands,
            commands: (!cli.disable_slash_commands).then_some(print::SlashCommands {
                pipeline: &session.pipeline,
            }),
            notifications: Some(queue.clone()),
        },
    )
    .await;
    session.shutdown().await;
    Ok(match outcome {
        Some(outcome) if !outcome.is_error() => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
        None => ExitCode::SUCCESS,
    })
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

/// The agent type the session runs as (`--agent`, else the `agent`
/// setting), among the session's definitions; with the SDK connected
/// (`sdk`), a name not defined yet is returned to look for once its
/// `initialize` has defined its agents.
fn main_agent(
    cli: &Cli,
    session: &crate::session::Session,
    sdk: bool,
) -> anyhow::Result<(Option<crate::subagents::AgentDefinition>, Option<String>)> {
    let Some(name) = cli.agent.as_ref().or(session.settings.agent.as_ref()) else {
        return Ok((None, None));
    };
    match session.agents.iter().find(|a| &a.name == name) {
        Some(agent) => Ok((Some(agent.clone()), None)),
        None if sdk => Ok((None, Some(name.clone()))),
        None => {
            let known: Vec<&str> = session.agents.iter().map(|a| a.name.as_str()).collect();
            bail!(
                "--agent: no agent type `{name}` is defined (known: {})",
                known.join(", ")
            )
        }
    }
}

/// The main agent's tools, and StructuredOutput (the session's answer
/// needs it).
fn main_agent_tools(names: &[String]) -> Vec<String> {
    let mut wanted = names.to_vec();
    wanted.push(crate::agent::STRUCTURED_OUTPUT_TOOL.to_string());
    wanted
}

fn env_number<T: std::str::FromStr>(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: T,
) -> anyhow::Result<T> {
    match env(name) {
        Some(value) => value
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("{name} must be a number, got `{value}`")),
        None => Ok(default),
    }
}
