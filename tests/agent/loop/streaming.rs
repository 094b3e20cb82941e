//! Streaming execution, concurrency, caching, queued input.

use super::terminals::wait_for_file;
use super::*;

#[tokio::test]
async fn a_tool_starts_before_message_stop() -> TestResult {
    let (_dir, ws) = workspace()?;
    let effect = ws.join("effect");
    let ws_s = ws.to_string_lossy().into_owned();
    let gate_path = effect.clone();
    let reply = Reply::tool_uses(vec![probe(
        "toolu_early",
        json!([{"op": "create", "path": effect.to_string_lossy()}]),
        json!([{"kind": "write-tree", "target": ws_s}]),
        false,
    )])
    // The server holds the stream open after the block stops, until the
    // tool's effect is visible (or 10 s pass).
    .after_block(
        0,
        Step::WaitUntil {
            gate: Arc::new(move || gate_path.exists()),
            timeout: Duration::from_secs(10),
            label: "tool effect before message_stop".into(),
        },
    );
    let run = run(Setup::new(vec![reply, Reply::text("done")]), &ws, one("go")).await?;
    assert_eq!(
        run.server.gates(),
        vec![("tool effect before message_stop".to_string(), true)]
    );
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    Ok(())
}

#[tokio::test]
async fn safe_calls_overlap_and_an_unsafe_call_is_a_barrier() -> TestResult {
    let (_dir, ws) = workspace()?;
    let ws_s = ws.to_string_lossy().into_owned();
    let f = |name: &str| ws.join(name).to_string_lossy().into_owned();
    let needs = json!([{"kind": "write-tree", "target": ws_s}]);
    // A waits for B to start: only possible if they overlap. C (unsafe)
    // checks that A and B are done when it starts. D (safe, after C) checks
    // that C is done when it starts.
    let a = probe(
        "toolu_a",
        json!([{"op": "wait_for", "path": f("b-started"), "timeout_ms": 10000}, {"op": "create", "path": f("a-done")}]),
        needs.clone(),
        true,
    );
    let b = probe(
        "toolu_b",
        json!([{"op": "create", "path": f("b-started")}, {"op": "sleep", "ms": 200}, {"op": "create", "path": f("b-done")}]),
        needs.clone(),
        true,
    );
    let c = probe(
        "toolu_c",
        json!([{"op": "read", "path": f("a-done")}, {"op": "read", "path": f("b-done")}, {"op": "create", "path": f("c-done")}]),
        needs.clone(),
        false,
    );
    let d = probe(
        "toolu_d",
        json!([{"op": "read", "path": f("c-done")}]),
        needs,
        true,
    );
    let run = run(
        Setup::new(vec![Reply::tool_uses(vec![a, b, c, d]), Reply::text("ok")]),
        &ws,
        one("go"),
    )
    .await?;
    for id in ["toolu_a", "toolu_b", "toolu_c", "toolu_d"] {
        let report = probe_report(&run, 1, id);
        assert!(!report.is_empty(), "{id} has a result");
        for step in &report {
            assert_eq!(step["ok"], true, "{id}: {step}");
        }
    }
    // All four results go back in one user message, paired by id.
    let results = &run.messages(1)[2];
    let mut ids: Vec<String> = results["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["tool_use_id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    assert_eq!(ids, vec!["toolu_a", "toolu_b", "toolu_c", "toolu_d"]);
    Ok(())
}

#[tokio::test]
async fn each_request_shares_a_byte_identical_prefix_with_the_previous_one() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("a.txt"), "alpha")?;
    let path = ws.join("a.txt").to_string_lossy().into_owned();
    let read = |id: &str| {
        Reply::tool_uses(vec![Block::tool_use(
            id,
            "Read",
            json!({"file_path": path}),
        )])
    };
    let run = run(
        Setup::new(vec![read("toolu_1"), read("toolu_2"), Reply::text("done")]),
        &ws,
        one("go"),
    )
    .await?;
    assert_eq!(run.requests.len(), 3);
    let strip = |messages: &Value| -> Vec<String> {
        messages
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|mut m| {
                if let Some(blocks) = m["content"].as_array_mut() {
                    for b in blocks {
                        b.as_object_mut().map(|o| o.remove("cache_control"));
                    }
                }
                m.to_string()
            })
            .collect()
    };
    for n in 1..run.requests.len() {
        let (before, after) = (&run.requests[n - 1].body, &run.requests[n].body);
        assert_eq!(before["system"].to_string(), after["system"].to_string());
        assert_eq!(before["tools"].to_string(), after["tools"].to_string());
        let (old, new) = (strip(&before["messages"]), strip(&after["messages"]));
        assert_eq!(
            old[..],
            new[..old.len()],
            "request {} extends request {n}",
            n + 1
        );
        // The breakpoint is on the system prompt and the last block only.
        assert_eq!(
            after["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        let marked = after.to_string().matches("cache_control").count();
        assert_eq!(marked, 2, "two breakpoints in request {}", n + 1);
        let last = after["messages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or_default();
        let last_block = last["content"]
            .as_array()
            .and_then(|c| c.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(last_block["cache_control"], json!({"type": "ephemeral"}));
    }
    Ok(())
}

#[tokio::test]
async fn input_that_arrives_while_tools_run_joins_the_next_request() -> TestResult {
    let (_dir, ws) = workspace()?;
    let queue = support::queue();
    queue.push(carapace::agent::QueuedInput::text("cmd-1", "FIRST_MESSAGE"));
    let ws_s = ws.to_string_lossy().into_owned();
    let started = ws.join("slow-started");
    let later = queue.clone();
    let setup = Setup::new(vec![
        Reply::tool_uses(vec![probe(
            "toolu_slow",
            json!([{"op": "create", "path": started.to_string_lossy()}, {"op": "sleep", "ms": 1500}]),
            json!([{"kind": "write-tree", "target": ws_s}]),
            false,
        )]),
        Reply::text("done with both"),
        Reply::text("third message answered"),
    ]);
    let counter = setup.counter.clone();
    let run_fut = run(setup, &ws, Prompts::Stream(queue.clone()));
    let seen = started.clone();
    let feeder = tokio::spawn(async move {
        // While the tool runs: once it has started, not after a guess.
        wait_for_file(&seen).await;
        later.push(carapace::agent::QueuedInput::text(
            "cmd-2",
            "QUEUED_MESSAGE",
        ));
        // Once the second request (the tool results and the queued
        // message) is at the server: a message pushed now cannot join it.
        if let Some(counter) = counter.get_or_wait().await {
            counter.wait_for(2).await;
        }
        later.push(carapace::agent::QueuedInput::text("cmd-3", "THIRD_MESSAGE"));
        later.close();
    });
    let run = run_fut.await?;
    feeder.await?;
    assert_eq!(run.requests.len(), 3);
    let second = run.messages(1);
    let joined = texts(&second[2]).join("");
    assert_eq!(second[2]["content"][0]["tool_use_id"], "toolu_slow");
    assert!(
        joined.contains("QUEUED_MESSAGE"),
        "queued input joins the tool results: {second}"
    );
    assert!(
        run.messages(2).to_string().contains("THIRD_MESSAGE"),
        "a later message runs its own turn"
    );
    let lifecycle: Vec<(String, String)> = run
        .lines_of("system", Some("command_lifecycle"))
        .iter()
        .map(|l| {
            (
                l["command_uuid"].as_str().unwrap_or("").to_string(),
                l["state"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let of = |uuid: &str| -> Vec<&str> {
        lifecycle
            .iter()
            .filter(|(u, _)| u == uuid)
            .map(|(_, s)| s.as_str())
            .collect()
    };
    assert_eq!(of("cmd-1"), vec!["started", "completed"]);
    assert_eq!(of("cmd-2"), vec!["started", "completed"]);
    assert_eq!(of("cmd-3"), vec!["started", "completed"]);
    assert_eq!(run.lines_of("result", None).len(), 2, "one result per turn");
    Ok(())
}

#[tokio::test]
async fn an_aborted_turn_cancels_what_it_consumed_and_discards_what_waited() -> TestResult {
    let (_dir, ws) = workspace()?;
    let queue = support::queue();
    queue.push(carapace::agent::QueuedInput::text("cmd-1", "FIRST"));
    let ws_s = ws.to_string_lossy().into_owned();
    let started = ws.join("slow-started");
    let setup = Setup::new(vec![
        Reply::tool_uses(vec![probe(
            "toolu_slow",
            // Started well after its response's stream ended: the abort
            // lands among running tools.
            json!([{"op": "sleep", "ms": 600}, {"op": "create", "path": started.to_string_lossy()}, {"op": "sleep", "ms": 20000}]),
            json!([{"kind": "write-tree", "target": ws_s}]),
            false,
        )]),
        Reply::text("never"),
    ]);
    let abort = setup.abort.clone();
    let feeder = {
        let queue = queue.clone();
        tokio::spawn(async move {
            // Queued and aborted while the tool runs (it has started).
            wait_for_file(&started).await;
            queue.push(carapace::agent::QueuedInput::text("cmd-2", "WAITING"));
            abort.cancel();
        })
    };
    let run = run(setup, &ws, Prompts::Stream(queue)).await?;
    feeder.await?;
    assert_eq!(run.outcome.terminal, Terminal::AbortedTools);
    let states = |uuid: &str| -> Vec<String> {
        run.lines_of("system", Some("command_lifecycle"))
            .iter()
            .filter(|l| l["command_uuid"] == uuid)
            .map(|l| l["state"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(states("cmd-1"), vec!["started", "cancelled"]);
    assert_eq!(
        states("cmd-2"),
        vec!["discarded"],
        "never consumed, never lost silently"
    );
    Ok(())
}
