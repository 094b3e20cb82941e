//! Escape attempts through the host's search (`carapace:tool/search`): the
//! hostile `search-probe` is granted one tree and has the host search
//! wherever it likes — another path, `..` in the path and in the glob, a
//! link out, a directory swapped for a link while the walk runs. Each
//! attempt fails the test if it reaches the secret outside; each has a
//! control showing the secret is there to be reached (a weaker reader, or
//! a grant that covers it), so a search that finds nothing cannot pass.

use carapace::sandbox::{CallLimits, FileAccess, Grant, ToolComponent};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const SECRET: &str = "SECRET-7f3a";

async fn probe() -> Result<ToolComponent, Box<dyn std::error::Error>> {
    let sandbox = carapace_test_support::sandbox()?;
    let wasm =
        std::fs::read(Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("search_probe.wasm"))?;
    Ok(ToolComponent::load(&sandbox, "search-probe", &wasm).await?)
}

/// `ws` (granted: an ordinary file and a subfolder) beside `outside` (the
/// secret).
fn layout() -> Result<(tempfile::TempDir, PathBuf), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = std::fs::canonicalize(dir.path())?;
    std::fs::create_dir_all(root.join("ws/sub"))?;
    std::fs::create_dir_all(root.join("outside"))?;
    std::fs::write(root.join("ws/plain.txt"), "plain words\n")?;
    std::fs::write(root.join("ws/sub/inner.txt"), "inner words\n")?;
    std::fs::write(root.join("outside/secret.txt"), format!("{SECRET}\n"))?;
    Ok((dir, root))
}

/// The probe's reports, one per attempt, under `grant`.
async fn search(
    probe: &ToolComponent,
    grant: &Grant,
    granted: &Path,
    attempts: Value,
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let input = json!({"granted": granted, "attempts": attempts});
    let limits = CallLimits::default();
    let invocation = carapace::sandbox::ToolInvocation::new("SearchProbe", &input, grant, &limits);
    let output = probe
        .call(&invocation)
        .await
        .map_err(|e| format!("the probe failed: {e:?}"))?
        .output;
    let text = match output.content.first() {
        Some(carapace::sandbox::ToolContent::Text(text)) => text.clone(),
        _ => String::new(),
    };
    let reports: Vec<Value> = serde_json::from_str(&text)?;
    assert_eq!(
        reports.len(),
        attempts.as_array().map_or(0, Vec::len),
        "{text}"
    );
    Ok(reports)
}

/// Whether what the search found (not the refusal, which names the path
/// it refused) holds the secret or a name from outside.
fn reached(report: &Value) -> bool {
    let found = report["found"].to_string();
    found.contains(SECRET) || found.contains("secret.txt") || found.contains("/outside/")
}

#[tokio::test]
async fn a_search_reaches_only_the_granted_tree() -> TestResult {
    let probe = probe().await?;
    let (_dir, root) = layout()?;
    let ws = root.join("ws");
    let grant = Grant::none().tree(&ws, FileAccess::Read)?;
    let outside = root.join("outside");
    let spellings = json!([
        {"kind": "grep", "path": outside, "pattern": SECRET},
        {"kind": "grep", "path": root, "pattern": SECRET},
        {"kind": "grep", "path": "/", "pattern": SECRET},
        {"kind": "grep", "path": format!("{}/../outside", ws.display()), "pattern": SECRET},
        {"kind": "grep", "path": format!("{}/./../outside/secret.txt", ws.display()), "pattern": SECRET},
        {"kind": "grep", "path": "../outside", "pattern": SECRET},
        {"kind": "grep", "path": ws, "pattern": SECRET, "globs": ["../outside/*", "/**", "**/../../**"]},
        {"kind": "glob", "path": outside, "pattern": "*"},
        {"kind": "glob", "path": ws, "pattern": "../outside/*"},
        {"kind": "glob", "path": ws, "pattern": "**/../../outside/*"},
        {"kind": "glob", "path": format!("{}/..", ws.display()), "pattern": "**/*"},
    ]);
    let reports = search(&probe, &grant, &ws, spellings).await?;
    for report in &reports {
        assert!(!reached(report), "the search left the tree: {report}");
    }
    // What was granted works: the tree is searched.
    let granted = search(
        &probe,
        &grant,
        &ws,
        json!([{"kind": "grep", "path": ws, "pattern": "words"}]),
    )
    .await?;
    assert!(
        granted[0].to_string().contains("inner words"),
        "{}",
        granted[0]
    );
    // Control: granted the outside, the same search finds the secret.
    let wider = Grant::none().tree(&root, FileAccess::Read)?;
    let control = search(
        &probe,
        &wider,
        &root,
        json!([{"kind": "grep", "path": outside, "pattern": SECRET}]),
    )
    .await?;
    assert!(reached(&control[0]), "{}", control[0]);
    Ok(())
}

#[tokio::test]
async fn links_inside_the_tree_do_not_lead_out() -> TestResult {
    let probe = probe().await?;
    let (_dir, root) = layout()?;
    let ws = root.join("ws");
    std::os::unix::fs::symlink(root.join("outside/secret.txt"), ws.join("file-link.txt"))?;
    std::os::unix::fs::symlink(root.join("outside"), ws.join("dir-link"))?;
    std::os::unix::fs::symlink("../outside", ws.join("relative-link"))?;
    let grant = Grant::none().tree(&ws, FileAccess::Read)?;
    let reports = search(
        &probe,
        &grant,
        &ws,
        json!([
            {"kind": "grep", "path": ws, "pattern": SECRET},
            {"kind": "grep", "path": ws.join("dir-link"), "pattern": SECRET},
            {"kind": "grep", "path": ws.join("file-link.txt"), "pattern": SECRET},
            {"kind": "grep", "path": ws.join("relative-link/secret.txt"), "pattern": SECRET},
            {"kind": "glob", "path": ws, "pattern": "**/*.txt"},
            {"kind": "glob", "path": ws.join("dir-link"), "pattern": "*"},
        ]),
    )
    .await?;
    for report in &reports {
        assert!(!reached(report), "a link led out: {report}");
    }
    // Control: a reader that follows links finds the secret through each.
    for link in [
        "file-link.txt",
        "dir-link/secret.txt",
        "relative-link/secret.txt",
    ] {
        assert!(
            std::fs::read_to_string(ws.join(link))?.contains(SECRET),
            "{link}"
        );
    }
    Ok(())
}

/// A thread flips `ws/swap` between a directory of harmless files and a
/// symlink to the outside while searches run; none may read the secret.
#[tokio::test]
async fn a_directory_swapped_for_a_link_during_the_walk_leads_nowhere() -> TestResult {
    let probe = probe().await?;
    let (_dir, root) = layout()?;
    let ws = root.join("ws");
    let swap = ws.join("swap");
    let real = ws.join("real");
    std::fs::create_dir_all(&real)?;
    for i in 0..200 {
        std::fs::write(real.join(format!("f{i}.txt")), "harmless\n")?;
    }
    // The same names outside, so a walk that crosses over opens them.
    for i in 0..200 {
        std::fs::write(
            root.join(format!("outside/f{i}.txt")),
            format!("{SECRET}\n"),
        )?;
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let (stop, swap, real, outside) = (
            stop.clone(),
            swap.clone(),
            real.clone(),
            root.join("outside"),
        );
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::remove_file(&swap);
                let _ = std::fs::rename(&real, &swap);
                std::thread::yield_now();
                let _ = std::fs::rename(&swap, &real);
                let _ = std::os::unix::fs::symlink(&outside, &swap);
                std::thread::yield_now();
                flips += 1;
            }
            flips
        })
    };
    let grant = Grant::none().tree(&ws, FileAccess::Read)?;
    let mut searched = 0;
    let mut control_reached = false;
    for _ in 0..60 {
        let reports = search(
            &probe,
            &grant,
            &ws,
            json!([
                {"kind": "grep", "path": ws, "pattern": SECRET},
                {"kind": "grep", "path": swap, "pattern": SECRET},
                {"kind": "glob", "path": ws, "pattern": "swap/*.txt"},
            ]),
        )
        .await?;
        for report in &reports {
            assert!(
                !report.to_string().contains(SECRET),
                "the walk crossed a swapped link: {report}"
            );
        }
        searched += 1;
        // Control: a plain walker in the same race reads the secret.
        if !control_reached {
            control_reached = ignore::WalkBuilder::new(&ws)
                .follow_links(true)
                .build()
                .flatten()
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(SECRET)));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flips = flipper.join().map_err(|_| "the flipper panicked")?;
    assert!(
        flips > 10 && searched == 60,
        "the race did not run ({flips} flips)"
    );
    assert!(
        control_reached,
        "the control never crossed over: the race proves nothing"
    );
    Ok(())
}
