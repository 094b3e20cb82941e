//! What runs a registered tool's calls: a component, a tool the host runs
//! itself, or an MCP server's tool through the bridge — and how each one
//! plans and makes a call.

use crate::mcp::McpServer;
use crate::mcp::bridge::BridgeError;
use crate::policy::Ceiling;
use crate::sandbox::{
    CallContext, CallError, CallPlan, InterruptBehavior, PlanError, ToolComponent, ToolContent,
    ToolFailure, ToolInvocation, ToolOutput,
};
use serde_json::Value;
use std::sync::Arc;

/// A tool the host runs itself because it drives the session rather than
/// touching the system: the Agent tool runs a child loop, ExitPlanMode
/// changes the mode, WebSearch asks the model, BashOutput and KillShell
/// reach the host's background shells. It holds no grant: whatever a child
/// or a shell does went through the pipeline call by call.
pub trait NativeTool: Send + Sync {
    /// Whether several calls may run at once (the Agent tool's children do).
    fn concurrency_safe(&self) -> bool;

    /// How its calls are shown (by default, by their input).
    fn presentation(&self) -> super::Presentation {
        super::Presentation::default()
    }

    /// Whether its calls start a skill: the pipeline runs them itself,
    /// with the session's catalogue (the Skill tool).
    fn starts_skills(&self) -> bool {
        false
    }

    /// Whether its calls widen what later calls may do: the pipeline
    /// applies what the user granted (RequestPermissions).
    fn grants_permissions(&self) -> bool {
        false
    }

    /// Whether its calls run a script whose tool calls the pipeline
    /// passes through itself (Script).
    fn runs_scripts(&self) -> bool {
        false
    }

    /// The tool's own check of an input, before anything is asked.
    fn check(&self, _input: &Value) -> Result<(), String> {
        Ok(())
    }

    fn call<'a>(
        &'a self,
        context: &'a CallContext,
        input: &'a Value,
    ) -> futures::future::BoxFuture<'a, Result<ToolOutput, ToolFailure>>;
}

/// The `call` of a host tool whose calls the pipeline runs itself (Skill,
/// RequestPermissions, Script): only a caller outside a session reaches
/// it, and is told so.
pub fn run_by_the_pipeline<'a>(
    tool: &str,
) -> futures::future::BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
    let message = format!("{tool} runs only inside a session's tool pipeline");
    Box::pin(async move { Err(ToolFailure::Failed(message)) })
}

/// One tool of an MCP server.
#[derive(Clone)]
pub struct McpHandle {
    pub(super) server: Arc<McpServer>,
    /// The server's own name for the tool.
    pub(super) tool: String,
    pub(super) read_only: bool,
}

/// What runs a tool's calls: a component, or an MCP server's tool through
/// the bridge.
#[derive(Clone)]
pub enum ToolHandle {
    Wasm {
        component: ToolComponent,
        /// The session's read ledger, for first-party components only.
        ledger_access: bool,
        /// What a typed component's calls ask for: its ceiling, whole (the
        /// policy then decides each part like any call's needs).
        ceiling: Arc<Ceiling>,
    },
    Mcp(McpHandle),
    Native(Arc<dyn NativeTool>),
}

impl ToolHandle {
    /// What one call needs. An MCP tool needs nothing the host could grant
    /// (the server has what it was started with); it is concurrency-safe
    /// when the server marks it read-only.
    pub async fn plan(&self, tool: &str, input: &Value) -> Result<CallPlan, PlanError> {
        match self {
            ToolHandle::Wasm {
                component, ceiling, ..
            } => {
                let mut plan = component.plan(tool, input).await?;
                if component.is_typed() {
                    plan.needs = ceiling.as_needs();
                }
                Ok(plan)
            }
            ToolHandle::Mcp(mcp) => Ok(CallPlan {
                concurrency_safe: mcp.read_only,
                interrupt: InterruptBehavior::Cancel,
                needs: Vec::new(),
            }),
            ToolHandle::Native(native) => {
                native.check(input).map_err(PlanError::Rejected)?;
                Ok(CallPlan {
                    concurrency_safe: native.concurrency_safe(),
                    interrupt: InterruptBehavior::Cancel,
                    needs: Vec::new(),
                })
            }
        }
    }

    /// Runs one call; the session's read ledger reaches the component only
    /// if it is first-party.
    /// `requests` hears an MCP server's progress and answers its
    /// questions.
    pub async fn call(
        &self,
        mut invocation: ToolInvocation<'_>,
        requests: Option<Arc<dyn crate::mcp::ServerRequests>>,
    ) -> Result<ToolOutput, CallError> {
        match self {
            ToolHandle::Wasm {
                component,
                ledger_access,
                ..
            } => {
                if !ledger_access {
                    invocation.reads = None;
                }
                Ok(component.call(&invocation).await?.output)
            }
            ToolHandle::Native(native) => {
                Ok(native.call(&invocation.context, invocation.input).await?)
            }
            ToolHandle::Mcp(mcp) => {
                let input = invocation.input.to_string();
                let call = (mcp.tool.as_str(), input.as_str());
                let outcome = match mcp.server.call(call, invocation.limits, requests).await {
                    Ok(outcome) => outcome,
                    Err(BridgeError::Server(message)) => return Err(CallError::Failed(message)),
                    Err(BridgeError::Sandbox(e)) => return Err(e.into()),
                };
                let mut content = outcome.content;
                // Structured content stands in for empty content.
                if content.is_empty()
                    && let Some(structured) = &outcome.structured
                {
                    content.push(ToolContent::Text(structured.clone()));
                }
                Ok(ToolOutput {
                    structured: mcp_structured(&content, outcome.structured.as_deref()),
                    content,
                    is_error: outcome.is_error,
                })
            }
        }
    }
}

/// An MCP result with structured content, in the shape Claude Code reports
/// it (`tool_use_result`: the text and the `structuredContent` object).
fn mcp_structured(content: &[ToolContent], structured: Option<&str>) -> Option<String> {
    let object = serde_json::from_str::<serde_json::Value>(structured?).ok()?;
    let text: Vec<&str> = content
        .iter()
        .filter_map(|c| match c {
            ToolContent::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    Some(serde_json::json!({"content": text.join("\n"), "structuredContent": object}).to_string())
}
