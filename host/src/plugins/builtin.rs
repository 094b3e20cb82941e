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

macro_rules! embedded {
    ($name:literal) => {
        include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".wasm"))
    };
}

pub const BUILTIN_PLUGINS: &[BuiltinPlugin] = &[
    BuiltinPlugin {
        name: "read",
        wasm: embedded!("read"),
        ceiling: || Ceiling::none().with_files("/", FileAccess::Read),
    },
    BuiltinPlugin {
        name: "write",
        wasm: embedded!("write"),
        ceiling: || Ceiling::none().with_files("/", FileAccess::Write),
    },
    BuiltinPlugin {
        name: "edit",
        wasm: embedded!("edit"),
        ceiling: || Ceiling::none().with_files("/", FileAccess::Write),
    },
    BuiltinPlugin {
        name: "glob",
        wasm: embedded!("glob"),
        ceiling: || Ceiling::none().with_files("/", FileAccess::Read),
    },
    BuiltinPlugin {
        name: "grep",
        wasm: embedded!("grep"),
        ceiling: || Ceiling::none().with_files("/", FileAccess::Read),
    },
    BuiltinPlugin {
        name: "bash",
        wasm: embedded!("bash"),
        ceiling: || Ceiling::none().with_process(),
    },
    BuiltinPlugin {
        name: "webfetch",
        wasm: embedded!("webfetch"),
        ceiling: || Ceiling::none().with_any_host(),
    },
];
