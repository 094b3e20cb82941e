//! A subagent's spawn through the middleware hooks: they may refuse it,
//! change its prompt, answer it themselves (no child runs), or change its
//! report.

use super::{Child, SubagentRunner, output_text};
use crate::hooks::SubagentSpawn;
use crate::sandbox::{ToolContent, ToolFailure, ToolOutput};
use futures::FutureExt;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

impl SubagentRunner {
    pub(super) async fn spawn_through_middleware(
        &self,
        child: Child<'_>,
        prompt: &str,
        abort: CancellationToken,
        task: Option<(String, String)>,
    ) -> Result<ToolOutput, ToolFailure> {
        let given = SubagentSpawn {
            agent_type: child.agent.name.clone(),
            description: child.input["description"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            prompt: prompt.to_string(),
        };
        // The child's own report, kept whole for when no hook changes it.
        let ran: Mutex<Option<Result<ToolOutput, ToolFailure>>> = Mutex::new(None);
        let kept_report = &ran;
        let run = move |passed: SubagentSpawn| {
            async move {
                if passed.agent_type != child.agent.name {
                    return Err(format!(
                        "a middleware hook passed on the {} agent as {}: a hook may change a spawn's prompt, not its agent type",
                        child.agent.name, passed.agent_type
                    ));
                }
                let report = self.run_child(child, &passed.prompt, abort, task).await;
                let seen = as_seen(&report);
                if let Ok(mut kept) = kept_report.lock() {
                    *kept = Some(report);
                }
                seen
            }
            .boxed()
        };
        let answer = self.hooks.around_spawn(given, run).await;
        let kept = ran.lock().ok().and_then(|mut kept| kept.take());
        match kept {
            Some(report) if as_seen(&report) == answer => report,
            _ => match answer {
                Ok(text) => Ok(ToolOutput {
                    content: vec![ToolContent::Text(text)],
                    is_error: false,
                    structured: None,
                }),
                Err(why) => Err(ToolFailure::Failed(why)),
            },
        }
    }
}

/// A report as the middleware sees it: the child's text, or why it failed.
fn as_seen(report: &Result<ToolOutput, ToolFailure>) -> Result<String, String> {
    match report {
        Ok(output) if !output.is_error => Ok(output_text(output)),
        Ok(output) => Err(output_text(output)),
        Err(ToolFailure::Failed(why) | ToolFailure::InvalidInput(why)) => Err(why.clone()),
    }
}
