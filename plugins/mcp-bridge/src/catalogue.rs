//! What a server offers besides tools: its resources (listed, templated,
//! read) and its prompts (listed, filled in). Everything the server says is
//! checked here, inside the sandbox; the host gets records and JSON the
//! bridge wrote itself.

use crate::carapace::mcp::types::{
    Content, Events, McpPrompt as Prompt, McpResource as Resource, PromptArgument, PromptMessage,
    PromptPage, ResourcePage, Session,
};
use crate::{
    MODERN, enveloped, no_events, page, read_content, request, send, text_field, use_session,
};
use serde_json::{Map, Value, json};

/// The fields of a resource entry passed on to the model, as the protocol
/// names them; anything else a server adds is dropped.
const RESOURCE_FIELDS: &[&str] = &[
    "uri",
    "uriTemplate",
    "name",
    "title",
    "description",
    "mimeType",
    "size",
    "annotations",
];

/// One entry of `resources/list` (`uri`) or of the templates (`uriTemplate`).
fn read_resource_entry(entry: &Value, uri_key: &str) -> Result<Resource, String> {
    let object = entry
        .as_object()
        .ok_or("the server listed a resource that is not an object")?;
    let uri = object
        .get(uri_key)
        .and_then(Value::as_str)
        .ok_or(format!("the server listed a resource without `{uri_key}`"))?;
    let kept: Map<String, Value> = RESOURCE_FIELDS
        .iter()
        .filter_map(|k| object.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    let mut name = text_field(entry, "name");
    if name.is_empty() {
        name = uri.to_string();
    }
    Ok(Resource {
        uri: uri.to_string(),
        name,
        entry: Value::Object(kept).to_string(),
    })
}

/// One page of `method`, its list under `list_key`, each entry's address
/// under `uri_key`.
pub fn list_resources(
    session: &Session,
    (method, list_key, uri_key): (&str, &str, &str),
    cursor: Option<String>,
    request_id: u64,
) -> Result<(ResourcePage, Events), String> {
    let read = |entry: &Value| read_resource_entry(entry, uri_key);
    let (resources, next_cursor, events) =
        page(session, (method, list_key), (cursor, request_id), read)?;
    Ok((
        ResourcePage {
            resources,
            next_cursor,
        },
        events,
    ))
}

/// One entry of `resources/read`'s `contents`: text as it is, a binary
/// entry described (its bytes would only fill the model's context).
fn read_contents_entry(entry: &Value) -> Result<Value, String> {
    let uri = entry
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("the server sent resource contents without a `uri`")?;
    let mut kept = json!({"uri": uri});
    if let Some(mime) = entry.get("mimeType").and_then(Value::as_str) {
        kept["mimeType"] = json!(mime);
    }
    match (entry.get("text"), entry.get("blob")) {
        (Some(Value::String(text)), _) => kept["text"] = json!(text),
        (_, Some(Value::String(blob))) => {
            // base64: four characters carry three bytes.
            let bytes = blob.trim_end_matches('=').len() * 3 / 4;
            kept["text"] = json!(format!(
                "[binary contents, {bytes} bytes, not shown to the model]"
            ));
        }
        _ => {
            return Err(format!(
                "the server sent contents of `{uri}` with neither text nor blob"
            ));
        }
    }
    Ok(kept)
}

pub fn read_resource(
    session: &Session,
    uri: &str,
    request_id: u64,
) -> Result<(String, Events), String> {
    use_session(session);
    let mut events = no_events();
    let result = request(
        request_id,
        "resources/read",
        enveloped(session, json!({"uri": uri})),
        &mut events,
    )?;
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("the server's resources/read answer has no `contents` list")?
        .iter()
        .map(read_contents_entry)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((json!({"contents": contents}).to_string(), events))
}

/// Asks to hear when `uri` changes. The current revision has no
/// subscribe request: a `subscriptions/listen` stream naming the resource
/// is opened and left open (its acknowledgement and notifications are read
/// by later operations, as list changes are).
pub fn subscribe(session: &Session, uri: &str, request_id: u64) -> Result<Events, String> {
    use_session(session);
    let mut events = no_events();
    if !session.resources_subscribe {
        return Err("the server does not offer resource subscriptions".into());
    }
    if session.protocol_version != MODERN {
        request(
            request_id,
            "resources/subscribe",
            json!({"uri": uri}),
            &mut events,
        )?;
        return Ok(events);
    }
    if session.endpoint.is_some() {
        return Err("a subscription stream over HTTP would outlive this bridge instance".into());
    }
    send(&json!({
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "subscriptions/listen",
        "params": enveloped(session, json!({"notifications": {"resourceSubscriptions": [uri]}})),
    }))?;
    Ok(events)
}

fn read_prompt(entry: &Value) -> Result<Prompt, String> {
    let name = entry
        .get("name")
        .and_then(Value::as_str)
        .ok_or("the server listed a prompt without a name")?
        .to_string();
    let optional = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let arguments = entry
        .get("arguments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|argument| {
            Some(PromptArgument {
                name: argument.get("name")?.as_str()?.to_string(),
                description: optional(argument, "description"),
                required: argument
                    .get("required")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            })
        })
        .collect();
    Ok(Prompt {
        name,
        description: optional(entry, "description").or_else(|| optional(entry, "title")),
        arguments,
    })
}

pub fn list_prompts(
    session: &Session,
    cursor: Option<String>,
    request_id: u64,
) -> Result<(PromptPage, Events), String> {
    let listing = ("prompts/list", "prompts");
    let (prompts, next_cursor, events) = page(session, listing, (cursor, request_id), read_prompt)?;
    Ok((
        PromptPage {
            prompts,
            next_cursor,
        },
        events,
    ))
}

pub fn get_prompt(
    session: &Session,
    name: &str,
    arguments: Vec<(String, String)>,
    request_id: u64,
) -> Result<(Vec<PromptMessage>, Events), String> {
    use_session(session);
    let mut events = no_events();
    let arguments: Map<String, Value> = arguments
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let result = request(
        request_id,
        "prompts/get",
        enveloped(session, json!({"name": name, "arguments": arguments})),
        &mut events,
    )?;
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("the server's prompts/get answer has no `messages` list")?
        .iter()
        .map(|message| PromptMessage {
            role: match message.get("role").and_then(Value::as_str) {
                Some("assistant") => "assistant".into(),
                _ => "user".into(),
            },
            content: message
                .get("content")
                .map(read_content)
                .unwrap_or(Content::Text(String::new())),
        })
        .collect();
    Ok((messages, events))
}
