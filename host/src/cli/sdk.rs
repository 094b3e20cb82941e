//! The Agent SDK's side of a stream-json session: the control channel,
//! the SDK's permission prompter, the session handles its requests act on,
//! and its in-process MCP servers.

use super::Cli;
use crate::control::mcp_servers::McpServers;
use crate::control::{
    ControlChannel, Controller, SdkMcpLine, SdkPrompter, SessionControl, SkillsControl, TurnSlot,
};
use crate::output::SharedPrinter;
use crate::session::Session;
use crate::subagents::AgentTool;
use std::sync::{Arc, Mutex};

/// What the SDK's requests reach.
pub struct SdkWiring<'a> {
    pub cli: &'a Cli,
    pub session: &'a Session,
    pub printer: &'a SharedPrinter<std::io::Stdout>,
    pub model: &'a Arc<Mutex<String>>,
    pub default_model: &'a str,
    pub turn: &'a TurnSlot,
    pub api_key_source: &'a str,
    pub agent_tool: &'a Arc<AgentTool>,
    pub overrides: &'a Arc<crate::control::turn::TurnOverrides>,
    pub meter: Option<&'a Arc<crate::control::usage::ContextMeter>>,
    pub user_context: &'a [String],
    pub loop_tools: &'a Arc<dyn crate::agent::ToolRuntime>,
}

/// The controller of one SDK session.
pub fn controller(w: SdkWiring<'_>) -> Arc<Controller> {
    let channel = Arc::new(ControlChannel::new(Box::new(w.printer.clone())));
    if w.cli.permission_prompt_tool.as_deref() == Some(crate::tools::STDIO_PROMPT) {
        let prompter = Arc::new(SdkPrompter::new(
            channel.clone(),
            w.session.pipeline.policy().mode_cell().clone(),
        ));
        // A command's connection to an unlisted host is asked too.
        if let Some(egress) = &w.session.egress {
            egress.set_asker(prompter.clone());
        }
        w.session.pipeline.set_prompter(prompter);
    }
    let status = Arc::new(Mutex::new(w.session.mcp_status()));
    let mcp = Arc::new(dynamic_servers(&w, &channel, &status));
    Arc::new(Controller {
        channel,
        session: SessionControl {
            session_id: w.session.id.clone(),
            mode: w.session.pipeline.policy().mode_cell().clone(),
            model: w.model.clone(),
            default_model: w.default_model.to_string(),
            turn: w.turn.clone(),
            mcp_servers: status,
            mcp: Some(mcp),
            api_key_source: w.api_key_source.to_string(),
            hooks: w.session.hooks.clone(),
            add_agents: Some({
                let (tool, pipeline) = (w.agent_tool.clone(), w.session.pipeline.clone());
                Box::new(move |agents: &serde_json::Value| {
                    let definition = tool.add_agents(agents)?;
                    pipeline
                        .replace_native_tool(definition, tool.clone())
                        .map_err(|e| e.to_string())
                })
            }),
            start: Default::default(),
            overrides: w.overrides.clone(),
            usage: w.meter.cloned().unwrap_or_default(),
            checkpoints: w.session.checkpoints.clone(),
            tools: Some(w.session.pipeline.clone()),
            stop_task: Some({
                let (agents, shells) = (w.agent_tool.clone(), w.session.sandbox.shells().cloned());
                Box::new(move |task: &str| {
                    if agents.stop_task(task) {
                        return Ok(());
                    }
                    match &shells {
                        Some(shells) => shells.stop(task).map(|_| ()),
                        None => Err(format!("No task `{task}` is running in this w.session.")),
                    }
                })
            }),
            skills: Some(SkillsControl {
                user_context: w.user_context.to_vec(),
                listed: w.session.skills_listed,
            }),
        },
    })
}

/// The servers the SDK may set and reconnect, their tools offered through
/// the session's pipeline; each change is told in the next `system`/`init`.
fn dynamic_servers(
    w: &SdkWiring<'_>,
    channel: &Arc<ControlChannel>,
    status: &Arc<Mutex<Vec<serde_json::Value>>>,
) -> McpServers {
    let env = w.session.settings.env.clone();
    let expandable = w.session.settings.mcp_expandable.clone();
    let parse = Box::new(move |text: &str| {
        let lookup = |name: &str| env.get(name).cloned().or_else(|| std::env::var(name).ok());
        crate::mcp::config::parse(text, "mcp_set_servers", &lookup, &expandable)
            .map_err(|e| e.to_string())
    });
    let (printer, tools) = (w.printer.clone(), w.loop_tools.clone());
    McpServers::new(
        w.session.mcp_launcher.clone(),
        w.session.pipeline.clone(),
        channel.clone(),
        w.session.mcp_configs.clone(),
        status.clone(),
        parse,
    )
    .on_change(Box::new(move |servers| {
        let names = tools.specs().into_iter().map(|s| s.name).collect();
        printer.update_info(|info| {
            info.tools = names;
            info.mcp_servers = servers;
        });
    }))
}

/// Connects the SDK's in-process MCP servers through the control protocol
/// and offers their tools; a server that does not answer is reported, as
/// any server that fails to start.
pub async fn connect_sdk_servers(
    session: &Session,
    names: &[String],
    controller: &Controller,
) -> anyhow::Result<()> {
    let lines = names
        .iter()
        .map(|name| {
            let line: Arc<dyn crate::mcp::channel::McpLine> =
                Arc::new(SdkMcpLine::new(name, controller.channel.clone()));
            (name.clone(), line)
        })
        .collect();
    let statuses = crate::mcp::connect_sdk(
        &session.sandbox,
        lines,
        crate::sandbox::CallLimits::default(),
        crate::mcp::DEFAULT_STARTUP,
    )
    .await?;
    for status in &statuses {
        match &status.outcome {
            Ok(server) => {
                for warning in session.pipeline.add_mcp_server(server) {
                    eprintln!("carapace: warning: {warning}");
                }
            }
            Err(e) => eprintln!(
                "carapace: warning: SDK MCP server `{}` failed to start: {e}",
                status.name
            ),
        }
    }
    if let Ok(mut servers) = controller.session.mcp_servers.lock() {
        servers.extend(statuses.iter().map(crate::mcp::ServerStatus::to_json));
    }
    Ok(())
}
