//! `carapace:tool@0.3.0`: the binding, and its mapping onto host types.

use super::ToolState;
use super::{
    CallContext, CallPlan, Capability, FileStamp, InterruptBehavior, ToolAnnotations, ToolContent,
    ToolDefinition, ToolFailure, ToolOutput, host_impl,
};
use crate::sandbox::SandboxError;
use wasmtime::component::{HasSelf, Linker};

mod bindings {
    wasmtime::component::bindgen!({
        world: "tool-plugin",
        path: "../wit/tool/v0.3.0",
        imports: { "carapace:tool/process.run": async },
        exports: { default: async },
    });
}

use bindings::carapace::tool::{host, process, types};
pub(super) use bindings::{ToolPlugin, ToolPluginPre};

pub(super) const VERSION: &str = "0.3.0";

pub(super) fn link(linker: &mut Linker<ToolState>) -> Result<(), SandboxError> {
    host::add_to_linker::<ToolState, HasSelf<ToolState>>(linker, |state| state)
        .map_err(|e| SandboxError::Prepare(format!("linking carapace:tool/host@0.3.0: {e:#}")))?;
    process::add_to_linker::<ToolState, HasSelf<ToolState>>(linker, |state| state)
        .map_err(|e| SandboxError::Prepare(format!("linking carapace:tool/process@0.3.0: {e:#}")))
}

pub(super) async fn tools(
    plugin: &ToolPlugin,
    store: &mut wasmtime::Store<ToolState>,
) -> wasmtime::Result<Vec<ToolDefinition>> {
    let tools = plugin
        .carapace_tool_tool_provider()
        .call_tools(store)
        .await?;
    Ok(tools
        .into_iter()
        .map(|t| ToolDefinition {
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
            annotations: ToolAnnotations {
                read_only: t.annotations.read_only,
                destructive: t.annotations.destructive,
                idempotent: t.annotations.idempotent,
                open_world: t.annotations.open_world,
            },
        })
        .collect())
}

pub(super) async fn plan(
    plugin: &ToolPlugin,
    store: &mut wasmtime::Store<ToolState>,
    tool: &str,
    input: &str,
) -> wasmtime::Result<Result<CallPlan, String>> {
    let plan = plugin
        .carapace_tool_tool_provider()
        .call_plan(store, tool, input)
        .await?;
    Ok(plan.map(|plan| CallPlan {
        concurrency_safe: plan.concurrency_safe,
        interrupt: match plan.interrupt {
            types::InterruptBehavior::Cancel => InterruptBehavior::Cancel,
            types::InterruptBehavior::Block => InterruptBehavior::Block,
        },
        needs: plan.needs.into_iter().map(capability).collect(),
    }))
}

pub(super) async fn call(
    plugin: &ToolPlugin,
    store: &mut wasmtime::Store<ToolState>,
    tool: &str,
    input: &str,
    context: &CallContext,
) -> wasmtime::Result<Result<ToolOutput, ToolFailure>> {
    let context = types::CallContext {
        tool_use_id: context.tool_use_id.clone(),
        session_id: context.session_id.clone(),
        wants_structured: context.wants_structured,
    };
    let answer = plugin
        .carapace_tool_tool_provider()
        .call_call(store, tool, input, &context)
        .await?;
    Ok(match answer {
        Ok(output) => Ok(ToolOutput {
            content: output.content.into_iter().map(content).collect(),
            is_error: output.is_error,
            structured: output.structured,
        }),
        Err(types::CallError::InvalidInput(m)) => Err(ToolFailure::InvalidInput(m)),
        Err(types::CallError::Failed(m)) => Err(ToolFailure::Failed(m)),
    })
}

fn capability(c: types::Capability) -> Capability {
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

fn content(c: types::Content) -> ToolContent {
    match c {
        types::Content::Text(t) => ToolContent::Text(t),
        types::Content::Image(image) => ToolContent::Image {
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
        let output = host_impl::run(self, command, timeout_ms).await?;
        Ok(process::CommandOutput {
            stdout: output.stdout,
            stderr: output.stderr,
            exit_code: output.exit_code,
            timed_out: output.timed_out,
            truncated: output.truncated,
        })
    }
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
        host_impl::log(self, level, &message);
    }

    fn progress(&mut self, message: String) {
        host_impl::progress(self, &message);
    }

    fn working_directory(&mut self) -> Option<String> {
        self.working_dir.clone()
    }

    fn record_read(&mut self, path: String, stamp: host::FileStamp) {
        host_impl::record_read(
            self,
            &path,
            FileStamp {
                modified_ns: stamp.modified_ns,
                size: stamp.size,
            },
        );
    }

    fn last_read(&mut self, path: String) -> Option<host::FileStamp> {
        let stamp = host_impl::last_read(self, &path)?;
        Some(host::FileStamp {
            modified_ns: stamp.modified_ns,
            size: stamp.size,
        })
    }
}

impl types::Host for ToolState {}
