//! The flags as a [`SessionSpec`]: the one place flag text (JSON in a
//! string, a file or inline, comma lists) becomes typed data.

use super::Cli;
use crate::output::OutputFormat;
use crate::policy::{PermissionMode, SourceKind};
use crate::session::{
    Asker, GivenSettings, HistorySetup, Loads, McpGiven, McpSetup, PermissionSpec, PromptChoice,
    Resume, RunSetup, SessionPaths, SessionSpec, SettingsSpec, ToolSet, ToolSpec,
};
use anyhow::{Context, bail};

/// `--bare`'s tools when `--tools` does not choose (as Claude Code's).
const BARE_TOOLS: [&str; 4] = ["Bash", "Read", "Edit", "Write"];

/// The session the flags describe, in `paths`; `sdk` when the Agent SDK
/// connects on stdin.
pub fn session_spec(cli: &Cli, sdk: bool, paths: SessionPaths) -> anyhow::Result<SessionSpec> {
    if cli.resume.as_deref() == Some("") {
        bail!(
            "--resume without a session id lists sessions to choose from on the interactive screen; here, name the session (--resume ID) or use --continue"
        );
    }
    let resume = match (&cli.resume, cli.continue_session) {
        (Some(id), _) => Some(Resume::Id(id.clone())),
        (None, true) => Some(Resume::Latest),
        (None, false) => None,
    };
    Ok(SessionSpec {
        paths,
        id: cli.session_id.map(|id| id.to_string()),
        settings: SettingsSpec {
            given: cli.settings.as_deref().map(given_settings).transpose()?,
            sources: setting_sources(cli)?,
            trust_workspace: cli.trust_workspace,
        },
        permissions: permissions(cli),
        add_dirs: cli.add_dir.clone(),
        mcp: Some(McpSetup {
            given: cli
                .mcp_config
                .iter()
                .map(|c| mcp_given(c))
                .collect::<anyhow::Result<_>>()?,
            strict: cli.strict_mcp_config || cli.bare,
        }),
        agents: agents(cli.agents.as_deref())?,
        history: HistorySetup {
            resume,
            fork: cli.fork_session,
            persist: !cli.no_session_persistence,
            name: cli.name.clone(),
            store: cli.transcript_store.clone(),
        },
        run: Some(run_setup(cli, sdk)?),
        tools: ToolSpec {
            set: tool_set(cli),
            agent_tool: !cli.bare || cli.agents.is_some(),
            web_search: true,
            code_mode: cli.code_mode,
            output_schema: cli
                .json_schema
                .as_deref()
                .map(crate::tools::structured_output::parse_schema)
                .transpose()?,
            // Verbose JSON output prints each result's `tool_use_result`.
            structured_results: cli.verbose && cli.output_format != OutputFormat::Text,
        },
        loads: Loads {
            hooks: !cli.bare,
            memory: !cli.bare,
            skills: !cli.disable_slash_commands,
            installed_plugins: !cli.bare,
            plugin_dirs: cli.plugin_dir.clone(),
            file_checkpoints: std::env::var("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING")
                .is_ok_and(|v| matches!(v.trim(), "1" | "true")),
        },
    })
}

fn permissions(cli: &Cli) -> PermissionSpec {
    PermissionSpec {
        mode: match cli.dangerously_skip_permissions {
            true => Some(PermissionMode::BypassPermissions),
            false => cli.permission_mode,
        },
        allowed: cli.allowed_tools.clone(),
        disallowed: cli.disallowed_tools.clone(),
        bypass_allowed: cli.allow_dangerously_skip_permissions,
        auto_model: cli.auto_mode_model.clone(),
        asker: Asker::from_prompt_tool(cli.permission_prompt_tool.as_deref()),
    }
}

/// `--settings FILE|JSON`.
pub fn given_settings(text: &str) -> anyhow::Result<GivenSettings> {
    if text.trim_start().starts_with('{') {
        let value = serde_json::from_str(text).context("--settings: not valid JSON")?;
        return Ok(GivenSettings::Inline(value));
    }
    Ok(GivenSettings::File(text.into()))
}

/// One `--mcp-config`: a file, or its content inline.
pub(super) fn mcp_given(text: &str) -> anyhow::Result<McpGiven> {
    if text.trim_start().starts_with('{') {
        let config = serde_json::from_str(text).context("--mcp-config: not valid JSON")?;
        return Ok(McpGiven::Inline {
            config,
            shown: "--mcp-config".into(),
        });
    }
    Ok(McpGiven::File(text.into()))
}

/// `--agents JSON`: agent definitions by name.
fn agents(json: Option<&str>) -> anyhow::Result<Vec<crate::subagents::AgentDefinition>> {
    let Some(json) = json else {
        return Ok(Vec::new());
    };
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| anyhow::anyhow!("--agents: not JSON: {e}"))?;
    crate::subagents::parse_json(&value, "--agents").map_err(anyhow::Error::msg)
}

/// The model and the loop, as the flags choose them.
fn run_setup(cli: &Cli, sdk: bool) -> anyhow::Result<RunSetup> {
    Ok(RunSetup {
        model: cli.model.clone(),
        fallback_models: cli.fallback_model.clone(),
        max_turns: cli.max_turns,
        max_budget_usd: cli.max_budget_usd,
        betas: cli.betas.clone(),
        effort: cli.effort,
        task_budget: cli.task_budget,
        thinking: crate::model::ThinkingChoice::from_flags(
            cli.unsupported.thinking.as_deref(),
            cli.unsupported.max_thinking_tokens.as_deref(),
        )
        .map_err(anyhow::Error::msg)?,
        prompt: PromptChoice {
            replace: match (&cli.system_prompt, &cli.system_prompt_file) {
                (Some(text), _) => Some(text.clone()),
                (None, Some(path)) => Some(
                    std::fs::read_to_string(path)
                        .with_context(|| format!("--system-prompt-file {}", path.display()))?,
                ),
                (None, None) => None,
            },
            append: cli.append_system_prompt.clone(),
        },
        environment_elsewhere: cli.exclude_dynamic_system_prompt_sections,
        agent: cli.agent.clone(),
        sdk,
    })
}

/// As Claude Code: no `--tools` or `default` is every built-in tool, `""`
/// none of them; plugin and MCP tools are offered either way.
fn tool_set(cli: &Cli) -> ToolSet {
    let named: Vec<String> = cli
        .tools
        .iter()
        .flat_map(|t| t.split([',', ' ']))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    if cli.tools.is_empty() && cli.bare {
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
    }
}

/// `--setting-sources` (`--setting-sources=`, the TypeScript SDK's `[]`:
/// none).
fn setting_sources(cli: &Cli) -> anyhow::Result<Option<Vec<SourceKind>>> {
    let Some(names) = &cli.setting_sources else {
        return Ok(None);
    };
    let kinds = names
        .iter()
        .filter(|name| !name.trim().is_empty())
        .map(|name| match name.trim() {
            "user" => Ok(SourceKind::User),
            "project" => Ok(SourceKind::Project),
            "local" => Ok(SourceKind::Local),
            other => Err(anyhow::anyhow!(
                "--setting-sources: `{other}` is not one of user, project, local"
            )),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Some(kinds))
}
