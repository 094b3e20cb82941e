//! The first-party plugins, built from `plugins/` by `host/build.rs` and
//! embedded in the binary: nothing to install, nothing to find at run time.

use crate::policy::Ceiling;
use crate::sandbox::FileAccess;

pub struct BuiltinPlugin {
    pub name: &'static str,
    pub wasm: &'static [u8],
    /// SHA-256 of `wasm` (lowercase hex), computed when the binary was
    /// built.
    pub digest: &'static str,
    /// What the plugin may ever be granted (the policy grants less).
    pub ceiling: fn() -> Ceiling,
}

macro_rules! embedded {
    ($name:literal, $digest:literal, $ceiling:expr) => {
        BuiltinPlugin {
            name: $name,
            wasm: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".wasm")),
            digest: env!(concat!("CARAPACE_DIGEST_", $digest)),
            ceiling: $ceiling,
        }
    };
}

pub const BUILTIN_PLUGINS: &[BuiltinPlugin] = &[
    embedded!("read", "READ", || Ceiling::none()
        .with_files("/", FileAccess::Read)),
    embedded!("write", "WRITE", || Ceiling::none()
        .with_files("/", FileAccess::Write)),
    embedded!("edit", "EDIT", || Ceiling::none()
        .with_files("/", FileAccess::Write)),
    embedded!("glob", "GLOB", || Ceiling::none()
        .with_files("/", FileAccess::Read)),
    embedded!("grep", "GREP", || Ceiling::none()
        .with_files("/", FileAccess::Read)),
    embedded!("bash", "BASH", || Ceiling::none().with_process()),
    embedded!("webfetch", "WEBFETCH", || Ceiling::none().with_any_host()),
    embedded!("notebook", "NOTEBOOK", || Ceiling::none()
        .with_files("/", FileAccess::Write)),
    // The task list needs nothing: its ceiling is empty.
    embedded!("todo", "TODO", Ceiling::none),
];
