//! Tool components: the `carapace:tool` contract, one binding per contract
//! version (`v0_1`, `v0_2`: Zed's approach), mapped onto host types that do
//! not change with the version. A component's version is read from what it
//! exports; an unknown one is refused by name.

use super::engine::{CallCore, CallIo, Sandbox, SandboxInner, World, wasi_http_view, wasi_view};
use super::grant::Grant;
use super::http::HttpParts;
use super::limits::CallLimits;
use super::process::ProcessConfig;
use super::{CacheOutcome, SandboxError};
use std::sync::Arc;
use wasmtime::component::Linker;

/// The tool world's context: WASI from the grant, `wasi:http` through the
/// grant's gate, and the `carapace:tool` host interfaces — the session's
/// read ledger (first-party tools only), the working directory, and the
/// command lines this call was granted.
pub(crate) struct ToolState {
    core: CallCore,
    http: HttpParts,
    reads: Option<Arc<ReadLedger>>,
    working_dir: Option<String>,
    /// The command lines this call may run.
    commands: Vec<String>,
    process: Option<Arc<ProcessConfig>>,
    shells: Option<Arc<super::BackgroundShells>>,
    /// What the host may search for this call.
    searchable: super::grant::Searchable,
    /// What the plugin reads through `wasi:config/store`.
    config: Arc<[(String, String)]>,
    /// Files the host's search skipped because they hold credentials.
    withheld: Vec<std::path::PathBuf>,
}

wasi_view!(ToolState);
wasi_http_view!(ToolState);

impl World for ToolState {
    fn link(linker: &mut Linker<Self>) -> Result<(), SandboxError> {
        super::file_streams::add_to_linker(linker)?;
        // Linked for every tool so those that import it instantiate; each
        // call's gate refuses every request its grant does not name.
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
            .map_err(SandboxError::setup("linking wasi:http"))?;
        v0_1::link(linker)?;
        v0_2::link(linker)?;
        v0_3::link(linker)?;
        config_store::link(linker)?;
        v0_3::link_search(linker)
    }

    fn core(&mut self) -> &mut CallCore {
        &mut self.core
    }
}

/// What every version's binding shares, written once: linking the host
/// interfaces, the host functions behind them (delegating to
/// [`host_impl`]), `plan`, and the mapping of the types that did not
/// change between versions. Expanded inside each `vX_Y` module, where `types`,
/// `host` and `process` are that version's bindings.
macro_rules! version_glue {
    // `$process_extra`: the `process` functions a version added.
    ($($process_extra:tt)*) => {
        pub(super) fn link(
            linker: &mut wasmtime::component::Linker<ToolState>,
        ) -> Result<(), crate::sandbox::SandboxError> {
            use wasmtime::component::HasSelf;
            let linked = |interface: &str, e: wasmtime::Error| {
                crate::sandbox::SandboxError::setup(format!(
                    "linking carapace:tool/{interface}@{VERSION}"
                ))(e)
            };
            host::add_to_linker::<ToolState, HasSelf<ToolState>>(linker, |state| state)
                .map_err(|e| linked("host", e))?;
            process::add_to_linker::<ToolState, HasSelf<ToolState>>(linker, |state| state)
                .map_err(|e| linked("process", e))
        }

        pub(super) async fn plan(
            plugin: &ToolPlugin,
            store: &mut wasmtime::Store<ToolState>,
            tool: &str,
            input: &str,
        ) -> wasmtime::Result<Result<super::CallPlan, String>> {
            let plan = plugin
                .carapace_tool_tool_provider()
                .call_plan(store, tool, input)
                .await?;
            Ok(plan.map(|plan| super::CallPlan {
                concurrency_safe: plan.concurrency_safe,
                interrupt: match plan.interrupt {
                    types::InterruptBehavior::Cancel => super::InterruptBehavior::Cancel,
                    types::InterruptBehavior::Block => super::InterruptBehavior::Block,
                },
                needs: plan.needs.into_iter().map(capability).collect(),
            }))
        }

        fn capability(c: types::Capability) -> super::Capability {
            use super::Capability;
            match c {
                types::Capability::ReadFile(p) => Capability::ReadFile(p),
                types::Capability::WriteFile(p) => Capability::WriteFile(p),
                types::Capability::ReadTree(p) => Capability::ReadTree(p),
                types::Capability::WriteTree(p) => Capability::WriteTree(p),
                types::Capability::Http(h) => Capability::Http(h),
                types::Capability::Env(v) => Capability::Env(v),
                types::Capability::Process(c) => Capability::Process(c),
            }
        }

        fn content(c: types::Content) -> super::ToolContent {
            match c {
                types::Content::Text(t) => super::ToolContent::Text(t),
                types::Content::Image(image) => super::ToolContent::Image {
                    media_type: image.media_type,
                    data: image.data,
                },
            }
        }

        impl process::Host for ToolState {
            async fn run(
                &mut self,
                command: String,
                timeout_ms: u64,
            ) -> Result<process::CommandOutput, String> {
                let output = super::host_impl::run(self, command, timeout_ms).await?;
                Ok(process::CommandOutput {
                    stdout: output.stdout,
                    stderr: output.stderr,
                    exit_code: output.exit_code,
                    timed_out: output.timed_out,
                    truncated: output.truncated,
                })
            }

            $($process_extra)*
        }

        impl host::Host for ToolState {
            fn log(&mut self, level: host::LogLevel, message: String) {
                let level = match level {
                    host::LogLevel::Trace => tracing::Level::TRACE,
                    host::LogLevel::Debug => tracing::Level::DEBUG,
                    host::LogLevel::Info => tracing::Level::INFO,
                    host::LogLevel::Warn => tracing::Level::WARN,
                    host::LogLevel::Error => tracing::Level::ERROR,
                };
                super::host_impl::log(self, level, &message);
            }

            fn progress(&mut self, message: String) {
                super::host_impl::progress(self, &message);
            }

            fn working_directory(&mut self) -> Option<String> {
                self.working_dir.clone()
            }

            fn record_read(&mut self, path: String, stamp: host::FileStamp) {
                super::host_impl::record_read(
                    self,
                    &path,
                    super::FileStamp {
                        modified_ns: stamp.modified_ns,
                        size: stamp.size,
                    },
                );
            }

            fn last_read(&mut self, path: String) -> Option<host::FileStamp> {
                let stamp = super::host_impl::last_read(self, &path)?;
                Some(host::FileStamp {
                    modified_ns: stamp.modified_ns,
                    size: stamp.size,
                })
            }
        }

        impl types::Host for ToolState {}
    };
}

mod config_store;
mod host_impl;
pub mod typed;
mod types;
mod v0_1;
mod v0_2;
mod v0_3;

pub use types::{
    CallContext, CallError, CallPlan, Called, Capability, FileStamp, InterruptBehavior, PlanError,
    ReadLedger, ToolAnnotations, ToolContent, ToolDefinition, ToolFailure, ToolInvocation,
    ToolOutput,
};

/// The contract versions this host implements, oldest first.
pub const SUPPORTED_CONTRACTS: &[&str] = &[v0_1::VERSION, v0_2::VERSION, v0_3::VERSION];

/// A loaded tool component: compiled, linked, and its tool list read once.
#[derive(Clone)]
pub struct ToolComponent {
    name: Arc<str>,
    sandbox: Arc<SandboxInner>,
    pre: ContractPre,
    tools: Arc<[ToolDefinition]>,
    load_outcome: CacheOutcome,
    /// What it reads through `wasi:config/store`.
    config: Arc<[(String, String)]>,
}

impl std::fmt::Debug for ToolComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolComponent")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

/// A component linked against one contract version.
#[derive(Clone)]
enum ContractPre {
    V0_1(v0_1::ToolPluginPre<ToolState>),
    V0_2(v0_2::ToolPluginPre<ToolState>),
    V0_3(v0_3::ToolPluginPre<ToolState>),
    /// No contract: the component's own typed functions.
    Typed(
        wasmtime::component::InstancePre<ToolState>,
        Arc<typed::TypedExports>,
    ),
}

/// An instance of one contract version.
enum Contract {
    V0_1(v0_1::ToolPlugin),
    V0_2(v0_2::ToolPlugin),
    V0_3(v0_3::ToolPlugin),
    Typed(wasmtime::component::Instance, Arc<typed::TypedExports>),
}

impl ContractPre {
    async fn instantiate(
        &self,
        store: &mut wasmtime::Store<ToolState>,
    ) -> wasmtime::Result<Contract> {
        Ok(match self {
            ContractPre::V0_1(pre) => Contract::V0_1(pre.instantiate_async(store).await?),
            ContractPre::V0_2(pre) => Contract::V0_2(pre.instantiate_async(store).await?),
            ContractPre::V0_3(pre) => Contract::V0_3(pre.instantiate_async(store).await?),
            ContractPre::Typed(pre, exports) => {
                Contract::Typed(pre.instantiate_async(store).await?, exports.clone())
            }
        })
    }

    fn version(&self) -> &'static str {
        match self {
            ContractPre::V0_1(_) => v0_1::VERSION,
            ContractPre::V0_2(_) => v0_2::VERSION,
            ContractPre::V0_3(_) => v0_3::VERSION,
            ContractPre::Typed(..) => typed::CONTRACT,
        }
    }
}

/// The `carapace:tool` version a component exports, from its type;
/// `None`: it exports no `carapace:tool` (a typed component, perhaps).
fn exported_contract(
    engine: &wasmtime::Engine,
    component: &wasmtime::component::Component,
) -> Option<String> {
    const PROVIDER: &str = "carapace:tool/tool-provider@";
    component
        .component_type()
        .exports(engine)
        .find_map(|(name, _)| name.strip_prefix(PROVIDER).map(str::to_string))
}

/// `instance_pre` bound to the bindings of `carapace:tool@version`.
fn contract_pre(
    version: &str,
    instance_pre: wasmtime::component::InstancePre<ToolState>,
) -> Result<ContractPre, SandboxError> {
    let linked = |e: wasmtime::Error| SandboxError::link(format!("carapace:tool@{version}"))(e);
    Ok(match version {
        v0_1::VERSION => ContractPre::V0_1(v0_1::ToolPluginPre::new(instance_pre).map_err(linked)?),
        v0_2::VERSION => ContractPre::V0_2(v0_2::ToolPluginPre::new(instance_pre).map_err(linked)?),
        v0_3::VERSION => ContractPre::V0_3(v0_3::ToolPluginPre::new(instance_pre).map_err(linked)?),
        other => {
            return Err(SandboxError::Contract(format!(
                "it targets carapace:tool@{other}, which this carapace does not support (it supports {})",
                SUPPORTED_CONTRACTS.join(", ")
            )));
        }
    })
}

/// Limits for the no-capability calls (`tools`, `plan`).
const METADATA_LIMITS: CallLimits = CallLimits {
    deadline: std::time::Duration::from_secs(10),
    memory_bytes: 64 << 20,
    output_bytes: 4 << 20,
};

impl ToolComponent {
    /// Compiles or loads `wasm`, checks it implements a known version of the
    /// tool contract, and reads its tool list.
    pub async fn load(sandbox: &Sandbox, name: &str, wasm: &[u8]) -> Result<Self, SandboxError> {
        Self::load_digested(sandbox, name, wasm, &super::digest(wasm)).await
    }

    /// [`load`](Self::load) for bytes whose SHA-256 (lowercase hex) is
    /// already known: computed from these very bytes, just now or when the
    /// binary was built.
    pub async fn load_digested(
        sandbox: &Sandbox,
        name: &str,
        wasm: &[u8],
        digest: &str,
    ) -> Result<Self, SandboxError> {
        let docs = typed::package_docs(wasm);
        let mut this = Self::link(
            sandbox,
            name,
            sandbox.load_component_digested(wasm, digest)?,
            docs.as_ref(),
        )?;
        // A typed component's tools come from its types: nothing to run.
        if let ContractPre::Typed(_, exports) = &this.pre {
            this.tools = Arc::from(exports.definitions.clone());
            return Ok(this);
        }
        let tools = this
            .run(&Grant::none(), &METADATA_LIMITS, None, |contract, store| {
                Box::pin(async move {
                    match contract {
                        Contract::V0_1(p) => v0_1::tools(p, store).await,
                        Contract::V0_2(p) => v0_2::tools(p, store).await,
                        Contract::V0_3(p) => v0_3::tools(p, store).await,
                        Contract::Typed(..) => Ok(Vec::new()),
                    }
                })
            })
            .await?
            .0;
        let size: usize = tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.input_schema.len())
            .sum();
        if size > METADATA_LIMITS.output_bytes {
            return Err(SandboxError::OutputTooLarge {
                size,
                limit: METADATA_LIMITS.output_bytes,
            });
        }
        this.tools = Arc::from(tools);
        Ok(this)
    }

    /// Loads a component whose tool list is already known (an installed
    /// plugin's, read at install time and approved with it; a first-party
    /// plugin's, read by an earlier run), without running it. `digest` is
    /// the SHA-256 (lowercase hex) of `wasm`. When `contract` is given, the
    /// component must still target it.
    pub fn load_known(
        sandbox: &Sandbox,
        name: &str,
        wasm: &[u8],
        digest: &str,
        contract: Option<&str>,
        tools: Vec<ToolDefinition>,
    ) -> Result<Self, SandboxError> {
        let mut this = Self::link(
            sandbox,
            name,
            sandbox.load_component_digested(wasm, digest)?,
            None,
        )?;
        if let Some(contract) = contract
            && this.contract_version() != contract
        {
            return Err(SandboxError::Contract(format!(
                "it targets carapace:tool@{}, but was installed as carapace:tool@{contract}",
                this.contract_version()
            )));
        }
        this.tools = Arc::from(tools);
        Ok(this)
    }

    /// Links one compiled component against the contract version it
    /// exports, or as a typed component when it exports none (`docs`: its
    /// `package-docs`, for the tools' descriptions).
    fn link(
        sandbox: &Sandbox,
        name: &str,
        (component, load_outcome): (wasmtime::component::Component, CacheOutcome),
        docs: Option<&serde_json::Value>,
    ) -> Result<Self, SandboxError> {
        let instance_pre = sandbox
            .inner()
            .engine
            .inner()
            .instantiate_pre::<ToolState>(&component);
        let pre = match exported_contract(sandbox.engine(), &component) {
            None => {
                let exports = typed::read(sandbox.engine(), &component, docs)?;
                let pre = instance_pre.map_err(|e| match e {
                    SandboxError::Link { source, .. } => SandboxError::Unprovided(source),
                    other => other,
                })?;
                ContractPre::Typed(pre, Arc::new(exports))
            }
            Some(version) => contract_pre(&version, instance_pre?)?,
        };
        Ok(Self {
            name: name.into(),
            sandbox: sandbox.inner().clone(),
            pre,
            tools: Arc::from(Vec::new()),
            load_outcome,
            config: Arc::from(Vec::new()),
        })
    }

    /// The values the component reads through `wasi:config/store`.
    pub fn with_config(mut self, values: &[(String, String)]) -> Self {
        self.config = Arc::from(values.to_vec());
        self
    }

    /// Whether this is a typed component (its own functions, no
    /// `carapace:tool`): it declares no needs, so its calls get the
    /// plugin's ceiling as the rules narrow it.
    pub fn is_typed(&self) -> bool {
        matches!(self.pre, ContractPre::Typed(..))
    }

    /// A typed component's version, from the interfaces it exports.
    pub fn typed_version(&self) -> Option<&str> {
        match &self.pre {
            ContractPre::Typed(_, exports) => exports.version.as_deref(),
            _ => None,
        }
    }

    /// A typed component's functions that are not offered, and why.
    pub fn skipped(&self) -> &[String] {
        match &self.pre {
            ContractPre::Typed(_, exports) => &exports.skipped,
            _ => &[],
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn tools(&self) -> &[ToolDefinition] {
        &self.tools
    }

    pub fn load_outcome(&self) -> CacheOutcome {
        self.load_outcome
    }

    /// The `carapace:tool` version the component targets.
    pub fn contract_version(&self) -> &'static str {
        self.pre.version()
    }

    /// Asks the component what a call needs, in an instance with no
    /// capabilities.
    pub async fn plan(&self, tool: &str, input: &serde_json::Value) -> Result<CallPlan, PlanError> {
        if self.is_typed() {
            // Nothing to ask it: the registry adds the ceiling's needs.
            return Ok(CallPlan {
                concurrency_safe: false,
                interrupt: InterruptBehavior::Cancel,
                needs: Vec::new(),
            });
        }
        let tool = tool.to_string();
        // Text only at the component's edge.
        let input = input.to_string();
        let (plan, _) = self
            .run(
                &Grant::none(),
                &METADATA_LIMITS,
                None,
                move |contract, store| {
                    Box::pin(async move {
                        match contract {
                            Contract::V0_1(p) => v0_1::plan(p, store, &tool, &input).await,
                            Contract::V0_2(p) => v0_2::plan(p, store, &tool, &input).await,
                            Contract::V0_3(p) => v0_3::plan(p, store, &tool, &input).await,
                            Contract::Typed(..) => Err(wasmtime::Error::msg(
                                "a typed component has no plan to ask for",
                            )),
                        }
                    })
                },
            )
            .await?;
        plan.map_err(PlanError::Rejected)
    }

    /// Runs one call in a fresh instance holding exactly the invocation's
    /// grant; what the tool answered, and the linear memory its instance
    /// held.
    pub async fn call(&self, invocation: &ToolInvocation<'_>) -> Result<Called, CallError> {
        let tool = invocation.tool.to_string();
        // Text only at the component's edge.
        let input = invocation.input.to_string();
        let value = invocation.input.clone();
        let context = invocation.context.clone();
        let limits = invocation.limits;
        let (answer, memory_bytes) = self
            .run(
                invocation.grant,
                limits,
                invocation.reads,
                move |contract, store| {
                    Box::pin(async move {
                        match contract {
                            Contract::V0_1(p) => {
                                v0_1::call(p, store, &tool, &input, &context).await
                            }
                            Contract::V0_2(p) => {
                                v0_2::call(p, store, &tool, &input, &context).await
                            }
                            Contract::V0_3(p) => {
                                v0_3::call(p, store, &tool, &input, &context).await
                            }
                            Contract::Typed(instance, exports) => {
                                typed::call(exports, instance, store, &tool, &value).await
                            }
                        }
                    })
                },
            )
            .await?;
        let output = answer?;
        let size = output.size();
        if size > limits.output_bytes {
            return Err(SandboxError::OutputTooLarge {
                size,
                limit: limits.output_bytes,
            }
            .into());
        }
        Ok(Called {
            output,
            memory_bytes,
        })
    }

    /// Instantiates with `grant` under `limits` and runs `f`, mapping traps,
    /// the deadline and the memory cap to [`SandboxError`]; returns `f`'s
    /// value and the linear memory the instance held.
    async fn run<R: Send + 'static>(
        &self,
        grant: &Grant,
        limits: &CallLimits,
        reads: Option<&Arc<ReadLedger>>,
        f: impl for<'a> FnOnce(
            &'a Contract,
            &'a mut wasmtime::Store<ToolState>,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = wasmtime::Result<R>> + Send + 'a>,
        > + Send,
    ) -> Result<(R, usize), SandboxError> {
        let pre = self.pre.clone();
        let reads = reads.cloned();
        let working_dir = self.sandbox.guest_cwd.clone();
        let process = self.sandbox.process.clone();
        let shells = self.sandbox.shells.clone();
        let http = HttpParts::for_grant(grant);
        let commands = grant.commands().to_vec();
        let searchable = grant.searchable();
        let config = self.config.clone();
        let (value, captured) = self
            .sandbox
            .engine
            .inner()
            .execute(
                &self.name,
                grant,
                limits,
                CallIo::default(),
                move |core| ToolState {
                    core,
                    http,
                    reads,
                    working_dir,
                    commands,
                    process,
                    shells,
                    searchable,
                    config,
                    withheld: Vec::new(),
                },
                move |store| Box::pin(async move { pre.instantiate(store).await }),
                f,
            )
            .await?;
        Ok((value, captured.memory_bytes))
    }
}
