//! What an MCP server offers besides tools, as the model and the user meet
//! it: a server built with the `mcp` Python package (`library_server.py`)
//! over stdio and over Streamable HTTP, its instructions in the
//! conversation, its resources through ListMcpResourcesTool and
//! ReadMcpResourceTool, its prompts as `/mcp__library__review` — each
//! checked in what reaches the model, as Claude Code 2.1.197 sends it.

mod common;
#[path = "../e2e/support.rs"]
mod support;

use common::{BoxError, HttpServer, Session, servers_dir, session_prompting, session_with_env};
use scripted_server::{Block, Reply};
use serde_json::{Value, json};
use support::{TestResult, text_of};

/// The library server over stdio.
fn stdio() -> Result<Value, BoxError> {
    common::notes()?; // the `mcp` package is there
    Ok(json!({"command": carapace_test_support::deps::python(),
              "args": [servers_dir().join("library_server.py")]}))
}

fn run(
    library: Value,
    replies: Vec<Reply>,
    prompt: &str,
    args: &[&str],
) -> Result<Session, BoxError> {
    run_as("library", library, replies, (prompt, args))
}

/// [`run`] with the server configured as `name`.
fn run_as(
    name: &str,
    config: Value,
    replies: Vec<Reply>,
    (prompt, args): (&str, &[&str]),
) -> Result<Session, BoxError> {
    let ws = tempfile::tempdir()?;
    session_prompting(ws.path(), json!({ name: config }), replies, (prompt, args))
}

fn reads_the_library(library: Value) -> TestResult {
    let s = run(
        library,
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_list",
                "ListMcpResourcesTool",
                json!({}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_read",
                "ReadMcpResourceTool",
                json!({"server": "library", "uri": "library://books/dune"}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_nope",
                "ReadMcpResourceTool",
                json!({"server": "nope", "uri": "library://catalogue"}),
            )]),
            Reply::text("done"),
        ],
        "use the library",
        // No rule: reading resources is never asked.
        &[],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    let requests = s.server.requests();
    let first = &requests.first().ok_or("no request")?.body;
    // The tools are offered, the instructions placed as Claude Code does.
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .ok_or("no tools")?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"ListMcpResourcesTool") && tools.contains(&"ReadMcpResourceTool"),
        "{tools:?}"
    );
    let opening = first["messages"][0].to_string();
    assert!(
        opening.contains("# MCP Server Instructions\\n\\nThe following MCP servers have provided instructions for how to use their tools and resources:\\n\\n## library\\nBooks are resources: list them before reading one."),
        "{opening}"
    );
    assert!(!first["system"].to_string().contains("Books are resources"));
    // The listing: the resource and the template, each with its server.
    let listed = text_of(&s.result(1, "toolu_list")?);
    let listed: Value = serde_json::from_str(&listed).map_err(|e| format!("{e}: {listed}"))?;
    assert_eq!(
        listed,
        json!([
            {"name": "catalogue", "uri": "library://catalogue", "description": "Every book's key", "mimeType": "text/plain", "server": "library"},
            {"name": "book", "uriTemplate": "library://books/{key}", "description": "One book's card", "mimeType": "text/plain", "server": "library"}
        ])
    );
    // A template filled in, read as Claude Code gives it.
    let read = s.result(2, "toolu_read")?;
    assert_eq!(
        serde_json::from_str::<Value>(&text_of(&read))?,
        json!({"contents": [{"uri": "library://books/dune", "mimeType": "text/plain", "text": "Dune, by Frank Herbert. Shelf SCI."}]})
    );
    let nope = s.result(3, "toolu_nope")?;
    assert_eq!(nope["is_error"], true);
    assert_eq!(
        text_of(&nope),
        "Server \"nope\" not found. Available servers: library"
    );
    // Its prompt is a command.
    let commands = s.init()["slash_commands"].as_array().ok_or("no commands")?;
    assert!(
        commands.contains(&json!("mcp__library__review")),
        "{commands:?}"
    );
    Ok(())
}

#[test]
fn a_servers_resources_instructions_and_prompts_reach_the_model_over_stdio() -> TestResult {
    reads_the_library(stdio()?)
}

#[test]
fn a_servers_resources_instructions_and_prompts_reach_the_model_over_http() -> TestResult {
    let library = HttpServer::start("library_server.py", &[], &[])?;
    reads_the_library(json!({"type": "http", "url": library.url}))
}

#[test]
fn a_deny_rule_refuses_reading_resources() -> TestResult {
    let s = run(
        stdio()?,
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_read",
                "ReadMcpResourceTool",
                json!({"server": "library", "uri": "library://catalogue"}),
            )]),
            Reply::text("done"),
        ],
        "use the library",
        &["--disallowedTools", "ReadMcpResourceTool"],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    // Denied, it is not offered at all (as Claude Code hides denied tools);
    // a call to it anyway is refused, never read.
    let first = &s.server.requests()[0].body;
    assert!(
        !first["tools"]
            .to_string()
            .contains("\"ReadMcpResourceTool\"")
    );
    let refused = s.result(1, "toolu_read")?;
    assert_eq!(refused["is_error"], true);
    assert_eq!(
        text_of(&refused),
        "<tool_use_error>Error: No such tool available: ReadMcpResourceTool. Did you mean ListMcpResourcesTool?</tool_use_error>"
    );
    Ok(())
}

fn prompt_command(library: Value) -> TestResult {
    let s = run(
        library,
        vec![Reply::text("a review")],
        "/mcp__library__review Dune witty",
        &[],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    let requests = s.server.requests();
    let message = &requests.first().ok_or("no request")?.body["messages"][0]["content"];
    let texts: Vec<&str> = message
        .as_array()
        .ok_or("no content")?
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    let at = texts.len() - 2;
    assert_eq!(
        &texts[at..],
        [
            "<command-message>mcp__library__review</command-message>\n<command-name>/mcp__library__review</command-name>\n<command-args>Dune witty</command-args>\n",
            "Write a witty review of Dune.",
        ]
    );
    Ok(())
}

#[test]
fn an_mcp_prompt_is_a_command_with_its_arguments_over_stdio_and_http() -> TestResult {
    prompt_command(stdio()?)?;
    let library = HttpServer::start("library_server.py", &[], &[])?;
    prompt_command(json!({"type": "http", "url": library.url}))
}

#[test]
fn a_prompt_without_its_required_argument_is_answered_without_a_request() -> TestResult {
    let s = run(
        stdio()?,
        vec![Reply::text("unused")],
        "/mcp__library__review",
        &[],
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    assert!(s.server.requests().is_empty(), "a request was sent");
    let result = s.out.last().ok_or("no result")?;
    assert_eq!(
        result["result"],
        "/mcp__library__review needs `book` (its arguments, in order: book tone)"
    );
    Ok(())
}

/// A server that asks the client something in the middle of its answer
/// (here `sampling/createMessage`, which carapace does not offer) is
/// answered at once, over stdio and inside an HTTP answer's SSE stream
/// alike: the tool's result carries the refusal, not the server's own
/// timeout.
#[test]
fn a_servers_request_mid_answer_is_refused_at_once_over_stdio_and_http() -> TestResult {
    let mut stdio = stdio()?;
    stdio["args"]
        .as_array_mut()
        .ok_or("no args")?
        .push(json!("--legacy"));
    let http = HttpServer::start("library_server.py", &["--legacy"], &[])?;
    for library in [stdio, json!({"type": "http", "url": http.url})] {
        let s = run(
            library,
            vec![
                Reply::tool_uses(vec![Block::tool_use(
                    "toolu_sum",
                    "mcp__library__summarise",
                    json!({}),
                )]),
                Reply::text("done"),
            ],
            "summarise",
            &["--allowedTools", "mcp__library"],
        )?;
        assert_eq!(s.status, Some(0), "{}", s.stderr);
        let result = text_of(&s.result(1, "toolu_sum")?);
        assert!(
            result.contains("sampling refused")
                && result.contains("carapace does not offer `sampling/createMessage`"),
            "{result}"
        );
    }
    Ok(())
}

/// A hook command that tells its input on stderr (hooks run sandboxed:
/// they write nowhere) and prints `answer`.
fn hook(answer: &Value) -> Value {
    json!({"type": "command", "command": format!("cat >&2 && printf '%s' '{answer}'")})
}

/// What the `event` hook was told, from the stream's hook lines.
fn hook_input(s: &Session, event: &str) -> Result<Value, BoxError> {
    let line = s
        .out
        .iter()
        .find(|l| l["subtype"] == "hook_response" && l["hook_event"] == event)
        .ok_or(format!("no {event} hook ran"))?;
    Ok(serde_json::from_str(
        line["stderr"].as_str().unwrap_or_default(),
    )?)
}

/// A server's question for the user (elicitation) over either transport
/// and both ways of asking: print mode, where nobody can be asked, cancels
/// it as Claude Code does; an Elicitation hook answers it, told the server
/// and the form; an ElicitationResult hook changes the answer before the
/// server reads it.
#[test]
fn an_elicitation_is_cancelled_in_print_mode_and_hooks_answer_and_change_it() -> TestResult {
    let mut legacy = stdio()?;
    legacy["args"]
        .as_array_mut()
        .ok_or("no args")?
        .push(json!("--legacy"));
    let http = HttpServer::start("library_server.py", &["--legacy"], &[])?;
    // 2025: a request in the middle of the answer; 2026-07-28: an
    // input_required result and a retry.
    let cases = [
        (legacy, "mcp__library__shelve", "Dune shelved on"),
        (
            json!({"type": "http", "url": http.url}),
            "mcp__library__shelve",
            "Dune shelved on",
        ),
        (
            stdio()?,
            "mcp__library__shelve_by_round_trip",
            "Dune shelved on",
        ),
    ];
    for (library, tool, shelved) in cases {
        let call = || {
            vec![
                Reply::tool_uses(vec![Block::tool_use(
                    "toolu_shelve",
                    tool,
                    json!({"title": "Dune"}),
                )]),
                Reply::text("done"),
            ]
        };
        let allow = ["--allowedTools", "mcp__library"];
        let s = run(library.clone(), call(), "shelve it", &allow)?;
        assert_eq!(s.status, Some(0), "{}", s.stderr);
        assert_eq!(
            text_of(&s.result(1, "toolu_shelve")?),
            "not shelved: cancel",
            "{tool}"
        );

        let ws = tempfile::tempdir()?;
        let accept = json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"shelf": "SCI"}}});
        let settings =
            json!({"hooks": {"Elicitation": [{"matcher": "library", "hooks": [hook(&accept)]}]}});
        let mut args = allow.to_vec();
        let settings_text = settings.to_string();
        args.extend(["--settings", &settings_text, "--include-hook-events"]);
        let servers = json!({"library": library.clone()});
        let s = session_prompting(ws.path(), servers, call(), ("shelve it", &args))?;
        let got = text_of(&s.result(1, "toolu_shelve")?);
        assert!(
            got.starts_with(&format!("{shelved} SCI")),
            "{tool}: {got} {}",
            s.stderr
        );
        let told = hook_input(&s, "Elicitation")?;
        assert_eq!(told["hook_event_name"], "Elicitation");
        assert_eq!(told["mcp_server_name"], "library");
        assert_eq!(told["mode"], "form");
        assert_eq!(told["message"], "Which shelf for Dune?");
        assert_eq!(
            told["requested_schema"]["properties"]["shelf"]["type"],
            "string"
        );

        let change = json!({"hookSpecificOutput": {"hookEventName": "ElicitationResult", "action": "accept", "content": {"shelf": "CLA"}}});
        let settings = json!({"hooks": {
            "Elicitation": [{"hooks": [hook(&accept)]}],
            "ElicitationResult": [{"matcher": "library", "hooks": [hook(&change)]}],
        }});
        let settings_text = settings.to_string();
        let mut args = allow.to_vec();
        args.extend(["--settings", &settings_text, "--include-hook-events"]);
        let servers = json!({"library": library});
        let s = session_prompting(ws.path(), servers, call(), ("shelve it", &args))?;
        assert!(
            text_of(&s.result(1, "toolu_shelve")?).starts_with(&format!("{shelved} CLA")),
            "{tool}"
        );
        let told = hook_input(&s, "ElicitationResult")?;
        assert_eq!(
            (told["action"].as_str(), &told["content"]),
            (Some("accept"), &json!({"shelf": "SCI"}))
        );
    }
    Ok(())
}

/// A server that reports progress keeps its call alive past the deadline
/// (each report restarts it, up to ten times it), over stdio and over
/// HTTP (where the reports come in the call's SSE answer); the control — a
/// call as long that says nothing — is stopped at the deadline.
#[test]
fn progress_restarts_a_calls_deadline_and_silence_does_not() -> TestResult {
    let http = HttpServer::start("library_server.py", &[], &[])?;
    for library in [stdio()?, json!({"type": "http", "url": http.url})] {
        let ws = tempfile::tempdir()?;
        let calls = vec![
            // 40 shelves, 50 ms each: 2 s in all, a report every 50 ms.
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_count",
                "mcp__library__inventory",
                json!({"steps": 40}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_nap",
                "mcp__library__nap",
                json!({"seconds": 2}),
            )]),
            Reply::text("done"),
        ];
        let s = session_with_env(
            ws.path(),
            json!({"library": library}),
            calls,
            ("count", &["--allowedTools", "mcp__library"]),
            &[("MCP_TOOL_TIMEOUT", "1000")],
        )?;
        assert_eq!(s.status, Some(0), "{}", s.stderr);
        assert_eq!(text_of(&s.result(1, "toolu_count")?), "counted 40 shelves");
        let nap = text_of(&s.result(2, "toolu_nap")?);
        assert!(nap.contains("ran longer than its 1s deadline"), "{nap}");
    }
    Ok(())
}

/// The same through a server built with the TypeScript SDK
/// (`@modelcontextprotocol/server-everything`, on the 2025 handshake): its
/// instructions, documents and templates, its prompt with arguments, its
/// question for the user (cancelled in print mode, answered by a hook),
/// and its progress keeping a call past the deadline.
#[test]
fn a_typescript_sdk_servers_resources_prompts_questions_and_progress() -> TestResult {
    let everything = common::everything()?;
    let allow = ["--allowedTools", "mcp__everything"];
    let document = "demo://resource/static/document/features.md";
    let s = run_as(
        "everything",
        everything.clone(),
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_list",
                "ListMcpResourcesTool",
                json!({"server": "everything"}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_read",
                "ReadMcpResourceTool",
                json!({"server": "everything", "uri": document}),
            )]),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_ask",
                "mcp__everything__trigger-elicitation-request",
                json!({}),
            )]),
            Reply::text("done"),
        ],
        ("use everything", &allow),
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    let first = &s.server.requests()[0].body;
    let opening = first["messages"][0].to_string();
    assert!(
        opening.contains("## everything"),
        "no instructions: {opening}"
    );
    let listed: Value = serde_json::from_str(&text_of(&s.result(1, "toolu_list")?))?;
    let listed = listed.as_array().ok_or("not a list")?;
    assert!(
        listed
            .iter()
            .any(|r| r["uri"] == document && r["server"] == "everything")
    );
    assert!(listed.iter().any(|r| {
        r["uriTemplate"]
            .as_str()
            .is_some_and(|t| t.starts_with("demo://resource/dynamic/text/"))
    }));
    let read: Value = serde_json::from_str(&text_of(&s.result(2, "toolu_read")?))?;
    assert_eq!(read["contents"][0]["uri"], document);
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );
    assert!(text_of(&s.result(3, "toolu_ask")?).contains("User cancelled the elicitation dialog"));

    // A hook answers the form in the user's place.
    let accept = json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"name": "Ada"}}});
    let settings =
        json!({"hooks": {"Elicitation": [{"matcher": "everything", "hooks": [hook(&accept)]}]}})
            .to_string();
    let mut args = allow.to_vec();
    args.extend(["--settings", &settings]);
    let answered = run_as(
        "everything",
        everything.clone(),
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_ask",
                "mcp__everything__trigger-elicitation-request",
                json!({}),
            )]),
            Reply::text("done"),
        ],
        ("ask me", &args),
    )?;
    assert!(text_of(&answered.result(1, "toolu_ask")?).contains("- Name: Ada"));

    // Its prompt as a command.
    let prompted = run_as(
        "everything",
        everything.clone(),
        vec![Reply::text("sunny")],
        ("/mcp__everything__args-prompt Paris", &[]),
    )?;
    let message = prompted.server.requests()[0].body["messages"][0]["content"].to_string();
    assert!(message.contains("What's weather in Paris?"), "{message}");

    // Five reports a fifth of a second apart keep a 1 s call past a 0.7 s
    // deadline.
    let ws = tempfile::tempdir()?;
    let progressed = session_with_env(
        ws.path(),
        json!({"everything": everything}),
        vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_long",
                "mcp__everything__trigger-long-running-operation",
                json!({"duration": 1, "steps": 5}),
            )]),
            Reply::text("done"),
        ],
        ("wait", &allow),
        &[("MCP_TOOL_TIMEOUT", "700")],
    )?;
    let long = text_of(&progressed.result(1, "toolu_long")?);
    assert!(
        long.starts_with("Long running operation completed"),
        "{long}"
    );
    Ok(())
}

/// The ledger server (`ledger_server.py`) over stdio, with `args`.
fn ledger_stdio(args: &[&str]) -> Result<Value, BoxError> {
    common::notes()?;
    let mut all = vec![json!(servers_dir().join("ledger_server.py"))];
    all.extend(args.iter().map(|a| json!(a)));
    Ok(json!({"command": carapace_test_support::deps::python(), "args": all}))
}

/// The tag the model is told a resource changed with.
const BALANCE_UPDATE: &str =
    "<mcp-resource-update server=\\\"ledger\\\" uri=\\\"ledger://balance\\\">";

/// The model reads the balance and the rates, deposits (which changes the
/// balance), then lists: when the server offers subscriptions, the model
/// is told once that the balance changed — never before the deposit, and
/// never about the rates; when it offers none, never.
fn follows_the_balance(ledger: Value, offers: bool) -> TestResult {
    let ws = tempfile::tempdir()?;
    follows_the_balance_in(ws.path(), ledger, offers)
}

/// [`follows_the_balance`] in the workspace `ws`.
fn follows_the_balance_in(ws: &std::path::Path, ledger: Value, offers: bool) -> TestResult {
    let read = |id: &str, uri: &str| {
        Reply::tool_uses(vec![Block::tool_use(
            id,
            "ReadMcpResourceTool",
            json!({"server": "ledger", "uri": uri}),
        )])
    };
    let replies = vec![
        read("toolu_balance", "ledger://balance"),
        read("toolu_rates", "ledger://rates"),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_deposit",
            "mcp__ledger__deposit",
            json!({"amount": 5}),
        )]),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_list",
            "ListMcpResourcesTool",
            json!({}),
        )]),
        Reply::text("done"),
    ];
    let s = session_prompting(
        ws,
        json!({"ledger": ledger.clone()}),
        replies,
        ("keep the books", &["--allowedTools", "mcp__ledger"]),
    )?;
    assert_eq!(s.status, Some(0), "{}", s.stderr);
    assert_eq!(text_of(&s.result(3, "toolu_deposit")?), "deposited 5");
    let requests = s.server.requests();
    let before = requests.get(2).ok_or("no request 2")?.body.to_string();
    let last = requests.get(4).ok_or("no request 4")?.body.to_string();
    assert!(!before.contains("<mcp-resource-update"), "{before}");
    assert_eq!(
        last.matches(BALANCE_UPDATE).count(),
        usize::from(offers),
        "{ledger}: {last}\n{}",
        s.stderr
    );
    assert!(!last.contains("ledger://rates\\\">"), "{last}");
    Ok(())
}

#[test]
fn a_resource_the_model_read_is_followed_where_the_server_offers_subscriptions() -> TestResult {
    // 2025 over stdio: `resources/subscribe`, once for each resource read
    // (logged where the sandboxed server may write: the workspace).
    let ws = tempfile::tempdir()?;
    let subscriptions = ws.path().join("subscriptions.log");
    let mut legacy = ledger_stdio(&["--legacy"])?;
    legacy["env"] = json!({"SUBSCRIPTIONS_LOG": subscriptions});
    follows_the_balance_in(ws.path(), legacy, true)?;
    assert_eq!(
        std::fs::read_to_string(&subscriptions)?,
        "resources/subscribe ledger://balance\nresources/subscribe ledger://rates\n"
    );
    // 2026-07-28 over stdio: a `subscriptions/listen` stream.
    follows_the_balance(ledger_stdio(&[])?, true)?;
    // Over HTTP, either revision: read again between turns.
    for args in [&[][..], &["--legacy"][..]] {
        let http = HttpServer::start("ledger_server.py", args, &[])?;
        follows_the_balance(json!({"type": "http", "url": http.url}), true)?;
    }
    Ok(())
}

/// The control: the same server offering no subscriptions is not followed.
#[test]
fn a_server_that_offers_no_subscriptions_is_not_followed() -> TestResult {
    follows_the_balance(ledger_stdio(&["--no-subscribe"])?, false)?;
    follows_the_balance(ledger_stdio(&["--legacy", "--no-subscribe"])?, false)?;
    let http = HttpServer::start("ledger_server.py", &["--no-subscribe"], &[])?;
    follows_the_balance(json!({"type": "http", "url": http.url}), false)
}
