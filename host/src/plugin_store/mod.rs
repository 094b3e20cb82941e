//! The plugin store: third-party tool components and how they are
//! installed — the manifest and its ceiling, the stores (user and
//! project), installation from a file or a pinned URL. (The first-party
//! components are the workspace's `plugins/` folder, embedded in the
//! binary by [`tools`](crate::tools).) The registry that offers installed
//! tools to the model is in [`tools`](crate::tools), below this folder;
//! this folder may import `tools`, `policy`, `sandbox` and `files`.

pub mod install;
pub mod manifest;
pub mod oci;
pub mod policy;
pub mod signature;
pub mod store;

pub use install::{Candidate, InstallContext, InstallError, InstallInputs, PluginSource};
pub use manifest::{Manifest, ManifestError, Placeholders};
pub use store::{InstalledPlugin, PluginStore, RecordedTool, Scope, StoreError};
