//! The loop, wired as the CLI wires it (real sandbox, real tools, the
//! Messages client against the scripted server, the stream-json printer),
//! with the seams a test needs: Stop hook doubles, an abort token, an input
//! queue, and the hostile `Probe` tool next to Read.

#![allow(dead_code)] // each test binary uses a different part

use carapace::agent::{
    ContextConfig, HistoryLog, InputQueue, LoopHooks, NoHistoryLog, NoLoopHooks, QueryConfig,
    QueryDeps, QueryOutcome,
};
use carapace::conversation::{PrintSession, Prompts, run_print};
use carapace::hooks::HookCommon;
use carapace::hooks::HookRuntime;
use carapace::model::{AnthropicModel, RetryPolicy};
use carapace::output::{OutputFormat, Printer, RunInfo, SharedPrinter};
use carapace::policy::{Ceiling, PermissionMode, Policy};
use carapace::policy::{RuleSource, SourceKind};
use carapace::sandbox::{CallLimits, FileAccess, Sandbox, ToolComponent};
use carapace::tools::{ToolPipeline, ToolRegistry};
use scripted_server::{RecordedRequest, Reply, ScriptedServer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;
pub type BoxError = Box<dyn std::error::Error>;

/// What a test varies.
pub struct Setup {
    pub replies: Vec<Reply>,
    pub model: String,
    pub fallback_models: Vec<String>,
    pub max_turns: Option<u32>,
    pub max_retries: u32,
    pub hooks: Arc<dyn LoopHooks>,
    pub stop_hook_block_cap: u32,
    pub max_budget_usd: Option<f64>,
    pub abort: CancellationToken,
    /// A settings `hooks` value: real hook components, loaded as the CLI
    /// loads them (they replace `hooks`).
    pub hook_settings: Option<Value>,
    /// `hooks` values as several settings files hold them, each with the
    /// kind of file it is in (managed, user, project…): tiers for
    /// middleware hooks. They replace `hook_settings` when set.
    pub hook_layers: Vec<(Value, SourceKind)>,
    /// The policy (bypassPermissions in the workspace unless set).
    pub policy: Option<Policy>,
    /// The context limits (the model's, by default).
    pub context: Option<ContextConfig>,
    /// Where the history is kept (nowhere, by default).
    pub history_log: Option<Arc<dyn HistoryLog>>,
    /// `--json-schema`: the schema and the bound (the StructuredOutput
    /// tool is offered with it).
    pub structured_output: Option<(Value, carapace::agent::StructuredOutputConfig)>,
    /// Filled with the server's request counter when the run starts: what
    /// a test waits on to act at a known point of the run.
    pub counter: ServerSlot,
}

/// Where a running test's server can be watched from.
#[derive(Clone, Default)]
pub struct ServerSlot(Arc<std::sync::OnceLock<scripted_server::RequestCounter>>);

impl ServerSlot {
    /// The counter, once the run has started its server (up to 30 s).
    pub async fn get_or_wait(&self) -> Option<scripted_server::RequestCounter> {
        for _ in 0..3000 {
            if let Some(counter) = self.0.get() {
                return Some(counter.clone());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }
}

impl Setup {
    pub fn new(replies: Vec<Reply>) -> Self {
        Self {
            replies,
            model: "claude-sonnet-4-5".into(),
            fallback_models: Vec::new(),
            max_turns: None,
            max_retries: 10,
            hooks: Arc::new(NoLoopHooks),
            stop_hook_block_cap: 8,
            max_budget_usd: None,
            abort: CancellationToken::new(),
            hook_settings: None,
            hook_layers: Vec::new(),
            policy: None,
            context: None,
            history_log: None,
            structured_output: None,
            counter: ServerSlot::default(),
        }
    }
}

/// What a run produced.
pub struct Run {
    pub outcome: QueryOutcome,
    /// Every stdout line, parsed.
    pub lines: Vec<Value>,
    pub requests: Vec<RecordedRequest>,
    pub server: ScriptedServer,
}

impl Run {
    /// Lines of one `type` (and `subtype`, for system lines).
    pub fn lines_of(&self, kind: &str, subtype: Option<&str>) -> Vec<&Value> {
        self.lines
            .iter()
            .filter(|l| l["type"] == kind && subtype.is_none_or(|s| l["subtype"] == s))
            .collect()
    }

    pub fn result(&self) -> &Value {
        self.lines.last().unwrap_or(&Value::Null)
    }

    /// The messages of request `n` (0-based).
    pub fn messages(&self, n: usize) -> &Value {
        &self.requests[n].body["messages"]
    }
}

/// A workspace directory (canonical path) for the run's files.
pub fn workspace() -> Result<(tempfile::TempDir, PathBuf), BoxError> {
    let dir = tempfile::tempdir()?;
    let path = std::fs::canonicalize(dir.path())?;
    Ok((dir, path))
}

/// Runs one prompt (or a message stream) through the loop.
pub async fn run(setup: Setup, cwd: &Path, prompts: Prompts) -> Result<Run, BoxError> {
    let server = ScriptedServer::start(setup.replies)?;
    let _ = setup.counter.0.set(server.counter());
    let model = AnthropicModel::with_api_key(&server.url(), "test-key")?;
    let sandbox = carapace_test_support::sandbox()?;
    let mut registry = ToolRegistry::builtin(&sandbox).await?;
    let probe_wasm =
        std::fs::read(Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("escape_probe.wasm"))?;
    let probe = ToolComponent::load(&sandbox, "escape-probe", &probe_wasm).await?;
    registry.add(
        probe,
        Arc::new(Ceiling::none().with_files("/", FileAccess::Write)),
    )?;
    let hook_runtime = match (&setup.hook_settings, setup.hook_layers.is_empty()) {
        (_, false) => Some(Arc::new(
            load_layers(&sandbox, &setup.hook_layers, cwd).await?,
        )),
        (Some(value), true) => Some(Arc::new(load_hooks(&sandbox, value, cwd).await?)),
        (None, true) => None,
    };
    let policy = setup
        .policy
        .unwrap_or_else(|| Policy::new(PermissionMode::BypassPermissions, cwd));
    if let Some((schema, _)) = &setup.structured_output {
        use carapace::tools::structured_output::{StructuredOutputTool, definition};
        registry.add_native(definition(schema), Arc::new(StructuredOutputTool))?;
    }
    let mut pipeline = ToolPipeline::new(registry, policy, CallLimits::default());
    if let Some(hooks) = &hook_runtime {
        pipeline = pipeline.with_hooks(hooks.clone());
    }
    let tools = Arc::new(pipeline);
    let out = SharedBuf::default();
    let printer = SharedPrinter::new(
        Printer::new(
            OutputFormat::StreamJson,
            true,
            out.clone(),
            RunInfo {
                session_id: "00000000-0000-4000-8000-000000000000".into(),
                cwd: cwd.display().to_string(),
                model: setup.model.clone(),
                tools: vec!["Read".into(), "Probe".into()],
                permission_mode: "bypassPermissions".into(),
                api_key_source: "ANTHROPIC_API_KEY".into(),
                started: Instant::now(),
                plugins: Vec::new(),
                mcp_servers: Vec::new(),
                agents: Vec::new(),
                slash_commands: vec!["compact".into()],
                skills: Vec::new(),
                output_style: "default".into(),
            },
        )
        .with_hook_events(true),
    );
    if let Some(hooks) = &hook_runtime {
        hooks.observe(Box::new(printer.clone()));
    }
    let context = setup
        .context
        .unwrap_or_else(|| ContextConfig::for_model(&setup.model, 1000, None));
    let config = QueryConfig {
        model: setup.model,
        fallback_models: setup.fallback_models,
        system_prompt: "test system prompt".into(),
        max_tokens: 1000,
        max_turns: setup.max_turns,
        retry: RetryPolicy {
            max_retries: setup.max_retries,
            base_delay: Duration::from_millis(5),
            ..RetryPolicy::default()
        },
        stop_hook_block_cap: setup.stop_hook_block_cap,
        max_budget_usd: setup.max_budget_usd,
        context,
        structured_output: setup.structured_output.as_ref().map(|(_, config)| *config),
        effort: None,
        user_context: Vec::new(),
        task_budget: None,
        thinking: carapace::model::ThinkingChoice::Off,
    };
    let queue = match &prompts {
        Prompts::Stream(queue) => Some(queue.clone()),
        Prompts::One(_) => None,
    };
    let loop_hooks: &dyn LoopHooks = match &hook_runtime {
        Some(hooks) => hooks.as_ref(),
        None => setup.hooks.as_ref(),
    };
    let deps = QueryDeps {
        model: &model,
        tools,
        hooks: loop_hooks,
        history: match &setup.history_log {
            Some(log) => log.as_ref(),
            None => &NoHistoryLog,
        },
        input: queue.as_deref(),
        abort: setup.abort,
    };
    let session = PrintSession {
        hooks: hook_runtime.as_deref(),
        history: Vec::new(),
        source: carapace::session::StartSource::Startup,
        transcript: None,
        turn: None,
        model: None,
        overrides: None,
        meter: None,
        checkpoints: None,
        slash_commands: true,
        commands: None,
        notifications: None,
        setup: None,
    };
    let outcome = run_print(&deps, &config, printer, prompts, session)
        .await
        .ok_or("no turn ran")?;
    let text = out.text();
    let lines = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<Vec<Value>, _>>()
        .map_err(|e| format!("stdout is not JSON lines ({e}):\n{text}"))?;
    Ok(Run {
        outcome,
        lines,
        requests: server.requests(),
        server,
    })
}

/// The typed test hook (`tests/plugins/hook-probe`).
pub fn hook_probe() -> String {
    Path::new(env!("CARAPACE_TEST_GUESTS_DIR"))
        .join("hook_probe.wasm")
        .display()
        .to_string()
}

/// The Claude Code–protocol test hook (`tests/plugins/command-hook-probe`).
pub fn command_hook_probe() -> String {
    Path::new(env!("CARAPACE_TEST_GUESTS_DIR"))
        .join("command-hook-probe.wasm")
        .display()
        .to_string()
}

/// Settings that run `handler` (a settings handler object) for `event`
/// with `matcher`.
pub fn hook_on(event: &str, matcher: &str, handler: Value) -> Value {
    serde_json::json!({ event: [{"matcher": matcher, "hooks": [handler]}] })
}

/// A handler running the typed probe, granted its script in `ws` (and
/// whatever `grants` adds).
pub fn typed_probe(ws: &Path, mut grants: Value) -> Value {
    let script = ws.join("hook-script.json").display().to_string();
    match grants["read"].as_array_mut() {
        Some(read) => read.push(Value::String(script)),
        None => grants["read"] = serde_json::json!([script]),
    }
    serde_json::json!({"type": "wasm", "path": hook_probe(), "grants": grants})
}

/// A handler running the command probe, granted its script in `ws`.
pub fn command_probe(ws: &Path) -> Value {
    let script = ws.join("hook-script.json").display().to_string();
    serde_json::json!({"type": "wasm-command", "path": command_hook_probe(), "grants": {"read": [script]}})
}

/// Writes the hook script (what the probes answer, by event) into `ws`.
pub fn hook_script(ws: &Path, script: Value) -> Result<(), BoxError> {
    std::fs::write(ws.join("hook-script.json"), script.to_string())?;
    Ok(())
}

/// Loads a settings `hooks` value as the CLI does.
pub async fn load_hooks(
    sandbox: &Sandbox,
    value: &Value,
    cwd: &Path,
) -> Result<HookRuntime, BoxError> {
    load_hooks_at_home(sandbox, value, cwd, Path::new("/nonexistent-home")).await
}

/// Loads `hooks` values from settings files of the given kinds, in
/// order, as the CLI does; what loading warned of is returned.
pub async fn load_layers_warning(
    sandbox: &Sandbox,
    layers: &[(Value, SourceKind)],
    cwd: &Path,
) -> Result<(HookRuntime, Vec<String>), BoxError> {
    let mut specs = Vec::new();
    let mut warnings = Vec::new();
    for (value, kind) in layers {
        let source = RuleSource {
            kind: *kind,
            file: None,
        };
        let (parsed, parse_warnings) = carapace::hooks::parse(value, &source)?;
        specs.extend(parsed);
        warnings.extend(parse_warnings);
    }
    let home = Path::new("/nonexistent-home");
    let (runtime, load_warnings) =
        HookRuntime::load(sandbox, specs, common(cwd), home, &home.join(".carapace")).await?;
    warnings.extend(load_warnings);
    Ok((runtime, warnings))
}

/// [`load_layers_warning`], where any warning is a failure.
pub async fn load_layers(
    sandbox: &Sandbox,
    layers: &[(Value, SourceKind)],
    cwd: &Path,
) -> Result<HookRuntime, BoxError> {
    let (runtime, warnings) = load_layers_warning(sandbox, layers, cwd).await?;
    if !warnings.is_empty() {
        return Err(format!("hook warnings: {warnings:?}").into());
    }
    Ok(runtime)
}

fn common(cwd: &Path) -> HookCommon {
    HookCommon {
        mcp_server: None,
        session_id: "00000000-0000-4000-8000-000000000000".into(),
        transcript_path: String::new(),
        cwd: cwd.display().to_string(),
        permission_mode: "bypassPermissions".into(),
        prompt_id: None,
        agent: None,
    }
}

/// The middleware test hook (`tests/plugins/middleware-probe`).
pub fn middleware_probe() -> String {
    Path::new(env!("CARAPACE_TEST_GUESTS_DIR"))
        .join("middleware_probe.wasm")
        .display()
        .to_string()
}

/// [`load_hooks`] for a user whose home directory is `home`.
pub async fn load_hooks_at_home(
    sandbox: &Sandbox,
    value: &Value,
    cwd: &Path,
    home: &Path,
) -> Result<HookRuntime, BoxError> {
    let source = RuleSource {
        kind: SourceKind::CliFlag,
        file: None,
    };
    let (specs, _warnings) = carapace::hooks::parse(value, &source)?;
    let (runtime, warnings) =
        HookRuntime::load(sandbox, specs, common(cwd), home, &home.join(".carapace")).await?;
    if !warnings.is_empty() {
        return Err(format!("hook warnings: {warnings:?}").into());
    }
    Ok(runtime)
}

/// stdout captured in memory.
#[derive(Clone, Default)]
pub struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    pub fn text(&self) -> String {
        self.0
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

impl std::io::Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut b) = self.0.lock() {
            b.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The text of every block of a message, joined.
pub fn texts(message: &Value) -> Vec<String> {
    message["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn queue() -> Arc<InputQueue> {
    Arc::new(InputQueue::new())
}
