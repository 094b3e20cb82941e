//! [`SessionBuilder`]: what the caller chose (flags), gathered before
//! anything is assembled.

use crate::policy::{PermissionMode, SourceKind};
use crate::sandbox::{SandboxConfig, SandboxEngine};
use crate::settings::SettingsError;
use std::path::PathBuf;

use super::SessionPaths;
pub use super::run::RunSetup;
use crate::hooks::{HookConfigError, HookLoadError};
use crate::mcp::McpConfigError;
use crate::policy::RuleError;
use crate::sandbox::SandboxError;
use crate::tools::RegistryError;
use crate::transcript::TranscriptError;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("{0}")]
    Rule(#[from] RuleError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Tools(#[from] RegistryError),
    #[error(transparent)]
    HookConfig(#[from] HookConfigError),
    #[error(transparent)]
    HookLoad(#[from] HookLoadError),
    #[error(transparent)]
    McpConfig(#[from] McpConfigError),
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    #[error("{0}")]
    Invalid(String),
}

/// Where a session's history comes from and whether it is kept.
#[derive(Debug, Clone, Default)]
pub struct HistorySetup {
    /// `--resume ID` / `--continue`.
    pub resume: Option<Resume>,
    /// `--fork-session`: the resumed history under a new id.
    pub fork: bool,
    /// Whether a transcript is written (`-p` without
    /// `--no-session-persistence`).
    pub persist: bool,
    /// A display name (`-n`), kept in the transcript's header.
    pub name: Option<String>,
    /// Where transcripts are kept (`--transcript-store`).
    pub store: crate::transcript::TranscriptStore,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    Id(String),
    /// The latest session of this workspace.
    Latest,
}

/// Which tools the session offers.
#[derive(Debug, Clone, Default)]
pub enum ToolSet {
    /// Every first-party and installed tool (and MCP servers' tools).
    #[default]
    All,
    /// These, in this order (`--tools`).
    Only(Vec<String>),
    /// One plugin's tools: an installed plugin's name, a first-party
    /// plugin's name (`read`), or a `.wasm` file with its manifest beside
    /// it (`tool call`).
    Plugin(String),
}

/// The MCP servers the session connects to.
#[derive(Debug, Clone, Default)]
pub struct McpSetup {
    /// `--mcp-config`: files or JSON strings.
    pub configs: Vec<String>,
    /// `--strict-mcp-config`: only those.
    pub strict: bool,
}

/// What the caller chose; [`build`](Self::build) assembles the session.
pub struct SessionBuilder {
    pub(super) paths: SessionPaths,
    pub(super) settings: Option<String>,
    pub(super) trust: bool,
    pub(super) mode: Option<PermissionMode>,
    pub(super) allowed: Vec<String>,
    pub(super) disallowed: Vec<String>,
    pub(super) add_dirs: Vec<PathBuf>,
    pub(super) session_id: Option<String>,
    pub(super) bypass_allowed: bool,
    pub(super) tools: ToolSet,
    pub(super) mcp: Option<McpSetup>,
    pub(super) hooks: bool,
    /// Whether memory files load (not with `--bare`).
    pub(super) memory: bool,
    /// Whether skills and custom commands load (not with
    /// `--disable-slash-commands`).
    pub(super) skills: bool,
    /// Files kept before writes, for the SDK's rewind (off unless asked).
    /// Whether files are kept for `rewind_files`.
    pub(super) checkpoints: bool,
    /// `--plugin-dir`: folders in Claude Code's plugin layout.
    pub(super) plugin_dirs: Vec<PathBuf>,
    pub(super) prompt_tool: Option<String>,
    pub(super) sandbox: Option<SandboxConfig>,
    /// The process's engine, when sessions share one.
    pub(super) engine: Option<SandboxEngine>,
    pub(super) structured_results: bool,
    pub(super) helper: Option<PathBuf>,
    pub(super) history: HistorySetup,
    /// Whether the Agent tool is offered (print mode: subagents run
    /// child loops).
    pub(super) agent_tool: bool,
    /// Whether WebSearch is offered (it asks the session's model).
    pub(super) web_search: bool,
    /// The model and the loop (`-p` and the SDK); `None`: a session that
    /// runs no loop of its own (`mcp serve`, `tool call`).
    pub(super) run: Option<RunSetup>,
    /// `--agents JSON`.
    pub(super) agents_flag: Option<String>,
    /// `--setting-sources`.
    pub(super) setting_sources: Option<Vec<SourceKind>>,
    /// `--json-schema` (checked).
    pub(super) output_schema: Option<serde_json::Value>,
    /// Load the plugins installed in the user's and the project's stores.
    pub(super) installed_plugins: bool,
}

impl SessionBuilder {
    pub fn new(paths: SessionPaths) -> Self {
        Self {
            paths,
            settings: None,
            trust: false,
            mode: None,
            allowed: Vec::new(),
            disallowed: Vec::new(),
            add_dirs: Vec::new(),
            session_id: None,
            bypass_allowed: false,
            tools: ToolSet::All,
            mcp: None,
            hooks: true,
            memory: true,
            skills: true,
            checkpoints: false,
            plugin_dirs: Vec::new(),
            prompt_tool: None,
            sandbox: None,
            engine: None,
            structured_results: false,
            helper: None,
            history: HistorySetup::default(),
            agent_tool: false,
            web_search: false,
            run: None,
            agents_flag: None,
            setting_sources: None,
            output_schema: None,
            installed_plugins: true,
        }
    }

    /// Load installed plugins (the default; `--bare` does not).
    pub fn installed_plugins(mut self, load: bool) -> Self {
        self.installed_plugins = load;
        self
    }

    /// Offers the StructuredOutput tool with this schema (`--json-schema`,
    /// checked by [`crate::tools::structured_output::parse_schema`]). It is
    /// not one of the built-in tools `--tools` chooses among.
    pub fn output_schema(mut self, schema: Option<serde_json::Value>) -> Self {
        self.output_schema = schema;
        self
    }

    /// Which settings files load (`--setting-sources`; all when `None`).
    pub fn setting_sources(mut self, sources: Option<Vec<SourceKind>>) -> Self {
        self.setting_sources = sources;
        self
    }

    /// Agent definitions from `--agents` (beside the user's and, in a
    /// trusted workspace, the project's files).
    pub fn agents(mut self, json: Option<String>) -> Self {
        self.agents_flag = json;
        self
    }

    /// Offers the Agent tool (subagents run child loops on the session's
    /// model; needs [`run`](Self::run)).
    pub fn agent_tool(mut self, offered: bool) -> Self {
        self.agent_tool = offered;
        self
    }

    /// Offers WebSearch (the tool asks the session's model; needs
    /// [`run`](Self::run)).
    pub fn web_search(mut self, offered: bool) -> Self {
        self.web_search = offered;
        self
    }

    /// The model and the loop's configuration: the session builds its
    /// model, so the tools that need it get it when they are made.
    pub fn run(mut self, run: RunSetup) -> Self {
        self.run = Some(run);
        self
    }

    /// Resume, fork, and whether the session's transcript is written.
    pub fn history(mut self, history: HistorySetup) -> Self {
        self.history = history;
        self
    }

    /// The binary whose helper mode applies the OS sandbox to commands
    /// (default: this process's own; tests name `carapace`'s).
    pub fn process_helper(mut self, helper: PathBuf) -> Self {
        self.helper = Some(helper);
        self
    }

    /// Ask tools for their structured results on every call: something
    /// prints them (stream-json's `tool_use_result`).
    pub fn structured_results(mut self, wanted: bool) -> Self {
        self.structured_results = wanted;
        self
    }

    /// `--settings FILE|JSON`.
    pub fn settings(mut self, settings: Option<String>) -> Self {
        self.settings = settings;
        self
    }

    /// `--trust-workspace`.
    pub fn trust_workspace(mut self, trust: bool) -> Self {
        self.trust = trust;
        self
    }

    /// The mode chosen on the command line (else the settings' default).
    pub fn mode(mut self, mode: Option<PermissionMode>) -> Self {
        self.mode = mode;
        self
    }

    /// `--allowedTools` / `--disallowedTools` values.
    pub fn rules(mut self, allowed: Vec<String>, disallowed: Vec<String>) -> Self {
        self.allowed = allowed;
        self.disallowed = disallowed;
        self
    }

    /// `--add-dir`.
    pub fn add_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.add_dirs = dirs;
        self
    }

    /// `--allow-dangerously-skip-permissions`: the mode may later become
    /// bypassPermissions (a session started in it always may).
    pub fn allow_bypass_mode(mut self, allowed: bool) -> Self {
        self.bypass_allowed = allowed;
        self
    }

    pub fn session_id(mut self, id: Option<String>) -> Self {
        self.session_id = id;
        self
    }

    pub fn tools(mut self, tools: ToolSet) -> Self {
        self.tools = tools;
        self
    }

    /// Connect to the configured MCP servers (not done unless asked).
    pub fn mcp(mut self, mcp: McpSetup) -> Self {
        self.mcp = Some(mcp);
        self
    }

    /// Whether memory files (`CLAUDE.md` …) load; `--bare` says no.
    pub fn memory(mut self, memory: bool) -> Self {
        self.memory = memory;
        self
    }

    /// Whether skills and custom commands load (the default);
    /// `--disable-slash-commands` says no.
    pub fn skills(mut self, skills: bool) -> Self {
        self.skills = skills;
        self
    }

    /// Keeps every file a call may write before each turn's first write
    /// (the SDK's `enableFileCheckpointing`).
    pub fn file_checkpoints(mut self, on: bool) -> Self {
        self.checkpoints = on;
        self
    }

    /// Folders in Claude Code's plugin layout whose skills, commands and
    /// agents the session offers under `plugin:name` (`--plugin-dir`).
    pub fn plugin_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.plugin_dirs = dirs;
        self
    }

    /// Load the settings' hooks (the default).
    pub fn hooks(mut self, hooks: bool) -> Self {
        self.hooks = hooks;
        self
    }

    /// `--permission-prompt-tool`.
    pub fn prompt_tool(mut self, tool: Option<String>) -> Self {
        self.prompt_tool = tool;
        self
    }

    /// The engine's configuration (tests: a shared component cache); the
    /// working directory and the process rules are the session's.
    pub fn sandbox_config(mut self, config: SandboxConfig) -> Self {
        self.sandbox = Some(config);
        self
    }

    /// The process's engine and component cache, shared with the other
    /// sessions built on it (else the session makes an engine of its own
    /// from [`sandbox_config`](Self::sandbox_config)).
    pub fn engine(mut self, engine: SandboxEngine) -> Self {
        self.engine = Some(engine);
        self
    }
}
