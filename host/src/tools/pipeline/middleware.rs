//! A call through the middleware hooks: they see it before every other
//! stage and its result after every other stage, and may answer it
//! themselves (the call never reaches the rules, the hooks or the tool).
//! A call they change is prepared again, as a new call would be.

use super::ToolPipeline;
use crate::agent::{ToolCall, ToolCallResult, ToolRuntime};
use crate::hooks::{MiddlewareEvent, ToolCallIn, ToolOffer, ToolResultOut};
use crate::model::ToolResultContent;
use crate::model::ToolSpec;
use crate::sandbox::CallPlan;
use crate::tools::registry::{RegisteredTool, ToolHandle};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};

impl ToolPipeline {
    /// `specs` as the middleware last left the list: only what they kept,
    /// in their order, with their descriptions.
    pub(super) fn as_offered(&self, specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
        let Some(offered) = self.offered.read().ok().and_then(|o| o.clone()) else {
            return specs;
        };
        offered
            .into_iter()
            .filter_map(|(name, description)| {
                let spec = specs.iter().find(|s| s.name == name)?;
                Some(ToolSpec {
                    description,
                    ..spec.clone()
                })
            })
            .collect()
    }

    /// Whether the middleware withheld `name` from the model: a call to it
    /// is a call to no tool.
    pub(super) fn withheld(&self, name: &str) -> bool {
        self.offered
            .read()
            .ok()
            .and_then(|o| o.as_ref().map(|o| !o.iter().any(|(n, _)| n == name)))
            .unwrap_or(false)
    }

    /// The tool list for a run: judged again by the middleware when the
    /// session has any registered for it.
    pub(super) async fn offer_through_middleware(&self) -> Vec<ToolSpec> {
        let Some(hooks) = self
            .hooks
            .as_deref()
            .filter(|h| h.has_middleware(MiddlewareEvent::ToolList))
        else {
            return self.specs();
        };
        if let Ok(mut offered) = self.offered.write() {
            *offered = None;
        }
        let all = self.specs();
        let offers = all
            .iter()
            .map(|spec| ToolOffer {
                name: spec.name.clone(),
                description: spec.description.clone(),
                input_schema: spec.input_schema.clone(),
            })
            .collect();
        let kept = hooks.offered_tools(offers).await;
        if let Ok(mut offered) = self.offered.write() {
            *offered = Some(
                kept.into_iter()
                    .map(|offer| (offer.name, offer.description))
                    .collect(),
            );
        }
        self.specs()
    }
    /// The run stages, inside the middleware when the session has any.
    /// (A named sendable future: a call may run a skill, whose spans are
    /// calls again.)
    pub(super) fn run_hooked(
        &self,
        tool: Arc<RegisteredTool>,
        handle: ToolHandle,
        call: ToolCall,
        plan: CallPlan,
    ) -> BoxFuture<'_, ToolCallResult> {
        self.run_hooked_inner(tool, handle, call, plan).boxed()
    }

    async fn run_hooked_inner(
        &self,
        tool: Arc<RegisteredTool>,
        handle: ToolHandle,
        call: ToolCall,
        plan: CallPlan,
    ) -> ToolCallResult {
        let Some(hooks) = self
            .hooks
            .as_deref()
            .filter(|h| h.has_middleware(MiddlewareEvent::ToolCall))
        else {
            return self.run_call(tool, handle, call, plan).await;
        };
        let id = call.id.clone();
        let given = ToolCallIn {
            name: call.name.clone(),
            input: call.input.clone(),
            id: id.clone(),
        };
        // The engine's own result, kept whole (its structured form, its
        // hooks' notes) for when the middleware leaves it as it is.
        let engine: Mutex<Option<ToolCallResult>> = Mutex::new(None);
        let run = |passed: ToolCallIn| {
            async {
                let result = self.run_passed(tool, handle, call, plan, passed).await;
                let out = outcome(&result);
                if let Ok(mut kept) = engine.lock() {
                    *kept = Some(result);
                }
                out
            }
            .boxed()
        };
        let out = hooks.around_tool_call(given, run).await;
        let kept = engine.lock().ok().and_then(|mut kept| kept.take());
        adopt(&id, kept, out)
    }

    /// What the middleware passed on: the call as prepared, or — when they
    /// changed its input — the changed call, prepared again.
    async fn run_passed(
        &self,
        tool: Arc<RegisteredTool>,
        handle: ToolHandle,
        call: ToolCall,
        plan: CallPlan,
        passed: ToolCallIn,
    ) -> ToolCallResult {
        if passed.name != call.name {
            return ToolCallResult::error(
                &call.id,
                format!(
                    "a middleware hook passed on a call to {} as a call to {}: a hook may change a call's input, not its tool",
                    call.name, passed.name
                ),
            );
        }
        if passed.input == call.input {
            return self.run_call(tool, handle, call, plan).await;
        }
        let changed = ToolCall {
            input: passed.input,
            ..call
        };
        match self.prepared(&changed).await {
            Ok((tool, handle, plan)) => self.run_call(tool, handle, changed, plan).await,
            Err(result) => *result,
        }
    }
}

/// A result as the middleware sees it.
fn outcome(result: &ToolCallResult) -> ToolResultOut {
    ToolResultOut {
        content: serde_json::to_value(&result.content).unwrap_or_default(),
        is_error: result.is_error,
    }
}

/// The call's result: the engine's when the middleware left it as it was;
/// else what they answered (already checked to be a tool's output).
fn adopt(id: &str, engine: Option<ToolCallResult>, out: ToolResultOut) -> ToolCallResult {
    if let Some(result) = &engine
        && outcome(result) == out
    {
        return engine.unwrap_or_else(|| ToolCallResult::error(id, ""));
    }
    let content = match serde_json::from_value::<ToolResultContent>(out.content) {
        Ok(content) => content,
        Err(e) => return ToolCallResult::error(id, format!("a middleware hook's answer: {e}")),
    };
    match engine {
        // Changed on its way back: the engine's notes stay, its structured
        // form (which described the old content) goes.
        Some(result) => ToolCallResult {
            content,
            is_error: out.is_error,
            structured: None,
            ..result
        },
        None => ToolCallResult {
            content,
            is_error: out.is_error,
            ..ToolCallResult::error(id, "")
        },
    }
}
