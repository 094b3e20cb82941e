//! `--json-schema` in the loop: each way to the answer or past the bound,
//! asserted by transition and terminal.

use super::support::{Setup, TestResult, run, workspace};
use carapace::agent::{StructuredOutputConfig, Terminal, Transition};
use carapace::conversation::Prompts;
use scripted_server::{Block, Reply};
use serde_json::{Value, json};

fn schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
}

fn answer(id: &str, input: Value) -> Reply {
    Reply::tool_uses(vec![Block::tool_use(id, "StructuredOutput", input)])
}

fn setup(replies: Vec<Reply>, max_attempts: u32) -> Setup {
    let mut setup = Setup::new(replies);
    setup.structured_output = Some((schema(), StructuredOutputConfig { max_attempts }));
    setup
}

#[tokio::test]
async fn a_text_answer_is_nudged_then_a_valid_call_ends_the_run() -> TestResult {
    let (_dir, ws) = workspace()?;
    let replies = vec![Reply::text("seven"), answer("a", json!({"n": 7}))];
    let run = run(setup(replies, 5), &ws, Prompts::One("n?".into())).await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert_eq!(
        run.outcome.transitions,
        vec![Transition::StructuredOutputNudge]
    );
    assert_eq!(run.outcome.structured_output, Some(json!({"n": 7})));
    assert_eq!(run.outcome.result, r#"{"n":7}"#);
    assert_eq!(run.requests.len(), 2, "the valid call ends the turn");
    Ok(())
}

#[tokio::test]
async fn invalid_calls_count_and_the_bound_ends_the_run() -> TestResult {
    let (_dir, ws) = workspace()?;
    let replies = vec![
        answer("a", json!({"n": "x"})),
        Reply::text("no"),
        answer("b", json!({})),
        answer("c", json!({"n": 1})),
    ];
    let run = run(setup(replies, 3), &ws, Prompts::One("n?".into())).await?;
    assert_eq!(
        run.outcome.terminal,
        Terminal::StructuredOutputRetryExhausted
    );
    assert_eq!(
        run.outcome.transitions,
        vec![Transition::NextTurn, Transition::StructuredOutputNudge]
    );
    assert_eq!(run.outcome.structured_output, None);
    assert_eq!(run.requests.len(), 3);
    let result = run.result();
    assert_eq!(result["subtype"], "error_max_structured_output_retries");
    assert_eq!(
        result["terminal_reason"],
        "structured_output_retry_exhausted"
    );
    Ok(())
}

#[tokio::test]
async fn without_a_schema_a_text_answer_ends_the_run_as_before() -> TestResult {
    let (_dir, ws) = workspace()?;
    let run = run(
        Setup::new(vec![Reply::text("seven")]),
        &ws,
        Prompts::One("n?".into()),
    )
    .await?;
    assert_eq!(run.outcome.terminal, Terminal::Completed);
    assert!(run.outcome.transitions.is_empty());
    assert_eq!(run.outcome.structured_output, None);
    Ok(())
}
