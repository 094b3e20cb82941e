//! The first-party plugins, built from `plugins/` by `host/build.rs` and
//! embedded in the binary: nothing to install, nothing to find at run time.
//! Each one's tool definition is embedded beside it from the `tool.json`
//! the plugin itself reads, so a session offers the tools without
//! compiling any of them: a component is compiled when a call first needs
//! it.

use super::registry::ToolKind;
use crate::policy::Ceiling;
use crate::sandbox::{FileAccess, ToolAnnotations, ToolDefinition};

pub struct BuiltinPlugin {
    pub name: &'static str,
    pub wasm: &'static [u8],
    /// SHA-256 of `wasm` (lowercase hex), computed when the binary was
    /// built.
    pub digest: &'static str,
    /// What the plugin may ever be granted (the policy grants less).
    pub ceiling: fn() -> Ceiling,
    /// `plugins/<name>/tool.json`: the tool as the plugin defines it.
    pub definition: &'static str,
    /// What kind of work its tool does, as front ends show it.
    pub kind: ToolKind,
}

impl BuiltinPlugin {
    /// The tool this plugin provides, read from its embedded `tool.json`
    /// (the schema as JSON text, as a component gives it).
    pub fn definitions(&self) -> Result<Vec<ToolDefinition>, String> {
        let value: serde_json::Value = serde_json::from_str(self.definition)
            .map_err(|e| format!("{}'s tool.json: {e}", self.name))?;
        let text = |key: &str| {
            value[key]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{}'s tool.json has no `{key}`", self.name))
        };
        if !value["input_schema"].is_object() {
            return Err(format!(
                "{}'s tool.json has no `input_schema` object",
                self.name
            ));
        }
        let flag = |key: &str| value["annotations"][key].as_bool().unwrap_or(false);
        Ok(vec![ToolDefinition {
            name: text("name")?,
            description: text("description")?,
            input_schema: value["input_schema"].to_string(),
            annotations: ToolAnnotations {
                read_only: flag("read_only"),
                destructive: flag("destructive"),
                idempotent: flag("idempotent"),
                open_world: flag("open_world"),
            },
        }])
    }
}

macro_rules! embedded {
    ($name:literal, $digest:literal, $kind:expr, $ceiling:expr) => {
        BuiltinPlugin {
            name: $name,
            wasm: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".wasm")),
            digest: env!(concat!("CARAPACE_DIGEST_", $digest)),
            ceiling: $ceiling,
            kind: $kind,
            definition: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../plugins/",
                $name,
                "/tool.json"
            )),
        }
    };
}

pub const BUILTIN_PLUGINS: &[BuiltinPlugin] = &[
    embedded!("read", "READ", ToolKind::Read, || Ceiling::none()
        .with_files("/", FileAccess::Read)),
    embedded!("write", "WRITE", ToolKind::Edit, || Ceiling::none()
        .with_files("/", FileAccess::Write)),
    embedded!("edit", "EDIT", ToolKind::Edit, || Ceiling::none()
        .with_files("/", FileAccess::Write)),
    embedded!("glob", "GLOB", ToolKind::Search, || Ceiling::none()
        .with_files("/", FileAccess::Read)),
    embedded!("grep", "GREP", ToolKind::Search, || Ceiling::none()
        .with_files("/", FileAccess::Read)),
    embedded!("bash", "BASH", ToolKind::Execute, || Ceiling::none()
        .with_process()),
    embedded!("webfetch", "WEBFETCH", ToolKind::Fetch, || Ceiling::none()
        .with_any_host()),
    embedded!("notebook", "NOTEBOOK", ToolKind::Edit, || Ceiling::none()
        .with_files("/", FileAccess::Write)),
    // The task list needs nothing: its ceiling is empty.
    embedded!("todo", "TODO", ToolKind::Think, Ceiling::none),
];
