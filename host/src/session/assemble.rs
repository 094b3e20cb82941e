//! [`SessionBuilder`]: what the caller chose (flags), and the one way a
//! session is put together from it.

use super::{Session, SessionPaths, StartSource};
use crate::commands::{CustomCommands, Folders, PluginDir};
use crate::hooks::HookCommon;
use crate::hooks::{HookConfigError, HookLoadError, HookRuntime};
use crate::mcp::{McpConfigError, ServerConfig};
use crate::plugin_store::{Placeholders, PluginStore, Scope};
use crate::policy::{
    Anchors, AuditLog, PermissionMode, Policy, PolicyConfig, ReadDenials, Rule, RuleError,
    RuleKind, RuleSet, RuleSource, SHELL_START_UP, SourceKind, split_rules,
};
use crate::sandbox::{
    CallLimits, DeniedPaths, ProcessConfig, Sandbox, SandboxConfig, SandboxEngine, SandboxError,
    ToolComponent,
};
use crate::settings::{Locations, ProjectItem, Settings, SettingsError};
use crate::tools::skill::SKILL_TOOL;
use crate::tools::{BUILTIN_PLUGINS, RegistryError, ToolPipeline, ToolRegistry};
use crate::transcript::{
    Opening, Transcript, TranscriptError, is_session_id, latest, load, project_dir, transcript_path,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A tool result longer than this is saved to a file and shown as a preview.
const MAX_RESULT_CHARS: usize = 100_000;

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
    paths: SessionPaths,
    settings: Option<String>,
    trust: bool,
    mode: Option<PermissionMode>,
    allowed: Vec<String>,
    disallowed: Vec<String>,
    add_dirs: Vec<PathBuf>,
    session_id: Option<String>,
    bypass_allowed: bool,
    tools: ToolSet,
    mcp: Option<McpSetup>,
    hooks: bool,
    /// Whether memory files load (not with `--bare`).
    memory: bool,
    /// Whether skills and custom commands load (not with
    /// `--disable-slash-commands`).
    skills: bool,
    /// Files kept before writes, for the SDK's rewind (off unless asked).
    checkpoints: Option<Arc<crate::checkpoints::FileCheckpoints>>,
    /// `--plugin-dir`: folders in Claude Code's plugin layout.
    plugin_dirs: Vec<PathBuf>,
    prompt_tool: Option<String>,
    sandbox: Option<SandboxConfig>,
    /// The process's engine, when sessions share one.
    engine: Option<SandboxEngine>,
    structured_results: bool,
    helper: Option<PathBuf>,
    history: HistorySetup,
    agent_tool: Option<Arc<dyn crate::tools::NativeTool>>,
    web_search: Option<Arc<dyn crate::tools::NativeTool>>,
    /// `--agents JSON`.
    agents_flag: Option<String>,
    /// `--setting-sources`.
    setting_sources: Option<Vec<SourceKind>>,
    /// `--json-schema` (checked).
    output_schema: Option<serde_json::Value>,
    /// Load the plugins installed in the user's and the project's stores.
    installed_plugins: bool,
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
            checkpoints: None,
            plugin_dirs: Vec::new(),
            prompt_tool: None,
            sandbox: None,
            engine: None,
            structured_results: false,
            helper: None,
            history: HistorySetup::default(),
            agent_tool: None,
            web_search: None,
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

    /// Offers the Agent tool (print mode: subagents run child loops).
    pub fn agent_tool(mut self, tool: Arc<dyn crate::tools::NativeTool>) -> Self {
        self.agent_tool = Some(tool);
        self
    }

    /// Offers WebSearch (print mode: the tool asks the session's model).
    pub fn web_search(mut self, tool: Arc<dyn crate::tools::NativeTool>) -> Self {
        self.web_search = Some(tool);
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
        self.checkpoints = on.then(Default::default);
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

    pub async fn build(self) -> Result<Session, SessionError> {
        let started = std::time::Instant::now();
        // A start-up timing mark (printed with `--debug`).
        let mark = |name: &str| {
            tracing::debug!(
                mark = name,
                ms = started.elapsed().as_secs_f64() * 1e3,
                "session timing"
            )
        };
        let SessionPaths {
            cwd,
            home,
            config_dir,
        } = self.paths.clone();
        let (managed, managed_refused) = managed_settings_path();
        let managed_memory = super::context::managed_dirs(&managed);
        // Memory files and skills are read on a thread of their own while
        // the rest of the session is assembled: they are what start-up
        // reads most of.
        let plugin_dirs = self.opened_plugins()?;
        let context_files = self.read_context_files(
            &plugin_dirs,
            crate::memory::MemoryPlaces {
                cwd: cwd.clone(),
                home: home.clone(),
                config_dir: config_dir.clone(),
                managed: managed_memory,
            },
        )?;
        let settings = Settings::load(
            &Locations {
                managed,
                cli: self.settings.clone(),
                cwd: cwd.clone(),
                home: home.clone(),
                config_dir: config_dir.clone(),
                sources: self.setting_sources.clone(),
            },
            self.trust,
        )?;
        mark("settings_loaded");
        let mut warnings = settings.warnings.clone();
        warnings.extend(managed_refused);
        let env = |name: &str| {
            settings
                .env
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
        };

        let mode = self
            .mode
            .or(settings.default_mode)
            .unwrap_or(PermissionMode::Default);
        let rules = session_rules(
            settings.rules.clone(),
            &self.allowed,
            &self.disallowed,
            &cwd,
            &home,
        )?;
        if let Some(id) = self.session_id.as_ref().filter(|id| !is_session_id(id)) {
            return Err(SessionError::Invalid(format!(
                "`{id}` is not a session id (letters, digits, - and _)"
            )));
        }
        // Folders an earlier version left readable by every account.
        if config_dir.is_dir()
            && let Err(e) = crate::files::ensure_private_dir(&config_dir)
        {
            warnings.push(format!(
                "{} is readable by other accounts and cannot be made private: {e}",
                config_dir.display()
            ));
        }
        // A transcript to resume is read (and refused if damaged) before
        // anything is written.
        let projects = project_dir(&config_dir, &cwd);
        let resumed = match &self.history.resume {
            None => None,
            Some(resume) => {
                let id = match resume {
                    // An id names a file in this workspace's folder, never
                    // a path.
                    Resume::Id(id) if !is_session_id(id) => {
                        return Err(SessionError::Invalid(format!(
                            "--resume: `{id}` is not a session id (letters, digits, - and _)"
                        )));
                    }
                    Resume::Id(id) => id.clone(),
                    Resume::Latest => latest(&projects)?,
                };
                let path = transcript_path(&projects, &id);
                if !path.is_file() {
                    return Err(TranscriptError::NotFound { id, dir: projects }.into());
                }
                let loaded = load(&path)?;
                mark("transcript_loaded");
                Some(loaded)
            }
        };
        let id = match (&resumed, self.history.fork) {
            (Some(loaded), false) => {
                if self
                    .session_id
                    .as_ref()
                    .is_some_and(|id| *id != loaded.session_id)
                {
                    return Err(SessionError::Invalid(
                        "--session-id can only name a resumed session's new id with --fork-session"
                            .into(),
                    ));
                }
                loaded.session_id.clone()
            }
            _ => self
                .session_id
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        };
        let transcript_file = transcript_path(&projects, &id);
        if self.history.persist
            && (resumed.is_none() || self.history.fork)
            && transcript_file.exists()
        {
            return Err(TranscriptError::AlreadyExists(id).into());
        }
        let dir = config_dir.join("sessions").join(&id);
        // Tool results too large for the model's context are saved here,
        // where Read may page through them.
        let spill_dir = dir.join("tool-results");
        let mut additional_dirs = settings.additional_dirs.clone();
        additional_dirs.extend(self.add_dirs.iter().map(|d| {
            if d.is_absolute() {
                d.clone()
            } else {
                cwd.join(d)
            }
        }));
        // Commands may write in the working directory and the directories
        // the user named (their settings, --add-dir) — never a directory
        // only a project file names; each command gets its own temp dir.
        let flag_dirs: Vec<PathBuf> = additional_dirs
            .iter()
            .skip(settings.additional_dirs.len())
            .cloned()
            .collect();
        let mut write_roots = vec![cwd.clone()];
        write_roots.extend(settings.user_dirs.iter().cloned());
        write_roots.extend(flag_dirs);
        additional_dirs.push(spill_dir.clone());
        let policy = Policy::from_config(PolicyConfig {
            mode,
            bypass_allowed: self.bypass_allowed,
            rules: RuleSet::new(rules),
            cwd: cwd.clone(),
            additional_dirs,
            home: home.clone(),
            config_dir: config_dir.clone(),
            internal_hosts: settings.internal_addresses.clone(),
        });

        let read_denied = ReadDenials::from_rules(policy.rules(), write_roots.clone())
            .map(|d| Arc::new(d) as Arc<dyn DeniedPaths>);
        // Through the SDK's `can_use_tool`, an unlisted host can be asked
        // about: the proxy then runs even with no domain allowed.
        let asks = self.prompt_tool.as_deref() == Some(crate::tools::STDIO_PROMPT)
            && !settings.managed_domains_only;
        let egress = egress_proxy(&settings, policy.rules(), asks)?;
        let process = ProcessConfig {
            helper: self
                .helper
                .clone()
                .or_else(crate::sandbox::process::default_helper),
            protected: command_protected(&home, &config_dir, &cwd),
            protected_names: crate::policy::command_protected_names(),
            write_roots,
            read_denied,
            allow_network: settings.sandbox_network.unwrap_or(false),
            allow_local_binding: settings.allow_local_binding.unwrap_or(false),
            require_os_sandbox: settings.sandbox_required.unwrap_or(true),
            temp_limit: settings
                .sandbox_temp_max_mb
                .map_or(crate::sandbox::process::DEFAULT_TEMP_LIMIT, |mb| mb << 20),
            egress: egress.as_ref().map(|p| p.socket().to_path_buf()),
            ..ProcessConfig::new(&cwd)
        };
        let engine = match &self.engine {
            Some(engine) => engine.clone(),
            None => SandboxEngine::new(&self.sandbox.clone().unwrap_or_default())?,
        };
        let sandbox = engine.sandbox(Some(cwd.clone()), Some(process.clone()));
        mark("sandbox_ready");

        let places = Placeholders::current(&cwd);
        let (mut registry, mut plugins) = match &self.tools {
            ToolSet::Plugin(plugin) => (
                one_plugin(&sandbox, &self.paths, &places, plugin).await?,
                Vec::new(),
            ),
            ToolSet::All | ToolSet::Only(_) => {
                let mut registry = ToolRegistry::builtin(&sandbox).await?;
                let plugins = match self.installed_plugins {
                    true => load_installed(
                        &mut registry,
                        &sandbox,
                        &self.paths,
                        &settings,
                        &mut warnings,
                    ),
                    false => Vec::new(),
                };
                (registry, plugins)
            }
        };

        mark("tools_registered");
        let startup = match env("MCP_TIMEOUT") {
            Some(ms) => Duration::from_millis(ms.trim().parse().map_err(|_| {
                SessionError::Invalid(format!("MCP_TIMEOUT must be milliseconds, got `{ms}`"))
            })?),
            None => crate::mcp::DEFAULT_STARTUP,
        };
        let mcp_configs = match &self.mcp {
            None => Vec::new(),
            Some(setup) => mcp_configs(setup, &cwd, &config_dir, &settings, &env, &mut warnings)?,
        };
        let sdk_mcp_servers: Vec<String> = mcp_configs
            .iter()
            .filter(|c| c.transport == crate::mcp::Transport::Sdk)
            .map(|c| c.name.clone())
            .collect();
        let mcp = crate::mcp::start_all(
            &sandbox,
            &mcp_configs,
            &process,
            CallLimits::default(),
            startup,
        )
        .await?;
        let mcp_launcher = crate::mcp::McpLauncher::new(sandbox.clone(), process.clone(), startup);
        for status in &mcp {
            match &status.outcome {
                Ok(server) => warnings.extend(registry.add_mcp(server)),
                Err(e) => {
                    warnings.push(format!("MCP server `{}` failed to start: {e}", status.name))
                }
            }
        }
        if !matches!(self.tools, ToolSet::Plugin(_)) {
            use crate::tools::exit_plan_mode::{ExitPlanModeTool, ceiling, definition};
            let tool = Arc::new(ExitPlanModeTool::new(policy.mode_cell().clone()));
            registry.add_native_within(definition(), tool, ceiling())?;
            if let Some(search) = &self.web_search {
                use crate::tools::web_search::{ceiling, definition};
                registry.add_native_within(definition(), search.clone(), ceiling())?;
            }
            if let Some(shells) = sandbox.shells() {
                use crate::tools::shells::{
                    BashOutputTool, KillShellTool, bash_output_definition, kill_shell_definition,
                };
                let shells = shells.clone();
                registry.add_native(
                    bash_output_definition(),
                    Arc::new(BashOutputTool {
                        shells: shells.clone(),
                    }),
                )?;
                registry.add_native(kill_shell_definition(), Arc::new(KillShellTool { shells }))?;
            }
        }
        let mut agents = Vec::new();
        if let Some(agent) = &self.agent_tool {
            agents =
                self.agent_definitions(&cwd, &config_dir, &plugin_dirs, &settings, &mut warnings)?;
            registry.add_native(crate::subagents::definition(&agents), agent.clone())?;
        }
        let (memory, loaded) = context_files.join()?;
        let catalogue = Arc::new(Self::admitted(loaded, &settings, &mut warnings));
        for plugin in &plugin_dirs {
            plugins.push(serde_json::json!({
                "name": plugin.name,
                "path": plugin.root.display().to_string(),
                "source": format!("{}@inline", plugin.name),
            }));
        }
        let output_style = self.output_style(&cwd, &home, &settings, &mut warnings);
        let skill_named =
            matches!(&self.tools, ToolSet::Only(names) if names.iter().any(|n| n == SKILL_TOOL));
        if !matches!(self.tools, ToolSet::Plugin(_))
            && (catalogue.has_model_invocable() || skill_named)
        {
            use crate::tools::skill::{SkillTool, ceiling, definition};
            registry.add_native_within(definition(), Arc::new(SkillTool), ceiling())?;
        }
        if let ToolSet::Only(names) = &self.tools {
            registry = registry.select(names)?;
        }
        if let Some(schema) = &self.output_schema {
            use crate::tools::structured_output::{StructuredOutputTool, definition};
            registry.add_native(definition(schema), Arc::new(StructuredOutputTool))?;
        }
        if let Some(prompt_tool) = &self.prompt_tool
            && prompt_tool != crate::tools::STDIO_PROMPT
            && registry.get(prompt_tool).is_none()
        {
            return Err(SessionError::Invalid(format!(
                "--permission-prompt-tool: no loaded tool is called `{prompt_tool}`"
            )));
        }

        let common = HookCommon {
            session_id: id.clone(),
            transcript_path: if self.history.persist {
                transcript_file.display().to_string()
            } else {
                String::new()
            },
            cwd: cwd.display().to_string(),
            permission_mode: mode.as_str().to_string(),
            prompt_id: None,
            agent: None,
        };
        let hooks = if self.hooks {
            let mut specs = Vec::new();
            for (value, source) in &settings.hooks {
                let (parsed, parse_warnings) = crate::hooks::parse(value, source)?;
                warnings.extend(parse_warnings);
                specs.extend(parsed);
            }
            if specs.is_empty() {
                HookRuntime::empty(common)
            } else {
                let (hooks, load_warnings) =
                    HookRuntime::load(&sandbox, specs, common, &home, &config_dir).await?;
                warnings.extend(load_warnings);
                hooks
            }
        } else {
            HookRuntime::empty(common)
        };
        let hooks = Arc::new(hooks.with_mode(policy.mode_cell().clone()));
        mark("hooks_loaded");

        let connected = mcp
            .iter()
            .filter_map(|s| s.outcome.as_ref().ok().cloned())
            .collect();
        warnings.extend(memory.warnings);
        let mut user_context = Vec::new();
        if registry.get(SKILL_TOOL).is_some() && policy.hidden_by(SKILL_TOOL).is_none() {
            user_context.extend(catalogue.listing());
        }
        let skills_listed = !user_context.is_empty();
        user_context.push(memory.reminder);
        let memory_files = memory.files;
        let mut pipeline = ToolPipeline::new(registry, policy, CallLimits::default())
            .with_skills(catalogue.clone(), settings.trust.is_trusted())
            .with_memory(memory.nested)
            .with_mcp_servers(connected)
            .with_hooks(hooks.clone())
            .with_session_id(id.clone())
            .with_audit(AuditLog::at(dir.join("audit.jsonl")))
            .with_prompt_tool(self.prompt_tool.clone())
            .with_result_spill(spill_dir, MAX_RESULT_CHARS)
            .with_structured_results(self.structured_results);
        if let Some(checkpoints) = &self.checkpoints {
            pipeline = pipeline.with_checkpoints(checkpoints.clone());
        }
        // Opened last: a session that fails to assemble leaves no file.
        let (history, source) = match resumed {
            Some(loaded) => {
                warnings.extend(loaded.warnings.iter().cloned());
                (Some(loaded), StartSource::Resume)
            }
            None => (None, StartSource::Startup),
        };
        let transcript = if self.history.persist {
            let opening = match (&history, self.history.fork) {
                (Some(loaded), false) => Opening::Resume(loaded),
                (Some(loaded), true) => Opening::New {
                    forked_from: Some(&loaded.session_id),
                    history: &loaded.messages,
                    name: self.history.name.as_deref(),
                },
                (None, _) => Opening::New {
                    forked_from: None,
                    history: &[],
                    name: self.history.name.as_deref(),
                },
            };
            Some(Arc::new(Transcript::open(
                transcript_file,
                &id,
                &cwd,
                opening,
            )?))
        } else {
            None
        };
        Ok(Session {
            id,
            paths: self.paths,
            dir,
            settings,
            sandbox,
            hooks,
            mcp,
            pipeline: Arc::new(pipeline),
            plugins,
            warnings,
            history: history.map(|h| h.messages).unwrap_or_default(),
            sdk_mcp_servers,
            mcp_launcher,
            mcp_configs,
            agents,
            source,
            transcript,
            egress,
            user_context,
            commands: catalogue,
            skills_listed,
            output_style,
            memory_files,
            checkpoints: self.checkpoints.clone(),
        })
    }
}

impl SessionBuilder {
    /// The `--plugin-dir` folders, each named; one that is not a plugin
    /// folder is an error.
    fn opened_plugins(&self) -> Result<Vec<PluginDir>, SessionError> {
        self.plugin_dirs
            .iter()
            .map(|dir| crate::commands::PluginDir::open(dir).map_err(SessionError::Invalid))
            .collect()
    }

    /// Starts reading the memory files, and the skills and commands of the
    /// settings sources that load, each on a thread of its own: both are
    /// mostly waiting on the filesystem.
    fn read_context_files(
        &self,
        plugins: &[PluginDir],
        places: crate::memory::MemoryPlaces,
    ) -> Result<ContextReading, SessionError> {
        let (project, user) = self.project_and_user();
        let mut folders = Folders::of(&places.cwd, &places.home, project, user);
        folders.plugins = plugins.to_vec();
        let skills = self.skills;
        let sources = super::context::memory_sources(self.memory, self.setting_sources.as_deref());
        let today = crate::agent::today();
        let skills =
            std::thread::Builder::new()
                .name("skills".into())
                .spawn(move || match skills {
                    true => CustomCommands::load(&folders),
                    false => CustomCommands::default(),
                });
        let memory = std::thread::Builder::new()
            .name("memory-files".into())
            .spawn(move || super::context::load(places, sources, &today))
            .map_err(|e| {
                SessionError::Invalid(format!("cannot start reading memory files: {e}"))
            })?;
        Ok(ContextReading { memory, skills })
    }

    /// The catalogue's warnings told; a project skill's `allowed-tools`
    /// apply only in a trusted workspace, and the user hears so when they
    /// would not.
    fn admitted(
        loaded: CustomCommands,
        settings: &Settings,
        warnings: &mut Vec<String>,
    ) -> CustomCommands {
        warnings.extend(loaded.warnings.iter().cloned());
        for entry in loaded.granting_from_project() {
            settings.trust.admits(
                ProjectItem::SkillAllowedTools,
                &entry.path.display().to_string(),
                warnings,
            );
        }
        loaded
    }

    /// The style `outputStyle` names, from the folders of the settings
    /// sources that load; one that cannot be found is a warning.
    fn output_style(
        &self,
        cwd: &Path,
        home: &Path,
        settings: &Settings,
        warnings: &mut Vec<String>,
    ) -> Option<crate::prompt::OutputStyle> {
        let name = settings.output_style.as_deref()?;
        let (project, user) = self.project_and_user();
        let folders = crate::prompt::style_folders(cwd, home, project, user);
        crate::prompt::find_style(name, &folders)
            .map_err(|why| warnings.push(why))
            .ok()
            .flatten()
    }

    /// Whether the project's files and the user's load (`--setting-sources`).
    fn project_and_user(&self) -> (bool, bool) {
        match self.setting_sources.as_deref() {
            None => (true, true),
            Some(kinds) => (
                kinds.contains(&SourceKind::Project),
                kinds.contains(&SourceKind::User),
            ),
        }
    }

    /// The session's agent types: built in, the user's files, the
    /// `--plugin-dir` folders' (as `plugin:name`), the project's (trusted
    /// workspace only), then `--agents`.
    fn agent_definitions(
        &self,
        cwd: &Path,
        config_dir: &Path,
        plugins: &[PluginDir],
        settings: &Settings,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<crate::subagents::AgentDefinition>, SessionError> {
        let mut groups = vec![crate::subagents::load_dir(
            &config_dir.join("agents"),
            warnings,
        )];
        for plugin in plugins {
            let mut agents = crate::subagents::load_dir(&plugin.root.join("agents"), warnings);
            for agent in &mut agents {
                agent.name = format!("{}:{}", plugin.name, agent.name);
                agent.source = "plugin".into();
            }
            groups.push(agents);
        }
        // Settings files, lowest precedence first, so that a higher one's
        // definition of a name wins.
        for (value, source) in settings.agents.iter().rev() {
            match crate::subagents::parse_json(value, source) {
                Ok(agents) => groups.push(agents),
                Err(e) => warnings.push(format!("agent definitions skipped: {e}")),
            }
        }
        let project = cwd.join(".carapace").join("agents");
        if project.is_dir()
            && settings.trust.admits(
                ProjectItem::Agents,
                &project.display().to_string(),
                warnings,
            )
        {
            groups.push(crate::subagents::load_dir(&project, warnings));
        }
        if let Some(json) = &self.agents_flag {
            let value: serde_json::Value = serde_json::from_str(json)
                .map_err(|e| SessionError::Invalid(format!("--agents: not JSON: {e}")))?;
            groups.push(
                crate::subagents::parse_json(&value, "--agents").map_err(SessionError::Invalid)?,
            );
        }
        Ok(crate::subagents::merge(groups))
    }
}

/// Memory files and skills being read while the session is assembled.
struct ContextReading {
    memory: std::thread::JoinHandle<super::context::SessionMemory>,
    skills: std::io::Result<std::thread::JoinHandle<CustomCommands>>,
}

impl ContextReading {
    /// Both, once read. Skills that could not be read are a warning;
    /// memory that could not be is an error.
    fn join(self) -> Result<(super::context::SessionMemory, CustomCommands), SessionError> {
        let memory = self
            .memory
            .join()
            .map_err(|_| SessionError::Invalid("reading the memory files failed".into()))?;
        let skills = match self.skills {
            Ok(reading) => reading.join().unwrap_or_else(|_| CustomCommands::failed()),
            Err(e) => CustomCommands::failed_with(e.to_string()),
        };
        Ok((memory, skills))
    }
}

/// The settings' rules and the command line's, deny rules first (a deny
/// anywhere beats an allow anywhere).
fn session_rules(
    mut rules: Vec<Rule>,
    allowed: &[String],
    disallowed: &[String],
    cwd: &Path,
    home: &Path,
) -> Result<Vec<Rule>, RuleError> {
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
/// string), then — unless strict — `~/.carapace/mcp.json` and, in a trusted
/// workspace only, the project's `.mcp.json`. A name configured twice keeps
/// its first definition.
fn mcp_configs(
    setup: &McpSetup,
    cwd: &Path,
    config_dir: &Path,
    settings: &Settings,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Result<Vec<ServerConfig>, SessionError> {
    let mut sources: Vec<(String, String)> = Vec::new();
    for value in &setup.configs {
        if value.trim_start().starts_with('{') {
            sources.push((value.clone(), "--mcp-config".into()));
        } else {
            let text = std::fs::read_to_string(value).map_err(|e| {
                SessionError::Invalid(format!("--mcp-config: reading {value}: {e}"))
            })?;
            sources.push((text, value.clone()));
        }
    }
    if !setup.strict {
        let user = config_dir.join("mcp.json");
        if let Ok(text) = std::fs::read_to_string(&user) {
            sources.push((text, user.display().to_string()));
        }
        let project = cwd.join(".mcp.json");
        if project.is_file()
            && settings.trust.admits(
                ProjectItem::McpServers,
                &project.display().to_string(),
                warnings,
            )
        {
            let text = std::fs::read_to_string(&project).map_err(|e| {
                SessionError::Invalid(format!("reading {}: {e}", project.display()))
            })?;
            sources.push((text, project.display().to_string()));
        }
    }
    let mut servers: Vec<ServerConfig> = Vec::new();
    for (text, source) in sources {
        for server in crate::mcp::config::parse(&text, &source, env, &settings.mcp_expandable)? {
            if servers.iter().any(|s| s.name == server.name) {
                warnings.push(format!(
                    "{source}: MCP server `{}` is configured earlier; this one is ignored",
                    server.name
                ));
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
    paths: &SessionPaths,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Vec<serde_json::Value> {
    let places = Placeholders::current(&paths.cwd);
    let user = PluginStore::new(&paths.config_dir, Scope::User);
    let project = PluginStore::new(&paths.cwd.join(".carapace"), Scope::Project);
    let same_dir =
        std::fs::canonicalize(user.dir()).ok() == std::fs::canonicalize(project.dir()).ok();
    let mut stores = vec![user];
    if !same_dir
        && !project.list().is_empty()
        && settings.trust.admits(
            ProjectItem::Plugins,
            &project.dir().display().to_string(),
            warnings,
        )
    {
        stores.push(project);
    }
    let mut listed = Vec::new();
    for store in &stores {
        for entry in store.list() {
            let record = match entry {
                Ok(record) => record,
                Err(e) => {
                    warnings.push(format!("skipping a plugin: {e}"));
                    continue;
                }
            };
            let mut info = serde_json::json!({
                "name": record.name(),
                "version": record.manifest.plugin.version,
                "scope": store.scope().as_str(),
                "path": store.component_path(&record),
            });
            let added = store
                .registration(&record, &places, &CallLimits::default())
                .map_err(|e| e.to_string())
                .and_then(|tools| {
                    registry
                        .add_installed(sandbox, tools)
                        .map_err(|e| e.to_string())
                });
            match added {
                Ok(()) => info["status"] = "loaded".into(),
                Err(e) => {
                    warnings.push(format!("plugin `{}` not loaded: {e}", record.name()));
                    info["status"] = "failed".into();
                    info["error"] = e.into();
                }
            }
            listed.push(info);
        }
    }
    listed
}

/// A registry holding one plugin: a `.wasm` with its manifest, installed
/// (user, then project scope), or first-party.
async fn one_plugin(
    sandbox: &Sandbox,
    paths: &SessionPaths,
    places: &Placeholders,
    plugin: &str,
) -> Result<ToolRegistry, SessionError> {
    let mut registry = ToolRegistry::default();
    let as_file = Path::new(plugin);
    if plugin.ends_with(".wasm") || as_file.is_file() {
        let wasm = std::fs::read(as_file)
            .map_err(|e| SessionError::Invalid(format!("reading {plugin}: {e}")))?;
        let (manifest, _) = crate::plugin_store::install::find_local_manifest(as_file, &wasm)
            .map_err(|e| SessionError::Invalid(e.to_string()))?;
        let component = ToolComponent::load(sandbox, &manifest.plugin.name, &wasm).await?;
        let ceiling = manifest
            .ceiling(places)
            .map_err(|e| SessionError::Invalid(e.to_string()))?;
        registry.add_with_limits(
            component,
            Arc::new(ceiling),
            Some(manifest.limits(&CallLimits::default())),
        )?;
        return Ok(registry);
    }
    for store in [
        PluginStore::new(&paths.config_dir, Scope::User),
        PluginStore::new(&paths.cwd.join(".carapace"), Scope::Project),
    ] {
        if let Ok(record) = store.get(plugin) {
            let tools = store
                .registration(&record, places, &CallLimits::default())
                .map_err(|e| SessionError::Invalid(e.to_string()))?;
            registry.add_installed(sandbox, tools)?;
            return Ok(registry);
        }
    }
    if BUILTIN_PLUGINS.iter().any(|p| p.name == plugin) {
        let builtin = ToolRegistry::builtin(sandbox).await?;
        let names: Vec<String> = builtin
            .names()
            .into_iter()
            .filter(|name| builtin.get(name).is_some_and(|t| t.plugin() == plugin))
            .collect();
        return Ok(builtin.select(&names)?);
    }
    Err(SessionError::Invalid(format!(
        "no plugin `{plugin}`: not installed, not first-party, and not a .wasm file"
    )))
}

/// Paths outside the workspace's own protected names that commands may not
/// write even when they lie under a write root: what runs in every new
/// shell, and carapace's own configuration.
fn command_protected(home: &Path, config_dir: &Path, cwd: &Path) -> Vec<PathBuf> {
    use crate::policy::{HOME_START_UP, hooks_paths};
    let mut paths: Vec<PathBuf> = SHELL_START_UP.iter().map(|name| home.join(name)).collect();
    paths.extend(HOME_START_UP.iter().map(|(name, _)| home.join(name)));
    // git's hooks folder wherever core.hooksPath puts it.
    paths.extend(hooks_paths(&cwd.join(".git"), home));
    paths.push(config_dir.to_path_buf());
    paths
}

/// carapace's egress proxy for this session's commands, when the settings
/// (or WebFetch domain rules) allow them some domains, or unlisted hosts
/// can be asked about (`asks`), and give them no network of their own.
fn egress_proxy(
    settings: &Settings,
    rules: &RuleSet,
    asks: bool,
) -> Result<Option<crate::sandbox::egress::EgressProxy>, SessionError> {
    use crate::sandbox::egress::{EgressProxy, EgressRules};
    let mut allowed = settings.allowed_domains.clone();
    allowed.extend(rules.web_fetch_domains(crate::policy::RuleKind::Allow));
    let mut denied = settings.denied_domains.clone();
    denied.extend(rules.web_fetch_domains(crate::policy::RuleKind::Deny));
    let ports = settings.proxy_ports;
    let own_proxy = ports.http.is_some() || ports.socks.is_some();
    if (allowed.is_empty() && !asks && !own_proxy) || settings.sandbox_network == Some(true) {
        return Ok(None);
    }
    let rules = EgressRules::new(&allowed, &denied)
        .map_err(|e| SessionError::Invalid(format!("sandbox.network: {e}")))?;
    let proxy = EgressProxy::start_private(Arc::new(rules))
        .map_err(|e| SessionError::Invalid(format!("cannot start the egress proxy: {e}")))?;
    proxy.set_upstream(ports);
    Ok(Some(proxy))
}

/// Where the administrator's (managed) settings are: `/etc/carapace/`, or
/// the file `CARAPACE_MANAGED_SETTINGS` names when only an administrator
/// could have put it there — owned by root and writable by no one else.
/// Otherwise whoever starts carapace could replace the administrator's
/// settings with their own; the variable is then ignored, with a warning.
fn managed_settings_path() -> (PathBuf, Option<String>) {
    use std::os::unix::fs::MetadataExt;
    let standard = PathBuf::from("/etc/carapace/managed-settings.json");
    let Some(named) = std::env::var_os("CARAPACE_MANAGED_SETTINGS").map(PathBuf::from) else {
        return (standard, None);
    };
    match std::fs::metadata(&named) {
        Ok(meta) if meta.uid() == 0 && meta.mode() & 0o022 == 0 => (named, None),
        Ok(_) => (
            standard,
            Some(format!(
                "CARAPACE_MANAGED_SETTINGS names {}, which is not owned by root or is writable by others; ignored (the managed settings are the administrator's)",
                named.display()
            )),
        ),
        Err(e) => (
            standard,
            Some(format!(
                "CARAPACE_MANAGED_SETTINGS names {}, which cannot be read ({e}); ignored",
                named.display()
            )),
        ),
    }
}
