//! The first-party plugins, built from `plugins/` by `host/build.rs` and
//! embedded in the binary: nothing to install, nothing to find at run time.
//! Each one's tool definition is embedded beside it from the `tool.json`
//! the plugin itself reads, so a session offers the tools without
//! compiling any of them: a component is compiled when a call first needs
//! it.

use super::registry::{Change, Presentation, Subject, ToolKind};
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
    /// How its tool's calls are shown.
    pub presentation: Presentation,
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
    ($name:literal, $digest:literal, $presentation:expr, $ceiling:expr) => {
        BuiltinPlugin {
            name: $name,
            wasm: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".wasm")),
            digest: env!(concat!("CARAPACE_DIGEST_", $digest)),
            ceiling: $ceiling,
            presentation: $presentation,
            definition: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../plugins/",
                $name,
                "/tool.json"
            )),
        }
    };
}

const FILE: Subject = Subject::Field("file_path");
const SEARCHED: Subject = Subject::Within {
    pattern: "pattern",
    folder: "path",
};
const READ: Presentation = Presentation {
    kind: ToolKind::Read,
    action: Some("read a file"),
    lead: None,
    subject: FILE,
    location: Some("file_path"),
    change: Change::None,
};
const WRITE: Presentation = Presentation {
    kind: ToolKind::Edit,
    action: Some("write a file"),
    change: Change::Whole,
    ..READ
};
const EDIT: Presentation = Presentation {
    action: Some("edit a file"),
    change: Change::Replace,
    ..WRITE
};
const GLOB: Presentation = Presentation {
    kind: ToolKind::Search,
    action: Some("search for files"),
    lead: None,
    subject: SEARCHED,
    location: Some("path"),
    change: Change::None,
};
const GREP: Presentation = Presentation {
    action: Some("search files"),
    ..GLOB
};
const BASH: Presentation = Presentation {
    kind: ToolKind::Execute,
    action: Some("run a command"),
    lead: None,
    subject: Subject::Field("command"),
    location: None,
    change: Change::None,
};
const WEBFETCH: Presentation = Presentation {
    kind: ToolKind::Fetch,
    action: Some("fetch a page"),
    lead: Some("Fetch"),
    subject: Subject::Field("url"),
    location: None,
    change: Change::None,
};
const NOTEBOOK: Presentation = Presentation {
    kind: ToolKind::Edit,
    action: Some("edit a notebook"),
    lead: None,
    subject: Subject::Field("notebook_path"),
    location: Some("notebook_path"),
    change: Change::None,
};
const TODO: Presentation = Presentation {
    kind: ToolKind::Think,
    action: Some("update the plan"),
    lead: Some("Update the plan"),
    subject: Subject::Nothing,
    location: None,
    change: Change::Todos,
};

pub const BUILTIN_PLUGINS: &[BuiltinPlugin] = &[
    embedded!("read", "READ", READ, || Ceiling::none()
        .with_files("/", FileAccess::Read)),
    embedded!("write", "WRITE", WRITE, || Ceiling::none()
        .with_files("/", FileAccess::Write)),
    embedded!("edit", "EDIT", EDIT, || Ceiling::none()
        .with_files("/", FileAccess::Write)),
    embedded!("glob", "GLOB", GLOB, || Ceiling::none()
        .with_files("/", FileAccess::Read)),
    embedded!("grep", "GREP", GREP, || Ceiling::none()
        .with_files("/", FileAccess::Read)),
    embedded!("bash", "BASH", BASH, || Ceiling::none().with_process()),
    embedded!("webfetch", "WEBFETCH", WEBFETCH, || Ceiling::none()
        .with_any_host()),
    embedded!("notebook", "NOTEBOOK", NOTEBOOK, || Ceiling::none()
        .with_files("/", FileAccess::Write)),
    // The task list needs nothing: its ceiling is empty.
    embedded!("todo", "TODO", TODO, Ceiling::none),
];
