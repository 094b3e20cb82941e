//! What a server asks of carapace while one of its requests runs: progress
//! to show, questions for the user (elicitation) — sent as requests of
//! their own (the 2025 revisions), or returned as an `input_required`
//! result the request is retried with (2026-07-28). The server's words are
//! checked here; carapace gets records and answers with one.

use crate::carapace::mcp::client;
use crate::carapace::mcp::types::{ElicitAnswer, Elicitation, Progress};
use serde_json::{Map, Value, json};

/// What carapace tells a server it can do, in either revision.
pub fn capabilities() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}})
}

/// `params` asking for progress on the request `id` (its token is the id).
pub fn with_progress_token(mut params: Value, id: u64) -> Value {
    if let Some(object) = params.as_object_mut() {
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("progressToken".into(), json!(id));
        }
    }
    params
}

/// `notifications/progress` for the request `id`: handed to carapace.
pub fn progress(params: Option<&Value>, id: u64) {
    let Some(params) = params else { return };
    let token = params.get("progressToken");
    let ours = token.and_then(Value::as_u64) == Some(id)
        || token.and_then(Value::as_str) == Some(id.to_string().as_str());
    let Some(progress) = params
        .get("progress")
        .and_then(Value::as_f64)
        .filter(|_| ours)
    else {
        return;
    };
    client::report_progress(&Progress {
        progress,
        total: params.get("total").and_then(Value::as_f64),
        message: params
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string),
    });
}

/// The schema of a form: an object of flat properties, as the protocol
/// allows (strings, numbers, booleans, enums); anything else is refused
/// before the user is asked.
fn form_schema(schema: &Value) -> Result<String, String> {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("the form has no `properties` object")?;
    for (name, property) in properties {
        let kind = property
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let flat = matches!(kind, "string" | "number" | "integer" | "boolean" | "array")
            || property.get("enum").is_some()
            || property.get("oneOf").is_some();
        if !flat {
            return Err(format!("the form's field `{name}` is not a flat value"));
        }
    }
    Ok(schema.to_string())
}

/// `elicitation/create`'s params, read; an unreadable one is an error for
/// the server, never shown to the user.
fn read_elicitation(params: &Value) -> Result<Elicitation, String> {
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .ok_or("an elicitation needs a `message`")?
        .to_string();
    let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_string);
    let url_mode = params.get("mode").and_then(Value::as_str) == Some("url");
    let url = text("url");
    if url_mode && url.is_none() {
        return Err("a URL elicitation needs a `url`".into());
    }
    let requested_schema = match (url_mode, params.get("requestedSchema")) {
        (true, _) => None,
        (false, Some(schema)) => Some(form_schema(schema)?),
        (false, None) => return Err("a form elicitation needs a `requestedSchema`".into()),
    };
    Ok(Elicitation {
        message,
        url: url.filter(|_| url_mode),
        elicitation_id: text("elicitationId"),
        requested_schema,
    })
}

/// The user's answer to `elicitation/create`, as the result the server
/// reads.
pub fn elicit(params: Option<&Value>) -> Result<Value, String> {
    let request = read_elicitation(params.unwrap_or(&Value::Null))?;
    Ok(match client::elicit(&request) {
        ElicitAnswer::Accept(content) => {
            let content: Map<String, Value> = content
                .and_then(|c| serde_json::from_str(&c).ok())
                .unwrap_or_default();
            match request.url {
                Some(_) => json!({"action": "accept"}),
                None => json!({"action": "accept", "content": content}),
            }
        }
        ElicitAnswer::Decline => json!({"action": "decline"}),
        ElicitAnswer::Cancel => json!({"action": "cancel"}),
    })
}

/// An `input_required` result (2026-07-28): each embedded request
/// answered, as the `inputResponses` and `requestState` the request is
/// retried with. Only elicitation is offered; anything else ends the
/// request with the server's wish named.
pub fn input_responses(result: &Value) -> Result<(Value, Option<Value>), String> {
    let mut responses = Map::new();
    if let Some(requests) = result.get("inputRequests").and_then(Value::as_object) {
        for (key, request) in requests {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if method != "elicitation/create" {
                return Err(format!(
                    "the server needs `{method}` answered first, which carapace does not offer to servers"
                ));
            }
            responses.insert(key.clone(), elicit(request.get("params"))?);
        }
    }
    Ok((
        Value::Object(responses),
        result.get("requestState").cloned(),
    ))
}

pub fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}
