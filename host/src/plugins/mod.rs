//! Plugins: third-party tool components and how they are installed — the
//! manifest and its ceiling, the stores (user and project), installation
//! from a file or a pinned URL — and the first-party plugins embedded in
//! the binary. The registry that offers their tools to the model is in
//! [`tools`](crate::tools).

pub mod install;
pub mod manifest;
pub mod store;

pub use install::{Candidate, InstallContext, InstallError, PluginSource};
pub use manifest::{Manifest, ManifestError, Placeholders};
pub use store::{InstalledPlugin, PluginStore, RecordedTool, Scope, StoreError};
