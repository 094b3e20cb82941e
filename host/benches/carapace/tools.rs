//! First-party tools against what they replace (Write, Edit, Bash and the rest).

use super::*;

/// Each first-party tool through the whole pipeline, next to the same
/// operation done natively.
/// What the walk for nested protected paths adds to a command: Bash `echo
/// hi` in a workspace of 20,000 entries (the walk's limit), with the
/// session's whole protected-name table.
async fn bash_in_a_large_workspace(cache: &Path) -> BenchResult {
    use carapace::sandbox::ProcessConfig;
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    for d in 0..400 {
        let sub = ws.join(format!("src/m{}/d{d}", d % 20));
        std::fs::create_dir_all(&sub)?;
        for f in 0..49 {
            std::fs::write(sub.join(format!("f{f}.rs")), "")?;
        }
    }
    let process = ProcessConfig {
        helper: Some(PathBuf::from(env!("CARGO_BIN_EXE_carapace-sandbox"))),
        protected_names: carapace::policy::command_protected_names(),
        ..ProcessConfig::new(&ws)
    };
    let pipeline = super::commands::pipeline_with(cache, &ws, process).await?;
    let samples = time_async(100, |_| super::commands::echo_hi(&pipeline)).await?;
    report(
        "tools: Bash `echo hi` in a 20,000-entry workspace",
        &samples,
        "the walk for nested protected paths at its limit",
    );
    Ok(())
}

pub(super) async fn tool_benches(cache: &Path) -> BenchResult {
    use carapace::sandbox::ProcessConfig;
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    // A tree for Glob and Grep: 50 directories of 20 files of ~2 KiB.
    for d in 0..50 {
        std::fs::create_dir_all(ws.join(format!("tree/d{d}")))?;
        for f in 0..20 {
            let body: String = (0..40)
                .map(|l| format!("line {l} of file {f} in dir {d} needle{}\n", l % 7))
                .collect();
            std::fs::write(ws.join(format!("tree/d{d}/f{f}.rs")), body)?;
        }
    }
    std::fs::write(ws.join("small.txt"), "0123456789abcdef\n".repeat(60))?;
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: cache.to_path_buf(),
        guest_cwd: Some(ws.clone()),
        process: Some(ProcessConfig {
            helper: Some(PathBuf::from(env!("CARGO_BIN_EXE_carapace-sandbox"))),
            ..ProcessConfig::new(&ws)
        }),
        ..SandboxConfig::default()
    })?;
    // A loopback page for WebFetch.
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 2048];
            let _ = stream.read(&mut buf);
            let body = "<html><body><h1>Title</h1><p>Some <b>text</b>.</p></body></html>";
            let _ = stream.write_all(format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).as_bytes());
        }
    });
    let registry = ToolRegistry::builtin(&sandbox).await?;
    // The user lists the loopback page (`sandbox.allowInternalAddresses`).
    let policy = Policy::from_config(carapace::policy::PolicyConfig {
        internal_hosts: vec![carapace::policy::HostPattern::parse(&format!(
            "127.0.0.1:{port}"
        ))?],
        ..carapace::policy::PolicyConfig::new(PermissionMode::BypassPermissions, &ws)
    });
    let pipeline = Arc::new(ToolPipeline::new(registry, policy, CallLimits::default()));
    let call = |name: &str, input: serde_json::Value| {
        let pipeline = pipeline.clone();
        let call = ToolCall {
            id: "toolu_bench".into(),
            name: name.into(),
            input,
            invalid_input: None,
        };
        async move {
            let result = pipeline.call(call).await;
            if result.is_error {
                return Err(format!("tool failed: {}", result.content.text()).into());
            }
            Ok::<_, Box<dyn std::error::Error>>(result)
        }
    };
    let small = ws.join("small.txt");
    const N: usize = 300;

    let samples = time_async(N, |_| {
        let c = call("Read", json!({"file_path": small}));
        async move { c.await.map(|_| ()) }
    })
    .await?;
    report("tools: Read 1 KiB (pipeline)", &samples, "");
    let samples = time_async(N, |_| {
        let small = small.clone();
        async move {
            std::hint::black_box(std::fs::read_to_string(&small)?);
            Ok(())
        }
    })
    .await?;
    report("tools: read 1 KiB natively (std::fs)", &samples, "");

    // Write and Edit against what Claude Code does for them (a new file
    // beside the target, synced, renamed over it), call for call in turn,
    // so that the disk's sync times weigh on both alike.
    let (pipeline, native) = time_interleaved(
        N,
        |i| {
            let c = call(
                "Write",
                json!({"file_path": ws.join(format!("w{i}.txt")), "content": "hello\n"}),
            );
            async move { c.await.map(|_| ()) }
        },
        |i| {
            let target = ws.join(format!("n{i}.txt"));
            async move { atomic_write(&target, "hello\n") }
        },
    )
    .await?;
    report("tools: Write a new small file (pipeline)", &pipeline, "");
    report(
        "tools: write a new small file natively, atomically",
        &native,
        "temp file beside it, fsync, rename: what Claude Code's Write does",
    );
    let target = ws.join("written.txt");
    let samples = time_async(N, |_| {
        let target = target.clone();
        async move {
            std::fs::write(&target, "hello\n")?;
            Ok(())
        }
    })
    .await?;
    report(
        "tools: write a small file natively, in place",
        &samples,
        "no sync, not atomic",
    );

    let edited = ws.join("edited.txt");
    let native_edited = ws.join("edited-natively.txt");
    std::fs::write(&edited, "value = A\n")?;
    std::fs::write(&native_edited, "value = A\n")?;
    call("Read", json!({"file_path": edited})).await?;
    let flip = |i: usize| {
        if i.is_multiple_of(2) {
            ("A", "B")
        } else {
            ("B", "A")
        }
    };
    let (pipeline, native) = time_interleaved(
        N,
        |i| {
            let (from, to) = flip(i);
            let c = call("Edit", json!({"file_path": edited, "old_string": format!("value = {from}"), "new_string": format!("value = {to}")}));
            async move { c.await.map(|_| ()) }
        },
        |i| {
            let (from, to) = flip(i);
            let edited = native_edited.clone();
            async move {
                let text = std::fs::read_to_string(&edited)?;
                let replaced =
                    text.replacen(&format!("value = {from}"), &format!("value = {to}"), 1);
                atomic_write(&edited, &replaced)
            }
        },
    )
    .await?;
    report("tools: Edit one line (pipeline)", &pipeline, "");
    report(
        "tools: edit one line natively, atomically",
        &native,
        "read, replace, temp file, fsync, rename: what Claude Code's Edit does",
    );
    let samples = time_async(N, |_| {
        let edited = native_edited.clone();
        async move {
            let text = std::fs::read_to_string(&edited)?;
            std::fs::write(
                &edited,
                text.replacen("value = A", "value = B", 1)
                    .replacen("value = B", "value = A", 1),
            )?;
            Ok(())
        }
    })
    .await?;
    report(
        "tools: edit one line natively, in place (read, replace, write)",
        &samples,
        "no sync, not atomic",
    );

    let tree = ws.join("tree");
    let samples = time_async(50, |_| {
        let c = call("Glob", json!({"pattern": "**/f1*.rs", "path": tree}));
        async move { c.await.map(|_| ()) }
    })
    .await?;
    report(
        "tools: Glob **/f1*.rs over 1,000 files (pipeline)",
        &samples,
        "",
    );
    let samples = time_async(50, |_| {
        let tree = tree.clone();
        async move {
            let glob = globset::Glob::new("**/f1*.rs")?.compile_matcher();
            let n = ignore::WalkBuilder::new(&tree)
                .build()
                .flatten()
                .filter(|e| glob.is_match(e.path().strip_prefix(&tree).unwrap_or(e.path())))
                .count();
            std::hint::black_box(n);
            Ok(())
        }
    })
    .await?;
    report(
        "tools: the same glob natively (ignore + globset in the host)",
        &samples,
        "",
    );

    let samples = time_async(50, |_| {
        let c = call(
            "Grep",
            json!({"pattern": "needle3", "path": tree, "output_mode": "count"}),
        );
        async move { c.await.map(|_| ()) }
    })
    .await?;
    report(
        "tools: Grep needle3 over 1,000 files (pipeline)",
        &samples,
        "",
    );
    // The comparison needs ripgrep on PATH; without it the row is left out.
    let have_rg = std::process::Command::new("rg")
        .arg("--version")
        .output()
        .is_ok();
    if have_rg {
        let samples = time_async(50, |_| {
            let tree = tree.clone();
            async move {
                let out = tokio::process::Command::new("rg")
                    .args(["--count", "needle3"])
                    .arg(&tree)
                    .output()
                    .await?;
                std::hint::black_box(out);
                Ok(())
            }
        })
        .await?;
        report(
            "tools: rg --count needle3 on the same tree (spawned)",
            &samples,
            "ripgrep 14, multi-threaded",
        );
    } else {
        eprintln!("(no `rg` on PATH: the ripgrep comparison row is skipped)");
    }

    let samples = time_async(100, |_| {
        let c = call("Bash", json!({"command": "echo hi"}));
        async move { c.await.map(|_| ()) }
    })
    .await?;
    report(
        "tools: Bash `echo hi` (pipeline, helper: namespaces, cgroup, Landlock, seccomp)",
        &samples,
        "workspace of ~1,050 entries, walked for protected paths",
    );
    bash_in_a_large_workspace(cache).await?;
    let samples = time_async(100, |_| async move {
        let out = tokio::process::Command::new("/bin/sh")
            .args(["-c", "echo hi"])
            .output()
            .await?;
        std::hint::black_box(out);
        Ok(())
    })
    .await?;
    report("tools: spawning `sh -c 'echo hi'` directly", &samples, "");

    // What every command pays for a floating read deny rule: the walk that
    // lists what it covers (to hide it).
    {
        use carapace::policy::{
            Anchors, ReadDenials, Rule, RuleKind, RuleSet, RuleSource, SourceKind,
        };
        use carapace::sandbox::DeniedPaths;
        let anchors = Anchors {
            cwd: tree.clone(),
            home: tree.clone(),
            project: tree.clone(),
        };
        let source = RuleSource {
            kind: SourceKind::User,
            file: None,
        };
        let rules = RuleSet::new(vec![Rule::parse(
            "Read(*.env)",
            RuleKind::Deny,
            source,
            &anchors,
        )?]);
        let denials =
            ReadDenials::from_rules(&rules, vec![tree.clone()]).ok_or("a read deny rule")?;
        let samples = time_async(100, |_| {
            let listed = denials.list();
            async move {
                std::hint::black_box(listed?);
                Ok(())
            }
        })
        .await?;
        report(
            "tools: list what `Read(*.env)` hides from a command (1,000-file tree)",
            &samples,
            "per Bash call while such a rule exists",
        );
    }

    let url = format!("http://127.0.0.1:{port}/");
    let samples = time_async(100, |_| {
        let c = call("WebFetch", json!({"url": url, "prompt": "x"}));
        async move { c.await.map(|_| ()) }
    })
    .await?;
    report("tools: WebFetch a loopback page (pipeline)", &samples, "");
    let client = reqwest::Client::new();
    let samples = time_async(100, |_| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let text = client.get(&url).send().await?.text().await?;
            std::hint::black_box(text);
            Ok(())
        }
    })
    .await?;
    report("tools: the same GET natively (reqwest)", &samples, "");
    Ok(())
}
