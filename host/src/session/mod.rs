//! A session, assembled once: the settings and the workspace's trust, the
//! policy (rules from settings and flags, the mode, the working
//! directories), the sandbox, the registry of tools (first-party, installed
//! plugins, MCP servers' tools), the hooks, and the pipeline that ties them
//! together — the same way for `carapace -p`, `carapace mcp serve` and
//! `carapace tool call`.
//!
//! The builder is the only place these are put together, so the three
//! cannot drift: a rule in a settings file, an additional directory or a
//! hook applies to every one of them. Workspace trust is decided once, in
//! [`settings`](crate::settings), and every project-brought item (hooks,
//! plugins, MCP servers) passes through it.

mod assemble;
mod context;

pub use assemble::{HistorySetup, McpSetup, Resume, SessionBuilder, SessionError, ToolSet};

use crate::hooks::HookRuntime;
use crate::mcp::{ServerConfig, ServerStatus};
use crate::policy::PermissionMode;
use crate::sandbox::Sandbox;
use crate::settings::Settings;
use crate::tools::ToolPipeline;
use std::path::PathBuf;
use std::sync::Arc;

/// Where carapace looks for things.
#[derive(Debug, Clone)]
pub struct SessionPaths {
    pub cwd: PathBuf,
    pub home: PathBuf,
    /// `CARAPACE_CONFIG_DIR`, else `~/.carapace`.
    pub config_dir: PathBuf,
}

impl SessionPaths {
    /// From the process's working directory and environment.
    pub fn from_env() -> std::io::Result<Self> {
        let cwd = std::env::current_dir()?;
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
}

/// An assembled session.
pub struct Session {
    pub id: String,
    /// The proxy commands reach the network through (kept for the
    /// session's life), when any domain is allowed.
    pub egress: Option<crate::sandbox::egress::EgressProxy>,
    pub paths: SessionPaths,
    /// `~/.carapace/sessions/<id>`: the audit log, spilled results.
    pub dir: PathBuf,
    pub settings: Settings,
    pub sandbox: Sandbox,
    pub hooks: Arc<HookRuntime>,
    /// Every configured MCP server, connected or not.
    pub mcp: Vec<ServerStatus>,
    pub pipeline: Arc<ToolPipeline>,
    /// Installed plugins and whether each loaded (`system`/`init`).
    pub plugins: Vec<serde_json::Value>,
    /// What the assembly had to say to the user (skipped plugins, servers
    /// that failed, project items an untrusted workspace does not admit).
    pub warnings: Vec<String>,
    /// The history a resumed session starts from (empty for a new one).
    pub history: Vec<crate::model::Message>,
    /// What SessionStart hooks are told.
    pub source: StartSource,
    /// The transcript being written (`None` without persistence).
    pub transcript: Option<Arc<crate::transcript::Transcript>>,
    /// The Agent SDK's in-process MCP servers (`"type": "sdk"`), connected
    /// once the SDK is.
    pub sdk_mcp_servers: Vec<String>,
    /// Starts the servers the SDK adds or reconnects later.
    pub mcp_launcher: crate::mcp::McpLauncher,
    /// The servers configured at the start (what `mcp_reconnect` starts
    /// again).
    pub mcp_configs: Vec<ServerConfig>,
    /// The agent types the Agent tool offers (empty without it).
    pub agents: Vec<crate::subagents::AgentDefinition>,
    /// The reminders at the head of every request's first user message
    /// (the skills listing when the Skill tool is offered; memory files and
    /// today's date).
    pub user_context: Vec<String>,
    /// The skills and custom commands `/name` and the Skill tool start (as
    /// loaded: the pipeline holds them as they are now).
    pub commands: Arc<crate::commands::CustomCommands>,
    /// Whether the first of `user_context` is the skills listing.
    pub skills_listed: bool,
    /// The output style `outputStyle` chose (`None`: the default).
    pub output_style: Option<crate::prompt::OutputStyle>,
    /// The memory files read: where, whose, how many bytes.
    pub memory_files: Vec<(PathBuf, crate::memory::MemoryKind, usize)>,
    /// Files kept before writes, when the SDK asked for rewinds.
    pub checkpoints: Option<Arc<crate::checkpoints::FileCheckpoints>>,
}

/// How a session started, as SessionStart hooks are told (`source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartSource {
    Startup,
    Resume,
}

impl StartSource {
    pub fn as_str(self) -> &'static str {
        match self {
            StartSource::Startup => "startup",
            StartSource::Resume => "resume",
        }
    }
}

impl Session {
    /// The permission mode now.
    pub fn mode(&self) -> PermissionMode {
        self.pipeline.policy().mode()
    }

    /// Changes the mode for the rest of the session through the mode's one
    /// gate: every later decision, and what hooks are told, follow it.
    pub fn set_permission_mode(
        &self,
        mode: PermissionMode,
        by: crate::policy::ModeChangeBy,
    ) -> Result<(), crate::policy::ModeRefused> {
        self.pipeline.policy().mode_cell().change(mode, by)
    }

    /// A variable for carapace itself: the settings' `env` over the
    /// process's environment (never given to plugins).
    pub fn env(&self, name: &str) -> Option<String> {
        self.settings
            .env
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
    }

    /// `system`/`init`'s `mcp_servers`.
    pub fn mcp_status(&self) -> Vec<serde_json::Value> {
        self.mcp.iter().map(ServerStatus::to_json).collect()
    }

    /// Stops the MCP servers the session started.
    pub async fn shutdown(&self) {
        // Commands left running in the background end with the session.
        if let Some(shells) = self.sandbox.shells() {
            shells.kill_all().await;
        }
        // Those configured, the SDK's, and any added since.
        self.pipeline.shutdown_mcp().await;
    }
}
