//! Tool components: the `carapace:tool` contract, one binding per contract
//! version, mapped onto host types that do not change with the version.

use super::engine::{CallIo, HostState, Sandbox, SandboxInner};
use super::grant::Grant;
use super::limits::CallLimits;
use super::{CacheOutcome, SandboxError};
use std::sync::Arc;
use wasmtime::component::{HasSelf, Linker};

mod v0_1 {
    wasmtime::component::bindgen!({
        world: "tool-plugin",
        path: "../wit/tool/v0.1.0",
        imports: { "carapace:tool/process.run": async },
        exports: { default: async },
    });
}

use super::process::run_command;
use v0_1::carapace::tool::{host as host_v0_1, process as process_v0_1, types as types_v0_1};

/// What the model was shown of each file in a session (the `record-read` /
/// `last-read` host functions): lets Edit refuse a file the model has not
/// read, or has not read since it changed.
#[derive(Debug, Default)]
pub struct ReadLedger {
    files: std::sync::Mutex<std::collections::HashMap<String, FileStamp>>,
}

/// A file's state when it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub modified_ns: u64,
    pub size: u64,
}

impl ReadLedger {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn record(&self, path: &str, stamp: FileStamp) {
        if let Ok(mut files) = self.files.lock() {
            files.insert(path.to_string(), stamp);
        }
    }

    pub fn last(&self, path: &str) -> Option<FileStamp> {
        self.files
            .lock()
            .ok()
            .and_then(|files| files.get(path).copied())
    }
}

/// One tool a component provides, as offered to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// The input JSON Schema, as the component gave it.
    pub input_schema: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InterruptBehavior {
    Cancel,
    Block,
}

/// A capability one call asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(tag = "kind", content = "target", rename_all = "snake_case")]
pub enum Capability {
    ReadFile(String),
    WriteFile(String),
    ReadTree(String),
    WriteTree(String),
    Http(String),
    Env(String),
    /// One shell command line.
    Process(String),
}

/// What the component says about one call before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallPlan {
    pub concurrency_safe: bool,
    pub interrupt: InterruptBehavior,
    pub needs: Vec<Capability>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolContent {
    Text(String),
    Image { media_type: String, data: Vec<u8> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: Vec<ToolContent>,
    pub is_error: bool,
}

impl ToolOutput {
    fn size(&self) -> usize {
        self.content
            .iter()
            .map(|c| match c {
                ToolContent::Text(t) => t.len(),
                ToolContent::Image { media_type, data } => media_type.len() + data.len(),
            })
            .sum()
    }
}

/// A call the component itself refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolFailure {
    InvalidInput(String),
    Failed(String),
}

/// A loaded tool component: compiled, linked, and its tool list read once.
#[derive(Clone)]
pub struct ToolComponent {
    name: Arc<str>,
    sandbox: Arc<SandboxInner>,
    pre: v0_1::ToolPluginPre<HostState>,
    tools: Arc<[ToolDefinition]>,
    load_outcome: CacheOutcome,
}

impl std::fmt::Debug for ToolComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolComponent")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
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
        let (component, load_outcome) = sandbox.load_component(wasm)?;
        let inner = sandbox.inner().clone();
        let instance_pre = inner
            .linker
            .instantiate_pre(&component)
            .map_err(|e| SandboxError::Contract(format!("{e:#}")))?;
        let pre = v0_1::ToolPluginPre::new(instance_pre)
            .map_err(|e| SandboxError::Contract(format!("{e:#}")))?;
        let mut this = Self {
            name: name.into(),
            sandbox: inner,
            pre,
            tools: Arc::from(Vec::new()),
            load_outcome,
        };
        let tools = this
            .run(&Grant::none(), &METADATA_LIMITS, |bindings, store| {
                Box::pin(async move {
                    bindings
                        .carapace_tool_tool_provider()
                        .call_tools(store)
                        .await
                })
            })
            .await?;
        let tools: Vec<ToolDefinition> = tools
            .into_iter()
            .map(|t| ToolDefinition {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
            })
            .collect();
        if tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.input_schema.len())
            .sum::<usize>()
            > METADATA_LIMITS.output_bytes
        {
            return Err(SandboxError::OutputTooLarge {
                size: tools.iter().map(|t| t.input_schema.len()).sum(),
                limit: METADATA_LIMITS.output_bytes,
            });
        }
        this.tools = Arc::from(tools);
        Ok(this)
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

    /// Asks the component what a call needs, in an instance with no
    /// capabilities. `Ok(Err(message))` is the tool rejecting the input.
    pub async fn plan(
        &self,
        tool: &str,
        input: &str,
    ) -> Result<Result<CallPlan, String>, SandboxError> {
        let tool = tool.to_string();
        let input = input.to_string();
        let answer = self
            .run(&Grant::none(), &METADATA_LIMITS, move |bindings, store| {
                Box::pin(async move {
                    bindings
                        .carapace_tool_tool_provider()
                        .call_plan(store, &tool, &input)
                        .await
                })
            })
            .await?;
        Ok(answer.map(|plan| CallPlan {
            concurrency_safe: plan.concurrency_safe,
            interrupt: match plan.interrupt {
                types_v0_1::InterruptBehavior::Cancel => InterruptBehavior::Cancel,
                types_v0_1::InterruptBehavior::Block => InterruptBehavior::Block,
            },
            needs: plan.needs.into_iter().map(capability_from_v0_1).collect(),
        }))
    }

    /// Runs one call in a fresh instance holding exactly `grant`.
    pub async fn call(
        &self,
        tool: &str,
        input: &str,
        grant: &Grant,
        limits: &CallLimits,
    ) -> Result<Result<ToolOutput, ToolFailure>, SandboxError> {
        self.call_in_session(tool, input, grant, limits, None).await
    }

    /// [`call`](Self::call), with the session's read ledger available to the
    /// tool.
    pub async fn call_in_session(
        &self,
        tool: &str,
        input: &str,
        grant: &Grant,
        limits: &CallLimits,
        reads: Option<&Arc<ReadLedger>>,
    ) -> Result<Result<ToolOutput, ToolFailure>, SandboxError> {
        let tool = tool.to_string();
        let input = input.to_string();
        let answer = self
            .run_with(grant, limits, reads, move |bindings, store| {
                Box::pin(async move {
                    bindings
                        .carapace_tool_tool_provider()
                        .call_call(store, &tool, &input)
                        .await
                })
            })
            .await?;
        match answer {
            Ok(output) => {
                let output = ToolOutput {
                    content: output.content.into_iter().map(content_from_v0_1).collect(),
                    is_error: output.is_error,
                };
                let size = output.size();
                if size > limits.output_bytes {
                    return Err(SandboxError::OutputTooLarge {
                        size,
                        limit: limits.output_bytes,
                    });
                }
                Ok(Ok(output))
            }
            Err(types_v0_1::CallError::InvalidInput(m)) => Ok(Err(ToolFailure::InvalidInput(m))),
            Err(types_v0_1::CallError::Failed(m)) => Ok(Err(ToolFailure::Failed(m))),
        }
    }

    /// Instantiates with `grant` under `limits` and runs `f`, mapping traps,
    /// the deadline and the memory cap to [`SandboxError`].
    async fn run<R: Send + 'static>(
        &self,
        grant: &Grant,
        limits: &CallLimits,
        f: impl for<'a> FnOnce(
            &'a v0_1::ToolPlugin,
            &'a mut wasmtime::Store<HostState>,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = wasmtime::Result<R>> + Send + 'a>,
        > + Send,
    ) -> Result<R, SandboxError> {
        self.run_with(grant, limits, None, f).await
    }

    async fn run_with<R: Send + 'static>(
        &self,
        grant: &Grant,
        limits: &CallLimits,
        reads: Option<&Arc<ReadLedger>>,
        f: impl for<'a> FnOnce(
            &'a v0_1::ToolPlugin,
            &'a mut wasmtime::Store<HostState>,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = wasmtime::Result<R>> + Send + 'a>,
        > + Send,
    ) -> Result<R, SandboxError> {
        let pre = self.pre.clone();
        let (value, _) = self
            .sandbox
            .execute(
                &self.name,
                grant,
                limits,
                reads.cloned(),
                CallIo::default(),
                move |store| Box::pin(async move { pre.instantiate_async(store).await }),
                f,
            )
            .await?;
        Ok(value)
    }
}

fn capability_from_v0_1(c: types_v0_1::Capability) -> Capability {
    match c {
        types_v0_1::Capability::ReadFile(p) => Capability::ReadFile(p),
        types_v0_1::Capability::WriteFile(p) => Capability::WriteFile(p),
        types_v0_1::Capability::ReadTree(p) => Capability::ReadTree(p),
        types_v0_1::Capability::WriteTree(p) => Capability::WriteTree(p),
        types_v0_1::Capability::Http(h) => Capability::Http(h),
        types_v0_1::Capability::Env(v) => Capability::Env(v),
        types_v0_1::Capability::Process(c) => Capability::Process(c),
    }
}

fn content_from_v0_1(c: types_v0_1::Content) -> ToolContent {
    match c {
        types_v0_1::Content::Text(t) => ToolContent::Text(t),
        types_v0_1::Content::Image(image) => ToolContent::Image {
            media_type: image.media_type,
            data: image.data,
        },
    }
}

/// The host interfaces every tool component may import.
pub(crate) fn add_host_interfaces(linker: &mut Linker<HostState>) -> Result<(), SandboxError> {
    host_v0_1::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)
        .map_err(|e| SandboxError::Prepare(format!("linking carapace:tool/host: {e:#}")))?;
    process_v0_1::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)
        .map_err(|e| SandboxError::Prepare(format!("linking carapace:tool/process: {e:#}")))
}

/// Longest command a tool may run.
const MAX_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

impl process_v0_1::Host for HostState {
    async fn run(
        &mut self,
        command: String,
        timeout_ms: u64,
    ) -> Result<process_v0_1::CommandOutput, String> {
        if !self.commands.contains(&command) {
            return Err("this call was not granted that command line".into());
        }
        let Some(config) = self.process.clone() else {
            return Err("this host runs no processes".into());
        };
        let timeout = std::time::Duration::from_millis(timeout_ms).min(MAX_COMMAND_TIMEOUT);
        let output = run_command(&config, &command, timeout).await?;
        Ok(process_v0_1::CommandOutput {
            stdout: output.stdout,
            stderr: output.stderr,
            exit_code: output.exit_code,
            timed_out: output.timed_out,
            truncated: output.truncated,
        })
    }
}

/// Longest log line or progress message kept from a guest.
const MAX_GUEST_MESSAGE: usize = 4096;

fn bounded(message: &str) -> &str {
    match message.char_indices().nth(MAX_GUEST_MESSAGE) {
        Some((cut, _)) => &message[..cut],
        None => message,
    }
}

impl host_v0_1::Host for HostState {
    fn log(&mut self, level: host_v0_1::LogLevel, message: String) {
        let plugin = &*self.plugin;
        let message = bounded(&message);
        match level {
            host_v0_1::LogLevel::Trace => tracing::trace!(plugin, "{message}"),
            host_v0_1::LogLevel::Debug => tracing::debug!(plugin, "{message}"),
            host_v0_1::LogLevel::Info => tracing::info!(plugin, "{message}"),
            host_v0_1::LogLevel::Warn => tracing::warn!(plugin, "{message}"),
            host_v0_1::LogLevel::Error => tracing::error!(plugin, "{message}"),
        }
    }

    fn progress(&mut self, message: String) {
        tracing::info!(plugin = &*self.plugin, progress = bounded(&message));
    }

    fn working_directory(&mut self) -> Option<String> {
        self.working_dir.clone()
    }

    fn record_read(&mut self, path: String, stamp: host_v0_1::FileStamp) {
        if let Some(ledger) = &self.reads {
            ledger.record(
                &path,
                FileStamp {
                    modified_ns: stamp.modified_ns,
                    size: stamp.size,
                },
            );
        }
    }

    fn last_read(&mut self, path: String) -> Option<host_v0_1::FileStamp> {
        let stamp = self.reads.as_ref()?.last(&path)?;
        Some(host_v0_1::FileStamp {
            modified_ns: stamp.modified_ns,
            size: stamp.size,
        })
    }
}

impl types_v0_1::Host for HostState {}
