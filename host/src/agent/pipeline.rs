//! The single-tool pipeline: lookup → input parse → JSON-Schema validation →
//! the tool's own validation and plan → permission decision and grant → the
//! call in a sandbox holding only the grant → the `tool_result`.
//!
//! Every failure along the way is an `is_error` result with the call's id;
//! nothing here can end the loop.

use super::tools::{PermissionDenial, Preparation, ToolCall, ToolCallResult, ToolRuntime};
use crate::model::{ImageSource, ToolResultBlock, ToolResultContent, ToolSpec};
use crate::plugins::ToolRegistry;
use crate::policy::{Decision, Policy};
use crate::sandbox::{CallLimits, ToolContent, ToolFailure, ToolOutput};
use base64::Engine as _;
use futures::FutureExt;
use futures::future::BoxFuture;
use std::sync::Arc;

/// Longest excerpt of unparsable tool input quoted back to the model.
const INPUT_EXCERPT_CHARS: usize = 200;

pub struct ToolPipeline {
    registry: ToolRegistry,
    policy: Policy,
    limits: CallLimits,
}

impl ToolPipeline {
    pub fn new(registry: ToolRegistry, policy: Policy, limits: CallLimits) -> Self {
        Self {
            registry,
            policy,
            limits,
        }
    }

    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    async fn prepare_call(&self, call: &ToolCall) -> Preparation {
        let Some(tool) = self.registry.get(&call.name) else {
            let mut message = format!("Error: No such tool available: {}", call.name);
            if let Some(close) = closest_name(&call.name, &self.registry.names()) {
                message.push_str(&format!(". Did you mean {close}?"));
            }
            return Preparation::Failed(ToolCallResult::error(&call.id, message));
        };
        if let Some(invalid) = &call.invalid_input {
            let excerpt: String = invalid.raw.chars().take(INPUT_EXCERPT_CHARS).collect();
            let ellipsis = if invalid.raw.chars().count() > INPUT_EXCERPT_CHARS {
                "…"
            } else {
                ""
            };
            return Preparation::Failed(ToolCallResult::error(
                &call.id,
                format!(
                    "InputValidationError: the input for {} is not valid JSON ({}). Received: {excerpt}{ellipsis}",
                    call.name, invalid.error
                ),
            ));
        }
        let problems = tool.schema_errors(&call.input);
        if !problems.is_empty() {
            let noun = if problems.len() == 1 {
                "issue"
            } else {
                "issues"
            };
            return Preparation::Failed(ToolCallResult::error(
                &call.id,
                format!(
                    "InputValidationError: {} failed due to the following {noun}:\n{}",
                    call.name,
                    problems.join("\n")
                ),
            ));
        }
        match tool
            .component
            .plan(&call.name, &call.input.to_string())
            .await
        {
            Ok(Ok(plan)) => Preparation::Ready {
                concurrency_safe: plan.concurrency_safe,
                interrupt: plan.interrupt,
                plan,
            },
            Ok(Err(message)) => Preparation::Failed(ToolCallResult::error(&call.id, message)),
            Err(e) => Preparation::Failed(ToolCallResult::error(
                &call.id,
                format!("{} could not check its input: {e}", call.name),
            )),
        }
    }

    async fn run_call(&self, call: ToolCall, preparation: Preparation) -> ToolCallResult {
        let plan = match preparation {
            Preparation::Failed(result) => return result,
            Preparation::Ready { plan, .. } => plan,
        };
        let Some(tool) = self.registry.get(&call.name) else {
            return ToolCallResult::error(
                &call.id,
                format!("Error: No such tool available: {}", call.name),
            );
        };
        let grant = match self.policy.decide(&call.name, &plan.needs, &tool.ceiling) {
            Decision::Allow(grant) => grant,
            Decision::Deny(message) => {
                let mut result = ToolCallResult::error(&call.id, message);
                result.denial = Some(PermissionDenial {
                    tool_name: call.name.clone(),
                    tool_use_id: call.id.clone(),
                    tool_input: call.input.clone(),
                });
                return result;
            }
        };
        tracing::debug!(tool = %call.name, id = %call.id, granted = ?grant.describe(), "calling tool");
        match tool
            .component
            .call(&call.name, &call.input.to_string(), &grant, &self.limits)
            .await
        {
            Ok(Ok(output)) => to_result(&call.id, output),
            Ok(Err(ToolFailure::InvalidInput(message))) => {
                ToolCallResult::error(&call.id, format!("InputValidationError: {message}"))
            }
            Ok(Err(ToolFailure::Failed(message))) => ToolCallResult::error(&call.id, message),
            Err(e) => ToolCallResult::error(&call.id, format!("{} failed: {e}", call.name)),
        }
    }
}

impl ToolRuntime for ToolPipeline {
    fn specs(&self) -> Vec<ToolSpec> {
        self.registry.specs()
    }

    fn prepare<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, Preparation> {
        self.prepare_call(call).boxed()
    }

    fn run(
        self: Arc<Self>,
        call: ToolCall,
        preparation: Preparation,
    ) -> BoxFuture<'static, ToolCallResult> {
        async move { self.run_call(call, preparation).await }.boxed()
    }
}

/// The tool's output as a `tool_result`: a plain string when it is one text,
/// blocks (images base64-encoded) otherwise.
fn to_result(id: &str, output: ToolOutput) -> ToolCallResult {
    let content = match output.content.as_slice() {
        [ToolContent::Text(text)] => ToolResultContent::Text(text.clone()),
        [] => ToolResultContent::Text(String::new()),
        blocks => ToolResultContent::Blocks(
            blocks
                .iter()
                .map(|block| match block {
                    ToolContent::Text(text) => ToolResultBlock::Text { text: text.clone() },
                    ToolContent::Image { media_type, data } => ToolResultBlock::Image {
                        source: ImageSource {
                            kind: "base64".into(),
                            media_type: media_type.clone(),
                            data: base64::engine::general_purpose::STANDARD.encode(data),
                        },
                    },
                })
                .collect(),
        ),
    };
    ToolCallResult {
        tool_use_id: id.to_string(),
        content,
        is_error: output.is_error,
        denial: None,
    }
}

/// The known tool name closest to `name`, if it is close enough to be a typo.
fn closest_name<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| {
            (
                strsim::levenshtein(&name.to_lowercase(), &k.to_lowercase()),
                k,
            )
        })
        .filter(|(distance, k)| *distance <= (k.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_tool_names_only() {
        let known = vec!["Read".to_string(), "Write".to_string(), "Grep".to_string()];
        assert_eq!(closest_name("read", &known), Some("Read"));
        assert_eq!(closest_name("Reed", &known), Some("Read"));
        assert_eq!(closest_name("Delete", &known), None);
    }
}
