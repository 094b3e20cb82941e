//! [`SessionBuilder::build`]: the session put together in named steps —
//! settings, identity, policy, sandbox, registry, MCP, context, hooks,
//! model, host tools, pipeline, transcript — each a method of its own
//! (here and in the step files beside it), in the order each needs the
//! ones before it.

use super::builder::{SessionBuilder, SessionError};
use super::identity::Identity;
use super::policy::{SessionPolicy, managed_settings_path};
use super::run::{MainAgent, RunModel, build_model};
use super::tools::{PipelineParts, RunnerParts};
use super::{Session, SessionRun, StartSource};
use crate::agent::{EventRelay, InputQueue};
use crate::checkpoints::FileCheckpoints;
use crate::hooks::{HookCommon, HookRuntime};
use crate::policy::Policy;
use crate::sandbox::Sandbox;
use crate::settings::{Locations, Settings};
use crate::transcript::{Opening, Transcript};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Start-up timing marks (printed with `--debug`).
struct Timing(std::time::Instant);

impl Timing {
    fn mark(&self, name: &str) {
        tracing::debug!(
            mark = name,
            ms = self.0.elapsed().as_secs_f64() * 1e3,
            "session timing"
        );
    }
}

/// What a session is made of, gathered before anything runs it: its
/// settings and identity, its policy, sandbox, tools, servers, context
/// and hooks.
struct Gathered {
    settings: Settings,
    warnings: Vec<String>,
    identity: Identity,
    policy: SessionPolicy,
    sandbox: Sandbox,
    registry: crate::tools::ToolRegistry,
    plugins: Vec<serde_json::Value>,
    mcp: super::tools::SessionMcp,
    agents: Vec<crate::subagents::AgentDefinition>,
    memory: super::context::SessionMemory,
    catalogue: Arc<crate::commands::CustomCommands>,
    output_style: Option<crate::prompt::OutputStyle>,
    output: EventRelay,
    hooks: Arc<HookRuntime>,
}

impl SessionBuilder {
    pub async fn build(self) -> Result<Session, SessionError> {
        let timing = Timing(std::time::Instant::now());
        let gathered = self.gather(&timing).await?;
        self.finish(gathered)
    }

    /// Everything but the loop: settings, identity, policy, sandbox,
    /// registry, MCP, context, hooks.
    async fn gather(&self, timing: &Timing) -> Result<Gathered, SessionError> {
        let (managed, managed_refused) = managed_settings_path();
        // Memory files and skills are read on threads of their own while
        // the rest is assembled: they are what start-up reads most of.
        let settings = self.load_settings(managed.clone())?;
        timing.mark("settings_loaded");
        let mut warnings = settings.warnings.clone();
        warnings.extend(managed_refused);
        let plugin_dirs = self.plugin_folders(&settings, &mut warnings)?;
        let reading = self.read_context_files(&plugin_dirs, &managed)?;
        let identity = self.identity(&settings, &mut warnings)?;
        let policy = self.policy(&settings, &identity, &mut warnings)?;
        let sandbox = self.sandbox(&policy)?;
        timing.mark("sandbox_ready");
        let (mut registry, mut plugins) = self.registry(&sandbox, &settings, &mut warnings).await?;
        timing.mark("tools_registered");
        let mcp = self
            .start_mcp(
                &sandbox,
                &settings,
                &policy,
                &plugin_dirs,
                &mut registry,
                &mut warnings,
            )
            .await?;
        let agents = self.agent_types(&plugin_dirs, &settings, &mut warnings)?;
        let (mut memory, catalogue) = reading.join()?;
        // What a Read deny rule covers never reaches the model by way of
        // memory either.
        memory.retain_readable(|path| policy.policy.read_refusal(path));
        let catalogue = Arc::new(Self::admitted(catalogue, &settings, &mut warnings));
        plugins.extend(plugin_dirs.iter().map(plugin_dir_listing));
        let output_style = self.output_style(&settings, &plugin_dirs, &mut warnings);
        let output = EventRelay::default();
        let (hooks, hook_warnings) = self
            .load_hooks(
                &sandbox,
                &settings,
                &plugin_dirs,
                &identity,
                &policy.policy,
                &output,
            )
            .await?;
        warnings.extend(hook_warnings);
        tell_hooks(&hooks, &mcp, &memory);
        timing.mark("hooks_loaded");
        Ok(Gathered {
            settings,
            warnings,
            identity,
            policy,
            sandbox,
            registry,
            plugins,
            mcp,
            agents,
            memory,
            catalogue,
            output_style,
            output,
            hooks,
        })
    }

    /// The loop on what was gathered: the model, the host tools, the
    /// pipeline, the system prompt, the transcript.
    fn finish(&self, g: Gathered) -> Result<Session, SessionError> {
        let Gathered {
            settings,
            mut warnings,
            identity,
            policy,
            sandbox,
            mut registry,
            plugins,
            mcp,
            agents,
            mut memory,
            catalogue,
            output_style,
            output,
            hooks,
        } = g;
        warnings.append(&mut memory.warnings);
        let (user_context, skills_listed) = self.user_context(
            (&catalogue, &mcp),
            &policy.policy,
            std::mem::take(&mut memory.reminder),
        );
        let mut run =
            self.session_run(&settings, &agents, &policy.policy, &identity, &user_context)?;
        if let Some(run) = &run {
            hooks.set_judge(run.judge());
        }
        let (queue, abort) = (Arc::new(InputQueue::new()), CancellationToken::new());
        let code_mode = self.code_mode(&settings, &sandbox, (&queue, &abort, &identity.dir))?;
        self.plain_host_tools(
            &mut registry,
            &sandbox,
            (&policy.policy, code_mode.is_some()),
            run.as_ref(),
        )?;
        let runner = run
            .as_ref()
            .filter(|_| self.spec.tools.agent_tool)
            .map(|run| RunnerParts {
                run,
                hooks: hooks.clone(),
                output: &output,
                queue: &queue,
                abort: &abort,
                agents: &agents,
                identity: &identity,
            });
        let checkpoints = self.checkpoints(&identity);
        let main_tools = run.as_ref().and_then(|r| r.main.tools());
        let deferred = run.as_ref().is_some_and(|r| r.main.deferred.is_some());
        let parts = PipelineParts {
            policy: policy.policy,
            read_denials: policy.read_denials,
            trusted: settings.trust.is_trusted(),
            hooks: hooks.clone(),
            catalogue: catalogue.clone(),
            nested_memory: memory.nested.clone(),
            mcp: &mcp,
            id: &identity.id,
            dir: &identity.dir,
            checkpoints: checkpoints.clone(),
            output: output.clone(),
            network: policy
                .egress
                .clone()
                .filter(|_| !settings.managed_domains_only),
            auto: (run.as_ref()).map(|run| {
                run.auto_judge(
                    self.spec.permissions.auto_model.clone(),
                    &settings.auto_mode,
                )
            }),
            code_mode,
        };
        let tools = self.pipeline(registry, parts, runner, main_tools, deferred)?;
        if let Some(run) = &mut run {
            run.choose_system_prompt(tools.runtime.as_ref(), output_style.as_ref());
        }
        // Opened last: a session that fails to assemble leaves no file.
        let transcript = self.transcript(&identity, checkpoints.as_deref(), &mut warnings)?;
        if let Some(transcript) = &transcript {
            let log: Arc<dyn crate::agent::DecisionLog> = transcript.clone();
            tools.pipeline.set_decision_log(&log);
        }
        Ok(Session {
            id: identity.id,
            paths: self.spec.paths.clone(),
            dir: identity.dir,
            settings,
            sandbox,
            hooks,
            mcp: mcp.statuses,
            pipeline: tools.pipeline,
            plugins,
            warnings,
            source: (identity.resumed.as_ref())
                .map_or(StartSource::Startup, |_| StartSource::Resume),
            history: identity.resumed.map(|h| h.messages).unwrap_or_default(),
            transcript,
            egress: policy.egress,
            sdk_mcp_servers: mcp.sdk,
            mcp_launcher: mcp.launcher,
            mcp_configs: mcp.configs,
            agents,
            user_context,
            commands: catalogue,
            skills_listed,
            output_style,
            memory_files: memory.files,
            checkpoints,
            queue,
            abort,
            output,
            loop_tools: tools.runtime,
            loop_subset: tools.subset,
            agent_tool: tools.agent_tool,
            run,
        })
    }

    /// The settings files that load, and the trust decision.
    fn load_settings(&self, managed: PathBuf) -> Result<Settings, SessionError> {
        let paths = &self.spec.paths;
        let locations = Locations {
            managed,
            claude_managed: crate::settings::CLAUDE_MANAGED_SETTINGS.into(),
            given: self.spec.settings.given.clone(),
            cwd: paths.cwd.clone(),
            home: paths.home.clone(),
            config_dir: paths.config_dir.clone(),
            sources: self.spec.settings.sources.clone(),
        };
        Ok(Settings::load(
            &locations,
            self.spec.settings.trust_workspace,
        )?)
    }

    /// The reminders at the head of every request's first user message:
    /// the skills listing when the Skill tool is offered and not hidden
    /// (front ends find it first), the MCP servers' instructions, then the
    /// memory files and today's date; whether the listing is there.
    fn user_context(
        &self,
        (catalogue, mcp): (&crate::commands::CustomCommands, &super::tools::SessionMcp),
        policy: &Policy,
        memory_reminder: String,
    ) -> (Vec<String>, bool) {
        let mut user_context = Vec::new();
        if self.offers_skill(catalogue) && policy.hidden_by(SKILL_TOOL).is_none() {
            user_context.extend(catalogue.listing());
        }
        let skills_listed = !user_context.is_empty();
        user_context.extend(crate::mcp::instructions_reminder(&mcp.set.enabled()));
        user_context.push(memory_reminder);
        (user_context, skills_listed)
    }

    /// The session's sandbox: on the process's engine when one is shared,
    /// else on an engine of its own.
    fn sandbox(&self, policy: &SessionPolicy) -> Result<Sandbox, SessionError> {
        let engine = self.engine.get()?;
        let cwd = Some(self.spec.paths.cwd.clone());
        Ok(engine.sandbox(cwd, Some(policy.process.clone())))
    }

    /// The settings' hooks (none with `--bare`), told the session's mode
    /// as it is at each event and reporting to the session's output; the
    /// warnings loading them gave.
    async fn load_hooks(
        &self,
        sandbox: &Sandbox,
        settings: &Settings,
        plugins: &[crate::commands::PluginDir],
        identity: &Identity,
        policy: &Policy,
        output: &EventRelay,
    ) -> Result<(Arc<HookRuntime>, Vec<String>), SessionError> {
        let common = HookCommon {
            mcp_server: None,
            session_id: identity.id.clone(),
            transcript_path: if self.spec.history.persist {
                identity.transcript.label().display().to_string()
            } else {
                String::new()
            },
            cwd: self.spec.paths.cwd.display().to_string(),
            permission_mode: identity.mode.as_str().to_string(),
            prompt_id: None,
            agent: None,
        };
        let mut warnings = Vec::new();
        let mut specs = Vec::new();
        if self.spec.loads.hooks {
            // Read only when a project's hooks are there to judge.
            let mut approvals = None;
            for (value, source) in &settings.hooks {
                match crate::hooks::parse(value, source) {
                    Ok((parsed, parse_warnings)) => {
                        warnings.extend(parse_warnings);
                        let judged = Judged {
                            settings,
                            config_dir: &self.spec.paths.config_dir,
                            approvals: &mut approvals,
                        };
                        specs.extend(approved(parsed, source, judged, &mut warnings));
                    }
                    // What cannot be read at all may have guarded calls.
                    Err(e) => {
                        warnings.push(format!("{e}; its hooks are not loaded"));
                        if value.to_string().contains("PreToolUse") {
                            specs.push(crate::hooks::unreadable_guard(e.to_string(), source));
                        }
                    }
                }
            }
            if let Some(Err(e)) = approvals.as_ref().map(|a| a.save()) {
                warnings.push(format!("cannot keep the approved hooks: {e}"));
            }
            for plugin in plugins {
                specs.extend(plugin_hooks(plugin, &mut warnings));
            }
            for (value, source) in &settings.held_hooks {
                specs.extend(held_guards(value, source));
            }
        }
        // What settings allow every `http` hook.
        let limits = crate::hooks::HttpHookLimits {
            urls: settings.http_hook_urls.clone(),
            env: settings.http_hook_env.clone(),
        };
        for target in specs.iter_mut().filter_map(|spec| spec.http.as_mut()) {
            target.limits = limits.clone();
        }
        let hooks = if specs.is_empty() {
            HookRuntime::empty(common)
        } else {
            let (home, config_dir) = (&self.spec.paths.home, &self.spec.paths.config_dir);
            let (hooks, load_warnings) =
                HookRuntime::load(sandbox, specs, common, home, config_dir).await?;
            warnings.extend(load_warnings);
            hooks
        };
        let hooks = hooks
            .with_mode(policy.mode_cell().clone())
            .with_output(output.clone());
        Ok((Arc::new(hooks), warnings))
    }

    /// The model and the loop's configuration, when the session runs a
    /// loop; the environment the system prompt describes.
    fn session_run(
        &self,
        settings: &Settings,
        agents: &[crate::subagents::AgentDefinition],
        policy: &Policy,
        identity: &Identity,
        user_context: &[String],
    ) -> Result<Option<SessionRun>, SessionError> {
        let Some(setup) = &self.spec.run else {
            return Ok(None);
        };
        let main = MainAgent::find(setup, settings, agents)?;
        let structured = self.spec.tools.output_schema.is_some();
        let named = [
            &setup.model,
            &settings.model,
            &main.agent.as_ref().and_then(|a| a.model.clone()),
        ];
        if let Some(caveat) = named
            .into_iter()
            .flatten()
            .find_map(|m| crate::model::caveat(m))
        {
            eprintln!("carapace: {caveat}");
        }
        let RunModel {
            model,
            api_key_source,
            mut config,
        } = build_model(setup, settings, &main, structured, user_context.to_vec())?;
        // The user's other working directories, not the session's own.
        let dir = &identity.dir;
        let own = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        let other_dirs: Vec<PathBuf> = policy
            .working_dirs()
            .iter()
            .skip(1)
            .filter(|d| !d.starts_with(&own) && !d.starts_with(dir))
            .cloned()
            .collect();
        let today = crate::agent::today();
        let environment = crate::prompt::Environment::detect(
            &self.spec.paths.cwd,
            &other_dirs,
            &config.model,
            &today,
        );
        if setup.environment_elsewhere {
            config
                .user_context
                .push(crate::prompt::environment_reminder(&environment));
        }
        Ok(Some(SessionRun {
            model,
            model_name: Arc::new(Mutex::new(config.model.clone())),
            api_key_source,
            config,
            prompt: setup.prompt.clone(),
            environment,
            environment_elsewhere: setup.environment_elsewhere,
            main,
        }))
    }

    /// Files kept before writes, when the spec asks for rewinds.
    fn checkpoints(&self, identity: &Identity) -> Option<Arc<FileCheckpoints>> {
        let wanted = self.spec.loads.file_checkpoints;
        wanted.then(|| Arc::new(self.restored_checkpoints(identity)))
    }

    /// The file checkpoints a resumed session recorded (none for a new
    /// or forked one). Only files inside the workspace's folders are
    /// restored: a rewind writes them outside any sandbox, so a record a
    /// tampered transcript adds must not name `~/.bashrc`.
    fn restored_checkpoints(&self, identity: &Identity) -> FileCheckpoints {
        let records = match (&identity.resumed, self.spec.history.fork) {
            (Some(loaded), false) => loaded.checkpoints.clone(),
            _ => Vec::new(),
        };
        // Both spellings of each root: kept paths are the grants' (resolved).
        let roots: Vec<PathBuf> = std::iter::once(&self.spec.paths.cwd)
            .chain(&self.spec.add_dirs)
            .flat_map(|root| {
                [
                    root.clone(),
                    std::fs::canonicalize(root).unwrap_or_default(),
                ]
            })
            .filter(|root| root.is_absolute())
            .collect();
        let inside = |path: &Path| {
            path.is_absolute()
                && !path
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
                && roots.iter().any(|root| path.starts_with(root))
        };
        FileCheckpoints::restored(records.into_iter().filter(|record| match &record.file {
            Some((path, _)) => inside(path),
            None => true,
        }))
    }

    /// The session's transcript (`None` without persistence), opened for
    /// a new session or appended to for a resumed one.
    fn transcript(
        &self,
        identity: &Identity,
        checkpoints: Option<&FileCheckpoints>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Arc<Transcript>>, SessionError> {
        if let Some(loaded) = &identity.resumed {
            warnings.extend(loaded.warnings.iter().cloned());
        }
        if !self.spec.history.persist {
            return Ok(None);
        }
        let name = self.spec.history.name.as_deref();
        let opening = match (&identity.resumed, self.spec.history.fork) {
            (Some(loaded), false) => Opening::Resume(loaded),
            (Some(loaded), true) => Opening::New {
                forked_from: Some(&loaded.session_id),
                history: &loaded.messages,
                name,
            },
            (None, _) => Opening::New {
                forked_from: None,
                history: &[],
                name,
            },
        };
        let place = identity.transcript.clone();
        let transcript = Transcript::open(place, &identity.id, &self.spec.paths.cwd, opening)?;
        let transcript = Arc::new(transcript);
        // The files kept before writes are recorded with the history.
        if let Some(checkpoints) = checkpoints {
            checkpoints.record_to(transcript.clone());
        }
        Ok(Some(transcript))
    }
}

use crate::tools::skill::SKILL_TOOL;

/// A `--plugin-dir` folder as `system`/`init` lists it.
fn plugin_dir_listing(plugin: &crate::commands::PluginDir) -> serde_json::Value {
    serde_json::json!({
        "name": plugin.name,
        "path": plugin.root.display().to_string(),
        "source": format!("{}@inline", plugin.name),
    })
}

/// A `--plugin-dir` plugin's hooks (`hooks/hooks.json`: Claude Code's
/// `{"hooks": {EVENT: [...]}}`), each knowing its plugin (its commands get
/// `CLAUDE_PLUGIN_ROOT`, and read the plugin's folder). The user named the
/// folder, so its hooks load as theirs; a file that cannot be read or
/// parsed is a warning, and the plugin's other parts still load.
fn plugin_hooks(
    plugin: &crate::commands::PluginDir,
    warnings: &mut Vec<String>,
) -> Vec<crate::hooks::HookSpec> {
    let file = plugin.root.join("hooks").join("hooks.json");
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Vec::new();
    };
    let source = crate::policy::RuleSource {
        kind: crate::policy::SourceKind::CliFlag,
        file: Some(file.clone()),
    };
    // What cannot be read may have guarded calls: if it names PreToolUse,
    // every call is refused until it is fixed.
    let unreadable = |why: String, warnings: &mut Vec<String>| {
        warnings.push(format!("{why}; the plugin's hooks are not loaded"));
        if text.contains("PreToolUse") {
            vec![crate::hooks::unreadable_guard(
                format!("{why}, and it has PreToolUse hooks that would have judged this call"),
                &source,
            )]
        } else {
            Vec::new()
        }
    };
    if let Some(why) = &plugin.held {
        // Held back: the PreToolUse calls it would have judged are refused.
        return if text.contains("PreToolUse") {
            vec![crate::hooks::unreadable_guard(
                format!(
                    "plugin `{}` has PreToolUse hooks that are held back: {why}",
                    plugin.name
                ),
                &source,
            )]
        } else {
            Vec::new()
        };
    }
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => return unreadable(format!("{}: not JSON ({e})", file.display()), warnings),
    };
    match crate::hooks::parse(&value["hooks"], &source) {
        Ok((specs, parse_warnings)) => {
            warnings.extend(parse_warnings);
            specs
                .into_iter()
                .map(|mut spec| {
                    spec.plugin_root = Some(plugin.root.clone());
                    if let Some(entry) = spec.middleware.as_mut() {
                        // In the tier of the settings that enabled it.
                        let by = plugin.enabled_by.unwrap_or(crate::policy::SourceKind::User);
                        entry.tier = crate::hooks::Tier::of(by, false);
                    }
                    if spec.kind == crate::hooks::HandlerKind::Shell {
                        spec.path = plugin.root.clone();
                    }
                    spec
                })
                .collect()
        }
        Err(e) => unreadable(e.to_string(), warnings),
    }
}

/// A project file's hooks that run: those approved as they are (trusting
/// the workspace approves them; a change holds one back). A held
/// PreToolUse hook stands as a guard refusing what it matches; others are
/// named in a warning. The user's and the administrator's hooks are
/// theirs: not judged.
/// What judging a project's hooks by their content needs: the approvals,
/// read from carapace's folder the first time a project's hooks need them.
struct Judged<'a> {
    settings: &'a Settings,
    config_dir: &'a Path,
    approvals: &'a mut Option<crate::hooks::HookApprovals>,
}

fn approved(
    specs: Vec<crate::hooks::HookSpec>,
    source: &crate::policy::RuleSource,
    judged: Judged<'_>,
    warnings: &mut Vec<String>,
) -> Vec<crate::hooks::HookSpec> {
    let (crate::policy::SourceKind::Project, Some(file)) = (source.kind, &source.file) else {
        return specs;
    };
    // `.claude/settings.json` belongs to the folder holding `.claude`.
    let project = file.parent().and_then(Path::parent).unwrap_or(file);
    let approve = judged.settings.trust.approves_as_it_is();
    let approvals = judged
        .approvals
        .get_or_insert_with(|| crate::hooks::HookApprovals::load(judged.config_dir));
    let (mut run, held) = approvals.judge(project, file, specs, approve);
    for crate::hooks::Held { spec, why } in held {
        warnings.push(why.clone());
        if spec.event == crate::hooks::HookEventKind::PreToolUse {
            run.push(crate::hooks::HookSpec {
                matcher: spec.matcher,
                ..crate::hooks::unreadable_guard(why, source)
            });
        }
    }
    run
}

/// An untrusted project's PreToolUse hooks, as guards that refuse what
/// they match: its hooks do not run until the workspace is trusted, and
/// what they would have judged does not run either. A value that cannot
/// be read refuses every call.
fn held_guards(
    value: &serde_json::Value,
    source: &crate::policy::RuleSource,
) -> Vec<crate::hooks::HookSpec> {
    let why = format!(
        "{} has PreToolUse hooks, which run only in a trusted workspace (--trust-workspace, or trustedWorkspaces in your settings)",
        source.describe()
    );
    match crate::hooks::parse(value, source) {
        Ok((specs, _)) => specs
            .into_iter()
            .filter(|spec| spec.event == crate::hooks::HookEventKind::PreToolUse)
            .map(|spec| crate::hooks::HookSpec {
                matcher: spec.matcher,
                ..crate::hooks::unreadable_guard(why.clone(), source)
            })
            .collect(),
        Err(_) if value.to_string().contains("PreToolUse") => {
            vec![crate::hooks::unreadable_guard(why, source)]
        }
        Err(_) => Vec::new(),
    }
}

/// What hooks are told of the session: its MCP servers (an `mcp_tool`
/// handler's and `mcp_server` of their tools' events) and the memory
/// files read (InstructionsLoaded).
fn tell_hooks(
    hooks: &HookRuntime,
    mcp: &super::tools::SessionMcp,
    memory: &super::context::SessionMemory,
) {
    let connected = mcp
        .statuses
        .iter()
        .filter_map(|s| Some((s.name.clone(), s.outcome.as_ref().ok()?.clone())))
        .collect();
    hooks.set_mcp(Arc::new(super::tools::HookMcpTools(connected)));
    hooks.set_mcp_scopes(
        mcp.configs
            .iter()
            .map(|c| (c.name.clone(), c.scope.to_string()))
            .collect(),
    );
    hooks.remember_instructions(
        memory
            .files
            .iter()
            .map(|(path, kind, _)| (path.display().to_string(), kind.name().to_string()))
            .collect(),
    );
}
