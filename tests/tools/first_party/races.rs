//! Races and hard links: the decision is bound to what is opened.

use super::*;

/// Swaps `a` and `b` (a directory and a symlink) atomically, over and over,
/// until `stop`; returns how many swaps it made.
fn swapper(
    a: PathBuf,
    b: PathBuf,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
        let mut swaps = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            if renameat2(AT_FDCWD, &a, AT_FDCWD, &b, RenameFlags::RENAME_EXCHANGE).is_ok() {
                swaps += 1;
            }
        }
        swaps
    })
}

/// `ws/d` (a real directory) and `ws/swap` (a link to `target`, outside)
/// trade places for as long as `attempts` runs.
async fn while_swapping<F, Fut>(b: &Bench, target: &Path, attempts: F) -> Result<u64, BoxError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    std::os::unix::fs::symlink(target, b.ws.join("swap"))?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapping = swapper(b.ws.join("d"), b.ws.join("swap"), stop.clone());
    attempts().await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapping.join().map_err(|_| "the swapper panicked".into())
}

#[tokio::test]
async fn a_link_swapped_in_during_reads_reaches_nothing_denied() -> TestResult {
    for deny in [true, false] {
        let rules: &[(RuleKind, &str)] = if deny {
            &[(RuleKind::Deny, "Read(~/**)")]
        } else {
            &[]
        };
        let b = bench(PermissionMode::BypassPermissions, rules).await?;
        std::fs::create_dir(b.ws.join("d"))?;
        std::fs::write(b.ws.join("d/f"), "inside")?;
        let secret = b.outside.join("secret");
        std::fs::create_dir(&secret)?;
        std::fs::write(secret.join("f"), "SECRET")?;
        let (mut leaked, mut inside) = (0, 0);
        let swaps = while_swapping(&b, &secret, || async {
            for _ in 0..300 {
                let read = text(&b.call("Read", json!({"file_path": b.p("d/f")})).await);
                if read.contains("SECRET") {
                    leaked += 1;
                } else if read.contains("inside") {
                    inside += 1;
                }
            }
        })
        .await?;
        assert!(swaps > 100, "the race ran ({swaps} swaps)");
        if deny {
            assert_eq!(leaked, 0, "a swapped-in link reached the denied file");
            assert!(inside > 0, "reads between swaps still work");
        } else {
            assert!(
                leaked > 0,
                "control: the swap reaches the file when allowed"
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_link_swapped_in_during_writes_plants_nothing_denied() -> TestResult {
    for deny in [true, false] {
        let rules: &[(RuleKind, &str)] = if deny {
            &[(RuleKind::Deny, "Edit(~/**)")]
        } else {
            &[]
        };
        let b = bench(PermissionMode::BypassPermissions, rules).await?;
        std::fs::create_dir(b.ws.join("d"))?;
        let target = b.outside.join("target");
        std::fs::create_dir(&target)?;
        let mut written = 0;
        let swaps = while_swapping(&b, &target, || async {
            for i in 0..300 {
                let path = b.p(&format!("d/new-{i}.txt"));
                let result = b
                    .call("Write", json!({"file_path": path, "content": "PLANTED"}))
                    .await;
                if !result.is_error {
                    written += 1;
                }
            }
        })
        .await?;
        assert!(swaps > 100, "the race ran ({swaps} swaps)");
        let planted = std::fs::read_dir(&target)?.count();
        if deny {
            assert_eq!(planted, 0, "a write went through a swapped-in link");
            assert!(written > 0, "writes between swaps still work");
        } else {
            assert!(
                planted > 0,
                "control: the swap reaches outside when allowed"
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn hard_links_do_not_defeat_glob_deny_rules() -> TestResult {
    for deny in [true, false] {
        let rules: &[(RuleKind, &str)] = if deny {
            &[
                (RuleKind::Deny, "Read(~/secret/**)"),
                (RuleKind::Deny, "Edit(~/secret/**)"),
            ]
        } else {
            &[]
        };
        let b = bench(PermissionMode::BypassPermissions, rules).await?;
        let key = b.outside.join("secret/key");
        std::fs::create_dir_all(b.outside.join("secret"))?;
        std::fs::write(&key, "KEY-SECRET\n")?;
        // Another name for the key, inside the workspace.
        std::fs::hard_link(&key, b.ws.join("notes.txt"))?;
        let read = b.call("Read", json!({"file_path": b.p("notes.txt")})).await;
        let grep = b
            .call(
                "Grep",
                json!({"pattern": "KEY", "path": b.ws, "output_mode": "content"}),
            )
            .await;
        let write = b
            .call(
                "Write",
                json!({"file_path": b.p("notes.txt"), "content": "overwritten"}),
            )
            .await;
        let key_now = std::fs::read_to_string(&key)?;
        if deny {
            assert!(read.denial.is_some(), "{}", text(&read));
            assert!(!text(&grep).contains("KEY-SECRET"), "{}", text(&grep));
            assert!(write.denial.is_some(), "{}", text(&write));
            assert_eq!(key_now, "KEY-SECRET\n");
        } else {
            assert!(
                text(&read).contains("KEY-SECRET"),
                "control: {}",
                text(&read)
            );
            assert!(
                text(&grep).contains("KEY-SECRET"),
                "control: {}",
                text(&grep)
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_name_that_is_not_utf8_hides_no_sibling() -> TestResult {
    use std::os::unix::ffi::OsStrExt;
    let b = bench(PermissionMode::BypassPermissions, &[]).await?;
    std::fs::create_dir(b.ws.join("sub"))?;
    for name in ["a.txt", "c.txt", "sub/d.txt"] {
        std::fs::write(b.ws.join(name), "needle\n")?;
    }
    // WASI carries names as UTF-8: these cannot be named by a tool, and
    // must not take their siblings with them.
    std::fs::write(
        b.ws.join(std::ffi::OsStr::from_bytes(b"b\xff.txt")),
        "needle\n",
    )?;
    std::fs::write(
        b.ws.join("sub")
            .join(std::ffi::OsStr::from_bytes(b"e\xfe.txt")),
        "needle\n",
    )?;
    let globbed = ok_text(
        &b.call("Glob", json!({"pattern": "**/*.txt", "path": b.ws}))
            .await,
    );
    let grepped = ok_text(
        &b.call(
            "Grep",
            json!({"pattern": "needle", "path": b.ws, "output_mode": "files_with_matches"}),
        )
        .await,
    );
    for listing in [&globbed, &grepped] {
        for name in ["a.txt", "c.txt", "sub/d.txt"] {
            assert!(
                listing.lines().any(|l| l == name),
                "{name} missing:\n{listing}"
            );
        }
        assert!(
            listing.contains("2 file names that are not UTF-8 could not be listed"),
            "{listing}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn an_image_whose_bytes_are_not_one_never_reaches_the_model() -> TestResult {
    let b = bench(PermissionMode::BypassPermissions, &[]).await?;
    // Named like an image, holding something else.
    std::fs::write(b.ws.join("fake.png"), "<svg onload=alert(1)>")?;
    let result = b.call("Read", json!({"file_path": b.p("fake.png")})).await;
    let blocks = match &result.content {
        ToolResultContent::Blocks(blocks) => blocks.clone(),
        ToolResultContent::Text(text) => vec![ToolResultBlock::Text { text: text.clone() }],
    };
    assert!(
        !blocks
            .iter()
            .any(|b| matches!(b, ToolResultBlock::Image { .. })),
        "{blocks:?}"
    );
    assert!(text(&result).contains("<svg"), "{}", text(&result));
    // The control: a real PNG is an image block.
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    std::fs::write(b.ws.join("real.png"), png)?;
    let real = b.call("Read", json!({"file_path": b.p("real.png")})).await;
    assert!(
        matches!(&real.content, ToolResultContent::Blocks(blocks) if blocks.iter().any(|b| matches!(b, ToolResultBlock::Image { .. }))),
        "{:?}",
        real.content
    );
    Ok(())
}

/// What a session offers without compiling a first-party component (its
/// embedded `tool.json`) is what the component itself says it is.
#[tokio::test]
async fn embedded_definitions_are_what_each_component_says() -> TestResult {
    let sandbox = carapace_test_support::sandbox()?;
    for plugin in carapace::tools::BUILTIN_PLUGINS {
        let embedded = plugin.definitions()?;
        let component = ToolComponent::load(&sandbox, plugin.name, plugin.wasm).await?;
        let said = component.tools();
        assert_eq!(embedded.len(), said.len(), "{}", plugin.name);
        for (ours, theirs) in embedded.iter().zip(said) {
            assert_eq!(
                (&ours.name, &ours.description, &ours.annotations),
                (&theirs.name, &theirs.description, &theirs.annotations),
                "{}",
                plugin.name
            );
            let schema = |text: &str| serde_json::from_str::<Value>(text);
            assert_eq!(
                schema(&ours.input_schema)?,
                schema(&theirs.input_schema)?,
                "{}",
                plugin.name
            );
        }
    }
    Ok(())
}
