//! The tools wing: what the model can call and how one call goes.
//!
//! The [`ToolRegistry`] holds every tool the session offers — the
//! first-party components embedded in the binary, installed plugins, MCP
//! servers' tools — and the [`ToolPipeline`] takes one call through its
//! stages, from lookup to the result the model sees. The pipeline is the
//! loop's [`ToolRuntime`](crate::agent::ToolRuntime); it asks the policy
//! once per call and runs the call only with what the policy granted.

mod builtin;
pub mod exit_plan_mode;
mod pipeline;
mod registry;
pub mod shells;
pub mod structured_output;
pub mod web_search;

pub use builtin::{BUILTIN_PLUGINS, BuiltinPlugin};
pub use pipeline::{PermissionPrompter, PromptAnswer, PromptRequest, STDIO_PROMPT, ToolPipeline};
pub use registry::{
    InstalledTools, McpHandle, NativeTool, RegisteredTool, RegistryError, ToolHandle, ToolRegistry,
    checked_definition,
};
