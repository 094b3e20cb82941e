//! One conversation, many front ends: the turns of a session — prompts
//! with their `@` mentions read through the session's Read, slash
//! commands, compaction, the session's lifecycle hooks — driven the same
//! way for print mode and the SDK, the interactive screen, ACP and the
//! worker, which sit above it as siblings. Print mode's whole run lives
//! here too (`run_printed`: the printer, the SDK's control channel and its
//! late assembly, stream-json input), so `cli` and `worker` share it
//! without importing each other.
//!
//! Imports: `agent`, `control`, `hooks`, `model`, `output`, `policy`,
//! `session`, `tools`, `transcript` — rooms below it; only the front ends
//! (`cli`, `acp`, `interactive`, `worker`) import it.

mod context;
mod mcp_prompts;
pub mod mentions;
mod print_error;
mod printed;
mod sdk;
mod session_hooks;
pub mod stream_input;
mod turns;

pub use context::context_parts;
pub use print_error::PrintError;
pub use printed::{PrintOptions, RunEnd, RunReport, print_warnings, run_printed};
pub use turns::{PrintSession, Prompts, SetupRun, SlashCommands, run_print};
