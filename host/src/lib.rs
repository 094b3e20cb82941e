//! carapace: an agent host whose tools and hooks are sandboxed WebAssembly
//! components. The README describes the layout; each module says what it
//! is and what it must never do.

pub mod acp;
pub mod agent;
pub mod checkpoints;
pub mod cli;
pub mod commands;
pub mod control;
pub mod conversation;
pub mod files;
pub mod hooks;
pub mod interactive;
pub mod marketplace;
pub mod mcp;
pub mod mcp_serve;
pub mod memory;
pub mod model;
pub mod output;
pub mod plugin_store;
pub mod policy;
pub mod prompt;
pub mod sandbox;
pub mod search;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod subagents;
pub mod tools;
pub mod transcript;
pub mod tui;
pub mod worker;
