//! carapace: an agent host whose tools and hooks are sandboxed WebAssembly
//! components. See `DESIGN.md` for the architecture.

pub mod agent;
pub mod cli;
pub mod model;
pub mod output;
pub mod plugins;
pub mod policy;
pub mod sandbox;
