//! The context pipeline in the loop: auto-compaction at the threshold,
//! reactive compaction on `prompt_too_long`, the blocking limit, the
//! rapid-refill breaker, microcompact and the PreCompact hooks. The
//! scripted server's usage makes the context as full as a test needs.

use super::support::{Run, Setup, TestResult, run, texts, workspace};
use carapace::agent::{
    CompactTrigger, ContextConfig, LoopHooks, PreCompactDecision, StopDecision, StopHookInput,
    Terminal, Transition,
};
use carapace::conversation::Prompts;
use futures::future::BoxFuture;
use scripted_server::{Block, Reply};
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// 10% of the usable window: compaction from 19,900 tokens.
fn low_threshold() -> ContextConfig {
    ContextConfig::for_model("claude-sonnet-4-5", 1000, Some(10))
}

const FULL: u64 = 25_000;

fn read_call(id: &str, ws: &Path) -> Reply {
    let path = ws.join("a.txt").to_string_lossy().into_owned();
    Reply::tool_uses(vec![Block::tool_use(
        id,
        "Read",
        json!({"file_path": path}),
    )])
}

fn too_long() -> Reply {
    Reply::status(
        400,
        "invalid_request_error",
        "prompt is too long: 250000 tokens > 200000 maximum",
    )
}

fn setup(replies: Vec<Reply>, context: ContextConfig) -> Setup {
    let mut setup = Setup::new(replies);
    setup.context = Some(context);
    setup
}

async fn go(setup: Setup, ws: &Path) -> Result<Run, Box<dyn std::error::Error>> {
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    run(setup, ws, Prompts::One("work".into())).await
}

fn is_summary_request(run: &Run, n: usize) -> bool {
    let body = &run.requests[n].body;
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(texts)
        .unwrap_or_default()
        .join("");
    // The same system prompt and tools as every request: the prompt cache
    // holds for the summary request too.
    let first = &run.requests[0].body;
    body["tools"] == first["tools"]
        && body["system"] == first["system"]
        && last.contains("write a summary")
}

#[tokio::test]
async fn crossing_the_threshold_compacts_once_and_the_run_finishes() -> TestResult {
    let (_dir, ws) = workspace()?;
    let replies = vec![
        read_call("toolu_1", &ws).input_tokens(FULL),
        Reply::text("SUMMARY-OF-THE-WORK"),
        Reply::text("finished"),
    ];
    let run = go(setup(replies, low_threshold()), &ws).await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert_eq!(run.outcome.transitions, vec![Transition::NextTurn]);
    assert_eq!(run.requests.len(), 3);
    assert!(is_summary_request(&run, 1), "{}", run.requests[1].body);
    // The history the summary replaced: every message, the results too.
    assert_eq!(run.messages(1).as_array().map(Vec::len), Some(3));
    let after = run.messages(2);
    assert_eq!(after.as_array().map(Vec::len), Some(1));
    assert!(texts(&after[0]).join("").contains("SUMMARY-OF-THE-WORK"));
    let boundaries = run.lines_of("system", Some("compact_boundary"));
    assert_eq!(boundaries.len(), 1);
    assert_eq!(boundaries[0]["compact_metadata"]["trigger"], "auto");
    assert!(boundaries[0]["compact_metadata"]["pre_tokens"].as_u64() >= Some(FULL));
    assert_eq!(run.result()["result"], "finished");
    Ok(())
}

#[tokio::test]
async fn below_the_threshold_nothing_is_compacted() -> TestResult {
    let (_dir, ws) = workspace()?;
    let replies = vec![
        read_call("toolu_1", &ws).input_tokens(19_000),
        Reply::text("finished"),
    ];
    let run = go(setup(replies, low_threshold()), &ws).await?;
    assert_eq!(run.requests.len(), 2);
    assert!(run.lines_of("system", Some("compact_boundary")).is_empty());
    Ok(())
}

#[tokio::test]
async fn prompt_too_long_is_withheld_compacted_once_and_retried() -> TestResult {
    let (_dir, ws) = workspace()?;
    let replies = vec![
        read_call("toolu_1", &ws),
        too_long(),
        Reply::text("SUMMARY"),
        Reply::text("recovered"),
    ];
    let run = go(
        setup(replies, ContextConfig::for_model("m", 1000, None)),
        &ws,
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert_eq!(
        run.outcome.transitions,
        vec![Transition::NextTurn, Transition::ReactiveCompactRetry]
    );
    assert_eq!(run.requests.len(), 4);
    assert!(is_summary_request(&run, 2));
    assert!(texts(&run.messages(3)[0]).join("").contains("SUMMARY"));
    // The error that was recovered from is never shown.
    let shown = serde_json::to_string(&run.lines)?;
    assert!(!shown.contains("prompt is too long"), "{shown}");
    assert_eq!(run.result()["result"], "recovered");
    assert_eq!(run.result()["is_error"], false);
    Ok(())
}

#[tokio::test]
async fn prompt_too_long_again_after_compaction_ends_the_run() -> TestResult {
    let (_dir, ws) = workspace()?;
    let replies = vec![
        read_call("toolu_1", &ws),
        too_long(),
        Reply::text("SUMMARY"),
        too_long(),
        Reply::text("never asked"),
    ];
    let run = go(
        setup(replies, ContextConfig::for_model("m", 1000, None)),
        &ws,
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::PromptTooLong);
    assert_eq!(
        run.outcome.transitions,
        vec![Transition::NextTurn, Transition::ReactiveCompactRetry]
    );
    assert_eq!(run.requests.len(), 4);
    assert_eq!(run.result()["is_error"], true);
    assert_eq!(run.result()["terminal_reason"], "prompt_too_long");
    Ok(())
}

#[tokio::test]
async fn prompt_too_long_with_nothing_to_compact_is_reported() -> TestResult {
    let (_dir, ws) = workspace()?;
    let replies = vec![too_long(), Reply::text("never asked")];
    let run = go(
        setup(replies, ContextConfig::for_model("m", 1000, None)),
        &ws,
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::PromptTooLong);
    assert!(run.outcome.transitions.is_empty());
    assert_eq!(run.requests.len(), 1);
    assert!(
        run.result()["result"]
            .as_str()
            .is_some_and(|r| r.contains("prompt is too long") && r.contains("nothing to compact")),
        "{}",
        run.result()
    );
    Ok(())
}

#[tokio::test]
async fn over_the_blocking_limit_without_compaction_nothing_is_sent() -> TestResult {
    let (_dir, ws) = workspace()?;
    let replies = vec![
        read_call("toolu_1", &ws).input_tokens(197_000),
        Reply::text("never asked"),
    ];
    let context = ContextConfig::for_model("claude-sonnet-4-5", 1000, None).without_autocompact();
    let run = go(setup(replies, context), &ws).await?;
    assert_eq!(run.outcome.terminal, Terminal::BlockingLimit);
    assert_eq!(run.outcome.transitions, vec![Transition::NextTurn]);
    assert_eq!(run.requests.len(), 1);
    assert_eq!(run.result()["terminal_reason"], "blocking_limit");
    assert_eq!(run.result()["is_error"], true);
    Ok(())
}

#[tokio::test]
async fn compaction_refilled_at_once_again_and_again_trips_the_breaker() -> TestResult {
    let (_dir, ws) = workspace()?;
    let mut replies = Vec::new();
    for n in 1..=3 {
        replies.push(read_call(&format!("toolu_{n}"), &ws).input_tokens(FULL));
        replies.push(Reply::text(format!("SUMMARY {n}")));
    }
    replies.push(read_call("toolu_4", &ws).input_tokens(FULL));
    replies.push(Reply::text("never asked"));
    let run = go(setup(replies, low_threshold()), &ws).await?;
    assert_eq!(run.outcome.terminal, Terminal::RapidRefillBreaker);
    assert_eq!(
        run.outcome.transitions,
        vec![
            Transition::NextTurn,
            Transition::NextTurn,
            Transition::NextTurn,
            Transition::NextTurn
        ]
    );
    assert_eq!(run.requests.len(), 7);
    assert_eq!(run.lines_of("system", Some("compact_boundary")).len(), 3);
    assert_eq!(run.result()["terminal_reason"], "rapid_refill_breaker");
    Ok(())
}

/// PreCompact and post-compaction SessionStart, as a test double.
struct CompactHooks {
    block: bool,
    seen: Mutex<Vec<&'static str>>,
}

impl LoopHooks for CompactHooks {
    fn on_stop(&self, _input: StopHookInput) -> BoxFuture<'_, StopDecision> {
        Box::pin(async { StopDecision::Allow })
    }

    fn pre_compact(
        &self,
        trigger: CompactTrigger,
        _instructions: Option<String>,
    ) -> BoxFuture<'_, PreCompactDecision> {
        Box::pin(async move {
            if let Ok(mut seen) = self.seen.lock() {
                seen.push(trigger.as_str());
            }
            if self.block {
                PreCompactDecision::Block {
                    reason: "not now".into(),
                }
            } else {
                PreCompactDecision::Continue {
                    instructions: vec!["KEEP-THE-PORT-NUMBER".into()],
                }
            }
        })
    }

    fn after_compact(
        &self,
        _trigger: carapace::agent::CompactTrigger,
        _summary: String,
        _model: String,
    ) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async { vec!["CONTEXT-AFTER-COMPACT".into()] })
    }
}

#[tokio::test]
async fn pre_compact_hooks_add_instructions_or_block() -> TestResult {
    let (_dir, ws) = workspace()?;
    let hooks = Arc::new(CompactHooks {
        block: false,
        seen: Mutex::default(),
    });
    let mut with_hooks = setup(
        vec![
            read_call("toolu_1", &ws).input_tokens(FULL),
            Reply::text("SUMMARY"),
            Reply::text("finished"),
        ],
        low_threshold(),
    );
    with_hooks.hooks = hooks.clone();
    let run = go(with_hooks, &ws).await?;
    let summary_prompt = texts(&run.messages(1)[2]).join("");
    assert!(
        summary_prompt.contains("KEEP-THE-PORT-NUMBER"),
        "{summary_prompt}"
    );
    assert_eq!(
        texts(&run.messages(2)[0]).last().map(String::as_str),
        Some("CONTEXT-AFTER-COMPACT")
    );
    let seen = hooks.seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen, vec!["auto"]);

    // Blocked: no summary request; under the blocking limit the run goes on.
    let (_dir, ws) = workspace()?;
    let mut blocked = setup(
        vec![
            read_call("toolu_1", &ws).input_tokens(FULL),
            Reply::text("finished uncompacted"),
        ],
        low_threshold(),
    );
    blocked.hooks = Arc::new(CompactHooks {
        block: true,
        seen: Mutex::default(),
    });
    let run = go(blocked, &ws).await?;
    assert_eq!(run.requests.len(), 2);
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    let warnings = run.lines_of("system", Some("warning"));
    assert!(
        warnings
            .iter()
            .any(|w| w["message"].as_str().is_some_and(|m| m.contains("not now"))),
        "{:?}",
        run.lines
    );
    Ok(())
}

#[tokio::test]
async fn microcompact_clears_old_results_before_summarising() -> TestResult {
    let (_dir, ws) = workspace()?;
    let big = format!("{}\n", "x".repeat(99)).repeat(300);
    std::fs::write(ws.join("big.txt"), &big)?;
    let path = ws.join("big.txt").to_string_lossy().into_owned();
    let read = |id: &str| {
        Reply::tool_uses(vec![Block::tool_use(
            id,
            "Read",
            json!({"file_path": path}),
        )])
    };
    // The fourth response says the history held 24,000 tokens; with its
    // ~8,000-token result that is over 26,000, and clearing the oldest
    // result brings it back under.
    let context = ContextConfig {
        autocompact_at: 26_000,
        ..ContextConfig::for_model("m", 1000, None)
    };
    let mut replies: Vec<Reply> = (1..=3).map(|n| read(&format!("toolu_{n}"))).collect();
    replies.push(read("toolu_4").input_tokens(24_000));
    replies.push(Reply::text("finished"));
    let run = run(setup(replies, context), &ws, Prompts::One("read".into())).await?;
    assert_eq!(run.requests.len(), 5);
    assert!(run.lines_of("system", Some("compact_boundary")).is_empty());
    let last = run.messages(4);
    let first_result = &last[2]["content"][0];
    assert_eq!(first_result["tool_use_id"], "toolu_1");
    assert_eq!(first_result["content"], "[Old tool result content cleared]");
    let recent = &last[8]["content"][0];
    assert_eq!(recent["tool_use_id"], "toolu_4");
    assert!(recent["content"].as_str().is_some_and(|c| c.len() > 1_000));
    Ok(())
}
