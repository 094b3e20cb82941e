//! MCP servers through the bridge, and third-party plugins installed and called.

use super::*;

/// One `tools/call` of server-everything's `echo` over stdio: through the
/// bridge (a fresh sandboxed bridge instance per call, parsing the reply)
/// next to a direct client (the same request and reply over the same kind
/// of pipe, parsed by serde_json in the host).
pub(super) async fn mcp_benches() -> BenchResult {
    use carapace::mcp::bridge::{BRIDGE_WASM, McpBridge};
    use carapace::mcp::{McpServer, ServerConfig, Transport};
    use carapace::sandbox::ProcessConfig;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    const N: usize = 300;
    // Where `tests/setup.sh` installs it, as the MCP tests find it.
    let probe = "@modelcontextprotocol/server-everything/dist/index.js";
    let entry = match carapace_test_support::deps::node_package("mcp-servers", probe) {
        Ok(dir) => dir.join("node_modules").join(probe),
        Err(why) => {
            println!("| mcp_call_bridge | — | — | — | — | {why} |");
            return Ok(());
        }
    };
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
        scope: "dynamic",
    };
    // The OS-sandbox helper as installed: the small `carapace-sandbox`.
    let process = ProcessConfig {
        helper: Some(PathBuf::from(env!("CARGO_BIN_EXE_carapace-sandbox"))),
        ..ProcessConfig::new(&ws)
    };
    let credentials = carapace::mcp::Credentials::in_folder(&ws);
    let server = McpServer::start(
        &config,
        &bridge,
        &process,
        (CallLimits::default(), Duration::from_secs(60)),
        &credentials,
    )
    .await
    .map_err(|e| format!("server-everything: {e}"))?;
    let input = json!({"message": "hello"}).to_string();
    let limits = CallLimits::default();
    let samples = time_async(N, |_| {
        let (server, input, limits) = (&server, &input, &limits);
        async move {
            let outcome = server.call(("echo", input), limits, None).await?;
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
/// `runs` installs of `source`, each with an empty compile cache and an
/// empty store (a first install), timed from reading the component to
/// the record written.
pub(super) async fn cold_installs(
    source: &carapace::plugin_store::PluginSource,
    ws: &Path,
    builtin: &[String],
    http: &reqwest::Client,
    runs: usize,
) -> Result<Vec<Duration>, Box<dyn std::error::Error>> {
    use carapace::plugin_store::install::{self, InstallContext};
    use carapace::plugin_store::{PluginStore, Scope};
    let mut samples = Vec::new();
    for _ in 0..runs {
        let cache = tempfile::tempdir()?;
        let config = tempfile::tempdir()?;
        let sandbox = Sandbox::new(SandboxConfig {
            cache_dir: cache.path().to_path_buf(),
            guest_cwd: Some(ws.to_path_buf()),
            ..SandboxConfig::default()
        })?;
        let store = PluginStore::new(config.path(), Scope::User);
        let cx = InstallContext {
            sandbox: &sandbox,
            store: &store,
            others: &[],
            builtin_tools: builtin,
            http,
        };
        let started = Instant::now();
        let candidate = install::prepare(&cx, source, &Default::default()).await?;
        install::commit(&store, &candidate)?;
        samples.push(started.elapsed());
    }
    Ok(samples)
}

pub(super) async fn plugin_benches() -> BenchResult {
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
        let samples = cold_installs(&source, &ws, &builtin, &http, runs).await?;
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
        install::prepare(&cx, &source, &Default::default()).await?;
        let mut samples = Vec::new();
        let mut record = None;
        for _ in 0..20 {
            let started = Instant::now();
            let candidate = install::prepare(&cx, &source, &Default::default()).await?;
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
