//! The sandbox's per-call cost, and start-up: cold start and the read probe.

use super::*;

pub(super) async fn sandbox_benches(
    cache: &Path,
    file: &Path,
    wanted: &dyn Fn(&str) -> bool,
) -> BenchResult {
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: cache.to_path_buf(),
        ..SandboxConfig::default()
    })?;
    let registry = ToolRegistry::builtin(&sandbox).await?;
    let read = registry
        .get("Read")
        .ok_or("no Read tool")?
        .component()
        .await?;
    let input = json!({"file_path": file});
    let limits = CallLimits::default();
    const N: usize = 2000;

    if wanted("sandbox_plan") {
        // Fresh instance with no grant + a call that does no I/O.
        let mut samples = Vec::with_capacity(N);
        for i in 0..N + 100 {
            let started = Instant::now();
            let plan = read.plan("Read", &input).await;
            let elapsed = started.elapsed();
            if let Err(e) = plan {
                return Err(format!("plan failed: {e:?}").into());
            }
            if i >= 100 {
                samples.push(elapsed);
            }
        }
        report(
            "sandbox_plan: fresh instance, no grant, a call without I/O",
            &samples,
            "",
        );
    }

    if wanted("sandbox_call") {
        // Fresh instance + staging of the one granted file + Read call.
        let mut samples = Vec::with_capacity(N);
        for i in 0..N + 100 {
            let started = Instant::now();
            let grant = Grant::none().read_file(file)?;
            let invocation = ToolInvocation::new("Read", &input, &grant, &limits);
            let output = read.call(&invocation).await;
            let elapsed = started.elapsed();
            if let Err(e) = output {
                return Err(format!("Read failed: {e:?}").into());
            }
            if i >= 100 {
                samples.push(elapsed); // the first 100 warm the pool
            }
        }
        report(
            "sandbox_call: grant + fresh instance + Read of 1 KiB",
            &samples,
            "",
        );
        // The same with the structured result asked for (PostToolUse hooks,
        // stream-json's tool_use_result).
        let context = carapace::sandbox::CallContext {
            wants_structured: true,
            ..Default::default()
        };
        let mut samples = Vec::with_capacity(N);
        for i in 0..N + 100 {
            let started = Instant::now();
            let grant = Grant::none().read_file(file)?;
            let mut invocation = ToolInvocation::new("Read", &input, &grant, &limits);
            invocation.context = context.clone();
            let output = read.call(&invocation).await;
            let elapsed = started.elapsed();
            if !output.as_ref().is_ok_and(|o| o.output.structured.is_some()) {
                return Err(format!("Read failed or gave no structured result: {output:?}").into());
            }
            if i >= 100 {
                samples.push(elapsed);
            }
        }
        report(
            "sandbox_call: … with the structured result asked for",
            &samples,
            "",
        );
    }

    if wanted("pipeline_call") {
        // The whole single-tool pipeline: schema, plan (its own instance),
        // policy, grant, call.
        let pipeline = Arc::new(ToolPipeline::new(
            registry,
            Policy::new(PermissionMode::BypassPermissions, Path::new("/")),
            limits,
        ));
        let mut samples = Vec::with_capacity(N);
        for i in 0..N + 100 {
            let call = ToolCall {
                id: format!("toolu_{i}"),
                name: "Read".into(),
                input: json!({"file_path": file}),
                invalid_input: None,
            };
            let started = Instant::now();
            let result = pipeline.clone().call(call).await;
            let elapsed = started.elapsed();
            if result.is_error {
                return Err(format!("Read failed: {result:?}").into());
            }
            if i >= 100 {
                samples.push(elapsed);
            }
        }
        report(
            "pipeline_call: schema + plan + policy + grant + Read",
            &samples,
            "",
        );
    }

    if wanted("throughput") {
        for callers in [1usize, 4] {
            let started = Instant::now();
            let per_caller = N / callers;
            let mut tasks = Vec::new();
            for _ in 0..callers {
                let read = read.clone();
                let input = input.clone();
                let file = file.to_path_buf();
                tasks.push(tokio::spawn(async move {
                    for _ in 0..per_caller {
                        let grant = Grant::none().read_file(&file).map_err(|e| e.to_string())?;
                        let invocation = ToolInvocation::new("Read", &input, &grant, &limits);
                        read.call(&invocation).await.map_err(|e| format!("{e:?}"))?;
                    }
                    Ok::<(), String>(())
                }));
            }
            for task in tasks {
                task.await??;
            }
            let elapsed = started.elapsed();
            let rate = (per_caller * callers) as f64 / elapsed.as_secs_f64();
            println!(
                "| throughput: Read calls, {callers} concurrent callers | {} | | | | {rate:.0} calls/s |",
                per_caller * callers
            );
        }
    }
    Ok(())
}

/// From spawning `carapace -p` to its first Messages request arriving at
/// the scripted server, with components already in the cache.
pub(super) fn cold_start(cache: &Path, cwd: &Path) -> BenchResult {
    const RUNS: usize = 30;
    let mut first_request = Vec::with_capacity(RUNS);
    let mut whole_run = Vec::with_capacity(RUNS);
    for i in 0..RUNS + 2 {
        let server = ScriptedServer::start(vec![Reply::text("ok")])?;
        let started = Instant::now();
        let status = super::carapace_command(cache, cwd, &server)
            .args(["-p", "hello", "--output-format", "json"])
            .stdout(std::process::Stdio::null())
            .status()?;
        let ended = started.elapsed();
        if !status.success() {
            return Err(format!("carapace exited with {status}").into());
        }
        let request = server.requests().into_iter().next().ok_or("no request")?;
        if i >= 2 {
            // The first runs fill the component cache and the page cache.
            first_request.push(request.received_at.duration_since(started));
            whole_run.push(ended);
        }
    }
    report(
        "cold_start: spawn `carapace -p` → first request (cached components)",
        &first_request,
        "",
    );
    report(
        "cold_start: whole `carapace -p` run, one-line answer",
        &whole_run,
        "",
    );
    Ok(())
}

/// The seeds' Read probe as a user runs it: spawn `carapace -p` with Read
/// only, one Read call and a final answer from the scripted server, until
/// the process exits, and the process's peak resident set. Times come from
/// runs waited for plainly; the peak from the last runs, sampled (polling
/// `/proc` would slow the timed runs).
pub(super) fn startup_read_probe(cache: &Path, cwd: &Path) -> BenchResult {
    const RUNS: usize = 30;
    let file = cwd.join("probe-fixture.txt");
    std::fs::write(&file, "AGENT_LOOP_FILE_MARKER\n")?;
    let mut spawn_to_exit = Vec::with_capacity(RUNS);
    let mut spawn_to_request = Vec::with_capacity(RUNS);
    let mut peaks_kib = Vec::with_capacity(RUNS);
    const SAMPLED: usize = 10;
    for i in 0..RUNS + 2 + SAMPLED {
        let server = ScriptedServer::start(vec![
            Reply::tool_uses(vec![scripted_server::Block::tool_use(
                "toolu_probe",
                "Read",
                json!({"file_path": file}),
            )]),
            Reply::text("TOOL_EXECUTION_OK"),
        ])?;
        let started = Instant::now();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_carapace"))
            .current_dir(cwd)
            .env_clear()
            .env("HOME", cwd)
            .env("CARAPACE_CACHE_DIR", cache)
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "bench")
            .args([
                "-p",
                "AGENT_LOOP_INITIAL_MARKER",
                "--output-format",
                "stream-json",
                "--verbose",
                "--tools",
                "Read",
                "--permission-mode",
                "bypassPermissions",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()?;
        let sampled = i >= RUNS + 2;
        let (succeeded, peak_kib) = if sampled {
            wait_sampling_peak(child)?
        } else {
            let mut child = child;
            (child.wait()?.success(), 0)
        };
        let ended = started.elapsed();
        if !succeeded {
            return Err("carapace failed".into());
        }
        let requests = server.requests();
        if requests.len() != 2 {
            return Err(format!("{} requests, not 2", requests.len()).into());
        }
        if sampled {
            peaks_kib.push(peak_kib);
        } else if i >= 2 {
            // The first runs fill the component cache and the page cache.
            spawn_to_exit.push(ended);
            spawn_to_request.push(requests[0].received_at.duration_since(started));
        }
    }
    report(
        "startup: read probe, spawn → first request",
        &spawn_to_request,
        "",
    );
    peaks_kib.sort_unstable();
    let mib = |kib: i64| kib as f64 / 1024.0;
    report(
        "startup: read probe, spawn → exit (two requests, one Read)",
        &spawn_to_exit,
        &format!(
            "peak RSS p50 {:.1} MiB, max {:.1} MiB",
            mib(peaks_kib[peaks_kib.len() / 2]),
            mib(peaks_kib.last().copied().unwrap_or_default())
        ),
    );
    Ok(())
}
