//! `carapace:tool@0.3.0`: the binding, and its mapping onto host types.

use super::ToolState;
use super::{CallContext, ToolAnnotations, ToolDefinition, ToolFailure, ToolOutput};

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

// The host side of `host` and `process`, the same in every version.
version_glue! {
    fn start(&mut self, command: String) -> Result<String, String> {
        super::host_impl::start(self, command)
    }
}
