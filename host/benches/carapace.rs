//! The benchmarks behind BENCHMARKS.md.
//!
//!     cargo bench --bench carapace            # everything
//!     cargo bench --bench carapace -- sandbox # only names containing "sandbox"
//!
//! Prints a Markdown table; paste it into BENCHMARKS.md with the machine and
//! date.

use carapace::agent::{
    EventSink, InterruptBehavior, NoLoopHooks, Preparation, QueryConfig, QueryDeps, ReadyCall,
    ToolCall, ToolCallResult, ToolRuntime, query,
};
use carapace::model::{
    EventStream, Message, MessagesRequest, Model, ModelError, ReplayModel, StreamEvent,
};
use carapace::policy::{PermissionMode, Policy};
use carapace::sandbox::{CallLimits, Grant, Sandbox, SandboxConfig, ToolInvocation};
use carapace::tools::{ToolPipeline, ToolRegistry};
use futures::future::BoxFuture;
use scripted_server::{Reply, ScriptedServer};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use hooks::{HOOK_LANGUAGES, hook_benches};
use loops::loop_benches;
use plugins::{mcp_benches, plugin_benches};
use policy::policy_benches;
use sandbox::{cold_start, sandbox_benches, startup_read_probe};
use sessions::{session_benches, subagent_benches};
use tools::tool_benches;

type BenchResult = Result<(), Box<dyn std::error::Error>>;

#[path = "carapace/acp.rs"]
mod acp;
#[path = "carapace/code_mode.rs"]
mod code_mode;
#[path = "carapace/commands.rs"]
mod commands;
#[path = "carapace/context.rs"]
mod context;
#[path = "carapace/egress.rs"]
mod egress;
#[path = "carapace/first_run.rs"]
mod first_run;
#[path = "carapace/guard.rs"]
mod guard;
#[path = "carapace/hooks.rs"]
mod hooks;
#[path = "carapace/interactive.rs"]
mod interactive;
#[path = "carapace/loops.rs"]
mod loops;
#[path = "carapace/plugins.rs"]
mod plugins;
#[path = "carapace/policy.rs"]
mod policy;
#[path = "carapace/questions.rs"]
mod questions;
#[path = "carapace/sandbox.rs"]
mod sandbox;
#[path = "carapace/search.rs"]
mod search;
#[path = "carapace/sessions.rs"]
mod sessions;
#[path = "carapace/tools.rs"]
mod tools;
#[path = "carapace/typed.rs"]
mod typed;

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
    if wanted("first_run") {
        first_run::first_run_benches()?;
    }
    if wanted("startup") {
        startup_read_probe(&cache, work.path())?;
    }
    if wanted("loop") {
        runtime.block_on(loop_benches(&cache, &file))?;
    }
    if wanted("policy") {
        policy_benches(&file)?;
    }
    if wanted("tools") {
        runtime.block_on(tool_benches(&cache))?;
    }
    if wanted("hooks_native")
        || HOOK_LANGUAGES
            .iter()
            .any(|(l, _)| wanted(&format!("hooks_{l}")))
    {
        runtime.block_on(hook_benches(&cache, &wanted))?;
    }
    if wanted("plugin") {
        runtime.block_on(plugin_benches())?;
    }
    if wanted("egress") {
        runtime.block_on(egress::egress_benches())?;
    }
    if wanted("context") {
        context::context_benches(work.path())?;
    }
    if wanted("guard") {
        runtime.block_on(guard::guard_benches(&std::fs::canonicalize(work.path())?))?;
    }
    if wanted("mcp") {
        runtime.block_on(mcp_benches())?;
    }
    if wanted("search") {
        search::search_benches(work.path(), &cache)?;
    }
    if wanted("session") {
        session_benches(&cache, work.path(), &wanted)?;
    }
    if wanted("subagents") {
        subagent_benches(&cache, work.path())?;
    }
    if wanted("interactive") {
        interactive::interactive_benches(&cache, work.path())?;
    }
    if wanted("typed") {
        runtime.block_on(typed::typed_benches())?;
    }
    if wanted("acp") {
        acp::acp_benches(&cache, work.path())?;
    }
    if wanted("commands") {
        runtime.block_on(commands::helper_benches(&cache))?;
    }
    if wanted("signals") {
        commands::sigterm_benches(&cache, work.path())?;
    }
    if wanted("questions") {
        questions::question_benches(work.path())?;
    }
    if wanted("code_mode") {
        code_mode::code_mode_benches(work.path())?;
    }
    Ok(())
}

/// Waits for `child`, sampling its own peak resident set (`VmHWM`) every
/// millisecond; returns whether it succeeded and the last sample in KiB.
/// `wait4`'s `ru_maxrss` would not do here: Linux folds in the image the
/// child had before `exec` — a copy of this bench process, by now large.
fn wait_sampling_peak(mut child: std::process::Child) -> std::io::Result<(bool, i64)> {
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((status.success(), peak));
        }
        if let Ok(status) = std::fs::read_to_string(&status_file)
            && let Some(kib) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        {
            peak = peak.max(kib);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `carapace` against `server`, in `cwd` (its HOME too), with the
/// bench's component cache and nothing else of the environment.
fn carapace_command(cache: &Path, cwd: &Path, server: &ScriptedServer) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_carapace"));
    command
        .current_dir(cwd)
        .env_clear()
        .env("HOME", cwd)
        .env("CARAPACE_CACHE_DIR", cache)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "bench");
    command
}

/// `carapace` against `server`, with its config (and transcripts) in `cwd`.
fn session_command(cache: &Path, cwd: &Path, server: &ScriptedServer) -> std::process::Command {
    let mut command = carapace_command(cache, cwd, server);
    command.args(["--permission-mode", "bypassPermissions"]);
    command
}

/// Writes `text` at `path` as Write and Edit commit a file: a new file
/// beside it, synced, renamed over it.
fn atomic_write(path: &Path, text: &str) -> Result<(), Box<dyn std::error::Error>> {
    use std::io::Write;
    let parent = path.parent().ok_or("no parent")?;
    let mut temp = tempfile::NamedTempFile::new_in(parent)?;
    temp.write_all(text.as_bytes())?;
    temp.as_file().sync_all()?;
    temp.persist(path)?;
    Ok(())
}

/// Times `a` and `b` `n` times each, in turn, after a short warm-up of
/// both; `b`'s indices are `a`'s, so each pair does the same work.
async fn time_interleaved<A, AF, B, BF>(
    n: usize,
    mut a: A,
    mut b: B,
) -> Result<(Vec<Duration>, Vec<Duration>), Box<dyn std::error::Error>>
where
    A: FnMut(usize) -> AF,
    AF: std::future::Future<Output = Result<(), Box<dyn std::error::Error>>>,
    B: FnMut(usize) -> BF,
    BF: std::future::Future<Output = Result<(), Box<dyn std::error::Error>>>,
{
    for i in 0..6 {
        a(n + i).await?;
        b(n + i).await?;
    }
    let (mut first, mut second) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let started = Instant::now();
        a(i).await?;
        first.push(started.elapsed());
        let started = Instant::now();
        b(i).await?;
        second.push(started.elapsed());
    }
    Ok((first, second))
}

/// Times `f` `n` times after a short warm-up.
async fn time_async<F, Fut>(n: usize, mut f: F) -> Result<Vec<Duration>, Box<dyn std::error::Error>>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<(), Box<dyn std::error::Error>>>,
{
    for i in 0..5 {
        f(n + i).await?; // warm-up indices never collide with measured ones
    }
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        f(i).await?;
        samples.push(started.elapsed());
    }
    Ok(samples)
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
