//! Claude Code's print-mode flags and default tools, run through the
//! binary against the scripted server (issue 16).

use super::support;
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{TestResult, last_line, lines};

const PERSON: &str = r#"{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}"#;

fn structured(id: &str, input: Value) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(id, "StructuredOutput", input)])
}

fn stream_json(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["-p", "who?", "--output-format", "stream-json", "--verbose"]
        .map(String::from)
        .to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run(
    server: &ScriptedServer,
    ws: &std::path::Path,
    args: &[String],
) -> Result<support::Run, Box<dyn std::error::Error>> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    support::run(server, ws, &args)
}

#[test]
fn json_schema_answer_is_repaired_once_then_carried_by_the_result() -> TestResult {
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![
        // A text answer: the model is asked for the tool.
        Reply::text("Ada, 36"),
        // Invalid input: the schema's complaint goes back.
        structured("toolu_1", json!({"name": 1})),
        structured("toolu_2", json!({"name": "Ada", "age": 36})),
    ])?;
    let out = run(&server, ws.path(), &stream_json(&["--json-schema", PERSON]))?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "a valid answer ends the turn");
    let tool = requests[0].body["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "StructuredOutput"))
        .ok_or("StructuredOutput not offered")?;
    assert_eq!(tool["input_schema"], serde_json::from_str::<Value>(PERSON)?);
    let second = &requests[1].body["messages"];
    let nudge = second[2]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(nudge.contains("StructuredOutput"), "{nudge}");
    let third = &requests[2].body["messages"];
    let refusal = &third[4]["content"][0];
    assert_eq!(refusal["is_error"], true);
    let why = support::text_of(refusal);
    assert!(why.contains("age") && why.contains("string"), "{why}");

    let result = last_line(&out.stdout)?;
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["terminal_reason"], "completed");
    assert_eq!(
        result["structured_output"],
        json!({"name": "Ada", "age": 36})
    );
    let text: Value = serde_json::from_str(result["result"].as_str().ok_or("no result")?)?;
    assert_eq!(text, json!({"name": "Ada", "age": 36}));
    let init = &lines(&out.stdout)?[0];
    assert!(
        init["tools"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("StructuredOutput")))
    );
    Ok(())
}

#[test]
fn json_schema_ends_structured_output_retry_exhausted() -> TestResult {
    let ws = tempfile::tempdir()?;
    // Three bad answers and a text-only turn: four attempts with a bound of four.
    let server = ScriptedServer::start(vec![
        structured("toolu_1", json!({"name": 1})),
        structured("toolu_2", json!({})),
        Reply::text("I would rather not"),
        structured("toolu_3", json!({"name": "Ada", "age": "old"})),
        structured("toolu_4", json!({"name": "Ada", "age": 36})),
    ])?;
    let output = support::against(&server, ws.path())
        .env("MAX_STRUCTURED_OUTPUT_RETRIES", "4")
        .args(stream_json(&["--json-schema", PERSON]))
        .output()?;
    let out = support::Run::from_output(output)?;
    assert_eq!(out.status, Some(1), "{}", out.stderr);
    assert_eq!(server.requests().len(), 4, "no request after the bound");
    let result = last_line(&out.stdout)?;
    assert_eq!(result["subtype"], "error_max_structured_output_retries");
    assert_eq!(result["is_error"], true);
    assert_eq!(
        result["terminal_reason"],
        "structured_output_retry_exhausted"
    );
    assert_eq!(
        result["errors"],
        json!(["Failed to provide valid structured output after 4 attempts"])
    );
    assert!(result.get("structured_output").is_none());

    // A schema that cannot be used is refused before anything is sent.
    for (schema, why) in [
        ("{nope", "--json-schema is not JSON"),
        (r#"{"type":"array"}"#, "must describe an object"),
        (
            r#"{"type":"object","properties":{"a":{"type":7}}}"#,
            "not a valid JSON Schema",
        ),
    ] {
        let out = run(&server, ws.path(), &stream_json(&["--json-schema", schema]))?;
        assert_eq!(out.status, Some(1), "{schema}");
        assert!(out.stderr.contains(why), "{schema}: {}", out.stderr);
    }
    assert_eq!(server.requests().len(), 4);
    Ok(())
}

#[test]
fn effort_goes_to_models_that_take_it_with_its_beta() -> TestResult {
    let ws = tempfile::tempdir()?;
    for (model, effort, sent) in [
        ("claude-opus-4-6", "low", Some("low")),
        ("claude-opus-4-5", "max", Some("high")),
        ("claude-sonnet-4-5", "high", None),
    ] {
        let server = ScriptedServer::start(vec![Reply::text("ok")])?;
        let args = [
            "-p", "hi", "--model", model, "--effort", effort, "--betas", "mine",
        ];
        let out = support::run(&server, ws.path(), &args)?;
        assert_eq!(out.status, Some(0), "{}", out.stderr);
        let request = &server.requests()[0];
        assert_eq!(
            request.body["output_config"]["effort"].as_str(),
            sent,
            "{model} {effort}"
        );
        let betas = request
            .headers
            .get("anthropic-beta")
            .cloned()
            .unwrap_or_default();
        let mut expected = vec!["mine"];
        if sent.is_some() {
            expected.push("effort-2025-11-24");
        }
        // A model that thinks gets the thinking betas too, as in Claude Code.
        if carapace::model::ThinkingSupport::of(model) != carapace::model::ThinkingSupport::None {
            expected.extend(carapace::model::THINKING_BETAS);
        }
        assert_eq!(betas, expected.join(","), "{model}");
    }
    let server = ScriptedServer::start(vec![])?;
    let out = support::run(&server, ws.path(), &["-p", "hi", "--effort", "extreme"])?;
    assert_eq!(out.status, Some(2));
    assert!(out.stderr.contains("--effort"), "{}", out.stderr);
    Ok(())
}

#[test]
fn agent_runs_the_session_as_a_defined_agent_type() -> TestResult {
    let ws = tempfile::tempdir()?;
    let agents = r#"{"reviewer": {"description": "Reviews code", "prompt": "You are a strict reviewer.", "tools": ["Read", "Grep"], "model": "claude-opus-4-6"}}"#;
    let server = ScriptedServer::start(vec![Reply::text("ok"), Reply::text("ok")])?;
    let out = run(
        &server,
        ws.path(),
        &stream_json(&["--agents", agents, "--agent", "reviewer"]),
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let body = &server.requests()[0].body;
    assert_eq!(body["model"], "claude-opus-4-6");
    let system = body["system"][0]["text"].as_str().unwrap_or_default();
    assert!(system.starts_with("You are a strict reviewer."), "{system}");
    assert_eq!(support::tool_names(body), ["Read", "Grep"]);
    let init = &lines(&out.stdout)?[0];
    assert_eq!(init["model"], "claude-opus-4-6");
    assert_eq!(init["tools"], json!(["Read", "Grep"]));

    // The `agent` setting does the same; --model still wins over the
    // agent's model.
    let settings = json!({"agent": "reviewer"}).to_string();
    let out = run(
        &server,
        ws.path(),
        &stream_json(&[
            "--agents",
            agents,
            "--settings",
            &settings,
            "--model",
            "claude-sonnet-4-5",
        ]),
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let body = &server.requests()[1].body;
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert!(
        body["system"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("You are a strict reviewer.")
    );

    let out = run(&server, ws.path(), &stream_json(&["--agent", "nobody"]))?;
    assert_eq!(out.status, Some(1));
    assert!(
        out.stderr
            .contains("--agent: no agent type `nobody` is defined (known: general-purpose"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 2);
    Ok(())
}

#[test]
fn bare_runs_with_the_simple_tools_and_nothing_loaded_implicitly() -> TestResult {
    let ws = tempfile::tempdir()?;
    let config = ws.path().join("config");
    std::fs::create_dir_all(&config)?;
    let probe =
        std::path::Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("command-hook-probe.wasm");
    std::fs::write(
        config.join("settings.json"),
        json!({
            "permissions": {"deny": ["Write"]},
            "hooks": {"Stop": [{"hooks": [{"type": "wasm-command", "path": probe}]}]}
        })
        .to_string(),
    )?;
    std::fs::write(
        config.join("mcp.json"),
        json!({"mcpServers": {"implicit": {"command": "true"}}}).to_string(),
    )?;
    let server = ScriptedServer::start(vec![
        Reply::text("ok"),
        Reply::text("ok"),
        Reply::text("ok"),
    ])?;
    // The init line, and whether a Stop hook ran.
    let run_with = |extra: &[&str]| -> Result<(Value, bool), Box<dyn std::error::Error>> {
        let output = support::against(&server, ws.path())
            .env("CARAPACE_CONFIG_DIR", &config)
            .args(stream_json(extra))
            .arg("--include-hook-events")
            .output()?;
        let out = support::Run::from_output(output)?;
        assert_eq!(out.status, Some(0), "{}", out.stderr);
        let mut all = lines(&out.stdout)?;
        let hooked = all
            .iter()
            .any(|l| l["subtype"] == "hook_started" && l["hook_event"] == "Stop");
        Ok((all.swap_remove(0), hooked))
    };
    let (bare, hooked) = run_with(&["--bare"])?;
    // Agents given explicitly are still offered.
    let (with_agents, _) = run_with(&[
        "--bare",
        "--agents",
        r#"{"r": {"description": "d", "prompt": "p"}}"#,
    ])?;
    assert_eq!(
        with_agents["tools"],
        json!(["Bash", "Read", "Edit", "Agent"])
    );
    // The user's deny rule still applies; no hook ran, no server started.
    assert_eq!(bare["tools"], json!(["Bash", "Read", "Edit"]));
    assert_eq!(bare["mcp_servers"], json!([]));
    assert!(!hooked, "--bare ran a settings hook");
    let (full, hooked) = run_with(&[])?;
    let tools = full["tools"].as_array().ok_or("no tools")?;
    assert!(tools.contains(&json!("Agent")) && tools.contains(&json!("Glob")));
    assert_eq!(full["mcp_servers"][0]["name"], "implicit");
    assert!(hooked, "the control run's hook did not run");
    Ok(())
}

/// A search response as the API streams it: the server tool's call, its
/// results, and a summary.
fn search_reply(query: &str) -> Reply {
    use scripted_server::Step;
    let events = vec![
        json!({"type": "message_start", "message": {"id": "msg_search", "type": "message", "role": "assistant",
            "model": "m", "content": [], "stop_reason": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block":
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta":
            {"type": "input_json_delta", "partial_json": json!({"query": query}).to_string()}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://example.org/rust", "title": "Rust 2024", "encrypted_content": "e1", "page_age": null},
            {"type": "web_search_result", "url": "https://example.com/wasm", "title": "Wasm components", "encrypted_content": "e2", "page_age": null}
        ]}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Rust 2024 shipped; components are stable."}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ];
    Reply::Events(events.into_iter().map(Step::Event).collect())
}

#[test]
fn web_search_passes_through_to_the_api_server_tool_when_allowed() -> TestResult {
    let ws = tempfile::tempdir()?;
    let call = Block::tool_use(
        "search",
        "WebSearch",
        json!({"query": "rust 2024", "allowed_domains": ["example.org", "example.com"]}),
    );
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![call.clone()]),
        search_reply("rust 2024"),
        Reply::text("found it"),
    ])?;
    let out = run(
        &server,
        ws.path(),
        &stream_json(&["--allowedTools", "WebSearch"]),
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The search request: the session's model, only the server tool.
    let search = &requests[1].body;
    assert_eq!(search["model"], requests[0].body["model"]);
    assert_eq!(
        search["tools"],
        json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 8,
                "allowed_domains": ["example.org", "example.com"]}])
    );
    assert!(
        search["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("rust 2024")
    );
    let results = results_of(&requests[2].body);
    let (id, is_error, text) = &results[0];
    assert_eq!((id.as_str(), *is_error), ("search", false), "{text}");
    assert!(
        text.contains("https://example.org/rust") && text.contains("Wasm components"),
        "{text}"
    );
    assert!(text.contains("Rust 2024 shipped"), "{text}");

    // Not allowed: refused in print mode, and no search request is made.
    let server = ScriptedServer::start(vec![Reply::tool_uses(vec![call]), Reply::text("ok")])?;
    let out = run(&server, ws.path(), &stream_json(&[]))?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        last_line(&out.stdout)?["permission_denials"][0]["tool_name"],
        "WebSearch"
    );
    Ok(())
}

#[test]
fn the_readme_names_every_offered_tool_and_every_flag() -> TestResult {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))?;
    let tools_section = readme
        .split("\n## Tools\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .ok_or("README has no Tools section")?;
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![Reply::text("ok")])?;
    let out = run(&server, ws.path(), &stream_json(&[]))?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let init = &lines(&out.stdout)?[0];
    let offered = init["tools"].as_array().ok_or("no tools")?;
    assert!(offered.len() >= 14, "{offered:?}");
    // StructuredOutput is offered only with --json-schema (tested above).
    let with_schema = offered
        .iter()
        .filter_map(Value::as_str)
        .chain(["StructuredOutput"]);
    for tool in with_schema {
        assert!(
            tools_section.contains(&format!("`{tool}`")),
            "README's Tools section lacks {tool}"
        );
    }
    let help = support::carapace().arg("--help").output()?;
    let help = String::from_utf8(help.stdout)?;
    let flags_section = readme
        .split("Claude Code's flags")
        .nth(1)
        .and_then(|rest| rest.split("\nEnvironment:").next())
        .ok_or("README has no flag table")?;
    // The option lines: `  -r, --resume <RESUME>`, `      --bare`.
    let options = help
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
        .map(|w| w.trim_end_matches(','));
    let options: Vec<&str> = options
        .filter(|w| !["--help", "--trust-workspace"].contains(w))
        .collect();
    assert!(options.len() > 40, "{options:?}");
    for flag in options {
        // The flag as a whole word (`--agent` is not `--agents`).
        let named = flags_section.match_indices(flag).any(|(at, _)| {
            let after = flags_section[at + flag.len()..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '-')
        });
        assert!(named, "README's flag table lacks {flag}");
    }
    Ok(())
}

#[path = "print_parity/tools.rs"]
mod tools;
use tools::results_of;
