//! The policy's questions as ACP `session/request_permission`: allow once,
//! allow always (a session rule, named in the option, or acceptEdits for
//! edits), reject. What the client answers goes back through the
//! pipeline's one gate, so a deny rule, a ceiling or a protected path
//! still refuses; nothing is granted while a question is open; a question
//! the client cancels, fails or leaves unanswered past the timeout is a
//! refusal.

use super::updates::kind;
use crate::policy::{NotKept, RuleOrigin, Suggestion};
use crate::tools::{CallView, PermissionPrompter, PromptAnswer, PromptRequest, ToolPipeline};
use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// What a refused call's result says, as Claude Code words it.
const REFUSED: &str = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.";

const ONCE: &str = "allow_once";
const ALWAYS: &str = "allow_always";
const REJECT: &str = "reject_once";

pub struct AcpAsker {
    pub connection: ConnectionTo<Client>,
    pub session_id: String,
    pub pipeline: Arc<ToolPipeline>,
    pub timeout: Duration,
    /// Which MCP questions the client can show.
    pub elicitation: super::elicit::ClientElicitation,
}

/// The client's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Once,
    Always,
    Refused,
}

impl AcpAsker {
    pub fn new(
        connection: ConnectionTo<Client>,
        session_id: String,
        pipeline: Arc<ToolPipeline>,
        timeout: Duration,
    ) -> Self {
        Self {
            connection,
            session_id,
            pipeline,
            timeout,
            elicitation: super::elicit::ClientElicitation::default(),
        }
    }

    /// Puts one question to the client and waits, at most the timeout.
    async fn ask_client(&self, call: ToolCallUpdate, always: &Suggestion) -> Choice {
        let always = match always {
            Suggestion::Rule(rule) => format!("Always allow `{rule}` in this session"),
            Suggestion::Grant(rules) => format!("Allow `{}` for this session", rules.join("`, `")),
            Suggestion::AcceptEdits => "Always allow edits in this session".into(),
        };
        let options = vec![
            PermissionOption::new(ONCE, "Allow once", PermissionOptionKind::AllowOnce),
            PermissionOption::new(ALWAYS, always, PermissionOptionKind::AllowAlways),
            PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
        ];
        let request = RequestPermissionRequest::new(self.session_id.clone(), call, options);
        let asked = self.connection.send_request(request).block_task();
        let answer = match tokio::time::timeout(self.timeout, asked).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                tracing::warn!("a permission question failed: {e}");
                return Choice::Refused;
            }
            Err(_) => {
                tracing::warn!(
                    "a permission question went unanswered for {:?}",
                    self.timeout
                );
                return Choice::Refused;
            }
        };
        match answer.outcome {
            RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                ONCE => Choice::Once,
                ALWAYS => Choice::Always,
                _ => Choice::Refused,
            },
            _ => Choice::Refused,
        }
    }

    /// "Allow always": the rule joins the session's policy, or edits are
    /// accepted from now on (the client is told the mode changed).
    fn remember(&self, always: &Suggestion) -> Result<(), NotKept> {
        self.pipeline
            .permissions()
            .accept(RuleOrigin::Acp, always, None)
    }

    async fn decide(&self, call: ToolCallUpdate, always: Suggestion) -> bool {
        match self.ask_client(call, &always).await {
            Choice::Once => true,
            Choice::Always => {
                if let Err(problem) = self.remember(&always) {
                    tracing::warn!("\"allow always\" was not kept: {problem}");
                }
                true
            }
            Choice::Refused => false,
        }
    }
}

fn pending_call(view: &CallView, id: &str, input: &Value, question: &str) -> ToolCallUpdate {
    let fields = ToolCallUpdateFields::new()
        .title(format!("{} — {question}", view.title))
        .kind(kind(view.kind))
        .status(ToolCallStatus::Pending)
        .raw_input(input.clone());
    ToolCallUpdate::new(id.to_string(), fields)
}

impl PermissionPrompter for AcpAsker {
    fn elicit<'a>(
        &'a self,
        request: &'a crate::mcp::ElicitRequest,
    ) -> BoxFuture<'a, crate::mcp::ElicitAnswer> {
        let asked = (self.elicitation, self.session_id.as_str());
        Box::pin(super::elicit::ask_client(
            &self.connection,
            asked,
            request,
            self.timeout,
        ))
    }

    fn ask<'a>(&'a self, request: PromptRequest<'a>) -> BoxFuture<'a, PromptAnswer> {
        Box::pin(async move {
            let call = request.call;
            let view = self
                .pipeline
                .presentation_of(&call.name)
                .view(&call.name, &call.input);
            let update = pending_call(&view, &call.id, &call.input, request.question);
            match self.decide(update, request.suggestion.clone()).await {
                true => PromptAnswer::Allow {
                    updated_input: None,
                },
                // The model hears the refusal and answers; the turn goes
                // on (session/cancel is how a client stops it).
                false => PromptAnswer::Deny {
                    message: REFUSED.into(),
                    interrupt: false,
                },
            }
        })
    }
}

/// A command's connection to a host no rule names, asked the same way:
/// "allow once" lets it through for the rest of the turn, "allow always"
/// for the session (and adds the host's WebFetch domain rule).
impl crate::sandbox::egress::EgressAsker for AcpAsker {
    fn allow_host<'a>(
        &'a self,
        host: &'a str,
    ) -> BoxFuture<'a, crate::sandbox::egress::HostAnswer> {
        use crate::sandbox::egress::HostAnswer;
        Box::pin(async move {
            let input = json!({"host": host});
            let question = format!("a command wants to connect to {host}, which no rule names");
            let id = format!("network-{}", uuid::Uuid::new_v4());
            let name = crate::control::NETWORK_ACCESS;
            let view = crate::tools::Presentation::UNKNOWN.view(name, &input);
            let update = pending_call(&view, &id, &input, &question);
            let always = Suggestion::for_host(host);
            match self.ask_client(update, &always).await {
                Choice::Once => HostAnswer::ForTurn,
                Choice::Always => {
                    if let Err(problem) = self.remember(&always) {
                        tracing::warn!("\"allow always\" was not kept: {problem}");
                    }
                    HostAnswer::ForSession
                }
                Choice::Refused => HostAnswer::Refused,
            }
        })
    }
}
