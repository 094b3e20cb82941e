//! The guard middleware of `examples/middleware/`, in each language: built
//! with that language's toolchain by its own `build.sh`, seated as a user's
//! middleware hook and run through the loop. Each must refuse the same
//! recursive deletions (the tool never runs), pass the rest on, and redact
//! an access key from what comes back.

#[path = "build.rs"]
mod builder;
#[path = "../agent/support.rs"]
mod support;

use carapace::conversation::Prompts;
use carapace::policy::SourceKind;
use scripted_server::{Block, Reply};
use serde_json::{Value, json};
use support::{Setup, TestResult, workspace};

const REFUSAL: &str = "Recursive deletion is refused by the guard middleware.";
const KEY: &str = "AKIAABCDEFGHIJKLMNOP";

async fn check(language: &str) -> TestResult {
    let component = builder::build("middleware", language, &format!("guard-{language}.wasm"))?;
    let (_dir, ws) = workspace()?;
    let notes = ws.join("notes.txt");
    std::fs::write(&notes, format!("aws_access_key_id = {KEY}\n"))?;
    let calls = [
        (
            "toolu_1",
            "Bash",
            json!({"command": "cd build && rm -rf ./out"}),
            true,
        ),
        (
            "toolu_2",
            "Bash",
            json!({"command": "sudo rm -R /tmp/x; echo done"}),
            true,
        ),
        (
            "toolu_3",
            "Bash",
            json!({"command": "FORCE=1 rm --recursive old"}),
            true,
        ),
        (
            "toolu_4",
            "Bash",
            json!({"command": "echo rm -r is dangerous"}),
            false,
        ),
        (
            "toolu_5",
            "Read",
            json!({"file_path": notes.display().to_string()}),
            false,
        ),
    ];
    let blocks = calls
        .iter()
        .map(|(id, name, input, _)| Block::tool_use(*id, *name, input.clone()))
        .collect();
    let mut setup = Setup::new(vec![Reply::tool_uses(blocks), Reply::text("done")]);
    setup.hook_layers = vec![(
        json!({"Middleware": [{"path": component.display().to_string()}]}),
        SourceKind::User,
    )];
    let run = support::run(setup, &ws, Prompts::One("clean up".into())).await?;
    let results: Vec<Value> = run.messages(1)[2]["content"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (id, _, input, refused) in &calls {
        let result = results
            .iter()
            .find(|r| r["tool_use_id"] == *id)
            .ok_or(format!("{language}: no result for {id}"))?;
        let text = match &result["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        assert_eq!(
            text == REFUSAL,
            *refused,
            "{language}: {id} {input}: {text}"
        );
        if *refused {
            assert_eq!(result["is_error"], true);
        }
    }
    let read = results
        .iter()
        .find(|r| r["tool_use_id"] == "toolu_5")
        .map(|r| r["content"].to_string())
        .unwrap_or_default();
    assert!(
        read.contains("aws_access_key_id = [redacted]") && !read.contains(KEY),
        "{language}: the Read ran and its key was redacted: {read}"
    );
    Ok(())
}

#[tokio::test]
async fn the_rust_middleware_example_refuses_recursive_deletes_and_redacts_keys() -> TestResult {
    check("rust").await
}

#[tokio::test]
async fn the_python_middleware_example_refuses_recursive_deletes_and_redacts_keys() -> TestResult {
    check("python").await
}

#[tokio::test]
async fn the_javascript_middleware_example_refuses_recursive_deletes_and_redacts_keys() -> TestResult
{
    check("javascript").await
}

#[tokio::test]
async fn the_c_middleware_example_refuses_recursive_deletes_and_redacts_keys() -> TestResult {
    check("c").await
}
