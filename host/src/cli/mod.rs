//! The `carapace` command line: Claude Code's print-mode flags, so that one
//! command line works for both.
//!
//! This is the binary's edge: errors become a message on stderr and exit 1.

mod plugin;
pub mod print;

use crate::agent::{InputQueue, QueryConfig, QueryDeps, ToolPipeline, system_prompt};
use crate::hooks::HookRuntime;
use crate::model::{AnthropicModel, Model, ReplayModel, RetryPolicy, price};
use crate::output::{OutputFormat, Printer, RunInfo, SharedPrinter};
use crate::plugins::{Placeholders, PluginStore, Scope, ToolRegistry};
use crate::policy::{
    Anchors, AuditLog, PermissionMode, Policy, PolicyConfig, Rule, RuleKind, RuleSet, RuleSource,
    SourceKind,
};
use crate::sandbox::{CallLimits, HookCommon, ProcessConfig, Sandbox, SandboxConfig};
use crate::settings::{Locations, Settings};
use anyhow::{Context, bail};
use clap::Parser;
use print::{Prompts, run_print};
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
const DEFAULT_MAX_TOKENS: u32 = 32_000;
const DEFAULT_STOP_HOOK_BLOCK_CAP: u32 = 8;
/// A tool result longer than this is saved to a file and shown as a preview.
const MAX_RESULT_CHARS: usize = 100_000;

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
    args_conflicts_with_subcommands = true,
    about = "An agent host whose tools run as sandboxed WebAssembly components",
    after_help = "With no API key, try the replay demo: carapace -p 'Read the notes' --model replay:examples/demo/replay.json\n\n\
Environment: ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, ANTHROPIC_MODEL, \
CARAPACE_MAX_RETRIES (10), CARAPACE_RETRY_BASE_DELAY_MS (500), CARAPACE_MAX_OUTPUT_TOKENS (32000), \
CARAPACE_STOP_HOOK_BLOCK_CAP (8), CARAPACE_CACHE_DIR, CARAPACE_LOG."
)]
pub struct Cli {
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

    /// The tools offered to the model, comma- or space-separated; "" for none.
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

    /// Log what the host does, with timing marks, to stderr.
    #[arg(long)]
    pub debug: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
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
        #[arg(long, value_enum, default_value = "default")]
        permission_mode: PermissionMode,
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

/// Where carapace looks for things, from the environment.
pub(crate) struct Paths {
    pub cwd: PathBuf,
    pub home: PathBuf,
    /// `CARAPACE_CONFIG_DIR`, else `~/.carapace`.
    pub config_dir: PathBuf,
}

impl Paths {
    fn from_env() -> anyhow::Result<Self> {
        let cwd = std::env::current_dir().context("reading the working directory")?;
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        let config_dir = std::env::var_os("CARAPACE_CONFIG_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".carapace"));
        Ok(Self {
            cwd,
            home,
            config_dir,
        })
    }

    /// The merged settings (`cli_settings` is `--settings`), their
    /// warnings printed.
    fn settings(&self, cli_settings: Option<String>, trust: bool) -> anyhow::Result<Settings> {
        let locations = Locations {
            managed: std::env::var_os("CARAPACE_MANAGED_SETTINGS")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/etc/carapace/managed-settings.json")),
            cli: cli_settings,
            cwd: self.cwd.clone(),
            home: self.home.clone(),
            config_dir: self.config_dir.clone(),
        };
        let settings = Settings::load(&locations, trust)?;
        for warning in &settings.warnings {
            eprintln!("carapace: warning: {warning}");
        }
        Ok(settings)
    }
}

pub async fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command.take() {
        Some(Command::Plugin { action }) => {
            return plugin::plugin(action, &Paths::from_env()?).await;
        }
        Some(Command::Tool { action }) => {
            return plugin::tool_call(action.into(), &Paths::from_env()?).await;
        }
        Some(Command::Mcp { action }) => return mcp_serve(action, &Paths::from_env()?).await,
        None => {}
    }
    let started = Instant::now();
    if cli.output_format == OutputFormat::StreamJson && !cli.verbose {
        bail!("When using --print, --output-format=stream-json requires --verbose");
    }
    if cli.input_format == InputFormat::StreamJson && cli.output_format != OutputFormat::StreamJson
    {
        bail!("--input-format=stream-json requires --output-format=stream-json");
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
    let paths = Paths::from_env()?;
    let settings = paths.settings(cli.settings.clone(), cli.trust_workspace)?;
    let Paths {
        cwd,
        home,
        config_dir,
    } = paths;
    // Settings `env` layers over the process environment, for carapace only.
    let env = |name: &str| {
        settings
            .env
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
    };

    let mode = if cli.dangerously_skip_permissions {
        PermissionMode::BypassPermissions
    } else if let Some(mode) = cli.permission_mode {
        mode
    } else {
        settings.default_mode.unwrap_or_default()
    };
    let model_name = cli
        .model
        .clone()
        .or(settings.model.clone())
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

    let rules = session_rules(
        settings.rules.clone(),
        &cli.allowed_tools,
        &cli.disallowed_tools,
        &cwd,
        &home,
    )?;
    let session_id = cli
        .session_id
        .unwrap_or_else(uuid::Uuid::new_v4)
        .to_string();
    let session_dir = config_dir.join("sessions").join(&session_id);
    // Tool results too large for the model's context are saved here, where
    // Read may page through them.
    let spill_dir = session_dir.join("tool-results");
    let mut additional_dirs = settings.additional_dirs.clone();
    additional_dirs.extend(cli.add_dir.iter().map(|d| {
        if d.is_absolute() {
            d.clone()
        } else {
            cwd.join(d)
        }
    }));
    let mut write_roots = vec![cwd.clone(), std::env::temp_dir()];
    write_roots.extend(additional_dirs.iter().cloned());
    additional_dirs.push(spill_dir.clone());
    let policy = Policy::from_config(PolicyConfig {
        mode,
        rules: RuleSet::new(rules),
        cwd: cwd.clone(),
        additional_dirs,
        home: home.clone(),
        config_dir: config_dir.clone(),
    });

    let (model, api_key_source): (Box<dyn Model>, &str) = match model_name.strip_prefix("replay:") {
        Some(path) => (
            Box::new(ReplayModel::from_file(&PathBuf::from(path))?),
            "none",
        ),
        None => {
            let source = if env("ANTHROPIC_API_KEY").is_some() {
                "ANTHROPIC_API_KEY"
            } else {
                "ANTHROPIC_AUTH_TOKEN"
            };
            (Box::new(AnthropicModel::from_lookup(env)?), source)
        }
    };

    let process_config = ProcessConfig {
        write_roots,
        allow_network: settings.sandbox_network.unwrap_or(false),
        require_os_sandbox: settings.sandbox_required.unwrap_or(true),
        ..ProcessConfig::new(&cwd)
    };
    let sandbox = Sandbox::new(SandboxConfig {
        guest_cwd: Some(cwd.clone()),
        process: Some(process_config.clone()),
        ..SandboxConfig::default()
    })?;
    let mut registry = ToolRegistry::builtin(&sandbox).await?;
    let plugins = load_installed(&mut registry, &sandbox, &cwd, &config_dir, settings.trusted);
    let server_configs = mcp_configs(&cli, &cwd, &config_dir, settings.trusted, &env)?;
    let startup = match env("MCP_TIMEOUT") {
        Some(ms) => Duration::from_millis(
            ms.trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("MCP_TIMEOUT must be milliseconds, got `{ms}`"))?,
        ),
        None => crate::mcp::DEFAULT_STARTUP,
    };
    let mcp_statuses = crate::mcp::start_all(
        &sandbox,
        &server_configs,
        &process_config,
        CallLimits::default(),
        startup,
    )
    .await?;
    for status in &mcp_statuses {
        match &status.outcome {
            Ok(server) => {
                for warning in registry.add_mcp(server) {
                    eprintln!("carapace: warning: {warning}");
                }
            }
            Err(e) => eprintln!(
                "carapace: warning: MCP server `{}` failed to start: {e}",
                status.name
            ),
        }
    }
    let mcp_servers: Vec<serde_json::Value> = mcp_statuses.iter().map(|s| s.to_json()).collect();
    if !cli.tools.is_empty() {
        let names: Vec<String> = cli
            .tools
            .iter()
            .flat_map(|t| t.split([',', ' ']))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect();
        registry = registry.select(&names)?;
    }
    if let Some(prompt_tool) = &cli.permission_prompt_tool
        && registry.get(prompt_tool).is_none()
    {
        bail!("--permission-prompt-tool: no loaded tool is called `{prompt_tool}`");
    }
    let mut hook_specs = Vec::new();
    for (value, source) in &settings.hooks {
        let (specs, warnings) = crate::hooks::parse(value, source)?;
        for warning in warnings {
            eprintln!("carapace: warning: {warning}");
        }
        hook_specs.extend(specs);
    }
    let common = HookCommon {
        session_id: session_id.clone(),
        // carapace keeps no transcript file: hooks get an empty path.
        transcript_path: String::new(),
        cwd: cwd.display().to_string(),
        permission_mode: mode.as_str().to_string(),
    };
    let hooks = if hook_specs.is_empty() {
        HookRuntime::empty(common)
    } else {
        let (hooks, warnings) =
            HookRuntime::load(&sandbox, hook_specs, common, &home, &config_dir).await?;
        for warning in warnings {
            eprintln!("carapace: warning: {warning}");
        }
        hooks
    };
    let hooks = Arc::new(hooks);
    let connected: Vec<Arc<crate::mcp::McpServer>> = mcp_statuses
        .iter()
        .filter_map(|s| s.outcome.as_ref().ok().cloned())
        .collect();
    let pipeline = ToolPipeline::new(registry, policy, CallLimits::default())
        .with_mcp_servers(connected)
        .with_hooks(hooks.clone())
        .with_session_id(session_id.clone())
        .with_audit(AuditLog::at(session_dir.join("audit.jsonl")))
        .with_prompt_tool(cli.permission_prompt_tool.clone())
        .with_result_spill(spill_dir, MAX_RESULT_CHARS);
    let tool_names = pipeline.offered_names();
    let pipeline = Arc::new(pipeline);
    let info = RunInfo {
        session_id,
        cwd: cwd.display().to_string(),
        model: model_name.clone(),
        tools: tool_names.clone(),
        permission_mode: mode.as_str().to_string(),
        api_key_source: api_key_source.to_string(),
        started,
        plugins,
        mcp_servers,
    };
    let printer = SharedPrinter::new(
        Printer::new(cli.output_format, cli.verbose, std::io::stdout(), info)
            .with_hook_events(cli.include_hook_events),
    );
    hooks.observe(Box::new(printer.clone()));

    let config = QueryConfig {
        model: model_name,
        fallback_models: cli.fallback_model.clone(),
        system_prompt: system_prompt(&cwd, &tool_names),
        max_tokens: env_number(&env, "CARAPACE_MAX_OUTPUT_TOKENS", DEFAULT_MAX_TOKENS)?,
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
    };

    let abort = CancellationToken::new();
    spawn_signal_handler(abort.clone());
    let queue = Arc::new(InputQueue::new());
    let prompts = match prompt {
        Some(prompt) => Prompts::One(prompt),
        None => {
            let reader = tokio::io::BufReader::new(tokio::io::stdin());
            tokio::spawn(print::read_input_lines(
                reader,
                queue.clone(),
                printer.clone(),
            ));
            Prompts::Stream(queue.clone())
        }
    };
    let deps = QueryDeps {
        model: model.as_ref(),
        tools: pipeline,
        hooks: hooks.as_ref(),
        input: matches!(prompts, Prompts::Stream(_)).then_some(queue.as_ref()),
        abort,
    };
    let outcome = run_print(&deps, &config, printer, prompts, Some(hooks.as_ref())).await;
    for status in &mcp_statuses {
        if let Ok(server) = &status.outcome {
            server.shutdown().await;
        }
    }
    Ok(match outcome {
        Some(outcome) if !outcome.is_error() => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
        None => ExitCode::SUCCESS,
    })
}

/// `carapace mcp serve`.
async fn mcp_serve(command: McpCommand, paths: &Paths) -> anyhow::Result<ExitCode> {
    let McpCommand::Serve {
        permission_mode,
        allowed_tools,
        disallowed_tools,
        trust_workspace,
        http,
    } = command;
    let settings = paths.settings(None, trust_workspace)?;
    let rules = session_rules(
        settings.rules.clone(),
        &allowed_tools,
        &disallowed_tools,
        &paths.cwd,
        &paths.home,
    )?;
    let policy = Policy::from_config(PolicyConfig {
        mode: permission_mode,
        rules: RuleSet::new(rules),
        cwd: paths.cwd.clone(),
        additional_dirs: settings.additional_dirs.clone(),
        home: paths.home.clone(),
        config_dir: paths.config_dir.clone(),
    });
    let sandbox = Sandbox::new(SandboxConfig {
        guest_cwd: Some(paths.cwd.clone()),
        process: Some(ProcessConfig {
            allow_network: settings.sandbox_network.unwrap_or(false),
            require_os_sandbox: settings.sandbox_required.unwrap_or(true),
            ..ProcessConfig::new(&paths.cwd)
        }),
        ..SandboxConfig::default()
    })?;
    let mut registry = ToolRegistry::builtin(&sandbox).await?;
    load_installed(
        &mut registry,
        &sandbox,
        &paths.cwd,
        &paths.config_dir,
        settings.trusted,
    );
    let session_id = uuid::Uuid::new_v4().to_string();
    let pipeline = ToolPipeline::new(registry, policy, CallLimits::default())
        .with_session_id(session_id.clone())
        .with_audit(AuditLog::at(
            paths
                .config_dir
                .join("sessions")
                .join(&session_id)
                .join("audit.jsonl"),
        ));
    if let Some(addr) = http {
        let (bound, server) = crate::mcp::serve_http::bind(Arc::new(pipeline), addr).await?;
        eprintln!("carapace: serving MCP on http://{bound}/mcp");
        server.await;
        return Ok(ExitCode::SUCCESS);
    }
    crate::mcp::serve::serve(
        Arc::new(pipeline),
        tokio::io::BufReader::new(tokio::io::stdin()),
        tokio::io::stdout(),
    )
    .await
    .context("serving MCP on stdio")?;
    Ok(ExitCode::SUCCESS)
}

/// The settings' rules and the command line's, deny rules first (a deny
/// anywhere beats an allow anywhere).
fn session_rules(
    mut rules: Vec<Rule>,
    allowed: &[String],
    disallowed: &[String],
    cwd: &std::path::Path,
    home: &std::path::Path,
) -> anyhow::Result<Vec<Rule>> {
    let anchors = Anchors {
        cwd: cwd.to_path_buf(),
        home: home.to_path_buf(),
        project: cwd.to_path_buf(),
    };
    let source = RuleSource {
        kind: SourceKind::CliFlag,
        file: None,
    };
    for (kind, list) in [(RuleKind::Deny, disallowed), (RuleKind::Allow, allowed)] {
        for text in list.iter().flat_map(|l| split_rules(l)) {
            rules.push(Rule::parse(&text, kind, source.clone(), &anchors)?);
        }
    }
    rules.sort_by_key(|r| match r.kind {
        RuleKind::Deny => 0,
        RuleKind::Ask => 1,
        RuleKind::Allow => 2,
    });
    Ok(rules)
}

/// The MCP servers of this session: `--mcp-config` (each a file or a JSON
/// string), then — unless `--strict-mcp-config` — `~/.carapace/mcp.json`
/// and, in a trusted workspace only, the project's `.mcp.json`. A name
/// configured twice keeps its first definition.
fn mcp_configs(
    cli: &Cli,
    cwd: &std::path::Path,
    config_dir: &std::path::Path,
    trusted: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Vec<crate::mcp::ServerConfig>> {
    let mut sources: Vec<(String, String)> = Vec::new();
    for value in &cli.mcp_config {
        if value.trim_start().starts_with('{') {
            sources.push((value.clone(), "--mcp-config".into()));
        } else {
            let text = std::fs::read_to_string(value)
                .with_context(|| format!("--mcp-config: reading {value}"))?;
            sources.push((text, value.clone()));
        }
    }
    if !cli.strict_mcp_config {
        let user = config_dir.join("mcp.json");
        if let Ok(text) = std::fs::read_to_string(&user) {
            sources.push((text, user.display().to_string()));
        }
        let project = cwd.join(".mcp.json");
        if project.is_file() {
            if trusted {
                let text = std::fs::read_to_string(&project)
                    .with_context(|| format!("reading {}", project.display()))?;
                sources.push((text, project.display().to_string()));
            } else {
                eprintln!(
                    "carapace: warning: {}: MCP servers from a project file start only in a trusted workspace (pass --trust-workspace); skipped",
                    project.display()
                );
            }
        }
    }
    let mut servers: Vec<crate::mcp::ServerConfig> = Vec::new();
    for (text, source) in sources {
        for server in crate::mcp::config::parse(&text, &source, env)? {
            if servers.iter().any(|s| s.name == server.name) {
                eprintln!(
                    "carapace: warning: {source}: MCP server `{}` is configured earlier; this one is ignored",
                    server.name
                );
            } else {
                servers.push(server);
            }
        }
    }
    Ok(servers)
}

/// Adds the installed plugins' tools (the project's only in a trusted
/// workspace). A plugin that cannot load is reported and skipped; the
/// session goes on. Returns what `system`/`init` lists.
fn load_installed(
    registry: &mut ToolRegistry,
    sandbox: &Sandbox,
    cwd: &std::path::Path,
    config_dir: &std::path::Path,
    trusted: bool,
) -> Vec<serde_json::Value> {
    let places = Placeholders::current(cwd);
    let user = PluginStore::new(config_dir, Scope::User);
    let project = PluginStore::new(&cwd.join(".carapace"), Scope::Project);
    let same_dir =
        std::fs::canonicalize(user.dir()).ok() == std::fs::canonicalize(project.dir()).ok();
    let mut stores = vec![user];
    if !same_dir {
        if trusted {
            stores.push(project);
        } else if !project.list().is_empty() {
            eprintln!(
                "carapace: warning: {} holds plugins, which load only in a trusted workspace (pass --trust-workspace); skipped",
                project.dir().display()
            );
        }
    }
    let mut listed = Vec::new();
    for store in &stores {
        for entry in store.list() {
            let record = match entry {
                Ok(record) => record,
                Err(e) => {
                    eprintln!("carapace: warning: skipping a plugin: {e}");
                    continue;
                }
            };
            let mut info = serde_json::json!({
                "name": record.name(),
                "version": record.manifest.plugin.version,
                "scope": store.scope().as_str(),
                "path": store.component_path(&record),
            });
            match registry.add_installed(sandbox, store, &record, &places, &CallLimits::default()) {
                Ok(()) => info["status"] = "loaded".into(),
                Err(e) => {
                    eprintln!(
                        "carapace: warning: plugin `{}` not loaded: {e}",
                        record.name()
                    );
                    info["status"] = "failed".into();
                    info["error"] = e.to_string().into();
                }
            }
            listed.push(info);
        }
    }
    listed
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

/// Splits a `--allowedTools` value on commas outside parentheses, so
/// `Read,Bash(echo a,b)` is two rules.
pub(crate) fn split_rules(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in value.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn rule_lists_split_on_top_level_commas() {
        assert_eq!(
            super::split_rules("Read, Bash(echo a,b),WebFetch"),
            vec!["Read", "Bash(echo a,b)", "WebFetch"]
        );
        assert!(super::split_rules(" , ").is_empty());
    }
}
