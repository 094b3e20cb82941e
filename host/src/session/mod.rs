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
//!
//! A session that runs a loop ([`SessionBuilder::run`]) builds its model
//! and the loop's configuration too, so the tools that need the model get
//! it when they are made; what truly comes later — where its events go —
//! joins in one step, [`Session::start`]. Many sessions may be built, run
//! and dropped in one process, sharing a [`SandboxEngine`](crate::sandbox::SandboxEngine)
//! and nothing else.
//!
//! A session is described by data ([`SessionSpec`]), which every front end
//! fills in; [`Sessions`] is the one object per process that owns the
//! engine and the transcript stores and opens sessions from specs.
//!
//! This folder may import every folder below the front ends and the
//! conversation:
//! `agent`, `model`, `sandbox`, `policy`, `settings`, `hooks`, `mcp`,
//! `tools`, `subagents`, `transcript`, `plugin_store`, `commands`,
//! `memory`, `prompt`, `checkpoints`, `files`.

mod assemble;
mod builder;
mod context;
mod identity;
mod masked;
mod policy;
mod process;
mod run;
mod sources;
mod spec;
mod tools;

pub use builder::{SessionBuilder, SessionError};
pub use policy::managed_settings_path;
pub use process::Sessions;
pub use run::{DEFAULT_MODEL, MainAgent, PromptChoice, RunSetup, agent_tools, system_prompt};
pub use spec::{
    Asker, GivenSettings, HistorySetup, Loads, McpGiven, McpSetup, PermissionSpec, Resume,
    SessionSpec, SettingsSpec, ToolSet, ToolSpec,
};

use crate::agent::{
    EventRelay, EventSink, HistoryLog, InputQueue, NoHistoryLog, QueryConfig, QueryDeps,
    ToolRuntime, ToolSubset,
};
use crate::hooks::HookRuntime;
use crate::mcp::{ServerConfig, ServerStatus};
use crate::model::Model;
use crate::policy::PermissionMode;
use crate::sandbox::Sandbox;
use crate::settings::Settings;
use crate::tools::ToolPipeline;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

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
    pub egress: Option<Arc<crate::sandbox::egress::EgressProxy>>,
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
    /// User messages for the loop: those arriving while it runs, and
    /// background agents' reports.
    pub queue: Arc<InputQueue>,
    /// Ends the session's run (SIGINT / SIGTERM; its children's too).
    pub abort: CancellationToken,
    /// Where the session's events go once it has started.
    pub output: EventRelay,
    /// What the loop calls: the pipeline, or a subset of it (the main
    /// agent's tools).
    pub loop_tools: Arc<dyn ToolRuntime>,
    /// The loop's subset, when there is one (the SDK's agent restricts it
    /// once defined).
    pub loop_subset: Option<Arc<ToolSubset>>,
    /// The Agent tool, when offered (the SDK adds agents and stops tasks
    /// through it).
    pub agent_tool: Option<Arc<crate::subagents::AgentTool>>,
    /// The model and the loop's configuration (`None`: a session that runs
    /// no loop of its own).
    pub run: Option<SessionRun>,
}

/// A session's model and loop.
pub struct SessionRun {
    pub model: Arc<dyn Model>,
    /// The model each turn uses now (the SDK's `set_model` changes it;
    /// WebSearch and subagents read it).
    pub model_name: Arc<Mutex<String>>,
    /// `system`/`init`'s `apiKeySource`.
    pub api_key_source: &'static str,
    /// The loop's configuration, its system prompt included.
    pub config: QueryConfig,
    /// What replaces or extends carapace's system prompt.
    pub prompt: PromptChoice,
    /// Where the session runs, as the system prompt describes it.
    pub environment: crate::prompt::Environment,
    /// `--exclude-dynamic-system-prompt-sections`.
    pub environment_elsewhere: bool,
    /// The agent the session runs as.
    pub main: MainAgent,
}

impl SessionRun {
    /// What prompt hooks ask: the session's model, as it is at each event.
    /// The auto mode's classifier: the session's model client, the model
    /// the flag or settings name (else the session's).
    pub(super) fn auto_judge(
        &self,
        model: Option<String>,
        auto_mode: &crate::settings::AutoModeSettings,
    ) -> Arc<crate::tools::auto_mode::AutoJudge> {
        use crate::tools::auto_mode::{AutoBoundaries, AutoJudge};
        let boundaries = AutoBoundaries {
            allow: auto_mode.allow.clone(),
            soft_deny: auto_mode.soft_deny.clone(),
            hard_deny: auto_mode.hard_deny.clone(),
            environment: auto_mode.environment.clone(),
        };
        let model = model.or_else(|| auto_mode.model.clone());
        let names = (model, self.model_name.clone());
        Arc::new(AutoJudge::new(self.model.clone(), names, boundaries))
    }

    pub(super) fn judge(&self) -> crate::hooks::PromptJudge {
        crate::hooks::PromptJudge {
            model: self.model.clone(),
            model_name: self.model_name.clone(),
        }
    }

    /// Sets the system prompt for the loop's tools as they are.
    pub(super) fn choose_system_prompt(
        &mut self,
        tools: &dyn ToolRuntime,
        style: Option<&crate::prompt::OutputStyle>,
    ) {
        let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
        let agent = self.main.agent.as_ref();
        self.config.system_prompt = self.system_prompt(&self.prompt, &names, agent, style);
    }

    /// The system prompt for `choice`, offering `tools`, as `agent` (the
    /// main agent) when there is one.
    pub fn system_prompt(
        &self,
        choice: &PromptChoice,
        tools: &[String],
        agent: Option<&crate::subagents::AgentDefinition>,
        style: Option<&crate::prompt::OutputStyle>,
    ) -> String {
        let inputs = crate::prompt::PromptInputs {
            environment: &self.environment,
            tools,
            style,
            environment_elsewhere: self.environment_elsewhere,
        };
        system_prompt(choice, &inputs, agent)
    }
}

/// Where a started session's events go, and who answers its questions.
pub struct SessionOutput {
    /// The loop's, the hooks' and the subagents' events.
    pub events: Box<dyn EventSink>,
    /// Told every permission mode change, whoever made it.
    pub mode_changes: Option<Box<dyn Fn(PermissionMode) + Send + Sync>>,
    /// Who answers what the policy asks, when someone can (the SDK's
    /// `can_use_tool`; without one, print mode refuses what would ask).
    pub asker: Option<SessionAsker>,
}

/// Who answers the session's permission questions: a tool call's, and a
/// command's connection to a host no rule names.
pub struct SessionAsker {
    pub calls: Arc<dyn crate::tools::PermissionPrompter>,
    pub hosts: Arc<dyn crate::sandbox::egress::EgressAsker>,
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

    /// The session's output joins: its events (hooks', subagents') go to
    /// `output` from now on, and its questions to who can answer them.
    pub fn start(&self, output: SessionOutput) {
        self.output.attach(output.events);
        if let Some(told) = output.mode_changes {
            self.pipeline.policy().mode_cell().on_change(told);
        }
        let (hosts, calls) = match output.asker {
            Some(asker) => (Some(asker.hosts), Some(asker.calls)),
            None => (None, None),
        };
        // The managed settings' own list is the whole list: nobody is
        // asked past it. Auto mode's classifier is asked before anyone.
        if let Some(egress) = (self.egress.as_ref()).filter(|_| !self.settings.managed_domains_only)
            && let Some(hosts) = self.pipeline.host_asker(hosts)
        {
            egress.set_asker(hosts);
        }
        if let Some(calls) = calls {
            self.pipeline.set_prompter(calls);
        }
    }

    /// What the loop talks to: the session's model, tools, hooks and
    /// transcript; `input` when user messages may arrive while it runs.
    /// `None` for a session built without [`SessionBuilder::run`].
    pub fn deps(&self, input: bool) -> Option<QueryDeps<'_>> {
        let run = self.run.as_ref()?;
        Some(QueryDeps {
            model: run.model.as_ref(),
            tools: self.loop_tools.clone(),
            hooks: self.hooks.as_ref(),
            history: match &self.transcript {
                Some(transcript) => transcript.as_ref() as &dyn HistoryLog,
                None => &NoHistoryLog,
            },
            input: input.then_some(self.queue.as_ref()),
            abort: self.abort.clone(),
        })
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
