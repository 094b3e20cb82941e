//! The engine every component runs on, and the per-call store.
//!
//! This module knows no world: a world (tool, hook, MCP bridge) is a host
//! context type implementing [`World`], which links what its components may
//! import and nothing else. Each world gets its own linker, built once per
//! engine on first use, so a component of one world cannot even link
//! another world's host interfaces.

use super::SandboxError;
use super::cache::{CacheOutcome, ComponentCache};
use super::grant::{Grant, StagedGrant};
use super::limits::{CallLimiter, CallLimits};
use super::process::{CreationRules, ProcessConfig};
use super::staging::StagingPool;
use std::any::{Any, TypeId};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::{Component, InstancePre, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};

/// How the engine is set up; fixed for the process.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Where compiled components are cached.
    pub cache_dir: PathBuf,
    /// Where the process's private staging directory (for per-call file
    /// grants) is created.
    pub staging_parent: PathBuf,
    /// The largest memory cap any call may be given (sizes the pool's slots).
    pub max_memory_bytes: usize,
    /// How many instances may be alive at once across all calls.
    pub max_live_instances: u32,
    /// How often running guests are interrupted to check their deadline.
    pub epoch_tick: Duration,
    /// The working directory guests start in (it grants nothing; tools use
    /// it to resolve a default path).
    pub guest_cwd: Option<PathBuf>,
    /// How granted commands run; `None`: no processes at all.
    pub process: Option<ProcessConfig>,
    /// Guests may open TCP sockets to anywhere: only for the escape tests'
    /// weakened control (what a guest could reach without this layer).
    #[doc(hidden)]
    pub weakened_sockets: bool,
    /// A written file is moved into place however many names it has: only
    /// for the escape tests' weakened control (a granted file linked onto
    /// the written name would itself become the saved file).
    #[doc(hidden)]
    pub weakened_commit: bool,
    /// Guests may make any name their grant reaches (`.git`, `.mcp.json`,
    /// …): only for the escape tests' weakened control (what a guest could
    /// plant without the creation judgement; the sweep after the call
    /// still runs).
    #[doc(hidden)]
    pub weakened_creation: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            cache_dir: ComponentCache::default_dir(),
            staging_parent: std::env::temp_dir(),
            max_memory_bytes: 1 << 30,
            max_live_instances: 256,
            epoch_tick: Duration::from_millis(10),
            guest_cwd: None,
            process: None,
            weakened_sockets: false,
            weakened_commit: false,
            weakened_creation: false,
        }
    }
}

/// The wasmtime engine, its linkers, the compiled-component cache and the
/// staging pool: one per process, shared by every session built on it
/// (cheap to clone). It holds nothing of any session.
#[derive(Clone)]
pub struct SandboxEngine {
    inner: Arc<EngineInner>,
}

pub(crate) struct EngineInner {
    pub(crate) engine: Engine,
    cache: ComponentCache,
    staging: Arc<StagingPool>,
    weakened_sockets: bool,
    weakened_commit: bool,
    /// The names no guest may make (`None`: the weakened control).
    creation: Option<Arc<CreationRules>>,
    /// One linker per world, built on first use.
    linkers: Mutex<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>,
}

/// One session's sandbox: the process's engine, and what belongs to the
/// session — the directory guests start in, how its commands run, its
/// background shells. Cheap to clone.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<SandboxInner>,
}

pub(crate) struct SandboxInner {
    pub(crate) engine: SandboxEngine,
    pub(crate) guest_cwd: Option<String>,
    pub(crate) process: Option<Arc<ProcessConfig>>,
    /// Commands started in the background, when processes run at all.
    pub(crate) shells: Option<Arc<super::BackgroundShells>>,
}

impl SandboxEngine {
    /// The engine `config` describes (its session fields, `guest_cwd` and
    /// `process`, are not read here).
    pub fn new(config: &SandboxConfig) -> Result<Self, SandboxError> {
        // The pool reserves its address space up front (terabytes of it,
        // never touched). Where that is refused — `ulimit -v`, valgrind —
        // instances are allocated one by one instead: each as fresh, only
        // slower to make.
        let engine = match Engine::new(&wasm_config(Some(pooling(config)))) {
            Ok(engine) => engine,
            Err(pool_error) => {
                let engine = Engine::new(&wasm_config(None))
                    .map_err(SandboxError::setup("creating the wasmtime engine"))?;
                tracing::warn!(error = %format!("{pool_error:#}"),
                    "cannot reserve the instance pool; allocating instances on demand");
                engine
            }
        };
        let staging = StagingPool::new(&config.staging_parent).map_err(|source| {
            SandboxError::StagingDir {
                dir: config.staging_parent.clone(),
                source,
            }
        })?;
        let creation = (!config.weakened_creation).then(|| Arc::new(guest_rules(&staging)));
        spawn_epoch_ticker(&engine, config.epoch_tick);
        Ok(Self {
            inner: Arc::new(EngineInner {
                engine,
                cache: ComponentCache::new(config.cache_dir.clone()),
                staging,
                weakened_sockets: config.weakened_sockets,
                weakened_commit: config.weakened_commit,
                creation,
                linkers: Mutex::new(Vec::new()),
            }),
        })
    }

    /// A session's sandbox on this engine: guests start in `guest_cwd`;
    /// commands run as `process` says (`None`: no processes at all).
    pub fn sandbox(&self, guest_cwd: Option<PathBuf>, process: Option<ProcessConfig>) -> Sandbox {
        let process = process.map(Arc::new);
        Sandbox {
            inner: Arc::new(SandboxInner {
                engine: self.clone(),
                guest_cwd: guest_cwd.map(|p| p.to_string_lossy().into_owned()),
                shells: process
                    .as_ref()
                    .map(|p| Arc::new(super::BackgroundShells::new(p.clone()))),
                process,
            }),
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub fn cache(&self) -> &ComponentCache {
        &self.inner.cache
    }

    pub(crate) fn inner(&self) -> &Arc<EngineInner> {
        &self.inner
    }
}

impl Sandbox {
    /// A sandbox on an engine of its own (one session in the process);
    /// sessions that share a process share a [`SandboxEngine`] instead.
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        let engine = SandboxEngine::new(&config)?;
        Ok(engine.sandbox(config.guest_cwd, config.process))
    }

    /// The process's engine this sandbox runs on.
    pub fn sandbox_engine(&self) -> &SandboxEngine {
        &self.inner.engine
    }

    pub fn engine(&self) -> &Engine {
        self.inner.engine.engine()
    }

    /// How the session's commands run (`None`: no processes at all).
    pub fn process_config(&self) -> Option<&ProcessConfig> {
        self.inner.process.as_deref()
    }

    /// The session's background shells (`None`: no processes run).
    pub fn shells(&self) -> Option<&Arc<super::BackgroundShells>> {
        self.inner.shells.as_ref()
    }

    pub fn cache(&self) -> &ComponentCache {
        self.inner.engine.cache()
    }

    /// Compiles (or loads from the cache) a component.
    pub fn load_component(&self, wasm: &[u8]) -> Result<(Component, CacheOutcome), SandboxError> {
        let engine = self.inner.engine.inner();
        engine.cache.load(&engine.engine, wasm)
    }

    /// [`load_component`](Self::load_component) for bytes whose SHA-256
    /// (lowercase hex) the caller computed from them.
    pub(crate) fn load_component_digested(
        &self,
        wasm: &[u8],
        digest: &str,
    ) -> Result<(Component, CacheOutcome), SandboxError> {
        let engine = self.inner.engine.inner();
        engine.cache.load_digested(&engine.engine, wasm, digest)
    }

    pub(crate) fn inner(&self) -> &Arc<SandboxInner> {
        &self.inner
    }

    /// Compiles (or loads from the cache) `wasm` and links it in world
    /// `W`: an import the world does not offer is a contract error.
    pub(crate) fn link<W: World>(
        &self,
        wasm: &[u8],
    ) -> Result<(InstancePre<W>, CacheOutcome), SandboxError> {
        let (component, outcome) = self.load_component(wasm)?;
        Ok((
            self.inner.engine.inner.instantiate_pre(&component)?,
            outcome,
        ))
    }
}

/// A world: the host context of one kind of component, which links what
/// those components may import and nothing more.
pub(crate) trait World: Send + Sized + 'static {
    /// Adds this world's imports (WASI, and whatever the world offers
    /// beyond it) to an empty linker.
    fn link(linker: &mut Linker<Self>) -> Result<(), SandboxError>;

    /// What every world's context holds.
    fn core(&mut self) -> &mut CallCore;
}

/// What every call's store holds, whatever its world: WASI built from the
/// grant and nothing else, the resource table, the memory limiter.
pub(crate) struct CallCore {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: CallLimiter,
    pub(crate) plugin: Arc<str>,
    /// The names this call may not make.
    pub(crate) creation: Option<Arc<CreationRules>>,
    /// The call's stderr, where the host says what it refused.
    notices: MemoryOutputPipe,
}

impl CallCore {
    /// Says `line` on the guest's stderr (best effort: a full pipe drops it).
    pub(crate) fn say(&mut self, line: &str) {
        use wasmtime_wasi::p2::OutputStream;
        let _ = self
            .notices
            .write(bytes::Bytes::copy_from_slice(line.as_bytes()));
    }
}

/// What guests may not make: every protected name at any depth, and a git
/// directory under any name; a staging directory is exempt (only the
/// granted file ever leaves it).
fn guest_rules(staging: &StagingPool) -> CreationRules {
    let root = staging.root();
    let exempt = vec![std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())];
    CreationRules::new(
        &super::process::command_protected_names(),
        Vec::new(),
        exempt,
    )
}

/// Implements `WasiView` for a world whose context has a `core` field.
macro_rules! wasi_view {
    ($world:ty) => {
        impl wasmtime_wasi::WasiView for $world {
            fn ctx(&mut self) -> wasmtime_wasi::WasiCtxView<'_> {
                wasmtime_wasi::WasiCtxView {
                    ctx: &mut self.core.wasi,
                    table: &mut self.core.table,
                }
            }
        }
    };
}

/// Implements `WasiHttpView` for a world whose context has `core` and
/// `http` (an [`HttpParts`](super::http::HttpParts)) fields.
macro_rules! wasi_http_view {
    ($world:ty) => {
        impl wasmtime_wasi_http::WasiHttpView for $world {
            fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
                wasmtime_wasi_http::WasiHttpCtxView {
                    ctx: &mut self.http.ctx,
                    table: &mut self.core.table,
                    hooks: &mut self.http.gate,
                }
            }
        }
    };
}

pub(crate) use {wasi_http_view, wasi_view};

/// The standard streams of one call: stdin to feed, stdout to capture.
#[derive(Default)]
pub(crate) struct CallIo {
    pub(crate) stdin: Option<Vec<u8>>,
    pub(crate) capture_stdout: bool,
    /// The directory relative paths start from (it grants nothing).
    pub(crate) cwd: Option<String>,
    /// Variables that say where the guest is (`CLAUDE_PROJECT_DIR`): names
    /// of places, granting nothing.
    pub(crate) env: Vec<(String, String)>,
    /// The deadline's clock, when the call waits on the host for work that
    /// is not its own (a middleware hook's `next`); else wall time.
    pub(crate) clock: Option<Arc<super::limits::CallClock>>,
}

/// What a call left on its standard streams.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
    /// Linear memory the instance held at the end of the call.
    pub(crate) memory_bytes: usize,
}

type Boxed<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = wasmtime::Result<T>> + Send + 'a>>;

impl EngineInner {
    /// World `W`'s linker, built the first time a `W` component is linked.
    pub(crate) fn linker<W: World>(&self) -> Result<Arc<Linker<W>>, SandboxError> {
        let mut linkers = self
            .linkers
            .lock()
            .map_err(|_| SandboxError::Prepare("the linker cache is poisoned".into()))?;
        if let Some((_, linker)) = linkers.iter().find(|(id, _)| *id == TypeId::of::<W>())
            && let Ok(linker) = linker.clone().downcast::<Linker<W>>()
        {
            return Ok(linker);
        }
        let mut linker = Linker::new(&self.engine);
        W::link(&mut linker)?;
        let linker = Arc::new(linker);
        linkers.push((TypeId::of::<W>(), linker.clone()));
        Ok(linker)
    }

    /// Links `component` in world `W`: an import the world does not offer
    /// is a contract error naming it.
    pub(crate) fn instantiate_pre<W: World>(
        &self,
        component: &Component,
    ) -> Result<InstancePre<W>, SandboxError> {
        self.linker::<W>()?
            .instantiate_pre(component)
            .map_err(SandboxError::link(""))
    }

    /// Runs one call in a fresh store holding exactly `grant`: the world's
    /// context is built by `world` around WASI made from the grant; then
    /// instantiate, then `call`, under the deadline and the memory cap;
    /// saves what a write grant produced only if the call returned
    /// normally; maps traps, the deadline and the cap to [`SandboxError`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn execute<W: World, B: Send, R: Send>(
        &self,
        plugin: &str,
        grant: &Grant,
        limits: &CallLimits,
        mut io: CallIo,
        world: impl FnOnce(CallCore) -> W + Send,
        instantiate: impl for<'a> FnOnce(&'a mut Store<W>) -> Boxed<'a, B> + Send,
        call: impl for<'a> FnOnce(&'a B, &'a mut Store<W>) -> Boxed<'a, R> + Send,
    ) -> Result<(R, Captured), SandboxError> {
        let started = std::time::Instant::now();
        let stdout = io
            .capture_stdout
            .then(|| MemoryOutputPipe::new(STDOUT_CAPTURE_BYTES));
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE_BYTES);
        let mut wasi = self.wasi_for(&mut io, stdout.clone(), stderr.clone());
        let staged: StagedGrant = grant
            .apply(&self.staging, &mut wasi)
            .map_err(SandboxError::Grant)?;
        let core = CallCore {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limiter: CallLimiter::new(limits.memory_bytes),
            plugin: plugin.into(),
            creation: self.creation.clone(),
            notices: stderr.clone(),
        };
        let mut store = Store::new(&self.engine, world(core));
        store.limiter(|state| &mut state.core().limiter);
        // Yield on every tick so the wall-clock timeout around the call can
        // fire even while the guest spins.
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        let work = async {
            let bindings = instantiate(&mut store).await.map_err(|e| (true, e))?;
            call(&bindings, &mut store).await.map_err(|e| (false, e))
        };
        let outcome = match io.clock {
            None => tokio::time::timeout(limits.deadline, work)
                .await
                .map_err(|_| ()),
            Some(clock) => tokio::select! {
                outcome = work => Ok(outcome),
                () = clock.expired(started, limits.deadline) => Err(()),
            },
        };
        // Files the guest created under a write grant are saved only when the
        // call returned normally: a trap or a timeout leaves them unsaved.
        let committed = match &outcome {
            Ok(Ok(_)) => staged
                .commit(self.weakened_commit)
                .map_err(SandboxError::Commit),
            _ => Ok(Vec::new()),
        };
        drop(staged);
        committed?;
        let limiter = &store.data_mut().core().limiter;
        let refused_memory = limiter.refused_growth();
        let memory_bytes = limiter.in_use();
        tracing::trace!(
            plugin,
            elapsed_us = started.elapsed().as_micros() as u64,
            "sandboxed call"
        );
        let captured = Captured {
            stdout: stdout.map(|p| p.contents().to_vec()).unwrap_or_default(),
            stderr: stderr.contents().to_vec(),
            memory_bytes,
        };
        call_result(outcome, captured, refused_memory, limits)
    }

    /// WASI for one call: its standard streams, where it is, no sockets
    /// (the grant adds the rest).
    fn wasi_for(
        &self,
        io: &mut CallIo,
        stdout: Option<MemoryOutputPipe>,
        stderr: MemoryOutputPipe,
    ) -> WasiCtxBuilder {
        let mut wasi = WasiCtxBuilder::new();
        if let Some(input) = io.stdin.take() {
            wasi.stdin(wasmtime_wasi::p2::pipe::MemoryInputPipe::new(input));
        }
        if let Some(stdout) = stdout {
            wasi.stdout(stdout);
        }
        if let Some(cwd) = &io.cwd {
            // WASI's way (`initial-cwd`) and the convention libcs that do
            // not read it yet follow (`PWD`). Knowing it grants nothing.
            wasi.initial_cwd(cwd).env("PWD", cwd);
        }
        for (name, value) in &io.env {
            wasi.env(name, value);
        }
        wasi.stderr(stderr)
            .allow_blocking_current_thread(true)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if self.weakened_sockets {
            wasi.allow_tcp(true)
                .socket_addr_check(|_, _| Box::pin(async { true }));
        }
        wasi
    }
}

/// A call's outcome as the caller sees it: its value and streams, or the
/// deadline, the memory cap, a failed instantiation, a full stdout or a
/// trap.
fn call_result<R>(
    outcome: Result<Result<R, (bool, wasmtime::Error)>, ()>,
    captured: Captured,
    refused_memory: bool,
    limits: &CallLimits,
) -> Result<(R, Captured), SandboxError> {
    match outcome {
        Err(()) => Err(SandboxError::Timeout(limits.deadline)),
        Ok(Ok(value)) => Ok((value, captured)),
        Ok(Err(_)) if refused_memory => Err(SandboxError::MemoryLimit {
            limit_bytes: limits.memory_bytes,
        }),
        Ok(Err((true, e))) => Err(SandboxError::Instantiate(e)),
        // A guest that dies writing once stdout is full (Rust's `print!`
        // panics) died of the cap: say that, not the panic.
        Ok(Err((false, e)))
            if captured.stdout.len() >= STDOUT_CAPTURE_BYTES
                && e.downcast_ref::<wasmtime_wasi::I32Exit>().is_none() =>
        {
            Err(SandboxError::StdoutFull {
                limit: STDOUT_CAPTURE_BYTES,
            })
        }
        Ok(Err((false, e))) => Err(SandboxError::Trap {
            exit_code: e
                .downcast_ref::<wasmtime_wasi::I32Exit>()
                .map(|exit| exit.0),
            message: trap_message(&e),
            stderr: String::from_utf8_lossy(&captured.stderr)
                .trim_end()
                .to_string(),
            stdout: captured.stdout,
        }),
    }
}

fn trap_message(e: &wasmtime::Error) -> String {
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{e:#}"),
    }
}

/// The engine's configuration, with instances from `pool` or, without one,
/// allocated on demand.
fn wasm_config(pool: Option<PoolingAllocationConfig>) -> Config {
    let mut wasm_config = Config::new();
    wasm_config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .allocation_strategy(match pool {
            Some(pool) => InstanceAllocationStrategy::Pooling(pool),
            None => InstanceAllocationStrategy::OnDemand,
        });
    wasm_config
}

fn pooling(config: &SandboxConfig) -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(config.max_live_instances)
        .total_core_instances(config.max_live_instances.saturating_mul(4))
        .total_memories(config.max_live_instances.saturating_mul(2))
        .total_tables(config.max_live_instances.saturating_mul(4))
        .total_stacks(config.max_live_instances)
        .max_memory_size(config.max_memory_bytes)
        // A call's instance is fresh, its slot is not: resetting only the
        // pages the last instance wrote, and keeping them mapped, spares
        // the next instance a page fault per page it touches (most of a
        // small call). Where the kernel cannot tell which pages were
        // written (before Linux 6.7) the lowest pages are cleared with
        // memset instead.
        .pagemap_scan(wasmtime::Enabled::Auto)
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(KEEP_RESIDENT_BYTES / 16);
    pool
}

/// How much of each used memory slot stays mapped between instances.
const KEEP_RESIDENT_BYTES: usize = 2 << 20;

/// What a call may write to stdout and have kept.
const STDOUT_CAPTURE_BYTES: usize = 4 << 20;

/// What the guest wrote to stderr is kept (bounded) to explain a crash.
const STDERR_CAPTURE_BYTES: usize = 16 << 10;

/// Advances the engine's epoch every `tick` until the engine is dropped.
fn spawn_epoch_ticker(engine: &Engine, tick: Duration) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("carapace-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(tick);
            }
        });
    if let Err(e) = spawned {
        // Without the ticker deadlines still hold (the tokio timeout drops
        // the call at its next yield point), but a spinning guest would not
        // yield; say so loudly.
        tracing::error!(error = %e, "could not start the epoch ticker; spinning guests cannot be interrupted");
    }
}
