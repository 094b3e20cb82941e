//! The tools wing: what the model can call and how one call goes.
//!
//! The [`ToolRegistry`] holds every tool the session offers — the
//! first-party components embedded in the binary, installed plugins, MCP
//! servers' tools — and the [`ToolPipeline`] takes one call through its
//! stages, from lookup to the result the model sees. The pipeline is the
//! loop's [`ToolRuntime`](crate::agent::ToolRuntime); it asks the policy
//! once per call and runs the call only with what the policy granted.
//!
//! Imports: `agent`, `checkpoints`, `commands`, `files`, `hooks`, `mcp`,
//! `memory`, `model`, `policy`, `sandbox` — folders below it; nothing that
//! imports it.

pub mod auto_mode;
mod builtin;
pub mod exit_plan_mode;
pub mod mcp_resources;
mod pipeline;
mod registry;
pub mod request_permissions;
pub mod script;
pub mod shells;
pub mod skill;
pub mod structured_output;
pub mod web_search;

pub use builtin::{BUILTIN_PLUGINS, BuiltinPlugin};

/// The subagent tool's name, as Claude Code calls it (the tool itself is
/// in `subagents/`, which sits above this folder).
pub const AGENT_TOOL: &str = "Agent";

/// The first-party file reader's name: its results carry the folder memory
/// they cover (the session attaches it).
pub const READ_TOOL: &str = "Read";

/// The tools the host runs itself: no plugin may take their names (a
/// session that offers one would otherwise fail to start).
pub const HOST_TOOLS: &[&str] = &[
    AGENT_TOOL,
    exit_plan_mode::EXIT_PLAN_MODE_TOOL,
    web_search::WEB_SEARCH_TOOL,
    shells::BASH_OUTPUT_TOOL,
    shells::KILL_SHELL_TOOL,
    skill::SKILL_TOOL,
    script::SCRIPT_TOOL,
    crate::agent::STRUCTURED_OUTPUT_TOOL,
];
pub use pipeline::{
    Asker, BackgroundScripts, CheckedCall, CodeMode, PermissionPrompter, PromptAnswer,
    PromptRequest, STDIO_PROMPT, ToolPipeline,
};
pub use registry::{
    CallView, Change, FileChange, InstalledTools, McpHandle, McpSet, NativeTool, Presentation,
    Presentations, RegisteredTool, RegistryError, Subject, Todo, ToolHandle, ToolKind,
    ToolRegistry, TypedNativeTool, checked_definition, run_by_the_pipeline,
};
