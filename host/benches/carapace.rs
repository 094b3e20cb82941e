//! The benchmarks behind BENCHMARKS.md.
//!
//!     cargo bench --bench carapace            # everything
//!     cargo bench --bench carapace -- sandbox # only names containing "sandbox"
//!
//! Prints a Markdown table; paste it into BENCHMARKS.md with the machine and
//! date.

use carapace::agent::{Preparation, ToolCall, ToolPipeline, ToolRuntime};
use carapace::plugins::ToolRegistry;
use carapace::policy::{PermissionMode, Policy};
use carapace::sandbox::{CallLimits, Grant, Sandbox, SandboxConfig};
use scripted_server::{Reply, ScriptedServer};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

type BenchResult = Result<(), Box<dyn std::error::Error>>;

fn main() -> BenchResult {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-cache");
    let work = tempfile::tempdir()?;
    let file = std::fs::canonicalize(work.path())?.join("small.txt");
    std::fs::write(&file, "0123456789abcdef\n".repeat(60))?; // ~1 KiB

    println!("| benchmark | n | p50 | p99 | mean | note |");
    println!("|---|---|---|---|---|---|");
    if ["sandbox", "pipeline_call", "throughput"]
        .iter()
        .any(|n| wanted(n))
    {
        runtime.block_on(sandbox_benches(&cache, &file, &wanted))?;
    }
    if wanted("cold_start") {
        cold_start(&cache, work.path())?;
    }
    Ok(())
}

async fn sandbox_benches(cache: &Path, file: &Path, wanted: &dyn Fn(&str) -> bool) -> BenchResult {
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: cache.to_path_buf(),
        ..SandboxConfig::default()
    })?;
    let registry = ToolRegistry::builtin(&sandbox).await?;
    let read = registry
        .get("Read")
        .ok_or("no Read tool")?
        .component
        .clone();
    let input = json!({"file_path": file}).to_string();
    let limits = CallLimits::default();
    const N: usize = 2000;

    if wanted("sandbox_plan") {
        // Fresh instance with no grant + a call that does no I/O.
        let mut samples = Vec::with_capacity(N);
        for i in 0..N + 100 {
            let started = Instant::now();
            let plan = read.plan("Read", &input).await?;
            let elapsed = started.elapsed();
            if plan.is_err() {
                return Err(format!("plan failed: {plan:?}").into());
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
            let output = read.call("Read", &input, &grant, &limits).await?;
            let elapsed = started.elapsed();
            if output.is_err() {
                return Err(format!("Read failed: {output:?}").into());
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
            let preparation = pipeline.prepare(&call).await;
            if let Preparation::Failed(result) = &preparation {
                return Err(format!("prepare failed: {result:?}").into());
            }
            let result = pipeline.clone().run(call, preparation).await;
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
                        read.call("Read", &input, &grant, &limits)
                            .await
                            .map_err(|e| e.to_string())?
                            .map_err(|e| format!("{e:?}"))?;
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
fn cold_start(cache: &Path, cwd: &Path) -> BenchResult {
    const RUNS: usize = 30;
    let mut first_request = Vec::with_capacity(RUNS);
    let mut whole_run = Vec::with_capacity(RUNS);
    for i in 0..RUNS + 2 {
        let server = ScriptedServer::start(vec![Reply::text("ok")])?;
        let started = Instant::now();
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_carapace"))
            .current_dir(cwd)
            .env_clear()
            .env("HOME", cwd)
            .env("CARAPACE_CACHE_DIR", cache)
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "bench")
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

fn report(name: &str, samples: &[Duration], note: &str) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let pick = |q: f64| sorted[((sorted.len() as f64 - 1.0) * q).round() as usize];
    let mean = sorted.iter().sum::<Duration>() / sorted.len().max(1) as u32;
    println!(
        "| {name} | {} | {} | {} | {} | {note} |",
        sorted.len(),
        fmt(pick(0.5)),
        fmt(pick(0.99)),
        fmt(mean)
    );
}

fn fmt(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{} µs", d.as_micros())
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1000.0)
    }
}
