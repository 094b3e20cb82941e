//! The tool world's vocabulary: what a tool offers, what a call asks for,
//! what goes down to the component and what comes back.

use super::super::SandboxError;
use super::super::grant::Grant;
use super::super::limits::CallLimits;
use std::sync::Arc;

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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// The input JSON Schema, as the component gave it.
    pub input_schema: String,
    #[serde(default)]
    pub annotations: ToolAnnotations,
}

/// Behaviour hints a tool declares (contract 0.2.0 on; none before).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolAnnotations {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// Which call a tool call serves (told to 0.2.0 components).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    pub tool_use_id: String,
    pub session_id: String,
    /// Whether the structured result will be read (0.3.0 on): tools skip
    /// building it otherwise.
    pub wants_structured: bool,
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
    /// What the call did, as JSON text, for hooks and SDK clients (contract
    /// 0.3.0 on; never shown to the model).
    pub structured: Option<String>,
}

impl ToolOutput {
    pub(super) fn size(&self) -> usize {
        self.content
            .iter()
            .map(|c| match c {
                ToolContent::Text(t) => t.len(),
                ToolContent::Image { media_type, data } => media_type.len() + data.len(),
            })
            .sum::<usize>()
            + self.structured.as_ref().map_or(0, String::len)
    }
}

/// A call the component itself refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolFailure {
    InvalidInput(String),
    Failed(String),
}

/// One call, as it goes down to the component: the tool and its input,
/// what the call runs with, what of the session the tool may see.
pub struct ToolInvocation<'a> {
    pub tool: &'a str,
    pub input: &'a serde_json::Value,
    pub grant: &'a Grant,
    pub limits: &'a CallLimits,
    /// The session's read ledger (first-party components only).
    pub reads: Option<&'a Arc<ReadLedger>>,
    pub context: CallContext,
}

impl<'a> ToolInvocation<'a> {
    /// A call outside any session: no read ledger, no call context.
    pub fn new(
        tool: &'a str,
        input: &'a serde_json::Value,
        grant: &'a Grant,
        limits: &'a CallLimits,
    ) -> Self {
        Self {
            tool,
            input,
            grant,
            limits,
            reads: None,
            context: CallContext::default(),
        }
    }
}

/// A call that ran to its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Called {
    pub output: ToolOutput,
    /// The linear memory the call's instance held (`tool call` reports it).
    pub memory_bytes: usize,
}

/// Why a call produced no output.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The tool refused the input (its own validation).
    #[error("{0}")]
    InvalidInput(String),
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// The sandbox stopped the call, or could not run it.
    #[error("{}", .0.describe())]
    Sandbox(SandboxError),
}

impl From<ToolFailure> for CallError {
    fn from(failure: ToolFailure) -> Self {
        match failure {
            ToolFailure::InvalidInput(message) => CallError::InvalidInput(message),
            ToolFailure::Failed(message) => CallError::Failed(message),
        }
    }
}

/// Why a call has no plan.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The tool rejected the input.
    #[error("{0}")]
    Rejected(String),
    #[error("{}", .0.describe())]
    Sandbox(SandboxError),
}

impl From<SandboxError> for CallError {
    fn from(e: SandboxError) -> Self {
        CallError::Sandbox(e)
    }
}

impl From<SandboxError> for PlanError {
    fn from(e: SandboxError) -> Self {
        PlanError::Sandbox(e)
    }
}
