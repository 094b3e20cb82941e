//! The MCP bridge: the Model Context Protocol spoken to one server, inside
//! the sandbox.
//!
//! The host lends this instance the server's connection (`transport`) for
//! one operation and keeps nothing but lines moving; every byte the server
//! sends is parsed here, where a malformed or hostile reply can only fail
//! this operation.

wit_bindgen::generate!({
    world: "mcp-bridge",
    path: "../../wit/mcp/v0.2.0",
});

use base64::Engine;
use carapace::mcp::types::{
    CallOutcome, Content, Events, HttpEndpoint, Image, McpTool, PromptMessage, PromptPage,
    ResourcePage, Session, ToolPage,
};
use exports::carapace::mcp::bridge::Guest;
use serde_json::{Value, json};

/// The current revision: stateless, no handshake; every request carries
/// the protocol version and the client in `params._meta`, and
/// `server/discover` says what the server speaks.
const MODERN: &str = "2026-07-28";

/// The revisions reached through the `initialize` handshake, newest first:
/// the bridge offers the first and accepts any of them.
const HANDSHAKE_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

const CLIENT_NAME: &str = "carapace";
const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// How long `server/discover` may go unanswered before the bridge falls
/// back to the handshake (a server of an older revision may ignore it).
const DISCOVER_WAIT_MS: u32 = 15_000;

/// How long one wait for the server lasts before waiting again (the host's
/// deadline for the whole operation ends it).
const WAIT_MS: u32 = 30_000;

/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "invalid params".
const INVALID_PARAMS: i64 = -32602;

/// Rounds of `input_required` a request may go through before the bridge
/// gives up on it (a server that asks forever).
const MAX_INPUT_ROUNDS: usize = 8;

struct Bridge;

mod asks;
mod catalogue;
mod http;
mod link;

use link::{forget_protocol, http_session, is_http, receive, send, set_protocol, use_session};

/// `params` with the per-request envelope of the current revision.
fn enveloped(session: &Session, mut params: Value) -> Value {
    if session.protocol_version == MODERN
        && let Some(object) = params.as_object_mut()
    {
        object.insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": CLIENT_NAME, "version": CLIENT_VERSION},
                "io.modelcontextprotocol/clientCapabilities": asks::capabilities(),
            }),
        );
    }
    params
}

/// Sends a request and reads until its response, answering what the server
/// asks in between and noting the notifications it sends.
fn request(id: u64, method: &str, params: Value, events: &mut Events) -> Result<Value, String> {
    let mut params = params;
    for _ in 0..MAX_INPUT_ROUNDS {
        let result = request_within(id, method, params.clone(), events, None)?
            .ok_or_else(|| format!("the server did not answer `{method}`"))??;
        if !asks::is_input_required(&result) {
            return Ok(result);
        }
        // 2026-07-28: the server's questions answered, the request again.
        let (responses, state) = asks::input_responses(&result)?;
        if let Some(object) = params.as_object_mut() {
            object.insert("inputResponses".into(), responses);
            match state {
                Some(state) => object.insert("requestState".into(), state),
                None => object.remove("requestState"),
            };
        }
    }
    Err(format!(
        "the server kept asking for input on `{method}` ({MAX_INPUT_ROUNDS} rounds)"
    ))
}

/// [`request`], giving up (`Ok(None)`) after `patience` milliseconds of
/// silence when given. The outer error is a broken exchange (the server
/// gone, or not speaking JSON-RPC); the inner one, the server's error
/// response.
fn request_within(
    id: u64,
    method: &str,
    params: Value,
    events: &mut Events,
    patience: Option<u32>,
) -> Result<Option<Result<Value, String>>, String> {
    send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
    loop {
        let Some(line) = receive(patience.unwrap_or(WAIT_MS))? else {
            // Over HTTP the answer comes with the POST or not at all.
            if patience.is_some() || is_http() {
                return Ok(None);
            }
            continue;
        };
        let message: Value = serde_json::from_str(&line).map_err(|e| {
            format!(
                "the server sent something that is not JSON ({e}): {}",
                preview(&line)
            )
        })?;
        // A batch (2025-03-26) is handled message by message.
        let batch = match message {
            Value::Array(items) => items,
            single => vec![single],
        };
        for message in batch {
            if let Some(response) = handle(&message, id, events)? {
                return Ok(Some(response));
            }
        }
    }
}

/// One message from the server: `Some` when it is the response to `id`.
fn handle(
    message: &Value,
    id: u64,
    events: &mut Events,
) -> Result<Option<Result<Value, String>>, String> {
    let Some(object) = message.as_object() else {
        return Err(format!(
            "the server sent a message that is not a JSON object: {}",
            preview(&message.to_string())
        ));
    };
    let method = object.get("method").and_then(Value::as_str);
    match (method, object.get("id")) {
        // A request from the server: answered at once — ping, a question
        // for the user; anything else refused.
        (Some(method), Some(request_id)) => {
            let params = object.get("params");
            let answer = match method {
                "ping" => Ok(json!({})),
                "elicitation/create" => asks::elicit(params).map_err(|e| (INVALID_PARAMS, e)),
                other => Err((
                    METHOD_NOT_FOUND,
                    format!("carapace does not offer `{other}` to servers"),
                )),
            };
            let reply = match answer {
                Ok(result) => json!({"jsonrpc": "2.0", "id": request_id, "result": result}),
                Err((code, message)) => json!({"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": code,
                    "message": message,
                }}),
            };
            send(&reply)?;
            Ok(None)
        }
        (Some(method), None) => {
            match method {
                "notifications/tools/list_changed" => events.tools_changed = true,
                "notifications/resources/updated" => {
                    let uri = object.get("params").and_then(|p| p.get("uri"));
                    if let Some(uri) = uri.and_then(Value::as_str)
                        && !events.resources_updated.iter().any(|u| u == uri)
                    {
                        events.resources_updated.push(uri.to_string());
                    }
                }
                "notifications/progress" => asks::progress(object.get("params"), id),
                _ => {}
            }
            Ok(None)
        }
        (None, Some(response_id)) if response_id.as_u64() == Some(id) => {
            if let Some(result) = object.get("result") {
                return Ok(Some(Ok(result.clone())));
            }
            let error = object.get("error");
            let text = error
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("no message");
            let code = error
                .and_then(|e| e.get("code"))
                .and_then(Value::as_i64)
                .map(|c| format!(" ({c})"))
                .unwrap_or_default();
            Ok(Some(Err(format!(
                "the server answered with an error{code}: {text}"
            ))))
        }
        // A late answer to an earlier request: not ours.
        (None, Some(_)) => Ok(None),
        (None, None) => Err(format!(
            "the server sent a message that is neither a request, a notification nor a response: {}",
            preview(&message.to_string())
        )),
    }
}

/// What an operation heard besides its answer, before it heard anything.
fn no_events() -> Events {
    Events {
        tools_changed: false,
        resources_updated: Vec::new(),
    }
}

/// One page of the listing `method` (its entries under `key`, each read by
/// `read`), and the cursor to the next page.
type Page<T> = (Vec<T>, Option<String>, Events);

fn page<T>(
    session: &Session,
    (method, key): (&str, &str),
    (cursor, request_id): (Option<String>, u64),
    read: impl Fn(&Value) -> Result<T, String>,
) -> Result<Page<T>, String> {
    use_session(session);
    let mut events = no_events();
    let params = match cursor {
        Some(cursor) => json!({"cursor": cursor}),
        None => json!({}),
    };
    let result = request(request_id, method, enveloped(session, params), &mut events)?;
    let items = result
        .get(key)
        .and_then(Value::as_array)
        .ok_or(format!("the server's {method} answer has no `{key}` list"))?
        .iter()
        .map(read)
        .collect::<Result<Vec<_>, _>>()?;
    let next_cursor = result
        .get("nextCursor")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    Ok((items, next_cursor, events))
}

fn preview(text: &str) -> String {
    let cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

fn text_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn read_tool(tool: &Value) -> Result<McpTool, String> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .ok_or("the server listed a tool without a name")?
        .to_string();
    let schema = tool
        .get("inputSchema")
        .filter(|s| s.is_object())
        .ok_or(format!(
            "the server's tool `{name}` has no inputSchema object"
        ))?;
    let mut description = text_field(tool, "description");
    if description.is_empty() {
        description = text_field(tool, "title");
    }
    Ok(McpTool {
        name,
        description,
        input_schema: schema.to_string(),
        read_only: tool
            .get("annotations")
            .and_then(|a| a.get("readOnlyHint"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

fn read_content(block: &Value) -> Content {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match kind {
        "text" => Content::Text(text_field(block, "text")),
        "image" => {
            let data = base64::engine::general_purpose::STANDARD.decode(text_field(block, "data"));
            match data {
                Ok(data) => Content::Image(Image {
                    media_type: text_field(block, "mimeType"),
                    data,
                }),
                Err(e) => Content::Text(format!(
                    "[an image the server sent could not be decoded: {e}]"
                )),
            }
        }
        "audio" => Content::Text(format!(
            "[audio ({}), {} base64 characters, not shown]",
            text_field(block, "mimeType"),
            text_field(block, "data").len()
        )),
        "resource_link" => Content::Text(format!(
            "[resource {} {}]",
            text_field(block, "uri"),
            text_field(block, "name")
        )),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => Content::Text(text.to_string()),
                None => Content::Text(format!(
                    "[resource {} ({}), binary, not shown]",
                    text_field(&resource, "uri"),
                    text_field(&resource, "mimeType")
                )),
            }
        }
        other => Content::Text(format!("[content of type `{other}`, not shown]")),
    }
}

impl Guest for Bridge {
    fn protocol_versions() -> Vec<String> {
        std::iter::once(MODERN)
            .chain(HANDSHAKE_VERSIONS.iter().copied())
            .map(str::to_string)
            .collect()
    }

    /// `server/discover` first (the current revision); on an error, or no
    /// answer in time, the `initialize` handshake (earlier revisions).
    fn initialize(
        endpoint: Option<HttpEndpoint>,
        client_name: String,
        client_version: String,
        request_id: u64,
    ) -> Result<Session, String> {
        let mut events = no_events();
        if let Some(session) = discover(endpoint.clone(), request_id, &mut events)? {
            return Ok(session);
        }
        let client = json!({"name": client_name, "version": client_version});
        handshake(endpoint, client, request_id + 1, &mut events)
    }

    fn list_tools(
        session: Session,
        cursor: Option<String>,
        request_id: u64,
    ) -> Result<(ToolPage, Events), String> {
        let listing = ("tools/list", "tools");
        let (tools, next_cursor, events) =
            page(&session, listing, (cursor, request_id), read_tool)?;
        Ok((ToolPage { tools, next_cursor }, events))
    }

    fn call_tool(
        session: Session,
        name: String,
        arguments: String,
        request_id: u64,
    ) -> Result<(CallOutcome, Events), String> {
        use_session(&session);
        let mut events = no_events();
        let arguments: Value = serde_json::from_str(&arguments)
            .map_err(|e| format!("the arguments are not JSON: {e}"))?;
        let result = request(
            request_id,
            "tools/call",
            asks::with_progress_token(
                enveloped(&session, json!({"name": name, "arguments": arguments})),
                request_id,
            ),
            &mut events,
        )?;
        let content = result
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| blocks.iter().map(read_content).collect())
            .unwrap_or_default();
        Ok((
            CallOutcome {
                content,
                structured: result
                    .get("structuredContent")
                    .filter(|s| !s.is_null())
                    .map(Value::to_string),
                is_error: result
                    .get("isError")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            events,
        ))
    }

    fn list_resources(
        session: Session,
        cursor: Option<String>,
        request_id: u64,
    ) -> Result<(ResourcePage, Events), String> {
        let listing = ("resources/list", "resources", "uri");
        catalogue::list_resources(&session, listing, cursor, request_id)
    }

    fn list_resource_templates(
        session: Session,
        cursor: Option<String>,
        request_id: u64,
    ) -> Result<(ResourcePage, Events), String> {
        let listing = (
            "resources/templates/list",
            "resourceTemplates",
            "uriTemplate",
        );
        catalogue::list_resources(&session, listing, cursor, request_id)
    }

    fn read_resource(
        session: Session,
        uri: String,
        request_id: u64,
    ) -> Result<(String, Events), String> {
        catalogue::read_resource(&session, &uri, request_id)
    }

    fn list_prompts(
        session: Session,
        cursor: Option<String>,
        request_id: u64,
    ) -> Result<(PromptPage, Events), String> {
        catalogue::list_prompts(&session, cursor, request_id)
    }

    fn get_prompt(
        session: Session,
        name: String,
        arguments: Vec<(String, String)>,
        request_id: u64,
    ) -> Result<(Vec<PromptMessage>, Events), String> {
        catalogue::get_prompt(&session, &name, arguments, request_id)
    }

    fn subscribe_resource(
        session: Session,
        uri: String,
        request_id: u64,
    ) -> Result<Events, String> {
        catalogue::subscribe(&session, &uri, request_id)
    }

    fn drain(session: Session) -> Result<Events, String> {
        use_session(&session);
        let mut events = no_events();
        while let Some(line) = receive(0)? {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue; // unasked-for noise: nothing waits for it
            };
            let batch = match message {
                Value::Array(items) => items,
                single => vec![single],
            };
            for message in batch {
                // No request is outstanding: any response is stale.
                handle(&message, u64::MAX, &mut events)?;
            }
        }
        Ok(events)
    }
}

export!(Bridge);

/// `server/discover` (the current revision): the session, when the server
/// speaks it; `None` when it does not (an error answer, or silence).
fn discover(
    endpoint: Option<HttpEndpoint>,
    request_id: u64,
    events: &mut Events,
) -> Result<Option<Session>, String> {
    let probe = Session {
        endpoint: endpoint.clone(),
        http_session: None,
        protocol_version: MODERN.into(),
        server_name: String::new(),
        server_version: String::new(),
        instructions: None,
        tools_list_changed: false,
        resources: false,
        resources_subscribe: false,
        prompts: false,
    };
    use_session(&probe);
    let discovered = request_within(
        request_id,
        "server/discover",
        enveloped(&probe, json!({})),
        events,
        Some(DISCOVER_WAIT_MS),
    );
    // A broken exchange is an error (over HTTP, an older server may
    // refuse the probe outright); an error answer or silence means an
    // older server: fall back to the handshake.
    let discovered = match discovered {
        Ok(answer) => answer,
        Err(_) if endpoint.is_some() => None,
        Err(e) => return Err(e),
    };
    let Some(Ok(result)) = discovered else {
        return Ok(None);
    };
    let speaks_modern = result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(MODERN)));
    if !speaks_modern {
        return Ok(None);
    }
    let tools_list_changed = result
        .pointer("/capabilities/tools/listChanged")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    // (Over HTTP the stream would outlive this instance: the host reads
    // the list again between turns instead.)
    if tools_list_changed && endpoint.is_none() {
        // The current revision sends list changes only on a
        // `subscriptions/listen` stream; its notifications are read with
        // every later operation (and by `drain`).
        send(&json!({
            "jsonrpc": "2.0",
            "id": request_id + 2,
            "method": "subscriptions/listen",
            "params": enveloped(&probe, json!({"notifications": {"toolsListChanged": true}})),
        }))?;
    }
    let info = result
        .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
        .cloned()
        .unwrap_or(Value::Null);
    Ok(Some(session_of(endpoint, MODERN.into(), &result, &info)))
}

/// The session a `server/discover` or `initialize` answer (`result`)
/// describes: the server (`info`), its instructions, what it offers.
fn session_of(
    endpoint: Option<HttpEndpoint>,
    protocol_version: String,
    result: &Value,
    info: &Value,
) -> Session {
    Session {
        endpoint,
        http_session: http_session(),
        protocol_version,
        server_name: text_field(info, "name"),
        server_version: text_field(info, "version"),
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_string),
        tools_list_changed: result
            .pointer("/capabilities/tools/listChanged")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        resources: offers(result, "resources"),
        resources_subscribe: result
            .pointer("/capabilities/resources/subscribe")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        prompts: offers(result, "prompts"),
    }
}

/// Whether the server's capabilities name `what`.
fn offers(result: &Value, what: &str) -> bool {
    result
        .get("capabilities")
        .and_then(|c| c.get(what))
        .is_some_and(Value::is_object)
}

/// The `initialize` handshake of the earlier revisions.
fn handshake(
    endpoint: Option<HttpEndpoint>,
    client: Value,
    request_id: u64,
    events: &mut Events,
) -> Result<Session, String> {
    // The handshake names its version in the body, not in a header.
    forget_protocol();
    let result = request(
        request_id,
        "initialize",
        json!({
            "protocolVersion": HANDSHAKE_VERSIONS[0],
            "capabilities": asks::capabilities(),
            "clientInfo": client,
        }),
        events,
    )?;
    let version = text_field(&result, "protocolVersion");
    if !HANDSHAKE_VERSIONS.contains(&version.as_str()) {
        return Err(format!(
            "the server speaks MCP revision `{version}`; carapace speaks {MODERN}, {}",
            HANDSHAKE_VERSIONS.join(", ")
        ));
    }
    set_protocol(&version);
    send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let info = result.get("serverInfo").cloned().unwrap_or(Value::Null);
    Ok(session_of(endpoint, version, &result, &info))
}
