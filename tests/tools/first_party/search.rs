//! Glob and Grep.

use super::*;

#[tokio::test]
async fn glob_lists_oldest_first_relative_and_caps() -> TestResult {
    let b = bench(PermissionMode::Default, &[]).await?;
    std::fs::create_dir_all(b.ws.join("src/nested"))?;
    std::fs::write(b.ws.join("src/old.rs"), "")?;
    // Older by its time, not by a pause: a clock tick may be coarse.
    std::fs::File::options()
        .write(true)
        .open(b.ws.join("src/old.rs"))?
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(60))?;
    std::fs::write(b.ws.join("src/nested/new.rs"), "")?;
    std::fs::write(b.ws.join("src/readme.md"), "")?;
    // As Claude Code 2.1.197: relative to the working directory, the
    // oldest first.
    let found = ok_text(&b.call("Glob", json!({"pattern": "**/*.rs"})).await);
    assert_eq!(found, "src/old.rs\nsrc/nested/new.rs");
    std::fs::create_dir(b.ws.join("many"))?;
    for i in 0..130 {
        std::fs::write(b.ws.join(format!("many/f{i}.txt")), "")?;
    }
    let capped = ok_text(
        &b.call("Glob", json!({"pattern": "*.txt", "path": b.p("many")}))
            .await,
    );
    assert_eq!(capped.lines().count(), 101);
    assert!(capped.contains("Showing 100 of 130"));
    assert!(ok_text(&b.call("Glob", json!({"pattern": "*.zig"})).await).contains("No files found"));
    let bad = b
        .call("Glob", json!({"pattern": "a[", "path": b.p("src")}))
        .await;
    assert!(bad.is_error);
    // Outside the working directory: asks (denied in print mode).
    let outside = b
        .call(
            "Glob",
            json!({"pattern": "*", "path": b.outside.to_string_lossy()}),
        )
        .await;
    assert!(outside.is_error && outside.denial.is_some());
    Ok(())
}

#[tokio::test]
async fn grep_has_ripgreps_semantics() -> TestResult {
    let b = bench(PermissionMode::Default, &[]).await?;
    std::fs::create_dir_all(b.ws.join("src"))?;
    std::fs::write(
        b.ws.join("src/a.rs"),
        "fn main() {\n    let port = 8080;\n    println!(\"PORT\");\n}\n",
    )?;
    std::fs::write(b.ws.join("src/b.py"), "port = 1\n")?;
    std::fs::write(b.ws.join("ignored.log"), "port = 2\n")?;
    std::fs::write(b.ws.join(".gitignore"), "*.log\n")?;
    std::fs::write(b.ws.join(".hidden"), "port = 3\n")?;
    std::fs::write(b.ws.join("bin.dat"), b"port\0\x01")?;

    // Not a repository: ripgrep reads no .gitignore there.
    let unrepo = ok_text(&b.call("Grep", json!({"pattern": "port"})).await);
    assert!(unrepo.contains("ignored.log"), "{unrepo}");
    std::fs::create_dir(b.ws.join(".git"))?;
    std::fs::write(b.ws.join(".git/config"), "port = in git\n")?;
    // A repository: ignored files left out, hidden ones searched (Claude
    // Code's --hidden), binary files and .git skipped.
    let files = ok_text(&b.call("Grep", json!({"pattern": "port"})).await);
    assert!(files.starts_with("Found 3 files"), "{files}");
    assert!(files.contains("src/a.rs") && files.contains("src/b.py") && files.contains(".hidden"));
    assert!(
        !files.contains("ignored.log") && !files.contains("bin.dat") && !files.contains(".git/"),
        "{files}"
    );

    let content = ok_text(
        &b.call(
            "Grep",
            json!({"pattern": "port", "output_mode": "content", "glob": "*.rs", "-C": 1}),
        )
        .await,
    );
    let a = "src/a.rs";
    assert_eq!(
        content,
        format!("{a}-1-fn main() {{\n{a}:2:    let port = 8080;\n{a}-3-    println!(\"PORT\");")
    );
    let insensitive = ok_text(
        &b.call(
            "Grep",
            json!({"pattern": "port", "-i": true, "output_mode": "count", "type": "rust"}),
        )
        .await,
    );
    assert!(insensitive.starts_with(&format!("{a}:2")), "{insensitive}");
    let multiline = ok_text(&b.call("Grep", json!({"pattern": "main.*8080", "multiline": true, "output_mode": "content", "-n": false})).await);
    assert!(
        multiline.contains("fn main()") && multiline.contains("let port"),
        "{multiline}"
    );
    let limited = ok_text(
        &b.call("Grep", json!({"pattern": "port", "head_limit": 1}))
            .await,
    );
    assert_eq!(limited.lines().count(), 2);
    assert!(limited.starts_with("Found 1 file limit: 1\n"), "{limited}");
    let bad = b.call("Grep", json!({"pattern": "(unclosed"})).await;
    assert!(bad.is_error && text(&bad).contains("regular expression"));

    // The tree boundary: a link inside pointing out is not followed.
    std::fs::write(b.outside.join("secret.txt"), "port = SECRET")?;
    std::os::unix::fs::symlink(b.outside.join("secret.txt"), b.ws.join("src/link.txt"))?;
    let through_link = ok_text(
        &b.call(
            "Grep",
            json!({"pattern": "SECRET", "output_mode": "content"}),
        )
        .await,
    );
    assert!(!through_link.contains("SECRET"), "{through_link}");
    let outside = b
        .call(
            "Grep",
            json!({"pattern": "port", "path": b.outside.to_string_lossy()}),
        )
        .await;
    assert!(outside.is_error && outside.denial.is_some());
    Ok(())
}
