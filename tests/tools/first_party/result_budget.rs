//! Result budget.

use super::*;

#[tokio::test]
async fn oversized_results_are_saved_and_previewed() -> TestResult {
    let b = bench(PermissionMode::BypassPermissions, &[]).await?;
    let big: String = (0..15_000).map(|i| format!("{i:05}\n")).collect();
    std::fs::write(b.ws.join("big.txt"), &big)?;
    let result = ok_text(
        &b.call("Read", json!({"file_path": b.p("big.txt"), "limit": 20000}))
            .await,
    );
    assert!(result.len() < 5_000, "a preview, not the whole result");
    let saved = result
        .split("saved at ")
        .nth(1)
        .and_then(|r| r.split(" — ").next())
        .ok_or("no path")?;
    assert!(std::fs::read_to_string(saved)?.contains("15000\t14999"));
    assert!(saved.starts_with(&b.outside.to_string_lossy().into_owned()));
    Ok(())
}

/// What each first-party tool says it did, for hooks and SDK clients, in
/// Claude Code's shapes (checked against Claude Code 2.1.332's PostToolUse
/// inputs for the same calls) — and nothing when nobody reads it.
#[tokio::test]
async fn first_party_tools_describe_their_results_in_claude_codes_shapes() -> TestResult {
    let unread = bench(PermissionMode::AcceptEdits, &[]).await?;
    let unread = Bench {
        pipeline: Arc::new(
            ToolPipeline::new(
                unread.pipeline.registry(),
                Policy::new(PermissionMode::AcceptEdits, &unread.ws),
                CallLimits::default(),
            )
            .with_structured_results(false),
        ),
        ..unread
    };
    std::fs::write(unread.p("a.txt"), "a\n")?;
    let plain = unread
        .call("Read", json!({"file_path": unread.p("a.txt")}))
        .await;
    assert_eq!((plain.is_error, plain.structured), (false, None));
    let b = bench(PermissionMode::AcceptEdits, &[]).await?;
    let notes = b.p("notes.txt");
    std::fs::write(&notes, "hello file\n")?;
    let read = b.call("Read", json!({"file_path": notes})).await;
    assert_eq!(
        read.structured,
        Some(
            json!({"type": "text", "file": {"filePath": notes, "content": "hello file\n",
                    "numLines": 2, "startLine": 1, "totalLines": 2}})
        )
    );
    // A window of a longer file still counts all of its lines.
    let long = b.p("long.txt");
    std::fs::write(&long, "1\n2\n3\n4\n5")?;
    let window = b
        .call("Read", json!({"file_path": long, "offset": 2, "limit": 2}))
        .await;
    assert_eq!(
        window.structured,
        Some(
            json!({"type": "text", "file": {"filePath": long, "content": "2\n3",
                    "numLines": 2, "startLine": 2, "totalLines": 5}})
        )
    );

    let new = b.p("new.txt");
    let created = b
        .call("Write", json!({"file_path": new, "content": "abc\n"}))
        .await;
    assert_eq!(
        created.structured,
        Some(
            json!({"type": "create", "filePath": new, "content": "abc\n",
                    "structuredPatch": [], "originalFile": null, "userModified": false})
        )
    );
    let edited = b
        .call(
            "Edit",
            json!({"file_path": new, "old_string": "abc", "new_string": "xyz"}),
        )
        .await;
    assert_eq!(
        edited.structured,
        Some(
            json!({"filePath": new, "oldString": "abc", "newString": "xyz",
                    "originalFile": "abc\n",
                    "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1,
                                         "newLines": 1, "lines": ["-abc", "+xyz"]}],
                    "userModified": false, "replaceAll": false})
        )
    );
    let updated = b
        .call(
            "Write",
            json!({"file_path": new, "content": "1\n2\n3\n4\nfive\n"}),
        )
        .await;
    assert_eq!(
        updated
            .structured
            .as_ref()
            .map(|s| (&s["type"], &s["structuredPatch"])),
        Some((
            &json!("update"),
            &json!([{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 5,
                     "lines": ["-xyz", "+1", "+2", "+3", "+4", "+five"]}])
        ))
    );

    let glob = b.call("Glob", json!({"pattern": "*.txt"})).await;
    let found = glob.structured.clone().unwrap_or_default();
    assert_eq!(found["numFiles"], 3, "{found}");
    assert_eq!(found["truncated"], false);
    assert!(found["durationMs"].is_u64());
    let grep = b.call("Grep", json!({"pattern": "hello"})).await;
    assert_eq!(
        grep.structured,
        Some(json!({"mode": "files_with_matches", "filenames": [rel(&b, &notes)], "numFiles": 1}))
    );
    Ok(())
}

/// Only first-party tools see the session's read ledger: a third-party
/// tool can neither learn what the model was shown nor forge a read so that
/// Edit changes a file the model never saw.
#[tokio::test]
async fn a_third_party_tool_neither_reads_nor_forges_the_read_ledger() -> TestResult {
    let b = bench(PermissionMode::AcceptEdits, &[]).await?;
    let seen = b.p("seen.txt");
    let unseen = b.p("unseen.txt");
    std::fs::write(&seen, "seen\n")?;
    std::fs::write(&unseen, "unseen\n")?;
    // The control: a first-party read is in the ledger, and Edit relies on it.
    ok_text(&b.call("Read", json!({"file_path": seen})).await);
    let edited = b
        .call(
            "Edit",
            json!({"file_path": seen, "old_string": "seen", "new_string": "SEEN"}),
        )
        .await;
    assert!(!edited.is_error, "{}", text(&edited));

    let meta = std::fs::metadata(&unseen)?;
    let modified_ns = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64;
    let probe = b
        .call(
            "Probe",
            json!({"needs": [], "attempts": [
                {"op": "last_read", "path": seen},
                {"op": "record_read", "path": unseen, "modified_ns": modified_ns, "size": meta.len()},
            ]}),
        )
        .await;
    let report: Vec<Value> = serde_json::from_str(&ok_text(&probe))?;
    assert_eq!(report[0]["ok"], false, "the ledger is not lent: {report:?}");
    let forged = b
        .call(
            "Edit",
            json!({"file_path": unseen, "old_string": "unseen", "new_string": "FORGED"}),
        )
        .await;
    assert!(
        forged.is_error && text(&forged).contains("has not been read"),
        "{}",
        text(&forged)
    );
    assert_eq!(std::fs::read_to_string(&unseen)?, "unseen\n");
    Ok(())
}
