//! ExitPlanMode: the one way out of plan mode. Host-native because it
//! changes the session's permission mode; every call asks (its ceiling says
//! so), so in print mode it ends plan mode only when a rule allows it
//! (`--allowedTools ExitPlanMode`) or the permission prompt (the SDK's
//! `can_use_tool`) approves the plan.

use crate::policy::{CallApproval, ModeCell, ModeChangeBy, PermissionMode};
use crate::sandbox::{CallContext, ToolContent, ToolDefinition, ToolFailure, ToolOutput};
use crate::tools::{Change, Presentation, Subject, ToolKind, TypedNativeTool};
use futures::future::BoxFuture;
use serde_json::json;

/// Claude Code's name for it.
pub const EXIT_PLAN_MODE_TOOL: &str = "ExitPlanMode";

const DESCRIPTION: &str = "Ends plan mode once your plan is ready: call it with the plan (concise, in markdown) to ask the user to approve it. Approved, the session leaves plan mode and you may carry the plan out; refused, stay in plan mode and revise it. Use it only for tasks that need code changes, not for research or questions.";

pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: EXIT_PLAN_MODE_TOOL.into(),
        description: DESCRIPTION.into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "plan": {"type": "string", "description": "The plan to approve"}
            }
        })
        .to_string(),
        annotations: Default::default(),
    }
}

/// Every call asks; in plan mode it asks instead of being refused as a
/// tool that changes things (it is granted nothing).
pub fn approval() -> CallApproval {
    CallApproval::EndsPlanMode
}

/// Leaves plan mode for the default mode, once the call was approved.
pub struct ExitPlanModeTool {
    mode: ModeCell,
}

impl ExitPlanModeTool {
    pub fn new(mode: ModeCell) -> Self {
        Self { mode }
    }
}

/// ExitPlanMode's input.
#[derive(serde::Deserialize)]
pub struct PlanInput {
    #[serde(default)]
    plan: String,
}

impl TypedNativeTool for ExitPlanModeTool {
    type Input = PlanInput;
    const CONCURRENCY_SAFE: bool = false;
    const PRESENTATION: Presentation = Presentation {
        kind: ToolKind::SwitchMode,
        action: Some("leave plan mode and start"),
        lead: None,
        subject: Subject::Nothing,
        location: None,
        change: Change::Plan,
    };

    fn run<'a>(
        &'a self,
        _context: &'a CallContext,
        input: PlanInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            if self.mode.get() != PermissionMode::Plan {
                return Err(ToolFailure::Failed(
                    "The session is not in plan mode: there is nothing to exit. Go on with the work."
                        .into(),
                ));
            }
            // The mode's gate announces the change.
            self.mode
                .change(PermissionMode::Default, ModeChangeBy::ExitPlanMode)
                .map_err(|e| ToolFailure::Failed(e.to_string()))?;
            let plan = input.plan;
            Ok(ToolOutput {
                content: vec![ToolContent::Text(
                    "The user approved your plan. Plan mode is over (the permission mode is now `default`): carry the plan out, keeping any task list up to date as you go."
                        .into(),
                )],
                is_error: false,
                structured: Some(json!({"plan": plan, "permissionMode": "default"}).to_string()),
            })
        })
    }
}
