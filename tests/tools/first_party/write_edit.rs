//! Write and Edit.

use super::*;

#[tokio::test]
async fn write_creates_files_with_parents_and_touches_nothing_else() -> TestResult {
    let b = bench(PermissionMode::AcceptEdits, &[]).await?;
    std::fs::write(b.ws.join("sibling.txt"), "untouched")?;
    let created = ok_text(
        &b.call(
            "Write",
            json!({"file_path": b.p("deep/er/new.txt"), "content": "hello\n"}),
        )
        .await,
    );
    assert!(created.contains("created"));
    assert_eq!(
        std::fs::read_to_string(b.ws.join("deep/er/new.txt"))?,
        "hello\n"
    );
    // What Write created counts as read: it can be edited at once.
    ok_text(&b.call("Edit", json!({"file_path": b.p("deep/er/new.txt"), "old_string": "hello", "new_string": "bye"})).await);
    assert_eq!(
        std::fs::read_to_string(b.ws.join("deep/er/new.txt"))?,
        "bye\n"
    );
    assert_eq!(
        std::fs::read_to_string(b.ws.join("sibling.txt"))?,
        "untouched"
    );

    // Overwriting a file the model never read is refused; after a Read it works.
    std::fs::write(b.ws.join("existing.txt"), "old")?;
    let refused = b
        .call(
            "Write",
            json!({"file_path": b.p("existing.txt"), "content": "new"}),
        )
        .await;
    assert!(refused.is_error && text(&refused).contains("Read it first"));
    assert_eq!(std::fs::read_to_string(b.ws.join("existing.txt"))?, "old");
    ok_text(
        &b.call("Read", json!({"file_path": b.p("existing.txt")}))
            .await,
    );
    assert!(
        ok_text(
            &b.call(
                "Write",
                json!({"file_path": b.p("existing.txt"), "content": "new"})
            )
            .await
        )
        .contains("updated")
    );
    assert_eq!(std::fs::read_to_string(b.ws.join("existing.txt"))?, "new");

    let schema = b.call("Write", json!({"file_path": b.p("x.txt")})).await;
    assert!(
        schema.is_error && text(&schema).contains("content"),
        "{}",
        text(&schema)
    );
    // Default mode does not write without asking (print mode: denied).
    let default = bench(PermissionMode::Default, &[]).await?;
    let denied = default
        .call(
            "Write",
            json!({"file_path": default.p("a.txt"), "content": "x"}),
        )
        .await;
    assert!(denied.is_error && denied.denial.is_some());
    assert!(!default.ws.join("a.txt").exists());
    Ok(())
}

#[tokio::test]
async fn edit_replaces_exactly_and_needs_a_fresh_read() -> TestResult {
    let b = bench(PermissionMode::AcceptEdits, &[]).await?;
    let file = b.p("config.toml");
    std::fs::write(&file, "port = 8080\nhost = \"a\"\nport_alt = 8080\n")?;
    let unread = b
        .call(
            "Edit",
            json!({"file_path": file, "old_string": "host = \"a\"", "new_string": "host = \"b\""}),
        )
        .await;
    assert!(
        unread.is_error && text(&unread).contains("has not been read"),
        "{}",
        text(&unread)
    );

    ok_text(&b.call("Read", json!({"file_path": file})).await);
    let ambiguous = b
        .call(
            "Edit",
            json!({"file_path": file, "old_string": "8080", "new_string": "9090"}),
        )
        .await;
    assert!(
        ambiguous.is_error && text(&ambiguous).contains("appears 2 times"),
        "{}",
        text(&ambiguous)
    );
    let missing = b
        .call(
            "Edit",
            json!({"file_path": file, "old_string": "nope", "new_string": "x"}),
        )
        .await;
    assert!(missing.is_error && text(&missing).contains("not found"));
    let same = b
        .call(
            "Edit",
            json!({"file_path": file, "old_string": "port", "new_string": "port"}),
        )
        .await;
    assert!(same.is_error && text(&same).contains("same"));

    let edited = ok_text(
        &b.call(
            "Edit",
            json!({"file_path": file, "old_string": "host = \"a\"", "new_string": "host = \"b\""}),
        )
        .await,
    );
    assert!(
        edited.contains("2\thost = \"b\""),
        "a numbered snippet: {edited}"
    );
    let all = ok_text(&b.call("Edit", json!({"file_path": file, "old_string": "8080", "new_string": "9090", "replace_all": true})).await);
    assert!(all.contains("2 occurrences"));
    assert_eq!(
        std::fs::read_to_string(&file)?,
        "port = 9090\nhost = \"b\"\nport_alt = 9090\n"
    );

    // Changed on disk since the last read: stale, read again. (Its time
    // moved on explicitly: a write within the clock's tick keeps it.)
    std::fs::write(&file, "port = 1\n")?;
    std::fs::File::options()
        .write(true)
        .open(&file)?
        .set_modified(std::time::SystemTime::now() + Duration::from_secs(2))?;
    let stale = b
        .call(
            "Edit",
            json!({"file_path": file, "old_string": "1", "new_string": "2"}),
        )
        .await;
    assert!(
        stale.is_error && text(&stale).contains("changed since"),
        "{}",
        text(&stale)
    );
    Ok(())
}
