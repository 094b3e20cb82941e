//! What middleware hooks are handed and answer, in host terms.

use serde_json::Value;

/// The events a middleware hook can register for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    ToolCall,
    ToolList,
    SubagentSpawn,
    SessionStart,
    SessionEnd,
}

/// A tool call as middleware sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallIn {
    pub name: String,
    pub input: Value,
    pub id: String,
}

/// What the model sees of a call: a string or content blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultOut {
    pub content: Value,
    pub is_error: bool,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// A subagent about to start.
#[derive(Debug, Clone, PartialEq)]
pub struct Spawn {
    pub agent_type: String,
    pub description: String,
    pub prompt: String,
}
