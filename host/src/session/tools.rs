//! The tools steps: the registry (first-party tools and installed plugins,
//! or one plugin), the MCP servers, the agent types, the host tools (made
//! with the session's model and output), and the pipeline the loop calls
//! through.

use super::SessionRun;
use super::builder::{SessionBuilder, SessionError};
use super::policy::SessionPolicy;
use super::spec::ToolSet;
use crate::agent::{EventRelay, InputQueue, ToolRuntime, ToolSubset};
use crate::checkpoints::FileCheckpoints;
use crate::commands::CustomCommands;
use crate::hooks::HookRuntime;
use crate::mcp::{McpLauncher, ServerConfig, ServerStatus};
use crate::memory::NestedMemory;
use crate::plugin_store::Placeholders;
use crate::policy::{AuditLog, Policy};
use crate::sandbox::{CallLimits, Sandbox};
use crate::settings::Settings;
use crate::subagents::{AgentDefinition, AgentTool, SubagentRunner};
use crate::tools::skill::SKILL_TOOL;
use crate::tools::{ToolPipeline, ToolRegistry};
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A tool result longer than this is saved to a file and shown as a preview.
const MAX_RESULT_CHARS: usize = 100_000;

/// What the MCP step connected, and how later servers start.
pub(super) struct SessionMcp {
    /// Every configured server, connected or not.
    pub statuses: Vec<ServerStatus>,
    /// The servers configured at the start.
    pub configs: Vec<ServerConfig>,
    /// The Agent SDK's in-process servers, connected once the SDK is.
    pub sdk: Vec<String>,
    pub launcher: McpLauncher,
    /// The servers connected, as the pipeline and the resource tools
    /// share them.
    pub set: Arc<crate::tools::McpSet>,
}

/// What the pipeline is made of, besides the registry.
pub(super) struct PipelineParts<'a> {
    pub policy: Policy,
    pub read_denials: Arc<crate::policy::LiveReadDenials>,
    /// Whether the workspace is trusted (a project skill's `allowed-tools`
    /// apply only then).
    pub trusted: bool,
    pub hooks: Arc<HookRuntime>,
    pub catalogue: Arc<CustomCommands>,
    pub nested_memory: Arc<NestedMemory>,
    pub mcp: &'a SessionMcp,
    pub id: &'a str,
    pub dir: &'a Path,
    pub checkpoints: Option<Arc<FileCheckpoints>>,
    /// The session's output: calls' progress is told there.
    pub output: crate::agent::EventRelay,
    /// The auto mode's classifier, when the session has a model.
    pub auto: Option<Arc<crate::tools::auto_mode::AutoJudge>>,
    /// The command sandbox's proxy, where granted hosts open.
    pub network: Option<Arc<crate::sandbox::egress::EgressProxy>>,
    /// Code mode's runner, when the Script tool is offered.
    pub code_mode: Option<crate::tools::CodeMode>,
}

/// The tools as the loop and the front ends reach them.
pub(super) struct SessionTools {
    pub pipeline: Arc<ToolPipeline>,
    /// What the loop calls: the pipeline, or a subset of it (the main
    /// agent's tools; always one when the Agent tool needs a parent).
    pub runtime: Arc<dyn ToolRuntime>,
    pub subset: Option<Arc<ToolSubset>>,
    pub agent_tool: Option<Arc<AgentTool>>,
}

/// What the Agent tool's runner is made with.
pub(super) struct RunnerParts<'a> {
    pub run: &'a SessionRun,
    pub hooks: Arc<HookRuntime>,
    pub output: &'a EventRelay,
    pub queue: &'a Arc<InputQueue>,
    pub abort: &'a CancellationToken,
    pub agents: &'a [AgentDefinition],
    pub identity: &'a super::identity::Identity,
}

impl SessionBuilder {
    /// The first-party tools and the installed plugins' (or the one plugin
    /// `tool call` names); what `system`/`init` lists of the plugins.
    pub(super) async fn registry(
        &self,
        sandbox: &Sandbox,
        settings: &Settings,
        warnings: &mut Vec<String>,
    ) -> Result<(ToolRegistry, Vec<serde_json::Value>), SessionError> {
        if let ToolSet::Plugin(plugin) = &self.spec.tools.set {
            let places = Placeholders::current(&self.spec.paths.cwd);
            let registry =
                super::sources::one_plugin(sandbox, &self.spec.paths, &places, settings, plugin)
                    .await?;
            return Ok((registry, Vec::new()));
        }
        let mut registry = ToolRegistry::builtin(sandbox).await?;
        let plugins = match self.spec.loads.installed_plugins {
            true => super::sources::load_installed(
                &mut registry,
                sandbox,
                &self.spec.paths,
                settings,
                warnings,
            ),
            false => Vec::new(),
        };
        Ok((registry, plugins))
    }

    /// Starts the configured MCP servers and offers their tools.
    pub(super) async fn start_mcp(
        &self,
        sandbox: &Sandbox,
        settings: &Settings,
        policy: &SessionPolicy,
        plugins: &[crate::commands::PluginDir],
        registry: &mut ToolRegistry,
        warnings: &mut Vec<String>,
    ) -> Result<SessionMcp, SessionError> {
        let env = |name: &str| super::run::settings_env(settings, name);
        let millis = |name: &str, default: Duration| match env(name) {
            Some(ms) => ms.trim().parse().map(Duration::from_millis).map_err(|_| {
                SessionError::Invalid(format!("{name} must be milliseconds, got `{ms}`"))
            }),
            None => Ok(default),
        };
        let startup = millis("MCP_TIMEOUT", crate::mcp::DEFAULT_STARTUP)?;
        // A call's deadline ends a server that never answers; what it had
        // sent by then is dropped with the call.
        let limits = CallLimits {
            deadline: millis("MCP_TOOL_TIMEOUT", CallLimits::default().deadline)?,
            ..CallLimits::default()
        };
        let configs = match &self.spec.mcp {
            None => Vec::new(),
            Some(setup) => super::sources::mcp_configs(
                setup,
                &self.spec.paths,
                settings,
                plugins,
                &env,
                warnings,
            )?,
        };
        let sdk = configs
            .iter()
            .filter(|c| c.transport == crate::mcp::Transport::Sdk)
            .map(|c| c.name.clone())
            .collect();
        let credentials = crate::mcp::Credentials::in_folder(&self.spec.paths.config_dir);
        let statuses = crate::mcp::start_all(
            sandbox,
            &configs,
            &policy.process,
            (limits, startup),
            &credentials,
        )
        .await?;
        for status in &statuses {
            match &status.outcome {
                Ok(server) => warnings.extend(registry.add_mcp(server)),
                Err(e) => {
                    warnings.push(format!("MCP server `{}` failed to start: {e}", status.name))
                }
            }
        }
        let launcher = McpLauncher::new(
            sandbox.clone(),
            policy.process.clone(),
            (limits, startup),
            credentials,
        );
        let connected = statuses
            .iter()
            .filter_map(|s| s.outcome.as_ref().ok().cloned())
            .collect();
        Ok(SessionMcp {
            statuses,
            configs,
            sdk,
            launcher,
            set: Arc::new(crate::tools::McpSet::holding(connected)),
        })
    }

    /// Code mode's runner, compiled once per sandbox, when the spec (the
    /// `--code-mode` flag) or the settings' `codeMode` turn it on; its
    /// background scripts report through the session's queue.
    pub(super) fn code_mode(
        &self,
        settings: &Settings,
        sandbox: &Sandbox,
        (queue, abort, dir): (&Arc<InputQueue>, &CancellationToken, &Path),
    ) -> Result<Option<crate::tools::CodeMode>, SessionError> {
        use crate::settings::CodeModeSetting;
        let given = match &settings.code_mode {
            Some(CodeModeSetting::Limits(limits)) => Some(limits.clone()),
            Some(CodeModeSetting::On(true)) => Some(Default::default()),
            Some(CodeModeSetting::On(false)) | None => None,
        };
        let given = given.or_else(|| self.spec.tools.code_mode.then(Default::default));
        let Some(given) = given.filter(|_| !matches!(self.spec.tools.set, ToolSet::Plugin(_)))
        else {
            return Ok(None);
        };
        let mut limits = crate::tools::script::ScriptLimits::default();
        if let Some(seconds) = given.deadline_seconds {
            limits.deadline = Duration::from_secs(seconds.max(1));
        }
        limits.max_calls = given.max_calls.unwrap_or(limits.max_calls);
        limits.memory_bytes = given.memory_mb.map_or(limits.memory_bytes, |mb| mb << 20);
        limits.output_bytes = given.output_kb.map_or(limits.output_bytes, |kb| kb << 10);
        Ok(Some(crate::tools::CodeMode {
            runner: crate::tools::script::ScriptRunner::load(sandbox)?,
            limits,
            background: crate::tools::BackgroundScripts {
                queue: queue.clone(),
                abort: abort.clone(),
                dir: dir.join("tasks"),
            },
        }))
    }

    /// The host tools that need no model: ExitPlanMode and the background
    /// shells' (not in a one-plugin session), WebSearch when the session
    /// has a model, Script in code mode.
    pub(super) fn plain_host_tools(
        &self,
        registry: &mut ToolRegistry,
        sandbox: &Sandbox,
        (policy, code_mode): (&Policy, bool),
        run: Option<&SessionRun>,
    ) -> Result<(), SessionError> {
        if matches!(self.spec.tools.set, ToolSet::Plugin(_)) {
            return Ok(());
        }
        if code_mode {
            use crate::tools::script::{ScriptTool, definition};
            registry.add_native(definition(), Arc::new(ScriptTool))?;
        }
        use crate::tools::exit_plan_mode::{ExitPlanModeTool, approval, definition};
        let tool = Arc::new(ExitPlanModeTool::new(policy.mode_cell().clone()));
        registry.add_native_asking(definition(), tool, approval())?;
        // Offered where someone can answer it.
        if self.spec.permissions.asker != crate::tools::Asker::Nobody {
            use crate::tools::request_permissions::{RequestPermissionsTool, approval, definition};
            let tool = Arc::new(RequestPermissionsTool);
            registry.add_native_asking(definition(), tool, approval())?;
        }
        if let Some(run) = run.filter(|_| self.spec.tools.web_search) {
            use crate::tools::web_search::{SearchModel, WebSearchTool, approval, definition};
            let search = WebSearchTool::new(SearchModel {
                model: run.model.clone(),
                name: run.model_name.clone(),
            });
            registry.add_native_asking(definition(), Arc::new(search), approval())?;
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
        Ok(())
    }

    /// The rest of the registry and the pipeline over it. With the Agent
    /// tool, the loop's tools are a subset whose own tools include the
    /// Agent tool, made with a handle on them (its children's parent).
    pub(super) fn pipeline(
        &self,
        registry: ToolRegistry,
        parts: PipelineParts<'_>,
        runner: Option<RunnerParts<'_>>,
        main_tools: Option<Vec<String>>,
        deferred_agent: bool,
    ) -> Result<SessionTools, SessionError> {
        let Some(runner) = runner else {
            let pipeline = self.complete(registry, parts, None)?;
            let subset = (main_tools.is_some() || deferred_agent).then(|| {
                let parent: Arc<dyn ToolRuntime> = pipeline.clone();
                Arc::new(ToolSubset::new(parent, main_tools.as_deref(), &[]))
            });
            let runtime: Arc<dyn ToolRuntime> = match &subset {
                Some(subset) => subset.clone(),
                None => pipeline.clone(),
            };
            return Ok(SessionTools {
                pipeline,
                runtime,
                subset,
                agent_tool: None,
            });
        };
        let definition = crate::subagents::definition(runner.agents);
        let hooks = runner.hooks.clone();
        let mut made = None;
        let subset = Arc::new_cyclic(|own: &Weak<ToolSubset>| {
            let parent_tools: Weak<dyn ToolRuntime> = own.clone();
            let (cwd, persist) = (&self.spec.paths.cwd, self.spec.history.persist);
            let runner = subagent_runner(runner, cwd, persist, parent_tools);
            let tool = Arc::new(AgentTool::new(runner));
            let completed = self.complete(registry, parts, Some((definition, tool.clone())));
            let parent: Arc<dyn ToolRuntime> = match &completed {
                Ok(pipeline) => pipeline.clone(),
                // Dropped at once: the session is not built.
                Err(_) => Arc::new(NoTools),
            };
            made = Some(completed.map(|pipeline| (pipeline, tool)));
            ToolSubset::new(parent, main_tools.as_deref(), &[])
        });
        let (pipeline, tool) =
            made.ok_or_else(|| SessionError::Invalid("the session's tools were not made".into()))??;
        // `agent` hooks run their verifiers on the Agent tool's runner.
        hooks.set_verifier(tool.verifier());
        Ok(SessionTools {
            pipeline,
            runtime: subset.clone(),
            subset: Some(subset),
            agent_tool: Some(tool),
        })
    }

    /// The Agent tool (when given), Skill, the `--tools` selection,
    /// StructuredOutput, in that order; the pipeline over them.
    fn complete(
        &self,
        mut registry: ToolRegistry,
        parts: PipelineParts<'_>,
        agent: Option<(crate::sandbox::ToolDefinition, Arc<AgentTool>)>,
    ) -> Result<Arc<ToolPipeline>, SessionError> {
        if let Some((definition, tool)) = agent {
            registry.add_native(definition, tool)?;
        }
        if self.offers_skill(&parts.catalogue) {
            use crate::tools::skill::{SkillTool, approval, definition};
            registry.add_native_asking(definition(), Arc::new(SkillTool), approval())?;
        }
        let mcp = parts.mcp;
        // Offered whenever a server is configured (an SDK's join later);
        // built-in tools, as Claude Code's: `--tools` chooses among them.
        if !mcp.statuses.is_empty() || !mcp.sdk.is_empty() {
            use crate::tools::mcp_resources::{
                ListResourcesTool, ReadResourceTool, list_definition, read_definition,
            };
            let servers = mcp.set.clone();
            registry.add_native(list_definition(), Arc::new(ListResourcesTool { servers }))?;
            let servers = mcp.set.clone();
            registry.add_native(read_definition(), Arc::new(ReadResourceTool { servers }))?;
        }
        if let ToolSet::Only(names) = &self.spec.tools.set {
            registry = registry.select(names)?;
        }
        if let Some(schema) = &self.spec.tools.output_schema {
            use crate::tools::structured_output::{StructuredOutputTool, definition};
            registry.add_native(definition(schema), Arc::new(StructuredOutputTool))?;
        }
        if let crate::tools::Asker::PromptTool(prompt_tool) = &self.spec.permissions.asker
            && registry.get(prompt_tool).is_none()
        {
            return Err(SessionError::Invalid(format!(
                "--permission-prompt-tool: no loaded tool is called `{prompt_tool}`"
            )));
        }
        let mut pipeline = ToolPipeline::new(registry, parts.policy, CallLimits::default())
            .with_skills(parts.catalogue.clone(), parts.trusted)
            .with_memory(crate::tools::READ_TOOL, parts.nested_memory)
            .with_mcp_set(mcp.set.clone())
            .with_hooks(parts.hooks)
            .with_output(parts.output)
            .with_session_id(parts.id.to_string())
            .with_audit(AuditLog::at(parts.dir.join("audit.jsonl")))
            .with_asker(self.spec.permissions.asker.clone())
            .with_result_spill(parts.dir.join("tool-results"), MAX_RESULT_CHARS)
            .with_structured_results(self.spec.tools.structured_results)
            .with_read_denials(parts.read_denials);
        if let Some(checkpoints) = parts.checkpoints {
            pipeline = pipeline.with_checkpoints(checkpoints);
        }
        if let Some(auto) = parts.auto {
            pipeline = pipeline.with_auto_judge(auto);
        }
        if let Some(network) = &parts.network {
            pipeline = pipeline.with_network(network);
        }
        if let Some(code_mode) = parts.code_mode {
            pipeline = pipeline.with_code_mode(code_mode);
        }
        Ok(Arc::new(pipeline))
    }

    /// Whether the Skill tool is offered: not in a one-plugin session; when
    /// a skill the model may call exists or `--tools` names it; and kept by
    /// the `--tools` selection.
    pub(super) fn offers_skill(&self, catalogue: &CustomCommands) -> bool {
        match &self.spec.tools.set {
            ToolSet::Plugin(_) => false,
            ToolSet::All => catalogue.has_model_invocable(),
            ToolSet::Only(names) => names.iter().any(|n| n == SKILL_TOOL),
        }
    }
}

/// A runtime with no tools: what a subset being built over a pipeline that
/// could not be made holds until both are dropped.
struct NoTools;

impl ToolRuntime for NoTools {
    fn specs(&self) -> Vec<crate::model::ToolSpec> {
        Vec::new()
    }

    fn prepare(
        self: Arc<Self>,
        call: crate::agent::ToolCall,
    ) -> futures::future::BoxFuture<'static, crate::agent::Preparation> {
        let result = crate::agent::ToolCallResult::error(&call.id, "the session is not built");
        Box::pin(async move { crate::agent::Preparation::Failed(Box::new(result)) })
    }
}

/// The Agent tool's runner: child loops on the session's model, hooks and
/// output, calling through `parent_tools`.
fn subagent_runner(
    parts: RunnerParts<'_>,
    cwd: &Path,
    persist: bool,
    parent_tools: Weak<dyn ToolRuntime>,
) -> SubagentRunner {
    let identity = parts.identity;
    SubagentRunner {
        model: parts.run.model.clone(),
        parent_tools,
        hooks: parts.hooks,
        sink: parts.output.clone(),
        config: parts.run.config.clone(),
        current_model: Some(parts.run.model_name.clone()),
        cwd: cwd.to_path_buf(),
        abort: parts.abort.clone(),
        notifications: parts.queue.clone(),
        tasks_dir: identity.dir.join("tasks"),
        agents: std::sync::RwLock::new(parts.agents.to_vec()),
        // Children's transcripts go beside the parent's.
        transcripts: persist.then(|| identity.transcript.clone()),
        running: Default::default(),
    }
}

/// The session's connected MCP servers, as `mcp_tool` hooks call them:
/// straight to the server (no tool pipeline, so no hook runs on a hook's
/// own call), under the server's own limits.
pub(super) struct HookMcpTools(pub(super) Vec<(String, Arc<crate::mcp::McpServer>)>);

impl crate::hooks::McpToolCaller for HookMcpTools {
    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: serde_json::Value,
    ) -> futures::future::BoxFuture<'a, Result<(String, bool), String>> {
        Box::pin(async move {
            let Some((_, found)) = self.0.iter().find(|(name, _)| name == server) else {
                return Err(format!("no connected MCP server is named `{server}`"));
            };
            let outcome = found
                .call((tool, &arguments.to_string()), &found.limits(), None)
                .await
                .map_err(|e| format!("`{server}` could not call `{tool}`: {e}"))?;
            let text = outcome
                .content
                .iter()
                .filter_map(|c| match c {
                    crate::sandbox::ToolContent::Text(text) => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            Ok((text, outcome.is_error))
        })
    }
}
