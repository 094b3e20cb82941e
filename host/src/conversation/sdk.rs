//! The Agent SDK's side of a stream-json session: the control channel,
//! the SDK's permission prompter, the session handles its requests act on,
//! and its in-process MCP servers.

use super::print_error::PrintError;
use super::stream_input::read_input_lines;
use crate::agent::QueryConfig;
use crate::control::mcp_servers::McpServers;
use crate::control::start::Start;
use crate::control::{
    ControlChannel, Controller, SdkMcpLine, SessionControl, SkillsControl, TurnSlot,
};
use crate::conversation::Prompts;
use crate::output::SharedPrinter;
use crate::session::{Session, SessionRun};
use std::sync::{Arc, Mutex};

/// What the SDK's requests reach.
pub struct SdkWiring<'a> {
    /// The control channel (made before the session started: it answers
    /// the session's questions).
    pub channel: Arc<ControlChannel>,
    /// The model was chosen for the run (an SDK agent's does not replace
    /// it).
    pub model_given: bool,
    pub session: &'a Session,
    pub run: &'a SessionRun,
    pub printer: &'a SharedPrinter<std::io::Stdout>,
    pub turn: &'a TurnSlot,
    pub overrides: &'a Arc<crate::control::turn::TurnOverrides>,
    pub meter: Option<&'a Arc<crate::control::usage::ContextMeter>>,
}

/// Connects the Agent SDK: its control channel rides along the messages
/// on stdin. What its `initialize` sets (the system prompt, its agents,
/// its in-process MCP servers) is applied to `config` before the first
/// turn and the init line.
pub async fn connect(w: SdkWiring<'_>, config: &mut QueryConfig) -> Result<Prompts, PrintError> {
    let controller = controller(&w, &config.model, &config.user_context);
    let reader = tokio::io::BufReader::new(tokio::io::stdin());
    let queue = w.session.queue.clone();
    tokio::spawn(read_input_lines(
        reader,
        queue.clone(),
        w.printer.clone(),
        Some(controller.clone()),
    ));
    let (session, run) = (w.session, w.run);
    let mut choice = run.prompt.clone();
    let mut main_agent = run.main.agent.clone();
    let mut sdk_servers = session.sdk_mcp_servers.clone();
    if let Start::Initialized(options) = controller.session.start.settled().await {
        choice = super::context::with_start(choice, &options);
        for name in options.sdk_mcp_servers {
            if !sdk_servers.contains(&name) {
                sdk_servers.push(name);
            }
        }
        let agents = agent_names(session);
        if !agents.is_empty() {
            w.printer.update_info(|info| info.agents = agents);
        }
    }
    if let Some(name) = &run.main.deferred {
        main_agent = Some(deferred_agent(&w, name, config)?);
    }
    let prompt_for = |tools: &[String]| {
        let style = session.output_style.as_ref();
        run.system_prompt(&choice, tools, main_agent.as_ref(), style)
    };
    let tools = tool_names(session);
    config.system_prompt = prompt_for(&tools);
    w.printer.update_info(|info| {
        info.tools = tools;
        info.model = config.model.clone();
    });
    // The SDK's in-process MCP servers, now that it can answer.
    if !sdk_servers.is_empty() {
        connect_sdk_servers(session, &sdk_servers, &controller).await?;
        let tools = tool_names(session);
        config.system_prompt = prompt_for(&tools);
        let servers = controller
            .session
            .mcp_servers
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        w.printer.update_info(|info| {
            info.tools = tools;
            info.mcp_servers = servers;
        });
    }
    Ok(Prompts::Stream(queue))
}

fn tool_names(session: &Session) -> Vec<String> {
    session
        .loop_tools
        .specs()
        .into_iter()
        .map(|s| s.name)
        .collect()
}

fn agent_names(session: &Session) -> Vec<String> {
    session
        .agent_tool
        .as_ref()
        .map(|tool| tool.agent_names())
        .unwrap_or_default()
}

/// The agent `--agent` named, defined by the SDK's `initialize`: the loop
/// offers its tools, and runs its model unless the flags name one.
fn deferred_agent(
    w: &SdkWiring<'_>,
    name: &str,
    config: &mut QueryConfig,
) -> Result<crate::subagents::AgentDefinition, PrintError> {
    let session = w.session;
    let agent = session
        .agent_tool
        .as_ref()
        .and_then(|tool| tool.definition(name))
        .ok_or_else(|| PrintError::UnknownAgent {
            name: name.to_string(),
            known: agent_names(session).join(", "),
        })?;
    if let (Some(subset), Some(names)) = (&session.loop_subset, &agent.tools) {
        subset.restrict(crate::session::agent_tools(names));
    }
    if !w.model_given
        && let Some(model) = agent.model.clone()
    {
        config.model = model.clone();
        if let Ok(mut current) = w.run.model_name.lock() {
            *current = model;
        }
    }
    Ok(agent)
}

/// The controller of one SDK session.
fn controller(w: &SdkWiring<'_>, default_model: &str, user_context: &[String]) -> Arc<Controller> {
    let channel = w.channel.clone();
    let status = Arc::new(Mutex::new(w.session.mcp_status()));
    let mcp = Arc::new(dynamic_servers(w, &channel, &status));
    Arc::new(Controller {
        channel,
        session: SessionControl {
            session_id: w.session.id.clone(),
            mode: w.session.pipeline.policy().mode_cell().clone(),
            model: w.run.model_name.clone(),
            default_model: default_model.to_string(),
            turn: w.turn.clone(),
            mcp_servers: status,
            mcp: Some(mcp),
            api_key_source: w.run.api_key_source.to_string(),
            hooks: w.session.hooks.clone(),
            add_agents: w.session.agent_tool.clone().map(|tool| {
                let pipeline = w.session.pipeline.clone();
                Box::new(move |agents: &serde_json::Value| {
                    let definition = tool.add_agents(agents)?;
                    pipeline
                        .replace_native_tool(definition, tool.clone())
                        .map_err(|e| e.to_string())
                }) as crate::control::AgentAdder
            }),
            start: Default::default(),
            overrides: w.overrides.clone(),
            usage: w.meter.cloned().unwrap_or_default(),
            checkpoints: w.session.checkpoints.clone(),
            tools: Some(w.session.pipeline.clone()),
            stop_task: Some({
                let agents = w.session.agent_tool.clone();
                let shells = w.session.sandbox.shells().cloned();
                Box::new(move |task: &str| {
                    if agents.as_ref().is_some_and(|a| a.stop_task(task)) {
                        return Ok(());
                    }
                    match &shells {
                        Some(shells) => shells.stop(task).map(|_| ()),
                        None => Err(format!("No task `{task}` is running in this session.")),
                    }
                })
            }),
            skills: Some(SkillsControl {
                user_context: user_context.to_vec(),
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
    let (printer, tools) = (w.printer.clone(), w.session.loop_tools.clone());
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
) -> Result<(), PrintError> {
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
    .await
    .map_err(PrintError::SdkServers)?;
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
