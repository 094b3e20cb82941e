//! Where installed plugins live: one directory per plugin under a scope's
//! `plugins/` (the user's `~/.carapace/plugins`, or a project's
//! `.carapace/plugins`), holding the component under its digest and a
//! `plugin.json` record of what was approved.
//!
//! The record is written last, by rename, so a crash mid-install leaves
//! either the old plugin or the new one, never a record pointing at bytes
//! that were not approved.

use super::manifest::{Manifest, ManifestError, Placeholders};
use crate::sandbox::{CallLimits, ToolAnnotations, ToolDefinition};
use crate::tools::InstalledTools;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

const RECORD: &str = "plugin.json";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a readable plugin record: {reason}")]
    Record { path: PathBuf, reason: String },
    #[error("no plugin named `{0}` is installed here")]
    NotInstalled(String),
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.to_path_buf();
    move |source| StoreError::Io {
        action,
        path,
        source,
    }
}

/// Which store a plugin is installed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// `~/.carapace/plugins`: every session of this user.
    User,
    /// `.carapace/plugins` in the working directory: loaded only in a
    /// trusted workspace.
    Project,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// One tool as recorded at install time (what the model will be offered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedTool {
    pub name: String,
    pub description: String,
    pub input_schema: String,
    #[serde(default)]
    pub annotations: ToolAnnotations,
}

impl From<&ToolDefinition> for RecordedTool {
    fn from(t: &ToolDefinition) -> Self {
        Self {
            name: t.name.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
            annotations: t.annotations,
        }
    }
}

impl From<&RecordedTool> for ToolDefinition {
    fn from(t: &RecordedTool) -> Self {
        Self {
            name: t.name.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
            annotations: t.annotations,
        }
    }
}

/// What was approved when a plugin was installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledPlugin {
    pub manifest: Manifest,
    /// SHA-256 of the component, hex: the approval binds to these bytes.
    pub digest: String,
    /// The `carapace:tool` version the component exports.
    pub contract: String,
    /// The path or URL it was installed from.
    pub source: String,
    pub size: u64,
    /// How long compiling it took at install time.
    pub compile_ms: u64,
    pub installed_at: String,
    pub tools: Vec<RecordedTool>,
    /// Where in an OCI registry it came from, and the digests that tag
    /// resolved to when it was approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<OciPin>,
}

/// An OCI install, pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OciPin {
    /// As the user gave it (without `oci://`): what `plugin update`
    /// resolves again.
    pub reference: String,
    /// `REGISTRY/REPOSITORY@sha256:…` of the approved manifest.
    pub pinned: String,
    pub manifest_digest: String,
    pub layer_digest: String,
    /// The trusted key whose cosign signature named this manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
}

impl InstalledPlugin {
    pub fn name(&self) -> &str {
        &self.manifest.plugin.name
    }

    fn component_file(&self) -> String {
        format!("{}.wasm", self.digest)
    }
}

/// One scope's installed plugins.
#[derive(Debug, Clone)]
pub struct PluginStore {
    dir: PathBuf,
    scope: Scope,
}

impl PluginStore {
    /// The store under a configuration directory (`~/.carapace` or a
    /// project's `.carapace`).
    pub fn new(config_dir: &Path, scope: Scope) -> Self {
        Self {
            dir: config_dir.join("plugins"),
            scope,
        }
    }

    pub fn scope(&self) -> Scope {
        self.scope
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every record, sorted by name; unreadable ones are returned as errors
    /// next to the good ones, so one broken plugin hides nothing else.
    pub fn list(&self) -> Vec<Result<InstalledPlugin, StoreError>> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join(RECORD).is_file())
            .collect();
        names.sort();
        names
            .iter()
            .map(|dir| read_record(&dir.join(RECORD)))
            .collect()
    }

    pub fn get(&self, name: &str) -> Result<InstalledPlugin, StoreError> {
        let path = self.dir.join(name).join(RECORD);
        if !super::manifest::valid_plugin_name(name) || !path.is_file() {
            return Err(StoreError::NotInstalled(name.to_string()));
        }
        read_record(&path)
    }

    /// Where the approved component's bytes are kept.
    pub fn component_path(&self, plugin: &InstalledPlugin) -> PathBuf {
        self.dir.join(plugin.name()).join(plugin.component_file())
    }

    /// `plugin` as the registry takes it: its approved tools, ceiling and
    /// limits, and where its bytes are.
    pub fn registration(
        &self,
        plugin: &InstalledPlugin,
        places: &Placeholders,
        defaults: &CallLimits,
    ) -> Result<InstalledTools, ManifestError> {
        Ok(InstalledTools {
            plugin: plugin.name().to_string(),
            path: self.component_path(plugin),
            digest: plugin.digest.clone(),
            contract: plugin.contract.clone(),
            tools: plugin.tools.iter().map(ToolDefinition::from).collect(),
            ceiling: plugin.manifest.ceiling(places)?,
            limits: plugin.manifest.limits(defaults),
            config: Vec::new(),
        })
    }

    /// Stores `wasm` and its record, replacing any earlier version.
    pub fn put(&self, record: &InstalledPlugin, wasm: &[u8]) -> Result<(), StoreError> {
        let dir = self.dir.join(record.name());
        crate::files::create_dir_all(&dir).map_err(io("creating", &dir))?;
        let previous = self.get(record.name()).ok();
        write_atomically(&dir.join(record.component_file()), wasm)?;
        let json = serde_json::to_vec_pretty(record).map_err(|e| StoreError::Record {
            path: dir.join(RECORD),
            reason: e.to_string(),
        })?;
        write_atomically(&dir.join(RECORD), &json)?;
        if let Some(previous) = previous
            && previous.digest != record.digest
        {
            let _ = std::fs::remove_file(dir.join(previous.component_file()));
        }
        Ok(())
    }

    pub fn remove(&self, name: &str) -> Result<InstalledPlugin, StoreError> {
        let record = self.get(name)?;
        let dir = self.dir.join(name);
        std::fs::remove_dir_all(&dir).map_err(io("removing", &dir))?;
        Ok(record)
    }
}

fn read_record(path: &Path) -> Result<InstalledPlugin, StoreError> {
    let bytes = std::fs::read(path).map_err(io("reading", path))?;
    serde_json::from_slice(&bytes).map_err(|e| StoreError::Record {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// Writes through a temporary file in the same directory, synced, then
/// renamed over `path`: readers see the old file or the whole new one, and a
/// full disk fails here rather than leaving half a file behind.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(io("creating a file in", dir))?;
    file.write_all(bytes)
        .and_then(|()| file.as_file().sync_all())
        .map_err(io("writing", path))?;
    file.persist(path).map_err(|e| StoreError::Io {
        action: "replacing",
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

/// SHA-256 of `bytes`, lowercase hex.
pub use crate::sandbox::digest;
