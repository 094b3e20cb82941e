//! The sandbox: a wasmtime engine, an on-disk cache of compiled components,
//! and per-call instances built from a [`Grant`].
//!
//! Every call runs in a fresh instance that holds exactly what the policy
//! granted for that call, under a wall-clock deadline, a memory cap and an
//! output cap. A trap, a timeout or an exhausted limit is a [`SandboxError`];
//! the host lives on.
//!
//! This module must never give an instance anything that did not come through
//! a [`Grant`]: no inherited environment, no ambient network, no preopen the
//! grant did not name. The API key and the host's environment never reach a
//! guest.
//!
//! Imports: `files`, `search`, `secrets` — folders below it; nothing that imports it.

mod bound;
mod cache;
mod commit;
pub mod egress;
mod engine;
mod file_streams;
mod grant;
mod guest_creation;
mod hosts;
mod http;
mod limits;
pub mod process;
mod procfs;
mod staging;
mod tool;

pub(crate) use bound::facts as file_facts;
pub use bound::{BoundError, FileFacts, FileId};
pub use cache::{CacheOutcome, ComponentCache, digest};
pub use engine::{Sandbox, SandboxConfig, SandboxEngine};
pub use grant::{FileAccess, Grant, GrantError};
pub use hosts::{HostPattern, HostPatternError, is_internal, is_off_limits};
pub use limits::{CallClock, CallLimits, ClockPause};
pub use process::{
    BackgroundShells, CommandEnv, CommandOutput, DEFAULT_PATH, DeniedPaths, Feed, ProcessConfig,
    SandboxLayer, ShellReport, ShellStatus, move_aside, run_command_fed, system_read_roots,
};
pub use procfs::refused_path as refused_process_info;
pub use staging::STAGING_PREFIX;
pub use tool::typed::CONTRACT as TYPED_CONTRACT;
pub use tool::typed::tool_name as typed_tool_name;
pub use tool::typed::{schema as typed_schema, values as typed_values};
pub use tool::{
    CallContext, CallError, CallPlan, Called, Capability, FileStamp, InterruptBehavior, PlanError,
    ReadLedger, SUPPORTED_CONTRACTS, ToolAnnotations, ToolComponent, ToolContent, ToolDefinition,
    ToolFailure, ToolInvocation, ToolOutput,
};

use std::time::Duration;

/// What a world defined outside this folder (the hooks' in `hooks/`, the
/// MCP bridge's in `mcp/`) is built from: the world trait, the per-call
/// core and streams, the file streams and `wasi:http` parts every world
/// links the same way. The engine runs any world; it knows none.
pub(crate) mod world {
    pub(crate) use super::engine::{
        CallCore, CallIo, EngineInner, World, wasi_http_view, wasi_view,
    };
    pub(crate) use super::file_streams::add_to_linker as link_file_streams;
    pub(crate) use super::http::HttpParts;
}

/// Why a sandboxed call produced no answer from the component. A variant
/// caused by another error keeps it as its source; [`SandboxError::describe`]
/// says the whole chain in one line (what a tool result or a hook's error
/// shows).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the component could not be compiled")]
    Compile(#[source] wasmtime::Error),
    /// The component imports what its world does not offer, or does not
    /// export what its contract says.
    #[error("the component does not implement the carapace tool contract{}", prefixed(.context))]
    Link {
        context: String,
        #[source]
        source: wasmtime::Error,
    },
    /// What the component exports, read and found wanting.
    #[error("the component does not implement the carapace tool contract: {0}")]
    Contract(String),
    /// A typed component imports an interface carapace does not provide.
    #[error("the component imports what carapace does not provide")]
    Unprovided(#[source] wasmtime::Error),
    /// Making the engine or a world's linker failed.
    #[error("the sandbox could not prepare the call: {what}")]
    Setup {
        what: String,
        #[source]
        source: wasmtime::Error,
    },
    #[error("the sandbox could not prepare the call: creating a staging directory in {}", .dir.display())]
    StagingDir {
        dir: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the sandbox could not prepare the call")]
    Grant(#[source] GrantError),
    #[error("the sandbox could not prepare the call: {0}")]
    Prepare(String),
    #[error("the component could not be instantiated")]
    Instantiate(#[source] wasmtime::Error),
    #[error("the component crashed (trap): {message}{stderr}", stderr = stderr_suffix(.stderr))]
    Trap {
        message: String,
        stderr: String,
        /// What it wrote to stdout, when that was captured.
        stdout: Vec<u8>,
        /// The code it exited with, when the "trap" was a WASI exit.
        exit_code: Option<i32>,
    },
    #[error("the call ran longer than its {0:?} deadline and was stopped")]
    Timeout(Duration),
    #[error(
        "the component tried to use more than its {limit_bytes}-byte memory cap and was stopped"
    )]
    MemoryLimit { limit_bytes: usize },
    #[error("the component returned {size} bytes, more than its {limit}-byte output cap")]
    OutputTooLarge { size: usize, limit: usize },
    #[error(
        "the component wrote more than {limit} bytes to stdout, the most kept, and was stopped"
    )]
    StdoutFull { limit: usize },
    #[error("component cache")]
    Cache(#[source] wasmtime::Error),
    /// What the call wrote could not be saved.
    #[error(transparent)]
    Commit(GrantError),
    /// An installed plugin that cannot be used (changed since it was
    /// approved, missing, unreadable).
    #[error("{0}")]
    Unavailable(String),
}

/// An error and every source under it, in one line: `what: why: why` —
/// for the edge that shows an error to a person or a log.
pub fn describe_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl SandboxError {
    /// The error and every source under it, in one line: `what: why: why`.
    pub fn describe(&self) -> String {
        describe_chain(self)
    }

    /// A linking error with what was being linked (`carapace:mcp`, a
    /// version of the tool contract), or none.
    pub(crate) fn link(context: impl Into<String>) -> impl FnOnce(wasmtime::Error) -> Self {
        let context = context.into();
        move |source| SandboxError::Link { context, source }
    }

    /// A set-up error with what was being made.
    pub(crate) fn setup(what: impl Into<String>) -> impl FnOnce(wasmtime::Error) -> Self {
        let what = what.into();
        move |source| SandboxError::Setup { what, source }
    }
}

fn prefixed(context: &str) -> String {
    match context {
        "" => String::new(),
        context => format!(": {context}"),
    }
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("\ncomponent stderr:\n{stderr}")
    }
}
