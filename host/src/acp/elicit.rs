//! An MCP server's question for the user, put to the editor as ACP's
//! `elicitation/create` (form or URL, scoped to the session) when the
//! client said at `initialize` that it can show that mode; otherwise, or
//! unanswered past the question timeout, it is cancelled.

use crate::mcp::{ElicitAnswer, ElicitRequest};
use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CreateElicitationRequest, ElicitationAction, ElicitationFormMode,
    ElicitationMode, ElicitationSchema, ElicitationSessionScope, ElicitationUrlMode,
};
use std::time::Duration;

/// Which elicitation modes the client can show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientElicitation {
    pub form: bool,
    pub url: bool,
}

impl ClientElicitation {
    pub fn of(capabilities: &ClientCapabilities) -> Self {
        let modes = capabilities.elicitation.as_ref();
        Self {
            form: modes.is_some_and(|m| m.form.is_some()),
            url: modes.is_some_and(|m| m.url.is_some()),
        }
    }
}

/// The request as ACP words it, if the client can show its mode.
fn acp_request(
    modes: ClientElicitation,
    session_id: &str,
    request: &ElicitRequest,
) -> Option<CreateElicitationRequest> {
    let scope = ElicitationSessionScope::new(session_id.to_string());
    let mode = match (&request.url, &request.requested_schema) {
        (Some(url), _) if modes.url => ElicitationMode::Url(ElicitationUrlMode::new(
            scope,
            request.elicitation_id.clone().unwrap_or_default(),
            url.clone(),
        )),
        (None, Some(schema)) if modes.form => {
            let schema: ElicitationSchema = serde_json::from_value(schema.clone())
                .inspect_err(|e| tracing::warn!("an elicitation's form is not ACP's: {e}"))
                .ok()?;
            ElicitationMode::Form(ElicitationFormMode::new(scope, schema))
        }
        _ => return None,
    };
    let message = format!("{} asks: {}", request.server, request.message);
    Some(CreateElicitationRequest::new(mode, message))
}

pub async fn ask_client(
    connection: &ConnectionTo<Client>,
    (modes, session_id): (ClientElicitation, &str),
    request: &ElicitRequest,
    timeout: Duration,
) -> ElicitAnswer {
    let Some(asked) = acp_request(modes, session_id, request) else {
        return ElicitAnswer::Cancel;
    };
    let sent = connection.send_request(asked).block_task();
    let answer = match tokio::time::timeout(timeout, sent).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => {
            tracing::warn!("an elicitation failed: {e}");
            return ElicitAnswer::Cancel;
        }
        Err(_) => return ElicitAnswer::Cancel,
    };
    match answer.action {
        ElicitationAction::Accept(accepted) => {
            let content = serde_json::to_value(&accepted)
                .ok()
                .and_then(|v| v.get("content").cloned());
            ElicitAnswer::Accept(content.filter(serde_json::Value::is_object))
        }
        ElicitationAction::Decline => ElicitAnswer::Decline,
        _ => ElicitAnswer::Cancel,
    }
}
