//! The command line's flags: Claude Code's print-mode flags (so that one
//! command line works for both), the subcommands, and the flags carapace
//! refuses by name.

use super::plugin;
use crate::output::OutputFormat;
use crate::policy::PermissionMode;
use clap::Parser;
use std::path::PathBuf;

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
    after_help = "With no API key, try the replay demo: carapace 'Summarise the demo notes' --model replay:examples/demo/replay.json\n\n\
Environment: ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, ANTHROPIC_MODEL, \
CARAPACE_MAX_RETRIES (10), CARAPACE_RETRY_BASE_DELAY_MS (500), CARAPACE_MAX_OUTPUT_TOKENS (32000), \
CARAPACE_STOP_HOOK_BLOCK_CAP (8), MAX_STRUCTURED_OUTPUT_RETRIES (5), MAX_THINKING_TOKENS, \
CARAPACE_AUTOCOMPACT_PCT_OVERRIDE (1-100: compact at that share of the context window), \
CARAPACE_DISABLE_AUTO_COMPACT, CARAPACE_CACHE_DIR, CARAPACE_CONFIG_DIR (~/.carapace), CARAPACE_LOG, \
CARAPACE_MANAGED_SETTINGS, CARAPACE_TRANSCRIPT_STORE (--transcript-store), \
CLAUDE_STREAM_IDLE_TIMEOUT_MS (300000), MCP_TIMEOUT (30000), MCP_TOOL_TIMEOUT (120000), \
CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING, DOCKER_CONFIG, SSL_CERT_FILE (the terminating proxy's trusted authorities), NO_COLOR."
)]
pub struct Cli {
    /// Print the version.
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version)]
    pub version: Option<bool>,

    /// Print the response and exit (without it, a terminal opens the
    /// interactive screen).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// The prompt: sent first on the interactive screen; with -p, read
    /// from stdin when absent and stdin is not a terminal.
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

    /// The model auto mode's classifier asks (else `autoMode.model` in
    /// settings, else the session's model).
    #[arg(long)]
    pub auto_mode_model: Option<String>,

    /// Offer the Script tool: the model may write a JavaScript function
    /// that calls the tools, each call checked as its own (else
    /// `codeMode` in settings).
    #[arg(long)]
    pub code_mode: bool,

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
    /// Without an id, the interactive screen lists this project's
    /// sessions to choose from.
    #[arg(short = 'r', long, conflicts_with = "continue_session", num_args = 0..=1, default_missing_value = "")]
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

    /// Where transcripts are kept: `files` (the default, under the config
    /// directory) or a shared `postgres://USER@HOST/DB` that workers on
    /// other machines resume from.
    #[arg(long, env = "CARAPACE_TRANSCRIPT_STORE", value_name = "URL")]
    pub transcript_store: Option<String>,

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

    /// Run Setup hooks (trigger `init`), then go on (hidden, as Claude
    /// Code's).
    #[arg(long, hide = true)]
    pub init: bool,

    /// Run Setup (`init`) and SessionStart hooks, then exit.
    #[arg(long, hide = true, conflicts_with = "init")]
    pub init_only: bool,

    /// Run Setup hooks (trigger `maintenance`), then go on.
    #[arg(long, hide = true, conflicts_with_all = ["init", "init_only"])]
    pub maintenance: bool,

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

impl Cli {
    /// The Setup hooks `--init`, `--init-only` or `--maintenance` asks for.
    pub fn setup_run(&self) -> Option<crate::conversation::SetupRun> {
        let trigger = match (self.init || self.init_only, self.maintenance) {
            (true, _) => "init",
            (false, true) => "maintenance",
            (false, false) => return None,
        };
        Some(crate::conversation::SetupRun {
            trigger,
            then_exit: self.init_only,
        })
    }
}

impl Unsupported {
    /// The first unsupported flag given, with why carapace refuses it.
    pub(super) fn refusal(&self) -> Option<String> {
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
                "carapace does not detach a session to run on its own; start it with your shell's job control or as a `carapace worker` job (agents it starts may run in the background: the Agent tool's run_in_background)",
            ),
            (
                self.brief,
                "--brief",
                "carapace has no SendUserMessage tool",
            ),
            (
                self.ax_screen_reader,
                "--ax-screen-reader",
                "the interactive screen has no screen-reader mode yet",
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
    /// MCP: carapace as a server (`serve`), and its sign-ins to servers (`login`).
    Mcp {
        #[command(subcommand)]
        action: McpCommand,
    },
    /// Serve editors over the Agent Client Protocol on stdin/stdout: many
    /// sessions in one process, each with its own policy, history,
    /// transcript, hooks and MCP servers. The session flags (`--model`,
    /// `--permission-mode`, `--settings`, …) go after `--`:
    /// `carapace acp -- --model claude-sonnet-4-5`.
    Acp {
        /// Sessions alive at once; `session/new` beyond it is refused.
        /// Default: as many as this machine's (or container's) memory holds
        /// at 4 MiB a session, between 16 and 10,000.
        #[arg(long)]
        max_sessions: Option<usize>,
        /// Turns running at once across all sessions; a prompt beyond it
        /// waits for one to end. Default: four per processor, at least 4.
        #[arg(long)]
        max_running: Option<usize>,
        /// Seconds a permission question waits for the client before it
        /// counts as refused.
        #[arg(long, default_value_t = 300)]
        permission_timeout: u64,
        /// The flags every session is built with, as for `carapace -p`.
        #[arg(last = true, allow_hyphen_values = true)]
        session_flags: Vec<String>,
    },
    /// Run one job described by a JSON file (`-` for stdin) and exit: the
    /// unit an orchestrator schedules (a Kubernetes Job or sandbox pod).
    /// It never asks a question; stdout carries stream-json lines, each
    /// with the session id; the result line also goes where the job says.
    /// Exit codes: 0 the run succeeded, 1 it ended in error (SIGTERM
    /// included: the turn ends, every call paired, the transcript synced),
    /// 2 the job was invalid and nothing ran.
    Worker {
        /// The job file, or `-` for stdin.
        #[arg(required_unless_present = "listen", conflicts_with = "listen")]
        job: Option<String>,
        /// Wait for the job instead: serve the probes on this address and
        /// take one job from `POST /job` (a warm pod in a sandbox pool);
        /// its result line is then at `GET /result`, until SIGTERM.
        #[arg(long, value_name = "HOST:PORT")]
        listen: Option<std::net::SocketAddr>,
        /// Only check the job file, run nothing: exit 0 when it is a valid
        /// job, 2 (saying why) when not.
        #[arg(long, conflicts_with = "listen")]
        check: bool,
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
    /// Sign in to an HTTP MCP server that wants a login (OAuth 2.1): the
    /// page to open is printed, its answer comes back on loopback, and
    /// the tokens are kept in carapace's private store.
    Login {
        /// The server's name, as configured.
        name: String,
        /// More MCP configurations, as in a session (a file or JSON).
        #[arg(long = "mcp-config", num_args = 1..)]
        mcp_config: Vec<String>,
        /// Read the project's `.mcp.json` too.
        #[arg(long)]
        trust_workspace: bool,
    },
}
