//! What an MCP server asks and tells while one call runs: its progress,
//! shown as the call's; its questions for the user, answered by
//! Elicitation hooks first, then by the session's front end (the SDK, the
//! screen, ACP), else cancelled — as Claude Code answers in print mode —
//! and shown to ElicitationResult hooks before the server reads the
//! answer.

use super::PermissionPrompter;
use crate::agent::{AgentEvent, EventRelay};
use crate::hooks::{ElicitationAnswered, ElicitationAsked, HookEvent, HookEventKind, HookRuntime};
use crate::mcp::{ElicitAnswer, ElicitRequest, McpProgress, ServerRequests};
use futures::future::BoxFuture;
use std::sync::Arc;

pub(super) struct CallRequests {
    pub tool_use_id: String,
    pub output: Option<EventRelay>,
    pub hooks: Option<Arc<HookRuntime>>,
    pub prompter: Option<Arc<dyn PermissionPrompter>>,
}

impl CallRequests {
    fn hooks_for(&self, kind: HookEventKind) -> Option<&HookRuntime> {
        self.hooks.as_deref().filter(|h| h.handles(kind))
    }

    /// What the Elicitation hooks answer in the user's place, if they do.
    async fn hooks_answer(&self, request: &ElicitRequest) -> Option<ElicitAnswer> {
        let hooks = self.hooks_for(HookEventKind::Elicitation)?;
        let said = hooks
            .run(HookEvent::Elicitation(ElicitationAsked {
                server: request.server.clone(),
                message: request.message.clone(),
                mode: request.mode().into(),
                url: request.url.clone(),
                elicitation_id: request.elicitation_id.clone(),
                requested_schema: request.requested_schema.clone(),
            }))
            .await;
        if said.block.is_some() {
            return Some(ElicitAnswer::Decline);
        }
        let (action, content) = said.elicitation?;
        Some(ElicitAnswer::from_action(&action, content))
    }

    /// The answer as the ElicitationResult hooks leave it.
    async fn reviewed(&self, request: &ElicitRequest, answer: ElicitAnswer) -> ElicitAnswer {
        let Some(hooks) = self.hooks_for(HookEventKind::ElicitationResult) else {
            return answer;
        };
        let content = match &answer {
            ElicitAnswer::Accept(content) => content.clone(),
            _ => None,
        };
        let said = hooks
            .run(HookEvent::ElicitationResult(ElicitationAnswered {
                server: request.server.clone(),
                elicitation_id: request.elicitation_id.clone(),
                mode: request.mode().into(),
                action: answer.action().into(),
                content: content.clone(),
            }))
            .await;
        if said.block.is_some() {
            return ElicitAnswer::Decline;
        }
        match said.elicitation {
            Some((action, changed)) => ElicitAnswer::from_action(&action, changed.or(content)),
            None => answer,
        }
    }
}

impl ServerRequests for CallRequests {
    fn progress(&self, update: McpProgress) {
        if let Some(output) = &self.output {
            output.send(AgentEvent::ToolProgress {
                tool_use_id: self.tool_use_id.clone(),
                progress: update.progress,
                total: update.total,
                message: update.message,
            });
        }
    }

    fn elicit(&self, request: ElicitRequest) -> BoxFuture<'_, ElicitAnswer> {
        Box::pin(async move {
            let answer = match self.hooks_answer(&request).await {
                Some(answer) => answer,
                None => match &self.prompter {
                    Some(prompter) => prompter.elicit(&request).await,
                    None => ElicitAnswer::Cancel,
                },
            };
            self.reviewed(&request, answer).await
        })
    }
}
