//! [`SessionSpec`]: a session described by data. Every front end fills one
//! in — print mode and the interactive screen from their flags, ACP from
//! its `session/new`, a worker from its job — and the builder takes it as
//! it is; nothing below the command line reads flag text.

use super::SessionPaths;
use super::run::RunSetup;
use crate::policy::{PermissionMode, SourceKind};
use crate::subagents::AgentDefinition;
use std::path::PathBuf;

/// What a session is: where it runs, what loads, what it may do, and what
/// it runs.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    pub paths: SessionPaths,
    /// The session's id (`--session-id`); else a new one.
    pub id: Option<String>,
    pub settings: SettingsSpec,
    pub permissions: PermissionSpec,
    /// Directories the session may work in besides its own (`--add-dir`).
    pub add_dirs: Vec<PathBuf>,
    /// The MCP servers it connects to (`None`: it connects to none).
    pub mcp: Option<McpSetup>,
    /// Agent definitions given to this session (`--agents`), beside the
    /// user's and, in a trusted workspace, the project's files.
    pub agents: Vec<AgentDefinition>,
    pub history: HistorySetup,
    /// The model and the loop (`None`: a session that runs no loop of its
    /// own — `mcp serve`, `tool call`).
    pub run: Option<RunSetup>,
    pub tools: ToolSpec,
    pub loads: Loads,
}

impl SessionSpec {
    /// A session in `paths` with the defaults: every source of settings,
    /// hooks, memory, skills and installed plugins; no MCP server, no loop.
    pub fn new(paths: SessionPaths) -> Self {
        Self {
            paths,
            id: None,
            settings: SettingsSpec::default(),
            permissions: PermissionSpec::default(),
            add_dirs: Vec::new(),
            mcp: None,
            agents: Vec::new(),
            history: HistorySetup::default(),
            run: None,
            tools: ToolSpec::default(),
            loads: Loads::default(),
        }
    }
}

/// Which settings load, and whether the workspace is trusted.
#[derive(Debug, Clone, Default)]
pub struct SettingsSpec {
    /// Settings given for this session only (`--settings`), above the
    /// files.
    pub given: Option<GivenSettings>,
    /// Which of the user's, the project's and the local files load
    /// (`--setting-sources`; `None`: all).
    pub sources: Option<Vec<SourceKind>>,
    /// `--trust-workspace`.
    pub trust_workspace: bool,
}

pub use crate::settings::GivenSettings;

/// The mode, the rules given for the session, and who answers questions.
#[derive(Debug, Clone, Default)]
pub struct PermissionSpec {
    /// The mode to start in (else the settings' default).
    pub mode: Option<PermissionMode>,
    /// Allow and deny rules (`--allowedTools`, `--disallowedTools`), as
    /// rule text.
    pub allowed: Vec<String>,
    pub disallowed: Vec<String>,
    /// The mode may later become bypassPermissions
    /// (`--allow-dangerously-skip-permissions`).
    pub bypass_allowed: bool,
    pub asker: Asker,
    /// The auto mode classifier's model (`--auto-mode-model`; else
    /// `autoMode.model`, else the session's).
    pub auto_model: Option<String>,
}

pub use crate::tools::Asker;

/// Which tools the session offers, and how their results are kept.
#[derive(Debug, Clone, Default)]
pub struct ToolSpec {
    pub set: ToolSet,
    /// The Agent tool (subagents run child loops; needs a run).
    pub agent_tool: bool,
    /// WebSearch (it asks the session's model; needs a run).
    pub web_search: bool,
    /// The Script tool (code mode; else the settings' `codeMode`).
    pub code_mode: bool,
    /// StructuredOutput with this schema (`--json-schema`, checked by
    /// [`crate::tools::structured_output::parse_schema`]).
    pub output_schema: Option<serde_json::Value>,
    /// Every call's structured result is asked for: something prints them
    /// (stream-json's `tool_use_result`).
    pub structured_results: bool,
}

/// What loads besides settings and tools.
#[derive(Debug, Clone)]
pub struct Loads {
    /// The settings' hooks.
    pub hooks: bool,
    /// Memory files (`CLAUDE.md` …).
    pub memory: bool,
    /// Skills and custom commands.
    pub skills: bool,
    /// The plugins installed in the user's and the project's stores.
    pub installed_plugins: bool,
    /// Folders in Claude Code's plugin layout (`--plugin-dir`).
    pub plugin_dirs: Vec<PathBuf>,
    /// Files kept before each turn's first write, for the SDK's rewind.
    pub file_checkpoints: bool,
}

impl Default for Loads {
    fn default() -> Self {
        Self {
            hooks: true,
            memory: true,
            skills: true,
            installed_plugins: true,
            plugin_dirs: Vec::new(),
            file_checkpoints: false,
        }
    }
}

/// Where a session's history comes from and whether it is kept.
#[derive(Debug, Clone, Default)]
pub struct HistorySetup {
    /// `--resume ID` / `--continue`.
    pub resume: Option<Resume>,
    /// `--fork-session`: the resumed history under a new id.
    pub fork: bool,
    /// Whether a transcript is written.
    pub persist: bool,
    /// A display name (`-n`), kept in the transcript's header.
    pub name: Option<String>,
    /// Where transcripts are kept: `files` (`None`) or a database's URL
    /// (`--transcript-store`).
    pub store: Option<String>,
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
    /// Configurations given for this session, before the files'.
    pub given: Vec<McpGiven>,
    /// Only those (`--strict-mcp-config`).
    pub strict: bool,
}

/// One configuration given for a session.
#[derive(Debug, Clone)]
pub enum McpGiven {
    /// A file in `.mcp.json`'s shape.
    File(PathBuf),
    /// The same shape, given as JSON (`--mcp-config '{…}'`, an ACP
    /// client's servers, a job's); `shown` names it in messages.
    Inline {
        config: serde_json::Value,
        shown: String,
    },
}
