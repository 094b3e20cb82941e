//! Code mode: the Script tool. The model writes a JavaScript function
//! that calls the session's tools; it runs in a WebAssembly component
//! embedding a JavaScript engine (Boa), with no file system, network or
//! environment of its own, and every call it makes passes the tool
//! pipeline as its own call.

mod calls;
mod declarations;
mod limits;
mod tool;
mod world;

pub use calls::CallWitness;
pub use limits::{ScriptLimits, ScriptOutput};
pub use tool::{SCRIPT_TOOL, ScriptTool, definition, description};
pub use world::{RUNNER_WASM, ScriptEnd, ScriptRunner};

pub use calls::NestedCalls;
