//! carapace: an agent host whose tools and hooks are sandboxed WebAssembly
//! components. See `DESIGN.md` for the architecture.

pub mod sandbox;
