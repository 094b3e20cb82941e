//! The first-party plugins, built from `plugins/` by `host/build.rs` and
//! embedded in the binary: nothing to install, nothing to find at run time.

use crate::policy::Ceiling;
use crate::sandbox::FileAccess;

pub struct BuiltinPlugin {
    pub name: &'static str,
    pub wasm: &'static [u8],
    /// What the plugin may ever be granted (the policy grants less).
    pub ceiling: fn() -> Ceiling,
}

pub const BUILTIN_PLUGINS: &[BuiltinPlugin] = &[BuiltinPlugin {
    name: "read",
    wasm: include_bytes!(concat!(env!("OUT_DIR"), "/read.wasm")),
    ceiling: || Ceiling::none().with_files("/", FileAccess::Read),
}];
