//! Subagents: the `Agent` tool starts an isolated child loop — its own
//! system prompt, history and turn count — whose final answer is the
//! tool's result. A child never has more than its parent: its tools are a
//! subset of the parent's ([`ToolSubset`]) and every call it makes goes
//! through the parent's pipeline, policy and sandbox; it cannot start
//! children of its own. Its lines carry the Agent call's id as
//! `parent_tool_use_id`; SubagentStop hooks (not Stop) see it end.
//!
//! Agents are defined as [`definitions`] says; a child can be waited for
//! (its final answer is the call's result) or run in the background (its
//! report arrives later as a task notification).
//!
//! Imports: `agent`, `files`, `hooks`, `model`, `prompt`, `sandbox`, `tools`,
//! `transcript` — folders below it; nothing that imports it.

mod spawn;
mod verifier;

pub use verifier::HookVerifier;
mod definitions;

pub use definitions::{
    AgentDefinition, GENERAL_PURPOSE, load_dir, merge, parse_json, parse_markdown,
};

use crate::agent::{
    AgentEvent, BatchCall, BatchDecision, EventRelay, EventSink, InputQueue, LoopHooks,
    NoHistoryLog, QueryConfig, QueryDeps, StopDecision, StopHookInput, ToolRuntime, ToolSubset,
    query,
};
use crate::hooks::HookRuntime;
use crate::hooks::{HookEvent, HookEventKind};
use crate::model::{Message, Model};
use crate::sandbox::{
    CallContext, ToolAnnotations, ToolContent, ToolDefinition, ToolFailure, ToolOutput,
};
use crate::tools::{AGENT_TOOL, NativeTool};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use tokio_util::sync::CancellationToken;

const DESCRIPTION: &str = "Start a subagent: a separate agent with its own context that works on one task and answers with a report. Use it for searches and investigations whose intermediate steps would fill your context, or to work on independent parts of a task at once (start several in one response). Give it a complete, self-contained prompt: it sees nothing of this conversation. Its final answer comes back as this tool's result; the user does not see it, so say what matters.";

/// The tool's definition: Claude Code's input schema; the description
/// lists the session's agent types.
pub fn definition(agents: &[AgentDefinition]) -> ToolDefinition {
    let types: Vec<String> = agents
        .iter()
        .map(|a| {
            let tools = a
                .tools
                .as_ref()
                .map_or("all tools".to_string(), |t| t.join(", "));
            format!("- {}: {} (tools: {tools})", a.name, a.description)
        })
        .collect();
    ToolDefinition {
        name: AGENT_TOOL.into(),
        description: format!(
            "{DESCRIPTION}\n\nAgent types (subagent_type; {GENERAL_PURPOSE} when none is given):\n{}",
            types.join("\n")
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
                "prompt": {"type": "string", "description": "The task for the agent to perform"},
                "subagent_type": {"type": "string", "description": "The type of agent to use"},
                "model": {"type": "string", "description": "A model for this agent instead of the session's"},
                "run_in_background": {"type": "boolean", "description": "Start the agent without waiting for it"}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
        .to_string(),
        annotations: ToolAnnotations::default(),
    }
}

/// What a child loop is started with: the parent's model, runtime, hooks,
/// output and configuration.
pub struct SubagentRunner {
    pub model: Arc<dyn Model>,
    /// The parent's tools (weak: the runtime holds this tool).
    pub parent_tools: Weak<dyn ToolRuntime>,
    pub hooks: Arc<HookRuntime>,
    /// Where the child's lines go (the session's output).
    pub sink: EventRelay,
    /// The parent's configuration; the child takes its limits and retries.
    pub config: QueryConfig,
    /// The session's model now (the SDK's `set_model` changes it), when
    /// it can change.
    pub current_model: Option<Arc<Mutex<String>>>,
    pub cwd: PathBuf,
    /// Ended with the session (a parent's abort ends its children).
    pub abort: CancellationToken,
    /// Where a background child's report goes: the session's input queue,
    /// as a task notification for the parent's next turn.
    pub notifications: Arc<InputQueue>,
    /// Where a background child's final text is kept (`output_file`).
    pub tasks_dir: PathBuf,
    /// The session's agent types (the SDK may add some at `initialize`).
    pub agents: std::sync::RwLock<Vec<AgentDefinition>>,
    /// The parent's transcript: children's go beside it (the session's
    /// folder, `subagents/agent-<id>.jsonl`, or the same store); `None`
    /// without persistence.
    pub transcripts: Option<crate::transcript::TranscriptPlace>,
    /// Background children still running, by task id (`stop_task`).
    pub running: Mutex<std::collections::HashMap<String, CancellationToken>>,
}

/// The `Agent` tool: registered with the session's tools, made with its
/// runner (the session's model, hooks and output).
pub struct AgentTool {
    runner: Arc<SubagentRunner>,
}

impl AgentTool {
    /// The verifiers `agent` hooks run, on this tool's runner.
    pub fn verifier(&self) -> Arc<dyn crate::hooks::AgentVerifier> {
        Arc::new(HookVerifier(Arc::downgrade(&self.runner)))
    }

    pub fn new(runner: SubagentRunner) -> Self {
        Self {
            runner: Arc::new(runner),
        }
    }

    /// Stops a background agent (the SDK's `stop_task`): false when no
    /// running agent has that task id.
    pub fn stop_task(&self, task_id: &str) -> bool {
        let token = self
            .runner
            .running
            .lock()
            .ok()
            .and_then(|mut running| running.remove(task_id));
        token.map(|t| t.cancel()).is_some()
    }

    /// The agent type of that name, as defined now.
    pub fn definition(&self, name: &str) -> Option<AgentDefinition> {
        let agents = self.runner.agents.read().ok()?;
        agents.iter().find(|a| a.name == name).cloned()
    }

    /// The agent types offered now (`system`/`init`'s `agents`).
    pub fn agent_names(&self) -> Vec<String> {
        self.runner
            .agents
            .read()
            .map(|a| a.iter().map(|a| a.name.clone()).collect())
            .unwrap_or_default()
    }

    /// The SDK's agents (`initialize`'s `agents`, the `--agents` shape);
    /// returns the tool's new definition to offer.
    pub fn add_agents(&self, value: &Value) -> Result<ToolDefinition, String> {
        let added = parse_json(value, "the SDK's agents")?;
        Ok(definition(&self.runner.add_agents(added)))
    }
}

impl NativeTool for AgentTool {
    fn concurrency_safe(&self) -> bool {
        // Children are independent loops: several run at once.
        true
    }

    fn presentation(&self) -> crate::tools::Presentation {
        crate::tools::Presentation {
            kind: crate::tools::ToolKind::Think,
            action: Some("start an agent"),
            subject: crate::tools::Subject::Field("description"),
            ..crate::tools::Presentation::UNKNOWN
        }
    }

    fn call<'a>(
        &'a self,
        context: &'a CallContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let runner = &self.runner;
            if input["run_in_background"] == true {
                return runner.launch(&context.tool_use_id, input);
            }
            let abort = runner.abort.child_token();
            runner.run(&context.tool_use_id, input, abort, None).await
        })
    }
}

impl SubagentRunner {
    /// Starts a child without waiting: the call is answered at once, and
    /// the child's report reaches the parent as a task notification (a
    /// queued message) when it ends. The session does not end before it.
    fn launch(
        self: &Arc<Self>,
        tool_use_id: &str,
        input: &Value,
    ) -> Result<ToolOutput, ToolFailure> {
        self.agent(input)?;
        let task_id = format!("agent-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let description = input["description"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.emit(AgentEvent::TaskStarted {
            task_id: task_id.clone(),
            description: description.clone(),
            tool_use_id: tool_use_id.to_string(),
        });
        let hold = self.notifications.hold();
        let runner = self.clone();
        let (tool_use_id, input, task) = (tool_use_id.to_string(), input.clone(), task_id.clone());
        let stop = self.abort.child_token();
        if let Ok(mut running) = self.running.lock() {
            running.insert(task_id.clone(), stop.clone());
        }
        tokio::spawn(async move {
            let finished = runner
                .run(
                    &tool_use_id,
                    &input,
                    stop.clone(),
                    Some((task.clone(), description.clone())),
                )
                .await;
            if let Ok(mut running) = runner.running.lock() {
                running.remove(&task);
            }
            let (status, text) = match &finished {
                _ if stop.is_cancelled() && !runner.abort.is_cancelled() => (
                    "stopped",
                    "The agent was stopped before it finished.".to_string(),
                ),
                Ok(output) => ("completed", output_text(output)),
                Err(ToolFailure::Failed(e) | ToolFailure::InvalidInput(e)) => ("failed", e.clone()),
            };
            let output_file = runner.tasks_dir.join(format!("{task}.output"));
            let kept = crate::files::write(&output_file, text.as_bytes());
            if let Err(e) = kept {
                tracing::warn!(task = %task, "keeping the agent's output failed: {e}");
            }
            let ended = crate::agent::TaskEnd {
                task_id: task.clone(),
                tool_use_id: tool_use_id.clone(),
                status,
                summary: format!("Agent \"{description}\" {status}"),
                output_file: output_file.display().to_string(),
                result: text,
            };
            runner.emit(ended.event());
            runner.notifications.push(ended.message());
            drop(hold);
        });
        Ok(ToolOutput {
            content: vec![ToolContent::Text(format!(
                "Started agent {task_id} in the background. Its report will arrive as a task notification when it ends: do not start it again, and do not wait for it with tools."
            ))],
            is_error: false,
            structured: Some(json!({"status": "async_launched", "taskId": task_id}).to_string()),
        })
    }

    fn emit(&self, event: AgentEvent) {
        self.sink.send(event);
    }

    /// The agent type the call names (general-purpose when none).
    fn agent(&self, input: &Value) -> Result<AgentDefinition, ToolFailure> {
        let wanted = input["subagent_type"].as_str().unwrap_or(GENERAL_PURPOSE);
        let agents = self
            .agents
            .read()
            .map_err(|_| ToolFailure::Failed("the agent list is unusable".into()))?;
        agents
            .iter()
            .find(|a| a.name == wanted)
            .cloned()
            .ok_or_else(|| {
                ToolFailure::InvalidInput(format!(
                    "no agent type `{wanted}` (available: {})",
                    agents
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// Adds (or replaces, by name) agent types; returns the whole list.
    pub fn add_agents(&self, added: Vec<AgentDefinition>) -> Vec<AgentDefinition> {
        match self.agents.write() {
            Ok(mut agents) => {
                let merged = merge(vec![std::mem::take(&mut *agents), added]);
                *agents = merged.clone();
                merged
            }
            Err(_) => Vec::new(),
        }
    }

    /// One child to its end; `abort` (the session's, or a background
    /// task's own) ends it early. A background child (`task`: its id and
    /// description) reports its progress after each tool call.
    async fn run(
        &self,
        tool_use_id: &str,
        input: &Value,
        abort: CancellationToken,
        task: Option<(String, String)>,
    ) -> Result<ToolOutput, ToolFailure> {
        let agent = self.agent(input)?;
        let prompt = input["prompt"].as_str().unwrap_or_default();
        if prompt.trim().is_empty() {
            return Err(ToolFailure::InvalidInput("the prompt is empty".into()));
        }
        let child = Child {
            tool_use_id,
            agent: &agent,
            input,
        };
        if self
            .hooks
            .has_middleware(crate::hooks::MiddlewareEvent::SubagentSpawn)
        {
            return self
                .spawn_through_middleware(child, prompt, abort, task)
                .await;
        }
        self.run_child(child, prompt, abort, task).await
    }

    /// The child, started with `prompt`, to its end.
    async fn run_child(
        &self,
        child: Child<'_>,
        prompt: &str,
        abort: CancellationToken,
        task: Option<(String, String)>,
    ) -> Result<ToolOutput, ToolFailure> {
        let Child {
            tool_use_id,
            agent,
            input,
        } = child;
        let agent_type = agent.name.as_str();
        let agent_id = format!("agent-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let tools = self.child_tools(agent, &agent_id)?;
        let config = self.child_config(agent, input);
        let transcript = self.child_transcript(&agent_id, agent_type);
        let hooks = ChildHooks {
            hooks: self.hooks.clone(),
            agent: (agent_id.clone(), agent_type.to_string()),
            transcript_path: transcript
                .as_ref()
                .map(|t| t.path().display().to_string())
                .unwrap_or_default(),
        };
        if self.hooks.handles(HookEventKind::SubagentStart) {
            // Told, not asked: what it answers does not change the child.
            self.hooks
                .run_for_agent(HookEvent::SubagentStart, hooks.agent.clone())
                .await;
        }
        let deps = QueryDeps {
            model: self.model.as_ref(),
            tools,
            hooks: &hooks,
            history: match &transcript {
                Some(transcript) => transcript as &dyn crate::agent::HistoryLog,
                None => &NoHistoryLog,
            },
            input: None,
            abort,
        };
        let mut sink = ChildSink {
            parent_tool_use_id: tool_use_id.to_string(),
            sink: self.sink.clone(),
            progress: task.map(|(task_id, description)| Progress {
                task_id,
                description,
                subagent_type: agent_type.to_string(),
                started: std::time::Instant::now(),
                total_tokens: 0,
                tool_uses: 0,
                last_tool_name: String::new(),
            }),
        };
        let outcome = query(&deps, &config, vec![Message::user_text(prompt)], &mut sink).await;
        if let Some(transcript) = &transcript {
            transcript.flush();
        }
        report(agent_type, outcome)
    }

    /// The child's tools: the parent's that the agent names, never the
    /// Agent tool itself, StructuredOutput or ExitPlanMode; its calls told
    /// to the hooks as the agent's.
    fn child_tools(
        &self,
        agent: &AgentDefinition,
        agent_id: &str,
    ) -> Result<Arc<ToolSubset>, ToolFailure> {
        let Some(parent) = self.parent_tools.upgrade() else {
            return Err(ToolFailure::Failed("the session is ending".into()));
        };
        let agent_type = agent.name.as_str();
        let tagging = (
            self.hooks.clone(),
            agent_id.to_string(),
            agent_type.to_string(),
        );
        Ok(Arc::new(
            ToolSubset::new(
                parent,
                agent.tools.as_deref(),
                // No grandchildren; the session's answer is the parent's
                // to give, and so is leaving plan mode (as in Claude Code).
                &[
                    AGENT_TOOL,
                    crate::agent::STRUCTURED_OUTPUT_TOOL,
                    crate::tools::exit_plan_mode::EXIT_PLAN_MODE_TOOL,
                ],
            )
            .observed(Arc::new(move |call| {
                tagging.0.tag_agent_call(&call.id, &tagging.1, &tagging.2)
            })),
        ))
    }

    /// The child's configuration: the parent's limits and retries, the
    /// model the call or the agent names (else the session's now), the
    /// agent's prompt; a child reports in text.
    fn child_config(&self, agent: &AgentDefinition, input: &Value) -> QueryConfig {
        let mut config = self.config.clone();
        // A child reports in text; only the session's answer is structured.
        config.structured_output = None;
        if let Some(model) = self
            .current_model
            .as_ref()
            .and_then(|m| m.lock().ok().map(|m| m.clone()))
        {
            config.model = model;
        }
        if let Some(model) = input["model"]
            .as_str()
            .filter(|m| !m.trim().is_empty())
            .or(agent.model.as_deref())
        {
            config.model = crate::model::resolve_model(model);
        }
        let environment = crate::prompt::Environment::detect(
            &self.cwd,
            &[],
            &config.model,
            &crate::agent::today(),
        );
        config.system_prompt = crate::prompt::child_prompt(&agent.prompt, &environment);
        config
    }

    /// The child's transcript beside the parent's, when the session keeps
    /// one (a child whose transcript cannot be kept runs without).
    fn child_transcript(
        &self,
        agent_id: &str,
        agent_type: &str,
    ) -> Option<crate::transcript::Transcript> {
        self.transcripts.as_ref().and_then(|parent| {
            let opening = crate::transcript::Opening::New {
                forked_from: None,
                history: &[],
                name: Some(agent_type),
            };
            crate::transcript::Transcript::open(
                parent.child(agent_id),
                agent_id,
                &self.cwd,
                opening,
            )
            .map_err(|e| tracing::warn!("the agent's transcript cannot be kept: {e}"))
            .ok()
        })
    }
}

/// What the child's run comes to as the Agent call's result.
fn report(
    agent_type: &str,
    outcome: crate::agent::QueryOutcome,
) -> Result<ToolOutput, ToolFailure> {
    let report = json!({
        "agentType": agent_type,
        "terminal": outcome.terminal.as_str(),
        "numTurns": outcome.num_turns,
        "totalCostUsd": outcome.cost_usd,
    });
    if outcome.is_error() {
        return Err(ToolFailure::Failed(format!(
            "The agent ended without finishing ({}): {}",
            outcome.terminal.as_str(),
            outcome.result
        )));
    }
    Ok(ToolOutput {
        content: vec![ToolContent::Text(outcome.result)],
        is_error: false,
        structured: Some(report.to_string()),
    })
}

fn output_text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|c| match c {
            ToolContent::Text(text) => Some(text.as_str()),
            ToolContent::Image { .. } => None,
        })
        .collect()
}

/// A child about to start: the Agent call that starts it.
#[derive(Clone, Copy)]
struct Child<'a> {
    tool_use_id: &'a str,
    agent: &'a AgentDefinition,
    input: &'a Value,
}

/// The child's events, shown as the parent's Agent call's.
struct ChildSink {
    parent_tool_use_id: String,
    sink: EventRelay,
    /// A background child's progress, told after each of its tool calls.
    progress: Option<Progress>,
}

/// What a background child has done so far.
struct Progress {
    task_id: String,
    description: String,
    subagent_type: String,
    started: std::time::Instant,
    total_tokens: u64,
    tool_uses: u64,
    last_tool_name: String,
}

impl Progress {
    /// The `task_progress` event after `event`, if it ended a tool call.
    fn follow(&mut self, event: &AgentEvent, tool_use_id: &str) -> Option<AgentEvent> {
        match event {
            AgentEvent::AssistantBlock { block, usage, .. } => {
                self.total_tokens = usage.input_tokens
                    + usage.cache_creation_input_tokens
                    + usage.cache_read_input_tokens
                    + usage.output_tokens;
                if let crate::model::ContentBlock::ToolUse { name, .. } = block {
                    self.last_tool_name = name.clone();
                }
                None
            }
            AgentEvent::ToolResult(_) => {
                self.tool_uses += 1;
                Some(AgentEvent::TaskProgress {
                    task_id: self.task_id.clone(),
                    tool_use_id: tool_use_id.to_string(),
                    description: self.description.clone(),
                    subagent_type: self.subagent_type.clone(),
                    total_tokens: self.total_tokens,
                    tool_uses: self.tool_uses,
                    duration_ms: u64::try_from(self.started.elapsed().as_millis())
                        .unwrap_or(u64::MAX),
                    last_tool_name: self.last_tool_name.clone(),
                })
            }
            _ => None,
        }
    }
}

impl EventSink for ChildSink {
    fn emit(&mut self, event: AgentEvent) {
        let progress = self
            .progress
            .as_mut()
            .and_then(|p| p.follow(&event, &self.parent_tool_use_id));
        let child = AgentEvent::Child {
            parent_tool_use_id: self.parent_tool_use_id.clone(),
            event: Box::new(event),
        };
        self.sink.send_all(std::iter::once(child).chain(progress));
    }
}

/// A child's loop hooks: SubagentStop where the parent has Stop, told
/// which agent it is.
struct ChildHooks {
    hooks: Arc<HookRuntime>,
    /// (agent_id, agent_type).
    agent: (String, String),
    /// The child's own transcript, when one is kept.
    transcript_path: String,
}

impl LoopHooks for ChildHooks {
    fn on_stop(&self, input: StopHookInput) -> BoxFuture<'_, StopDecision> {
        Box::pin(async move {
            if !self.hooks.handles(HookEventKind::SubagentStop) {
                return StopDecision::Allow;
            }
            let answer = self
                .hooks
                .run_for_agent(
                    HookEvent::SubagentStop {
                        stop_hook_active: input.stop_hook_active,
                        last_assistant_message: input.last_assistant_message,
                        agent_transcript_path: self.transcript_path.clone(),
                    },
                    self.agent.clone(),
                )
                .await;
            crate::hooks::stop_decision(answer.into())
        })
    }

    fn after_batch(&self, batch: Vec<BatchCall>) -> BoxFuture<'_, BatchDecision> {
        self.hooks.after_batch(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::ToolCallResult;
    use crate::model::{ContentBlock, Usage};

    #[test]
    fn a_background_child_reports_progress_after_each_tool_call() {
        let mut progress = Progress {
            task_id: "agent-1".into(),
            description: "read notes".into(),
            subagent_type: GENERAL_PURPOSE.into(),
            started: std::time::Instant::now(),
            total_tokens: 0,
            tool_uses: 0,
            last_tool_name: String::new(),
        };
        let call = AgentEvent::AssistantBlock {
            message_id: "m".into(),
            model: "x".into(),
            block: ContentBlock::ToolUse {
                id: "t".into(),
                name: "Read".into(),
                input: json!({}),
            },
            usage: Usage {
                input_tokens: 10,
                output_tokens: 1,
                ..Usage::default()
            },
        };
        assert_eq!(progress.follow(&call, "toolu_bg"), None);
        let result = AgentEvent::ToolResult(ToolCallResult::error("t", "nope"));
        match progress.follow(&result, "toolu_bg") {
            Some(AgentEvent::TaskProgress {
                task_id,
                tool_use_id,
                total_tokens,
                tool_uses,
                last_tool_name,
                ..
            }) => {
                assert_eq!(
                    (task_id.as_str(), tool_use_id.as_str()),
                    ("agent-1", "toolu_bg")
                );
                assert_eq!((total_tokens, tool_uses), (11, 1));
                assert_eq!(last_tool_name, "Read");
            }
            other => panic!("no progress: {other:?}"),
        }
    }
}
