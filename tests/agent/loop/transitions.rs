//! Transitions.

use super::*;

#[tokio::test]
async fn next_turn_pairs_results_and_completes() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    let path = ws.join("a.txt").to_string_lossy().into_owned();
    let run = run(
        Setup::new(vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_1",
                "Read",
                json!({"file_path": path}),
            )]),
            Reply::text("done"),
        ]),
        &ws,
        one("read a"),
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert_eq!(run.outcome.transitions, vec![Transition::NextTurn]);
    assert_eq!(run.requests.len(), 2);
    assert_eq!(run.messages(1)[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(run.result()["subtype"], "success");
    Ok(())
}

#[tokio::test]
async fn max_tokens_asks_to_continue_without_showing_the_prompt() -> TestResult {
    let (_dir, ws) = workspace()?;
    let run = run(
        Setup::new(vec![
            Reply::message(vec![Block::text("PART_ONE ")], "max_tokens"),
            Reply::message(vec![Block::text("PART_TWO ")], "max_tokens"),
            Reply::text("PART_THREE"),
        ]),
        &ws,
        one("write a lot"),
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert_eq!(
        run.outcome.transitions,
        vec![
            Transition::MaxOutputTokensRecovery,
            Transition::MaxOutputTokensRecovery
        ]
    );
    assert_eq!(run.requests.len(), 3);
    // Claude Code counts a user message per continuation (2.1.332: one
    // recovery, num_turns 2); the recoveries do not count toward
    // --max-turns (see max_tokens_recovery_stops_after_three_and_errors).
    assert_eq!(run.outcome.num_turns, 3);
    // Request 2: the partial answer, then a hidden user message.
    let second = run.messages(1);
    assert_eq!(
        second[1],
        json!({"role": "assistant", "content": [{"type": "text", "text": "PART_ONE "}]})
    );
    assert_eq!(second[2]["role"], "user");
    let hidden = texts(&second[2]).join("");
    assert!(hidden.contains("output token limit"), "{hidden}");
    assert!(
        run.lines_of("user", None).is_empty(),
        "the continuation prompt is never printed"
    );
    assert_eq!(run.result()["result"], "PART_THREE");
    Ok(())
}

#[tokio::test]
async fn max_tokens_recovery_stops_after_three_and_errors() -> TestResult {
    let (_dir, ws) = workspace()?;
    let cut = |t: &str| Reply::message(vec![Block::text(t)], "max_tokens");
    let run = run(
        Setup::new(vec![
            cut("1"),
            cut("2"),
            cut("3"),
            cut("4"),
            Reply::text("never"),
        ]),
        &ws,
        one("write a lot"),
    )
    .await?;
    assert_eq!(
        run.requests.len(),
        4,
        "the first request and three continuations"
    );
    assert_eq!(
        run.outcome.transitions,
        vec![Transition::MaxOutputTokensRecovery; 3]
    );
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert!(run.outcome.is_error());
    let errors = run
        .lines
        .iter()
        .filter(|l| l["error"] == "max_output_tokens")
        .count();
    assert_eq!(errors, 1, "the withheld error is shown once, at the end");
    assert_eq!(run.result()["is_error"], true);
    assert_eq!(run.result()["subtype"], "success");
    Ok(())
}

#[tokio::test]
async fn a_tool_round_resets_the_max_tokens_counter() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha")?;
    let path = ws.join("a.txt").to_string_lossy().into_owned();
    let cut = |t: &str| Reply::message(vec![Block::text(t)], "max_tokens");
    let run = run(
        Setup::new(vec![
            cut("1"),
            cut("2"),
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_r",
                "Read",
                json!({"file_path": path}),
            )]),
            cut("3"),
            cut("4"),
            cut("5"),
            Reply::text("finally"),
        ]),
        &ws,
        one("go"),
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert!(!run.outcome.is_error());
    use Transition::{MaxOutputTokensRecovery as M, NextTurn};
    assert_eq!(run.outcome.transitions, vec![M, M, NextTurn, M, M, M]);
    assert_eq!(run.requests.len(), 7);
    Ok(())
}

#[tokio::test]
async fn malformed_tool_use_is_retried_once_with_a_visible_prompt() -> TestResult {
    let (_dir, ws) = workspace()?;
    let run = run(
        Setup::new(vec![
            Reply::message(vec![], "tool_use"),
            Reply::text("recovered"),
        ]),
        &ws,
        one("call something"),
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert_eq!(
        run.outcome.transitions,
        vec![Transition::MalformedToolUseRetry]
    );
    assert_eq!(run.requests.len(), 2);
    // The empty assistant turn is dropped; the retry prompt joins the user turn.
    let second = run.messages(1).as_array().cloned().unwrap_or_default();
    assert_eq!(second.len(), 1, "{second:?}");
    let prompt = texts(&second[0]);
    assert_eq!(prompt[0], "call something");
    assert!(prompt[1].contains("no complete tool call"), "{prompt:?}");
    let synthetic = run.lines_of("user", None);
    assert_eq!(synthetic.len(), 1);
    assert_eq!(synthetic[0]["isSynthetic"], true);
    assert_eq!(run.outcome.num_turns, 2);
    Ok(())
}

#[tokio::test]
async fn a_second_malformed_tool_use_ends_the_run() -> TestResult {
    let (_dir, ws) = workspace()?;
    let run = run(
        Setup::new(vec![
            Reply::message(vec![Block::text("calling")], "tool_use"),
            Reply::message(vec![Block::text("still not")], "tool_use"),
            Reply::text("never"),
        ]),
        &ws,
        one("call something"),
    )
    .await?;
    assert_eq!(run.requests.len(), 2);
    assert_eq!(run.outcome.terminal, Terminal::MalformedToolUseExhausted);
    assert_eq!(
        run.result()["terminal_reason"],
        "malformed_tool_use_exhausted"
    );
    assert_eq!(run.result()["is_error"], true);
    // The non-empty first answer stays in history before the retry prompt.
    assert_eq!(run.messages(1)[1]["content"][0]["text"], "calling");
    Ok(())
}

#[tokio::test]
async fn unparsable_tool_input_is_an_error_result_not_a_retry() -> TestResult {
    let (_dir, ws) = workspace()?;
    let raw = r#"{"file_path": "/x", oops"#;
    let run = run(
        Setup::new(vec![
            Reply::tool_uses(vec![Block::RawToolUse {
                id: "toolu_bad".into(),
                name: "Read".into(),
                json: raw.into(),
            }]),
            Reply::text("fixed"),
        ]),
        &ws,
        one("read"),
    )
    .await?;
    assert_eq!(run.outcome.transitions, vec![Transition::NextTurn]);
    let second = run.messages(1);
    assert_eq!(
        second[1]["content"][0]["input"],
        json!({"__unparsedToolInput": {"raw": raw, "len": raw.len()}})
    );
    let result = &second[2]["content"][0];
    assert_eq!(result["is_error"], true);
    let text = result["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("not valid JSON") && text.contains("oops"),
        "{text}"
    );
    Ok(())
}

#[tokio::test]
async fn a_thinking_only_answer_gets_one_nudge_never_two() -> TestResult {
    let (_dir, ws) = workspace()?;
    let nudged = run(
        Setup::new(vec![thinking_only(), Reply::text("visible")]),
        &ws,
        one("answer"),
    )
    .await?;
    assert_eq!(
        nudged.outcome.transitions,
        vec![Transition::ThinkingOnlyNudge]
    );
    assert_eq!(nudged.result()["result"], "visible");
    assert!(
        texts(&nudged.messages(1)[2])
            .join("")
            .contains("only thinking")
    );

    let twice = run(
        Setup::new(vec![thinking_only(), thinking_only(), Reply::text("never")]),
        &ws,
        one("answer"),
    )
    .await?;
    assert_eq!(
        twice.requests.len(),
        2,
        "a second thinking-only answer is accepted"
    );
    assert_eq!(
        twice.outcome.transitions,
        vec![Transition::ThinkingOnlyNudge]
    );
    assert_eq!(twice.outcome.terminal, Terminal::Completed);
    assert_eq!(twice.result()["result"], "");
    Ok(())
}

/// Runs the typed probe hook on Stop with `step` as its script.
fn stop_hook(setup: &mut Setup, ws: &std::path::Path, step: Value) -> TestResult {
    let log = ws.join("log");
    support::hook_script(ws, json!({ "Stop": step }))?;
    setup.hook_settings = Some(support::hook_on(
        "Stop",
        "",
        support::typed_probe(ws, json!({"write": [log.display().to_string()]})),
    ));
    Ok(())
}

#[tokio::test]
async fn a_stop_hook_block_feeds_back_and_reenters_with_stop_hook_active() -> TestResult {
    let (_dir, ws) = workspace()?;
    let log = ws.join("log").join("stop.jsonl");
    let mut setup = Setup::new(vec![
        Reply::text("first answer"),
        Reply::text("STOP_REENTRY_OK"),
    ]);
    stop_hook(
        &mut setup,
        &ws,
        json!({"block": "STOP_HOOK_REENTER_MARKER", "unless_active": true, "log": log.display().to_string()}),
    )?;
    let run = run(setup, &ws, one("hello")).await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert_eq!(run.outcome.transitions, vec![Transition::StopHookBlocking]);
    assert_eq!(run.outcome.num_turns, 2);
    let second = run.messages(1);
    assert_eq!(second[1]["content"][0]["text"], "first answer");
    assert!(
        texts(&second[2])
            .join("")
            .contains("STOP_HOOK_REENTER_MARKER")
    );
    // What the hook component was told, from the log it wrote under its grant.
    let seen: Vec<(Value, Value)> = std::fs::read_to_string(&log)?
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).map(|v| {
                (
                    v["detail"]["stop_hook_active"].clone(),
                    v["detail"]["last_assistant_message"].clone(),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    assert_eq!(
        seen,
        vec![
            (json!(false), json!("first answer")),
            (json!(true), json!("STOP_REENTRY_OK"))
        ]
    );
    assert_eq!(run.lines_of("system", Some("hook_response")).len(), 2);
    assert_eq!(run.result()["result"], "STOP_REENTRY_OK");
    Ok(())
}

#[tokio::test]
async fn stop_hook_blocks_are_capped_then_the_turn_completes_with_a_warning() -> TestResult {
    let (_dir, ws) = workspace()?;
    let mut setup = Setup::new((1..=5).map(|n| Reply::text(format!("a{n}"))).collect());
    stop_hook(&mut setup, &ws, json!({"block": "keep going"}))?;
    setup.stop_hook_block_cap = 2;
    let run = run(setup, &ws, one("hello")).await?;
    assert_eq!(
        run.requests.len(),
        3,
        "two blocks honoured; the third is fed back but overridden"
    );
    assert_eq!(
        run.outcome.transitions,
        vec![Transition::StopHookBlocking; 2]
    );
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert!(!run.outcome.is_error());
    assert_eq!(run.lines_of("user", None).len(), 3, "three feedback lines");
    let warnings = run.lines_of("system", Some("informational"));
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0]["level"], "warning");
    assert!(
        warnings[0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("CARAPACE_STOP_HOOK_BLOCK_CAP")
    );
    assert_eq!(run.result()["result"], "");
    assert_eq!(run.result()["num_turns"], 4);
    Ok(())
}

#[tokio::test]
async fn max_turns_wins_over_stop_hook_blocks() -> TestResult {
    let (_dir, ws) = workspace()?;
    let mut setup = Setup::new((1..=5).map(|n| Reply::text(format!("a{n}"))).collect());
    stop_hook(&mut setup, &ws, json!({"block": "keep going"}))?;
    setup.max_turns = Some(2);
    let run = run(setup, &ws, one("hello")).await?;
    assert_eq!(run.requests.len(), 2);
    assert_eq!(run.outcome.terminal, Terminal::MaxTurns);
    assert_eq!(
        run.result()["errors"],
        json!(["Reached maximum number of turns (2)"])
    );
    Ok(())
}

#[tokio::test]
async fn a_stop_hook_can_prevent_continuation() -> TestResult {
    let (_dir, ws) = workspace()?;
    let mut setup = Setup::new(vec![Reply::text("answer")]);
    stop_hook(&mut setup, &ws, json!({"stop": "enough"}))?;
    let run = run(setup, &ws, one("hello")).await?;
    assert_eq!(run.outcome.terminal, Terminal::StopHookPrevented);
    assert_eq!(run.result()["terminal_reason"], "stop_hook_prevented");
    assert_eq!(run.result()["is_error"], false);
    Ok(())
}

#[tokio::test]
async fn a_claude_code_protocol_stop_hook_blocks_with_exit_code_2() -> TestResult {
    let (_dir, ws) = workspace()?;
    let mut setup = Setup::new(vec![Reply::text("first"), Reply::text("second")]);
    support::hook_script(
        &ws,
        json!({"Stop": {"stderr": "tests are failing, fix them", "exit": 2, "unless_active": true}}),
    )?;
    setup.hook_settings = Some(support::hook_on("Stop", "", support::command_probe(&ws)));
    let run = run(setup, &ws, one("hello")).await?;
    assert_eq!(run.outcome.transitions, vec![Transition::StopHookBlocking]);
    assert!(
        texts(&run.messages(1)[2])
            .join("")
            .contains("tests are failing, fix them")
    );
    let responses = run.lines_of("system", Some("hook_response"));
    assert_eq!(
        responses
            .iter()
            .map(|r| r["exit_code"].clone())
            .collect::<Vec<_>>(),
        vec![json!(2), json!(0)]
    );
    assert_eq!(responses[0]["stderr"], "tests are failing, fix them");
    assert_eq!(run.result()["result"], "second");
    Ok(())
}

#[tokio::test]
async fn retryable_errors_back_off_and_print_api_retry_lines() -> TestResult {
    let (_dir, ws) = workspace()?;
    let run = run(
        Setup::new(vec![
            Reply::status(529, "overloaded_error", "Overloaded").retry_after("0.01"),
            Reply::status(500, "api_error", "Internal error"),
            Reply::text("AFTER_RETRY_OK"),
        ]),
        &ws,
        one("hello"),
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert_eq!(run.requests.len(), 3);
    assert_eq!(
        run.requests[0].body, run.requests[2].body,
        "a retry resends the same request"
    );
    let retries = run.lines_of("system", Some("api_retry"));
    let summary: Vec<(Value, Value, Value)> = retries
        .iter()
        .map(|l| {
            (
                l["attempt"].clone(),
                l["error_status"].clone(),
                l["error"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (json!(1), json!(529), json!("overloaded")),
            (json!(2), json!(500), json!("server_error"))
        ]
    );
    assert_eq!(
        retries[0]["retry_delay_ms"], 10.0,
        "retry-after is honoured"
    );
    assert_eq!(retries[0]["max_retries"], 10);
    assert!(
        run.lines
            .iter()
            .all(|l| l["error"].is_null() || l["type"] == "system"),
        "errors withheld"
    );
    Ok(())
}

#[tokio::test]
async fn a_client_error_fails_at_once_as_api_error() -> TestResult {
    let (_dir, ws) = workspace()?;
    let run = run(
        Setup::new(vec![
            Reply::status(400, "invalid_request_error", "messages: bad things"),
            Reply::text("never"),
        ]),
        &ws,
        one("hello"),
    )
    .await?;
    assert_eq!(run.requests.len(), 1);
    assert_eq!(run.outcome.terminal, Terminal::ApiError);
    let errors: Vec<&Value> = run
        .lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .collect();
    assert_eq!(
        errors[0]["message"]["content"][0]["text"],
        "API Error: 400 messages: bad things"
    );
    assert_eq!(errors[0]["message"]["model"], "<synthetic>");
    let result = run.result();
    assert_eq!(
        (
            result["is_error"].clone(),
            result["api_error_status"].clone(),
            result["terminal_reason"].clone()
        ),
        (json!(true), json!(400), json!("api_error"))
    );
    Ok(())
}

#[tokio::test]
async fn exhausted_retries_end_as_api_error() -> TestResult {
    let (_dir, ws) = workspace()?;
    let mut setup = Setup::new(vec![Reply::status(503, "api_error", "unavailable"); 4]);
    setup.max_retries = 2;
    let run = run(setup, &ws, one("hello")).await?;
    assert_eq!(run.requests.len(), 3, "the first attempt and two retries");
    assert_eq!(run.lines_of("system", Some("api_retry")).len(), 2);
    assert_eq!(run.outcome.terminal, Terminal::ApiError);
    assert_eq!(run.result()["api_error_status"], 503);
    Ok(())
}

#[tokio::test]
async fn overload_switches_to_the_fallback_model() -> TestResult {
    let (_dir, ws) = workspace()?;
    let overloaded = Reply::status(529, "overloaded_error", "Overloaded");
    let mut setup = Setup::new(vec![
        overloaded.clone(),
        overloaded.clone(),
        overloaded,
        Reply::text("from fallback"),
    ]);
    setup.fallback_models = vec!["claude-haiku-4-5".into()];
    let run = run(setup, &ws, one("hello")).await?;
    let models: Vec<&Value> = run.requests.iter().map(|r| &r.body["model"]).collect();
    assert_eq!(
        models,
        vec![
            "claude-sonnet-4-5",
            "claude-sonnet-4-5",
            "claude-sonnet-4-5",
            "claude-haiku-4-5"
        ]
    );
    assert_eq!(run.outcome.transitions, vec![Transition::ModelFallback]);
    let fallback = run.lines_of("system", Some("model_fallback"));
    assert_eq!(fallback.len(), 1);
    assert_eq!(
        (
            fallback[0]["original_model"].clone(),
            fallback[0]["fallback_model"].clone(),
            fallback[0]["trigger"].clone()
        ),
        (
            json!("claude-sonnet-4-5"),
            json!("claude-haiku-4-5"),
            json!("overloaded")
        )
    );
    assert_eq!(run.result()["result"], "from fallback");
    Ok(())
}

#[tokio::test]
async fn a_stream_cut_voids_the_partial_response_and_its_running_tools() -> TestResult {
    let (_dir, ws) = workspace()?;
    let late = ws.join("late-effect");
    let late_s = late.to_string_lossy().into_owned();
    let began = ws.join("began");
    let began_s = began.to_string_lossy().into_owned();
    let ws_s = ws.to_string_lossy().into_owned();
    // The response streams a text block and a Probe call that would write a
    // file after 1.5 s, then — once the tool has started — the connection
    // breaks.
    let mut steps: Vec<Step> = vec![Step::Event(json!({"type": "message_start", "message": {
        "id": "msg_cut", "type": "message", "role": "assistant", "model": "m", "content": [],
        "stop_reason": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}))];
    for (index, block) in [
        Block::text("PARTIAL_TEXT"),
        probe(
            "toolu_cut",
            json!([{"op": "create", "path": began_s}, {"op": "sleep", "ms": 1500}, {"op": "create", "path": late_s}]),
            json!([{"kind": "write-tree", "target": ws_s}]),
            false,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        steps.extend(
            scripted_server::block_events(index, block)
                .into_iter()
                .map(Step::Event),
        );
    }
    let gate_path = began.clone();
    steps.push(Step::WaitUntil {
        gate: Arc::new(move || gate_path.exists()),
        timeout: Duration::from_secs(30),
        label: "the tool began".into(),
    });
    steps.push(Step::Cut);
    let run = run(
        Setup::new(vec![Reply::Events(steps), Reply::text("after the cut")]),
        &ws,
        one("hello"),
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert_eq!(run.requests.len(), 2);
    assert_eq!(
        run.requests[0].body, run.requests[1].body,
        "the voided response is not in the retry"
    );
    let tombstones = run.lines_of("system", Some("tombstone"));
    assert_eq!(tombstones.len(), 1);
    assert_eq!(tombstones[0]["message_id"], "msg_cut");
    assert_eq!(tombstones[0]["tool_use_ids"], json!(["toolu_cut"]));
    assert_eq!(run.lines_of("system", Some("api_retry")).len(), 1);
    assert_eq!(
        run.server.gates(),
        vec![("the tool began".to_string(), true)],
        "the tool was running when the stream broke"
    );
    // Checked once a tool started later and unstopped has written its own.
    unstopped_control(&ws, "control-late", 1500).await?;
    assert!(
        !late.exists(),
        "the voided response's tool was stopped before its effect"
    );
    Ok(())
}
