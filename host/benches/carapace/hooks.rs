//! Hooks: typed and command components against native process hooks.

use super::*;

/// The example hooks by language, with the kind of component each is;
/// `hooks_rust` (etc.) as the bench's filter runs only that language,
/// `hooks_native` only the native ones.
pub(super) const HOOK_LANGUAGES: [(&str, &str); 4] = [
    ("rust", "wasm"),
    ("c", "wasm-command"),
    ("python", "wasm"),
    ("javascript", "wasm"),
];

/// One PreToolUse invocation of the audit policy hook of examples/hooks/
/// (parse the call, check the command, append an audit line), per language,
/// through the hook runtime as the loop calls it — next to a native hook
/// run the way Claude Code runs command hooks: `/bin/sh -c` with the hook
/// JSON on stdin.
pub(super) async fn hook_benches(cache: &Path, wanted: &dyn Fn(&str) -> bool) -> BenchResult {
    use carapace::hooks::HookRuntime;
    use carapace::hooks::{HookCommon, HookEvent, HookToolCall};
    use carapace::policy::{RuleSource, SourceKind};
    const N: usize = 200;
    let examples = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("..")
        .join("examples")
        .join("out");
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: cache.to_path_buf(),
        ..SandboxConfig::default()
    })?;
    let common = HookCommon {
        mcp_server: None,
        session_id: "bench".into(),
        transcript_path: String::new(),
        cwd: ws.display().to_string(),
        permission_mode: "default".into(),
        prompt_id: None,
        agent: None,
    };
    let call = HookToolCall {
        tool_name: "Bash".into(),
        tool_input: json!({"command": "ls -la src"}),
        tool_use_id: "toolu_bench".into(),
    };
    let audit = ws.join(".audit");
    for (language, kind) in HOOK_LANGUAGES {
        if !wanted(&format!("hooks_{language}")) {
            continue;
        }
        let component = examples.join(format!("audit-policy-{language}.wasm"));
        if !component.exists() {
            println!(
                "| hook_{language} | — | — | — | — | not built: run examples/hooks/{language}/build.sh {} (or the example tests) |",
                examples.display()
            );
            continue;
        }
        let settings = json!({"PreToolUse": [{"hooks": [{"type": kind, "path": component.display().to_string(),
            "grants": {"write": [audit.display().to_string()]}}]}]});
        let source = RuleSource {
            kind: SourceKind::CliFlag,
            file: None,
        };
        let (specs, _) = carapace::hooks::parse(&settings, &source)?;
        let home = Path::new("/nonexistent-home");
        // Loading at start-up: read, hash, the cached machine code, linking
        // (and, for typed hooks, asking for the events).
        let loads = time_async(20, |_| {
            let (sandbox, specs, common) = (&sandbox, specs.clone(), common.clone());
            async move {
                HookRuntime::load(sandbox, specs, common, home, &home.join(".carapace")).await?;
                Ok(())
            }
        })
        .await?;
        report(
            &format!("hook_load_{language}"),
            &loads,
            "session start, compiled code cached",
        );
        let (hooks, _) = HookRuntime::load(
            &sandbox,
            specs,
            common.clone(),
            home,
            &home.join(".carapace"),
        )
        .await?;
        let size = std::fs::metadata(&component)?.len();
        let samples = time_async(N, |_| {
            let event = HookEvent::PreToolUse(call.clone());
            let hooks = &hooks;
            async move {
                let answer = hooks.run(event).await;
                match answer.error {
                    Some(error) => Err(error.into()),
                    None => Ok(()),
                }
            }
        })
        .await?;
        report(
            &format!("hook_{language}"),
            &samples,
            &format!(
                "{kind} component, {} KiB; fresh instance per call",
                size / 1024
            ),
        );
    }

    // Native, as Claude Code runs a command hook.
    if !wanted("hooks_native") {
        return Ok(());
    }
    let input =
        json!({"session_id": "bench", "transcript_path": "", "cwd": ws.display().to_string(),
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls -la src"}, "tool_use_id": "toolu_bench"})
        .to_string();
    let native_c = examples.join("audit-policy-native");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/hooks/c/hook.c");
    let compiled = std::process::Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&native_c)
        .arg(&source)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let mut natives = vec![(
        "native_sh_cat",
        "cat > /dev/null".to_string(),
        "`/bin/sh -c 'cat > /dev/null'`: the floor of any command hook",
    )];
    if compiled {
        natives.push((
            "native_c",
            format!("'{}'", native_c.display()),
            "the C example compiled natively (cc -O2), run through /bin/sh -c",
        ));
    }
    for (name, command, note) in natives {
        let samples = time_async(N, |_| {
            let (command, input) = (command.clone(), input.clone());
            async move {
                use tokio::io::AsyncWriteExt;
                let mut child = tokio::process::Command::new("/bin/sh")
                    .arg("-c")
                    .arg(&command)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()?;
                if let Some(mut stdin) = child.stdin.take() {
                    stdin.write_all(input.as_bytes()).await?;
                }
                let output = child.wait_with_output().await?;
                if !output.status.success() {
                    return Err(format!("{name} failed: {output:?}").into());
                }
                Ok(())
            }
        })
        .await?;
        report(name, &samples, note);
    }
    sandboxed_and_http(cache, &ws, &common, &call).await
}

/// In the same run as the native rows: Claude Code's `command` hook as
/// carapace runs it (the command sandbox), and an `http` hook to a server
/// on loopback (the request carapace makes, judged and pinned).
async fn sandboxed_and_http(
    cache: &Path,
    ws: &Path,
    common: &carapace::hooks::HookCommon,
    call: &carapace::hooks::HookToolCall,
) -> BenchResult {
    use carapace::hooks::{HookEvent, HookRuntime};
    use carapace::policy::{RuleSource, SourceKind};
    const N: usize = 200;
    let server = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = server.local_addr()?.port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut stream, _)) = server.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                let _ = stream.read(&mut buf).await;
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
                    )
                    .await;
            });
        }
    });
    let url = format!("http://127.0.0.1:{port}/hook");
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: cache.to_path_buf(),
        process: Some(carapace::sandbox::ProcessConfig::new(ws)),
        ..SandboxConfig::default()
    })?;
    let rows = [
        (
            "hook_command_sandboxed",
            json!({"type": "command", "command": "cat > /dev/null"}),
            "`command` hook `cat > /dev/null` in carapace's command sandbox",
        ),
        (
            "hook_http_loopback",
            json!({"type": "http", "url": url}),
            "`http` hook POSTing to a server on loopback (listed in allowedHttpHookUrls)",
        ),
    ];
    let source = RuleSource {
        kind: SourceKind::CliFlag,
        file: None,
    };
    for (name, handler, note) in rows {
        let settings = json!({"PreToolUse": [{"hooks": [handler]}]});
        let (mut specs, _) = carapace::hooks::parse(&settings, &source)?;
        for target in specs.iter_mut().filter_map(|s| s.http.as_mut()) {
            target.limits.urls = Some(vec![url.clone()]);
        }
        let home = Path::new("/nonexistent-home");
        let (hooks, _) = HookRuntime::load(
            &sandbox,
            specs,
            common.clone(),
            home,
            &home.join(".carapace"),
        )
        .await?;
        let samples = time_async(N, |_| {
            let event = HookEvent::PreToolUse(call.clone());
            let hooks = &hooks;
            async move {
                match hooks.run(event).await.error {
                    Some(error) => Err(error.into()),
                    None => Ok(()),
                }
            }
        })
        .await?;
        report(name, &samples, note);
    }
    middleware_chains(cache, common, call).await
}

/// Middleware around one tool call: one hook, then twenty across the four
/// tiers, each passing the call on with `next` (the tool stands in as an
/// answer that costs nothing, so the rows are what the hooks cost).
async fn middleware_chains(
    cache: &Path,
    common: &carapace::hooks::HookCommon,
    call: &carapace::hooks::HookToolCall,
) -> BenchResult {
    use carapace::hooks::{HookRuntime, ToolCallIn, ToolResultOut};
    use carapace::policy::{RuleSource, SourceKind};
    use futures::FutureExt;
    const N: usize = 500;
    let probe = Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("middleware_probe.wasm");
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: cache.to_path_buf(),
        ..SandboxConfig::default()
    })?;
    let seats = [
        (SourceKind::Managed, json!({})),
        (SourceKind::User, json!({})),
        (SourceKind::Project, json!({})),
        (SourceKind::Managed, json!({"seat": "last"})),
    ];
    for (name, count) in [("middleware_1", 1), ("middleware_chain_20", 20)] {
        let mut specs = Vec::new();
        for n in 0..count {
            let (kind, extra) = &seats[n % seats.len()];
            let mut entry =
                json!({"path": probe.display().to_string(), "options": {"role": "pass"}});
            if let Some(seat) = extra.get("seat") {
                entry["seat"] = seat.clone();
            }
            let source = RuleSource {
                kind: *kind,
                file: None,
            };
            let (parsed, _) = carapace::hooks::parse(&json!({"Middleware": [entry]}), &source)?;
            specs.extend(parsed);
        }
        let home = Path::new("/nonexistent-home");
        let (hooks, _) = HookRuntime::load(
            &sandbox,
            specs,
            common.clone(),
            home,
            &home.join(".carapace"),
        )
        .await?;
        let given = ToolCallIn {
            name: call.tool_name.clone(),
            input: call.tool_input.clone(),
            id: call.tool_use_id.clone(),
        };
        let samples = time_async(N, |_| {
            let (hooks, given) = (&hooks, given.clone());
            async move {
                let out = hooks
                    .around_tool_call(given, |_| {
                        async {
                            ToolResultOut {
                                content: json!("ok"),
                                is_error: false,
                            }
                        }
                        .boxed()
                    })
                    .await;
                match out.is_error {
                    true => Err(format!("the chain refused: {}", out.content).into()),
                    false => Ok(()),
                }
            }
        })
        .await?;
        let note = format!(
            "{count} middleware hook(s) (Rust, pass with `next`) around one tool call, instance per hook per call"
        );
        report(name, &samples, &note);
    }
    Ok(())
}
