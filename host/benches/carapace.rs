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

type BenchResult = Result<(), Box<dyn std::error::Error>>;

#[path = "carapace/context.rs"]
mod context;
#[path = "carapace/egress.rs"]
mod egress;
#[path = "carapace/first_run.rs"]
mod first_run;
#[path = "carapace/guard.rs"]
mod guard;
#[path = "carapace/search.rs"]
mod search;

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
    if wanted("hooks") {
        runtime.block_on(hook_benches(&cache))?;
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
    Ok(())
}

/// Child loops in the binary: one response starting N foreground agents at
/// once (each answers with one scripted request), whole-run time and peak
/// memory; the differences between N = 1 and N = 100 are the per-child
/// cost.
fn subagent_benches(cache: &Path, cwd: &Path) -> BenchResult {
    let mut figures = Vec::new();
    for children in [1usize, 100] {
        let mut samples = Vec::new();
        let mut peaks = Vec::new();
        for run in 0..6 {
            let calls = (0..children)
                .map(|n| {
                    scripted_server::Block::tool_use(
                        format!("toolu_{n}"),
                        "Agent",
                        json!({"description": "bench", "prompt": format!("child {n}")}),
                    )
                })
                .collect();
            let mut replies = vec![Reply::tool_uses(calls)];
            replies.extend((0..children).map(|n| Reply::text(format!("child {n} done"))));
            replies.push(Reply::text("all done"));
            let server = ScriptedServer::start(replies)?;
            let started = Instant::now();
            let child = session_command(cache, cwd, &server)
                .args(["-p", "delegate", "--no-session-persistence"])
                .stdout(std::process::Stdio::null())
                .spawn()?;
            let (succeeded, peak_kib) = wait_sampling_peak(child)?;
            let took = started.elapsed();
            if !succeeded || server.requests().len() != children + 2 {
                return Err(format!("the {children}-child run failed").into());
            }
            if run > 0 {
                samples.push(took);
                peaks.push(peak_kib);
            }
        }
        peaks.sort_unstable();
        let peak = peaks[peaks.len() / 2];
        report(
            &format!("subagents: one response starting {children} agent(s), whole run"),
            &samples,
            &format!(
                "peak RSS p50 {:.1} MiB (VmHWM, sampled)",
                peak as f64 / 1024.0
            ),
        );
        let mut sorted = samples.clone();
        sorted.sort();
        figures.push((children, sorted[sorted.len() / 2], peak));
    }
    if let [(_, one_time, one_peak), (many, many_time, many_peak)] = figures[..] {
        let extra = (many - 1) as u32;
        println!(
            "| subagents: cost of each further concurrent child | | {} | | | {:.0} KiB of peak RSS each |",
            fmt(many_time.saturating_sub(one_time) / extra),
            (many_peak - one_peak) as f64 / f64::from(extra)
        );
    }
    Ok(())
}

/// A tool round as history keeps it: the call, and a result of `bytes`.
fn tool_round(n: usize, bytes: usize) -> [Message; 2] {
    use carapace::model::{ContentBlock, Role, ToolResultContent};
    let id = format!("toolu_{n:06}");
    [
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: id.clone(),
                name: "Read".into(),
                input: json!({"file_path": format!("/work/project/src/file_{n}.rs")}),
            }],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: id,
                content: ToolResultContent::Text("let x = 1; // some source\n".repeat(bytes / 27)),
                is_error: false,
            }],
        },
    ]
}

/// Transcripts: the cost of appending, of loading a long one back, and the
/// memory of a long session in the binary.
fn session_benches(cache: &Path, cwd: &Path, wanted: &dyn Fn(&str) -> bool) -> BenchResult {
    use carapace::agent::HistoryLog;
    use carapace::transcript::{Opening, Transcript, load, transcript_path};
    let dir = tempfile::tempdir()?;
    if wanted("session_append") {
        let transcript = Transcript::open(
            transcript_path(dir.path(), "append"),
            "append",
            dir.path(),
            Opening::New {
                forked_from: None,
                history: &[],
                name: None,
            },
        )?;
        let mut history = vec![Message::user_text("go")];
        transcript.sync(&history);
        let mut per_message = Vec::with_capacity(2_000);
        for n in 0..2_000 {
            let [call, result] = tool_round(n, 1_024);
            let started = Instant::now();
            // As the loop does: the response ahead of its tools, then the
            // history before the next request.
            transcript.response(&call.content);
            history.push(call);
            history.push(result);
            transcript.sync(&history);
            per_message.push(started.elapsed() / 2);
        }
        report(
            "session_append: transcript, per message (1 KiB tool result)",
            &per_message,
            "one write(2) per line, no fsync",
        );
        let mut flushes = Vec::with_capacity(50);
        for _ in 0..50 {
            let started = Instant::now();
            transcript.flush();
            flushes.push(started.elapsed());
        }
        report(
            "session_append: fdatasync at the end of a turn",
            &flushes,
            "",
        );
    }
    if wanted("session_resume") {
        // 10,000 messages: 4,999 tool rounds of ~500 B results, a prompt
        // and an answer.
        let mut history = vec![Message::user_text("go")];
        for n in 0..4_999 {
            history.extend(tool_round(n, 512));
        }
        history.push(Message {
            role: carapace::model::Role::Assistant,
            content: vec![carapace::model::ContentBlock::Text {
                text: "done".into(),
            }],
        });
        let path = transcript_path(dir.path(), "resume");
        let transcript = Transcript::open(
            path.clone(),
            "resume",
            dir.path(),
            Opening::New {
                forked_from: None,
                history: &[],
                name: None,
            },
        )?;
        transcript.sync(&history);
        drop(transcript);
        let size = std::fs::metadata(&path)?.len();
        let mut loads = Vec::with_capacity(20);
        for _ in 0..20 {
            let started = Instant::now();
            let loaded = load(&path)?;
            loads.push(started.elapsed());
            if loaded.messages.len() != 10_000 {
                return Err(format!("loaded {} messages", loaded.messages.len()).into());
            }
        }
        report(
            "session_resume: load a 10,000-message transcript",
            &loads,
            &format!(
                "{:.1} MiB file; {} threads",
                size as f64 / 1048576.0,
                std::thread::available_parallelism().map_or(1, |n| n.get())
            ),
        );
        // What the first request after a resume adds: the size estimate and
        // the request body.
        let loaded = load(&path)?;
        let mut bodies = Vec::with_capacity(20);
        for _ in 0..20 {
            let started = Instant::now();
            let estimate = carapace::agent::estimate_tokens(&loaded.messages);
            // As the client sends it: the history cloned into the request,
            // the JSON body with its cache breakpoints, as text.
            let body = MessagesRequest {
                model: "m".into(),
                max_tokens: 1000,
                system: "s".into(),
                messages: loaded.messages.clone(),
                tools: Vec::new(),
                server_tools: Vec::new(),
                effort: None,
                thinking: None,
                task_budget: None,
            }
            .body_text();
            bodies.push(started.elapsed());
            if estimate == 0 || body.is_empty() {
                return Err("no estimate or body".into());
            }
        }
        report(
            "session_resume: estimate + request body of the loaded history",
            &bodies,
            "",
        );
        // The binary: spawn → the resumed session's first request.
        let projects = carapace::transcript::project_dir(&cwd.join(".carapace"), cwd);
        std::fs::create_dir_all(&projects)?;
        std::fs::copy(&path, transcript_path(&projects, "resume"))?;
        let mut to_request = Vec::with_capacity(10);
        for i in 0..12 {
            let server = ScriptedServer::start(vec![Reply::text("resumed")])?;
            let started = Instant::now();
            let status = session_command(cache, cwd, &server)
                .args([
                    "-p",
                    "again",
                    "--resume",
                    "resume",
                    "--no-session-persistence",
                ])
                .stdout(std::process::Stdio::null())
                .status()?;
            if !status.success() {
                return Err("the resumed run failed".into());
            }
            let requests = server.requests();
            let sent = requests.first().ok_or("no request")?;
            if sent.body["messages"].as_array().map(Vec::len) != Some(10_001) {
                return Err("the resumed request does not carry the history".into());
            }
            if i >= 2 {
                to_request.push(sent.received_at.duration_since(started));
            }
        }
        report(
            "session_resume: carapace --resume (10,000 messages), spawn → first request",
            &to_request,
            "start-up, load, request; and the scripted server reading the 5 MiB body",
        );
    }
    if wanted("session_memory") {
        let file = cwd.join("memory-fixture.txt");
        std::fs::write(&file, "let x = 1; // some source\n".repeat(20))?;
        for turns in [10usize, 1_000] {
            let mut replies: Vec<Reply> = (0..turns)
                .map(|n| {
                    Reply::tool_uses(vec![scripted_server::Block::tool_use(
                        format!("toolu_{n}"),
                        "Read",
                        json!({"file_path": file}),
                    )])
                })
                .collect();
            replies.push(Reply::text("done"));
            let server = ScriptedServer::start(replies)?;
            let started = Instant::now();
            let child = session_command(cache, cwd, &server)
                .args([
                    "-p",
                    "go",
                    "--tools",
                    "Read",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                ])
                .stdout(std::process::Stdio::null())
                .spawn()?;
            let (succeeded, peak_kib) = wait_sampling_peak(child)?;
            let took = started.elapsed();
            if !succeeded || server.requests().len() != turns + 1 {
                return Err(format!("the {turns}-turn session failed").into());
            }
            report(
                &format!("session_memory: a {turns}-turn session (one Read a turn), whole run"),
                &[took],
                &format!(
                    "peak RSS {:.1} MiB (VmHWM, sampled); transcript written",
                    peak_kib as f64 / 1024.0
                ),
            );
        }
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

/// `carapace` against `server`, with its config (and transcripts) in `cwd`.
fn session_command(cache: &Path, cwd: &Path, server: &ScriptedServer) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_carapace"));
    command
        .current_dir(cwd)
        .env_clear()
        .env("HOME", cwd)
        .env("CARAPACE_CACHE_DIR", cache)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "bench")
        .args(["--permission-mode", "bypassPermissions"]);
    command
}

/// One `tools/call` of server-everything's `echo` over stdio: through the
/// bridge (a fresh sandboxed bridge instance per call, parsing the reply)
/// next to a direct client (the same request and reply over the same kind
/// of pipe, parsed by serde_json in the host).
async fn mcp_benches() -> BenchResult {
    use carapace::mcp::bridge::{BRIDGE_WASM, McpBridge};
    use carapace::mcp::{McpServer, ServerConfig, Transport};
    use carapace::sandbox::ProcessConfig;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    const N: usize = 300;
    let entry = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../tests/mcp/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    if !entry.exists() {
        println!(
            "| mcp_call_bridge | — | — | — | — | server-everything not installed: npm ci --prefix tests/mcp/servers |"
        );
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    let cache = tempfile::tempdir()?;
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: cache.path().to_path_buf(),
        ..SandboxConfig::default()
    })?;
    let bridge = McpBridge::load(&sandbox, BRIDGE_WASM)?;
    let config = ServerConfig {
        name: "everything".into(),
        transport: Transport::Stdio {
            command: "node".into(),
            args: vec![entry.display().to_string(), "stdio".into()],
            env: Vec::new(),
            allow_network: false,
        },
        source: "bench".into(),
    };
    // The OS-sandbox helper as installed: the small `carapace-sandbox`.
    let process = ProcessConfig {
        helper: Some(PathBuf::from(env!("CARGO_BIN_EXE_carapace-sandbox"))),
        ..ProcessConfig::new(&ws)
    };
    let server = McpServer::start(
        &config,
        &bridge,
        &process,
        CallLimits::default(),
        Duration::from_secs(60),
    )
    .await
    .map_err(|e| format!("server-everything: {e}"))?;
    let input = json!({"message": "hello"}).to_string();
    let limits = CallLimits::default();
    let samples = time_async(N, |_| {
        let (server, input, limits) = (&server, &input, &limits);
        async move {
            let outcome = server.call("echo", input, limits).await?;
            if outcome.is_error {
                return Err("echo failed".into());
            }
            Ok(())
        }
    })
    .await?;
    report(
        "mcp_call_bridge",
        &samples,
        "tools/call echo via the bridge: fresh sandboxed instance, JSON-RPC parsed inside",
    );
    server.shutdown().await;

    // The direct client: the same server, the same handshake and request,
    // written and read by the host itself.
    let mut child = tokio::process::Command::new("node")
        .arg(&entry)
        .arg("stdio")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    stdin.write_all(format!("{init}\n").as_bytes()).await?;
    lines.next_line().await?;
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await?;
    let mut samples = Vec::with_capacity(N);
    for i in 0..N + 5 {
        let request = json!({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hello"}}});
        let started = Instant::now();
        stdin.write_all(format!("{request}\n").as_bytes()).await?;
        loop {
            let line = lines.next_line().await?.ok_or("server closed")?;
            let reply: serde_json::Value = serde_json::from_str(&line)?;
            if reply["id"] == json!(i + 2) {
                break;
            }
        }
        if i >= 5 {
            samples.push(started.elapsed());
        }
    }
    report(
        "mcp_call_direct",
        &samples,
        "the same call from a host-side client (serde_json), no sandbox",
    );
    Ok(())
}

/// Third-party plugins (the WordCount examples of examples/tools/):
/// `plugin add` with an empty and a warm compile cache; a session loading 1
/// and 20 installed plugins (offering their tools, then the first use of
/// every one, compiled or from the cache); and per language, one call's
/// time and the linear memory its instance holds.
async fn plugin_benches() -> BenchResult {
    use carapace::plugin_store::install::{self, InstallContext, PluginSource};
    use carapace::plugin_store::store::{RecordedTool, digest};
    use carapace::plugin_store::{Placeholders, PluginStore, Scope};
    use carapace::sandbox::{CallContext, ComponentCache};
    let examples = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("..")
        .join("examples")
        .join("out");
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    let notes = ws.join("notes.txt");
    std::fs::write(&notes, "the cat and the hat\nThe end.\n".repeat(50))?;
    let sandbox_at = |cache: &Path| {
        Sandbox::new(SandboxConfig {
            cache_dir: cache.to_path_buf(),
            guest_cwd: Some(ws.clone()),
            ..SandboxConfig::default()
        })
    };
    let http = reqwest::Client::new();
    let warm_cache = tempfile::tempdir()?;
    let warm = sandbox_at(warm_cache.path())?;
    let builtin: Vec<String> = ["Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch"]
        .map(String::from)
        .to_vec();
    let places = Placeholders::current(&ws);
    let mut rust_record = None;

    for language in ["rust", "c", "python", "javascript"] {
        let wasm = examples.join(format!("word-count-{language}.wasm"));
        if !wasm.exists() {
            println!(
                "| plugin_add_{language} | — | — | — | — | not built: run examples/tools/{language}/build.sh {} (or the example tests) |",
                examples.display()
            );
            continue;
        }
        let source = PluginSource::parse(&wasm.display().to_string())?;
        let size = std::fs::metadata(&wasm)?.len();
        // Cold: an empty compile cache each time (the first install).
        let runs = if matches!(language, "rust" | "c") {
            10
        } else {
            3
        };
        let mut samples = Vec::new();
        for _ in 0..runs {
            let cache = tempfile::tempdir()?;
            let config = tempfile::tempdir()?;
            let sandbox = sandbox_at(cache.path())?;
            let store = PluginStore::new(config.path(), Scope::User);
            let cx = InstallContext {
                sandbox: &sandbox,
                store: &store,
                others: &[],
                builtin_tools: &builtin,
                http: &http,
            };
            let started = Instant::now();
            let candidate = install::prepare(&cx, &source, None).await?;
            install::commit(&store, &candidate)?;
            samples.push(started.elapsed());
        }
        report(
            &format!("plugin_add_{language}_cold"),
            &samples,
            &format!(
                "{} KiB component: read, hash, validate, compile, record",
                size / 1024
            ),
        );
        // Warm: the compiled code is in the cache (reinstalling, or a
        // second user of one machine).
        let config = tempfile::tempdir()?;
        let store = PluginStore::new(config.path(), Scope::User);
        let cx = InstallContext {
            sandbox: &warm,
            store: &store,
            others: &[],
            builtin_tools: &builtin,
            http: &http,
        };
        install::prepare(&cx, &source, None).await?;
        let mut samples = Vec::new();
        let mut record = None;
        for _ in 0..20 {
            let started = Instant::now();
            let candidate = install::prepare(&cx, &source, None).await?;
            install::commit(&store, &candidate)?;
            samples.push(started.elapsed());
            record = Some(candidate.record);
        }
        report(
            &format!("plugin_add_{language}_cached"),
            &samples,
            "compiled code from the cache",
        );
        let record = record.ok_or("no record")?;

        // One call, and the instance's memory.
        let mut registry = ToolRegistry::default();
        registry.add_installed(
            &warm,
            store.registration(&record, &places, &CallLimits::default())?,
        )?;
        let tool = registry.get("WordCount").ok_or("no WordCount")?;
        let component = tool.component().await?;
        let grant = Grant::none().read_file(&notes)?;
        let input = json!({"file_path": notes, "top": 3});
        let limits = CallLimits::default();
        let context = CallContext::default();
        let memory = std::sync::atomic::AtomicUsize::new(0);
        let samples = time_async(100, |_| {
            let (component, grant, input, context, memory) =
                (&component, &grant, &input, &context, &memory);
            async move {
                let mut invocation = ToolInvocation::new("WordCount", input, grant, &limits);
                invocation.context = context.clone();
                let called = component
                    .call(&invocation)
                    .await
                    .map_err(|e| format!("{e:?}"))?;
                memory.store(called.memory_bytes, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
        })
        .await?;
        let memory = memory.into_inner();
        let compiled = std::fs::metadata(warm_cache.path().join(format!(
            "{}.cwasm",
            ComponentCache::key(warm.engine(), &std::fs::read(&wasm)?)
        )))
        .map(|m| m.len())
        .unwrap_or(0);
        report(
            &format!("plugin_call_{language}"),
            &samples,
            &format!(
                "WordCount of 1.4 KiB, top 3; instance memory {} KiB; component {} KiB, compiled {} KiB",
                memory / 1024,
                size / 1024,
                compiled / 1024
            ),
        );
        if language == "rust" {
            rust_record = Some((record, std::fs::read(&wasm)?));
        }
    }

    // A session with 1 and 20 installed plugins: distinct components (each
    // with its own embedded manifest, so its own bytes and compilation)
    // offering distinct tools.
    let Some((record, wasm)) = rust_record else {
        return Ok(());
    };
    for n in [1usize, 20] {
        let config = tempfile::tempdir()?;
        let store = PluginStore::new(config.path(), Scope::User);
        for i in 0..n {
            let mut manifest = record.manifest.clone();
            manifest.plugin.name = format!("word-count-{i}");
            manifest.plugin.tools = vec![format!("WordCount{i}")];
            let bytes = carapace::plugin_store::manifest::embed(&wasm, &manifest)?;
            let mut copy = record.clone();
            copy.digest = digest(&bytes);
            copy.size = bytes.len() as u64;
            copy.tools = vec![RecordedTool {
                name: format!("WordCount{i}"),
                ..record.tools[0].clone()
            }];
            copy.manifest = manifest;
            store.put(&copy, &bytes)?;
        }
        let load = |sandbox: &Sandbox| -> Result<ToolRegistry, Box<dyn std::error::Error>> {
            let mut registry = ToolRegistry::default();
            for entry in store.list() {
                registry.add_installed(
                    sandbox,
                    store.registration(&entry?, &places, &CallLimits::default())?,
                )?;
            }
            Ok(registry)
        };
        let samples = (0..50)
            .map(|_| {
                let started = Instant::now();
                load(&warm).map(|_| started.elapsed())
            })
            .collect::<Result<Vec<_>, _>>()?;
        report(
            &format!("session_load_{n}_plugins"),
            &samples,
            "start-up: read the records, offer the tools (components load on first use)",
        );
        // Fill the warm cache with these components first.
        let registry = load(&warm)?;
        for name in registry.names() {
            registry
                .get(&name)
                .ok_or("lost a tool")?
                .component()
                .await?;
        }
        for (label, runs, cold) in [
            ("cold", if n == 1 { 10 } else { 3 }, true),
            ("cached", 20, false),
        ] {
            let mut samples = Vec::new();
            for _ in 0..runs {
                let cache = tempfile::tempdir()?;
                let sandbox = if cold {
                    sandbox_at(cache.path())?
                } else {
                    warm.clone()
                };
                let registry = load(&sandbox)?;
                let started = Instant::now();
                for name in registry.names() {
                    registry
                        .get(&name)
                        .ok_or("lost a tool")?
                        .component()
                        .await?;
                }
                samples.push(started.elapsed());
            }
            report(
                &format!("first_use_{n}_plugins_{label}"),
                &samples,
                if cold {
                    "every plugin's first call: read, verify digest, compile, link"
                } else {
                    "every plugin's first call: read, verify digest, cached machine code, link"
                },
            );
        }
    }
    Ok(())
}

/// One PreToolUse invocation of the audit policy hook of examples/hooks/
/// (parse the call, check the command, append an audit line), per language,
/// through the hook runtime as the loop calls it — next to a native hook
/// run the way Claude Code runs command hooks: `/bin/sh -c` with the hook
/// JSON on stdin.
async fn hook_benches(cache: &Path) -> BenchResult {
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
    for (language, kind) in [
        ("rust", "wasm"),
        ("c", "wasm-command"),
        ("python", "wasm"),
        ("javascript", "wasm"),
    ] {
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
    Ok(())
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
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: cache.to_path_buf(),
        guest_cwd: Some(ws.clone()),
        process: Some(ProcessConfig {
            helper: Some(PathBuf::from(env!("CARGO_BIN_EXE_carapace-sandbox"))),
            protected_names: carapace::policy::command_protected_names(),
            ..ProcessConfig::new(&ws)
        }),
        ..SandboxConfig::default()
    })?;
    let registry = ToolRegistry::builtin(&sandbox).await?;
    let policy = Policy::new(PermissionMode::BypassPermissions, &ws);
    let pipeline = Arc::new(ToolPipeline::new(registry, policy, CallLimits::default()));
    let samples = time_async(100, |_| {
        let pipeline = pipeline.clone();
        async move {
            let result = pipeline
                .call(ToolCall {
                    id: "toolu_bench".into(),
                    name: "Bash".into(),
                    input: json!({"command": "echo hi"}),
                    invalid_input: None,
                })
                .await;
            if result.is_error {
                return Err(format!("Bash failed: {}", result.content.text()).into());
            }
            Ok(())
        }
    })
    .await?;
    report(
        "tools: Bash `echo hi` in a 20,000-entry workspace",
        &samples,
        "the walk for nested protected paths at its limit",
    );
    Ok(())
}

async fn tool_benches(cache: &Path) -> BenchResult {
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

/// The policy decision for one call with 100 rules loaded: rule matching
/// (deny, ask, allow, in that order) plus building the grant.
fn policy_benches(file: &Path) -> BenchResult {
    use carapace::policy::{
        Anchors, CallRequest, Ceiling, Outcome, PolicyConfig, Rule, RuleKind, RuleSet, RuleSource,
        SourceKind,
    };
    use carapace::sandbox::{Capability, FileAccess};
    let cwd = file.parent().ok_or("no parent")?.to_path_buf();
    let anchors = Anchors {
        cwd: cwd.clone(),
        home: "/home/bench".into(),
        project: cwd.clone(),
    };
    let source = RuleSource {
        kind: SourceKind::User,
        file: Some("/home/bench/.carapace/settings.json".into()),
    };
    let mut rules = Vec::new();
    for i in 0..100 {
        let (kind, text) = match i % 5 {
            0 => (RuleKind::Deny, format!("Read(~/.secret-{i}/**)")),
            1 => (RuleKind::Deny, format!("Bash(rm-{i}:*)")),
            2 => (
                RuleKind::Ask,
                format!("WebFetch(domain:host-{i}.example.com)"),
            ),
            3 => (RuleKind::Allow, format!("Edit(src/module-{i}/**)")),
            _ => (RuleKind::Allow, format!("Bash(tool-{i} run:*)")),
        };
        rules.push(Rule::parse(&text, kind, source.clone(), &anchors)?);
    }
    let policy = Policy::from_config(PolicyConfig {
        mode: PermissionMode::Default,
        bypass_allowed: false,
        rules: RuleSet::new(rules),
        cwd: cwd.clone(),
        additional_dirs: vec![],
        home: "/home/bench".into(),
        config_dir: "/home/bench/.carapace".into(),
        internal_hosts: vec![],
    });
    let ceiling = Ceiling::none()
        .with_files("/", FileAccess::Write)
        .with_process();
    let needs = [Capability::ReadFile(file.to_string_lossy().into_owned())];
    const N: usize = 20_000;
    let mut samples = Vec::with_capacity(N);
    for _ in 0..N {
        let started = Instant::now();
        let verdict = policy.decide(&CallRequest::new("Read", &needs, &ceiling));
        samples.push(started.elapsed());
        if !matches!(verdict.outcome, Outcome::Allow(_)) {
            return Err(format!("unexpected verdict {verdict:?}").into());
        }
    }
    report(
        "policy: decide one Read (100 rules; matching + grant)",
        &samples,
        "",
    );
    let line = "tool-3 run build && tool-8 run test | grep ok; tool-13 run lint";
    let mut samples = Vec::with_capacity(N);
    for _ in 0..N {
        let started = Instant::now();
        let verdict = policy.decide_command(line, &ceiling);
        samples.push(started.elapsed());
        std::hint::black_box(verdict);
    }
    report(
        "policy: decide a 4-part Bash line (100 rules; parse + match)",
        &samples,
        "",
    );
    Ok(())
}

/// A tool runtime that does nothing, instantly: what remains is the loop.
struct InstantTools;

impl ToolRuntime for InstantTools {
    fn specs(&self) -> Vec<carapace::model::ToolSpec> {
        vec![carapace::model::ToolSpec {
            name: "Noop".into(),
            description: "does nothing".into(),
            input_schema: json!({"type": "object"}),
        }]
    }
    fn prepare(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Preparation> {
        Box::pin(async move { Preparation::Ready(Box::new(InstantCall(call))) })
    }
}

struct InstantCall(ToolCall);

impl ReadyCall for InstantCall {
    fn concurrency_safe(&self) -> bool {
        true
    }
    fn interrupt(&self) -> InterruptBehavior {
        InterruptBehavior::Cancel
    }
    fn run(self: Box<Self>) -> BoxFuture<'static, ToolCallResult> {
        Box::pin(async move {
            ToolCallResult {
                tool_use_id: self.0.id,
                content: carapace::model::ToolResultContent::Text("ok".into()),
                is_error: false,
                structured: None,
                denial: None,
                hooks: Default::default(),
                follow_up: None,
            }
        })
    }
}

/// Records when a call starts running, delegating to an inner runtime.
struct StartClock<R> {
    inner: Arc<R>,
    started: Arc<Mutex<Vec<Instant>>>,
}

struct ClockedCall {
    inner: Box<dyn ReadyCall>,
    started: Arc<Mutex<Vec<Instant>>>,
}

impl ReadyCall for ClockedCall {
    fn concurrency_safe(&self) -> bool {
        self.inner.concurrency_safe()
    }
    fn interrupt(&self) -> InterruptBehavior {
        self.inner.interrupt()
    }
    fn run(self: Box<Self>) -> BoxFuture<'static, ToolCallResult> {
        if let Ok(mut started) = self.started.lock() {
            started.push(Instant::now());
        }
        self.inner.run()
    }
}

impl<R: ToolRuntime> ToolRuntime for StartClock<R> {
    fn specs(&self) -> Vec<carapace::model::ToolSpec> {
        self.inner.specs()
    }
    fn prepare(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Preparation> {
        Box::pin(async move {
            match self.inner.clone().prepare(call).await {
                Preparation::Ready(inner) => Preparation::Ready(Box::new(ClockedCall {
                    inner,
                    started: self.started.clone(),
                })),
                failed => failed,
            }
        })
    }
}

/// A model that streams one scripted tool call (then a final text), noting
/// when it hands out each `content_block_stop` of a tool_use.
struct StopClock {
    tool: (String, serde_json::Value),
    turns: std::sync::atomic::AtomicUsize,
    stops: Arc<Mutex<Vec<Instant>>>,
}

impl Model for StopClock {
    fn stream<'a>(
        &'a self,
        _request: &'a MessagesRequest,
    ) -> BoxFuture<'a, Result<EventStream, ModelError>> {
        let n = self.turns.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let stops = self.stops.clone();
        let (name, input) = self.tool.clone();
        Box::pin(async move {
            let event =
                |v: serde_json::Value| StreamEvent::parse("", &v.to_string()).ok().flatten();
            let mut events: Vec<StreamEvent> = Vec::new();
            events.extend(event(json!({"type": "message_start", "message": {"id": format!("m{n}"), "model": "bench", "usage": {"input_tokens": 1}}})));
            let tool = n.is_multiple_of(2);
            if tool {
                events.extend(event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": format!("t{n}"), "name": name, "input": {}}})));
                events.extend(event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}})));
            } else {
                events.extend(event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
                events.extend(event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}})));
            }
            events.extend(event(json!({"type": "content_block_stop", "index": 0})));
            events.extend(event(json!({"type": "message_delta", "delta": {"stop_reason": if tool { "tool_use" } else { "end_turn" }}, "usage": {"output_tokens": 1}})));
            events.extend(event(json!({"type": "message_stop"})));
            let stream = futures::stream::iter(events.into_iter().map(move |e| {
                if tool
                    && matches!(e, StreamEvent::ContentBlockStop { .. })
                    && let Ok(mut stops) = stops.lock()
                {
                    stops.push(Instant::now());
                }
                Ok(e)
            }));
            let stream: EventStream = Box::pin(stream);
            Ok(stream)
        })
    }
}

struct NullSink;
impl EventSink for NullSink {
    fn emit(&mut self, _event: carapace::agent::AgentEvent) {}
}

fn loop_config(max_turns: Option<u32>) -> QueryConfig {
    QueryConfig {
        model: "bench".into(),
        fallback_models: vec![],
        system_prompt: "bench".into(),
        max_tokens: 1000,
        max_turns,
        retry: carapace::model::RetryPolicy::default(),
        stop_hook_block_cap: 8,
        max_budget_usd: None,
        context: carapace::agent::ContextConfig::for_model("bench", 1000, None),
        structured_output: None,
        effort: None,
        user_context: Vec::new(),
        task_budget: None,
        thinking: carapace::model::ThinkingChoice::Off,
    }
}

async fn loop_benches(cache: &Path, file: &Path) -> BenchResult {
    // Loop overhead: a replayed model and instant tools, so what is timed is
    // the loop itself (request building, assembly, executor, bookkeeping).
    const ITERATIONS: usize = 100;
    const RUNS: usize = 30;
    let mut per_iteration = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let script = json!({"responses": (0..ITERATIONS).map(|i| if i + 1 < ITERATIONS {
            json!({"content": [{"type": "tool_use", "name": "Noop", "input": {"i": i}}]})
        } else {
            json!({"content": [{"type": "text", "text": "done"}]})
        }).collect::<Vec<_>>()});
        let model = ReplayModel::from_json(&script.to_string())?;
        let deps = QueryDeps {
            model: &model,
            tools: Arc::new(InstantTools),
            hooks: &NoLoopHooks,
            history: &carapace::agent::NoHistoryLog,
            input: None,
            abort: CancellationToken::new(),
        };
        let started = Instant::now();
        let outcome = query(
            &deps,
            &loop_config(None),
            vec![Message::user_text("go")],
            &mut NullSink,
        )
        .await;
        let elapsed = started.elapsed();
        if outcome.num_turns as usize != ITERATIONS {
            return Err(format!("expected {ITERATIONS} turns, got {}", outcome.num_turns).into());
        }
        per_iteration.push(elapsed / ITERATIONS as u32);
    }
    report(
        "loop: overhead per iteration (replayed model, instant tool, 100-turn run)",
        &per_iteration,
        "mean over a run",
    );

    // content_block_stop → tool start, with instant tools and with the real
    // pipeline (schema + plan in the sandbox happen in between).
    for real in [false, true] {
        let stops = Arc::new(Mutex::new(Vec::new()));
        let starts = Arc::new(Mutex::new(Vec::new()));
        let (tools, tool): (Arc<dyn ToolRuntime>, (String, serde_json::Value)) = if real {
            let sandbox = Sandbox::new(SandboxConfig {
                cache_dir: cache.to_path_buf(),
                ..SandboxConfig::default()
            })?;
            let registry = ToolRegistry::builtin(&sandbox).await?;
            let pipeline = Arc::new(ToolPipeline::new(
                registry,
                Policy::new(PermissionMode::BypassPermissions, Path::new("/")),
                CallLimits::default(),
            ));
            (
                Arc::new(StartClock {
                    inner: pipeline,
                    started: starts.clone(),
                }),
                ("Read".into(), json!({"file_path": file})),
            )
        } else {
            (
                Arc::new(StartClock {
                    inner: Arc::new(InstantTools),
                    started: starts.clone(),
                }),
                ("Noop".into(), json!({})),
            )
        };
        let model = StopClock {
            tool,
            turns: Default::default(),
            stops: stops.clone(),
        };
        for _ in 0..500 {
            let deps = QueryDeps {
                model: &model,
                tools: tools.clone(),
                hooks: &NoLoopHooks,
                history: &carapace::agent::NoHistoryLog,
                input: None,
                abort: CancellationToken::new(),
            };
            query(
                &deps,
                &loop_config(Some(1)),
                vec![Message::user_text("go")],
                &mut NullSink,
            )
            .await;
        }
        let stops = stops.lock().map(|s| s.clone()).unwrap_or_default();
        let starts = starts.lock().map(|s| s.clone()).unwrap_or_default();
        let latencies: Vec<Duration> = stops
            .iter()
            .zip(starts.iter())
            .skip(20)
            .map(|(stop, start)| start.duration_since(*stop))
            .collect();
        let name = if real {
            "loop: content_block_stop → tool start (real pipeline: schema + plan in the sandbox)"
        } else {
            "loop: content_block_stop → tool start (instant tool)"
        };
        report(name, &latencies, "");
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

/// The seeds' Read probe as a user runs it: spawn `carapace -p` with Read
/// only, one Read call and a final answer from the scripted server, until
/// the process exits, and the process's peak resident set. Times come from
/// runs waited for plainly; the peak from the last runs, sampled (polling
/// `/proc` would slow the timed runs).
fn startup_read_probe(cache: &Path, cwd: &Path) -> BenchResult {
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
