//! Where a session's tools, MCP servers and agent types come from: the
//! plugin stores (the project's only in a trusted workspace), a lone
//! plugin for `tool call`, the MCP configuration files and flags, the
//! agent folders and flags.

use super::SessionPaths;
use super::builder::{SessionBuilder, SessionError};
use super::spec::{McpGiven, McpSetup};
use crate::commands::PluginDir;
use crate::mcp::ServerConfig;
use crate::plugin_store::{Placeholders, PluginStore, Scope};
use crate::sandbox::{CallLimits, Sandbox, ToolComponent};
use crate::settings::{ProjectItem, Settings};
use crate::tools::{BUILTIN_PLUGINS, ToolRegistry};
use std::path::Path;
use std::sync::Arc;

impl SessionBuilder {
    /// The session's agent types, when it offers the Agent tool: built in, the user's files, the
    /// `--plugin-dir` folders' (as `plugin:name`), the project's (trusted
    /// workspace only), then `--agents`.
    pub(super) fn agent_types(
        &self,
        plugins: &[PluginDir],
        settings: &Settings,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<crate::subagents::AgentDefinition>, SessionError> {
        if !self.spec.tools.agent_tool || self.spec.run.is_none() {
            return Ok(Vec::new());
        }
        let (cwd, config_dir) = (&self.spec.paths.cwd, &self.spec.paths.config_dir);
        // Later groups win a name: Claude Code's folder, then carapace's, at
        // each level.
        let mut groups = vec![
            crate::subagents::load_dir(
                &self.spec.paths.home.join(".claude").join("agents"),
                warnings,
            ),
            crate::subagents::load_dir(&config_dir.join("agents"), warnings),
        ];
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
        for project in [
            cwd.join(".claude").join("agents"),
            cwd.join(".carapace").join("agents"),
        ] {
            if project.is_dir()
                && settings.trust.admits(
                    ProjectItem::Agents,
                    &project.display().to_string(),
                    warnings,
                )
            {
                groups.push(crate::subagents::load_dir(&project, warnings));
            }
        }
        if !self.spec.agents.is_empty() {
            groups.push(self.spec.agents.clone());
        }
        Ok(crate::subagents::merge(groups))
    }
}

/// An MCP configuration in `.mcp.json`'s shape: a file's text, or given
/// as JSON.
enum Found {
    Text(String),
    Value(serde_json::Value),
}

/// The MCP servers of this session: those given for it (a file, the same
/// shape inline, or servers described), then — unless strict — `~/.carapace/mcp.json` and, in a trusted
/// workspace only, the project's `.mcp.json`. A name configured twice keeps
/// its first definition.
pub(super) fn mcp_configs(
    setup: &McpSetup,
    paths: &SessionPaths,
    settings: &Settings,
    plugins: &[PluginDir],
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Result<Vec<ServerConfig>, SessionError> {
    let (cwd, config_dir) = (&paths.cwd, &paths.config_dir);
    let mut sources: Vec<(Found, String, &'static str)> = Vec::new();
    for config in &setup.given {
        sources.push(match config {
            McpGiven::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    SessionError::Invalid(format!("--mcp-config: reading {}: {e}", path.display()))
                })?;
                (Found::Text(text), path.display().to_string(), "dynamic")
            }
            McpGiven::Inline { config, shown } => {
                (Found::Value(config.clone()), shown.clone(), "dynamic")
            }
        });
    }
    if !setup.strict {
        let user = config_dir.join("mcp.json");
        if let Ok(text) = std::fs::read_to_string(&user) {
            sources.push((Found::Text(text), user.display().to_string(), "user"));
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
            sources.push((Found::Text(text), project.display().to_string(), "project"));
        }
    }
    let mut servers: Vec<ServerConfig> = Vec::new();
    if !setup.strict {
        servers.extend(plugin_mcp(plugins, settings, env, warnings));
    }
    for (found, source, scope) in sources {
        let mut parsed = match found {
            Found::Text(text) => {
                crate::mcp::config::parse_all(&text, &source, env, &settings.mcp_expandable)?
            }
            Found::Value(value) => {
                crate::mcp::config::parse_value(value, &source, env, &settings.mcp_expandable)?
            }
        };
        for server in &mut parsed.servers {
            server.scope = scope;
        }
        // One entry carapace cannot start is a warning about that server;
        // the others start.
        warnings.extend(
            parsed
                .skipped
                .iter()
                .map(|e| format!("{e}; this server is not started")),
        );
        for server in parsed.servers {
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

/// The MCP servers of the `--plugin-dir` plugins: each plugin's `.mcp.json`
/// (either shape), `${CLAUDE_PLUGIN_ROOT}` its folder, each server named
/// `plugin_PLUGIN_SERVER` so that two plugins' servers never collide.
fn plugin_mcp(
    plugins: &[PluginDir],
    settings: &Settings,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Vec<ServerConfig> {
    let mut servers = Vec::new();
    // A plugin held back (its content is not what was approved) starts
    // no server; the user was told why.
    for plugin in plugins.iter().filter(|p| p.held.is_none()) {
        let file = plugin.root.join(".mcp.json");
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let root = plugin.root.display().to_string();
        let env = |name: &str| match name {
            "CLAUDE_PLUGIN_ROOT" => Some(root.clone()),
            _ => env(name),
        };
        let shown = file.display().to_string();
        match crate::mcp::config::parse_all(&text, &shown, &env, &settings.mcp_expandable) {
            Ok(parsed) => {
                warnings.extend(
                    parsed
                        .skipped
                        .iter()
                        .map(|e| format!("{e}; this server is not started")),
                );
                servers.extend(parsed.servers.into_iter().map(|mut server| {
                    server.scope = "plugin";
                    let plugin_name: String = plugin
                        .name
                        .chars()
                        .map(|c| {
                            if c.is_ascii_alphanumeric() || c == '-' {
                                c
                            } else {
                                '_'
                            }
                        })
                        .collect();
                    server.name = format!("plugin_{plugin_name}_{}", server.name);
                    server
                }));
            }
            Err(e) => warnings.push(format!("{e}; the plugin's MCP servers are not started")),
        }
    }
    servers
}

/// Adds the installed plugins' tools (the project's only in a trusted
/// workspace). A plugin that cannot load is reported and skipped; the
/// session goes on. Returns what `system`/`init` lists.
pub(super) fn load_installed(
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
                .map(|mut tools| {
                    tools.config = plugin_config(settings, record.name());
                    tools
                })
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

/// What the settings' `pluginConfig` gives `plugin` to read through
/// `wasi:config/store`.
fn plugin_config(settings: &Settings, plugin: &str) -> Vec<(String, String)> {
    settings
        .plugin_config
        .get(plugin)
        .map(|values| values.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// A registry holding one plugin: a `.wasm` with its manifest, installed
/// (user, then project scope), or first-party.
pub(super) async fn one_plugin(
    sandbox: &Sandbox,
    paths: &SessionPaths,
    places: &Placeholders,
    settings: &Settings,
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
            let mut tools = store
                .registration(&record, places, &CallLimits::default())
                .map_err(|e| SessionError::Invalid(e.to_string()))?;
            tools.config = plugin_config(settings, record.name());
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
