//! The audit policy hook of `examples/hooks/`, in each language: built with
//! that language's toolchain by its own `build.sh`, then run through the loop
//! as settings load it, granted only its audit directory. Each must deny the
//! same recursive deletions, let the rest through and log every call.
//! (A missing toolchain: see `build.rs`.)

#[path = "build.rs"]
mod builder;
#[path = "../agent/support.rs"]
mod support;

use carapace::conversation::Prompts;
use scripted_server::{Block, Reply};
use serde_json::{Value, json};
use std::path::Path;
use support::{Setup, TestResult, hook_on, workspace};

/// Builds the hook example in `language`.
fn build(language: &str) -> Result<std::path::PathBuf, builder::BoxError> {
    builder::build("hooks", language, &format!("audit-policy-{language}.wasm"))
}

/// The calls the model makes, with whether the policy must deny each.
fn calls(ws: &Path) -> Vec<(&'static str, &'static str, Value, bool)> {
    let notes = ws.join("notes.txt").display().to_string();
    vec![
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
            json!({"command": "FORCE=1 rm --recursive 'old dir'"}),
            true,
        ),
        ("toolu_4", "Bash", json!({"command": "rm notes.txt"}), false),
        (
            "toolu_5",
            "Bash",
            json!({"command": "echo rm -r is dangerous"}),
            false,
        ),
        ("toolu_6", "Read", json!({"file_path": notes}), false),
    ]
}

async fn check(language: &str, kind: &str) -> TestResult {
    let component = build(language)?;
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("notes.txt"), "hi\n")?;
    let audit = ws.join(".audit");
    let calls = calls(&ws);
    let blocks = calls
        .iter()
        .map(|(id, name, input, _)| Block::tool_use(*id, *name, input.clone()))
        .collect();
    let mut setup = Setup::new(vec![Reply::tool_uses(blocks), Reply::text("done")]);
    setup.hook_settings = Some(hook_on(
        "PreToolUse",
        "",
        json!({"type": kind, "path": component.display().to_string(), "failClosed": true,
               "grants": {"write": [audit.display().to_string()]}}),
    ));
    let run = support::run(setup, &ws, Prompts::One("clean up".into())).await?;

    let results: Vec<Value> = run.messages(1)[2]["content"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (id, _, input, denied) in &calls {
        let result = results
            .iter()
            .find(|r| r["tool_use_id"] == *id)
            .ok_or(format!("{language}: no result for {id}"))?;
        let text = result["content"].as_str().unwrap_or_default();
        let by_hook = text.starts_with("Recursive deletion is blocked by the audit policy hook");
        assert_eq!(by_hook, *denied, "{language}: {id} {input}: {text}");
        if *denied {
            assert_eq!(result["is_error"], true);
        }
    }
    let read = results
        .iter()
        .find(|r| r["tool_use_id"] == "toolu_6")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        read["content"], "1\thi\n2\t",
        "{language}: the allowed Read ran"
    );

    // Every call is logged, once, with its verdict.
    let log = std::fs::read_to_string(audit.join("tool-calls.jsonl"))?;
    let mut logged: Vec<(String, String, Value, String)> = log
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line)?;
            Ok((
                v["tool_use_id"].as_str().unwrap_or_default().to_string(),
                v["hook"].as_str().unwrap_or_default().to_string(),
                v["tool_input"].clone(),
                v["verdict"].as_str().unwrap_or_default().to_string(),
            ))
        })
        .collect::<Result<_, serde_json::Error>>()?;
    logged.sort_by(|a, b| a.0.cmp(&b.0));
    let expected: Vec<(String, String, Value, String)> = calls
        .iter()
        .map(|(id, _, input, denied)| {
            let verdict = if *denied { "deny" } else { "pass" };
            (
                id.to_string(),
                language.to_string(),
                input.clone(),
                verdict.to_string(),
            )
        })
        .collect();
    assert_eq!(logged, expected, "{language}: the audit log");
    Ok(())
}

#[tokio::test]
async fn the_rust_hook_example_denies_recursive_deletes_and_logs_every_call() -> TestResult {
    check("rust", "wasm").await
}

#[tokio::test]
async fn the_python_hook_example_denies_recursive_deletes_and_logs_every_call() -> TestResult {
    check("python", "wasm").await
}

#[tokio::test]
async fn the_javascript_hook_example_denies_recursive_deletes_and_logs_every_call() -> TestResult {
    check("javascript", "wasm").await
}

#[tokio::test]
async fn the_c_hook_example_denies_recursive_deletes_and_logs_every_call() -> TestResult {
    check("c", "wasm-command").await
}
