//! What carapace's integration tests and benchmarks share: the one
//! compiled-component cache they all use (so each component is compiled
//! once per target directory, not once per test), and sandboxes on it.

pub mod deps;
pub mod postgres;
pub mod processes;
pub mod pty;
pub mod registry;
pub mod sigstore;

use carapace::sandbox::{Sandbox, SandboxConfig, SandboxEngine, SandboxError};
use std::path::PathBuf;

/// What `CARAPACE_CACHE_DIR` is for a `carapace` the tests start:
/// `<target>/tmp/carapace-cache` (the folder cargo gives tests as
/// `CARGO_TARGET_TMPDIR`), found from the running test binary
/// (`<target>/<profile>/deps/<name>`).
pub fn cache_root() -> PathBuf {
    deps::target_dir().join("tmp").join("carapace-cache")
}

/// The tests' compiled-component cache (what a `carapace` started with
/// [`cache_root`] uses too).
pub fn component_cache() -> PathBuf {
    cache_root().join("components")
}

/// A sandbox configuration on the tests' cache, otherwise the default.
pub fn sandbox_config() -> SandboxConfig {
    SandboxConfig {
        cache_dir: component_cache(),
        ..SandboxConfig::default()
    }
}

/// A sandbox of its own on the tests' cache.
pub fn sandbox() -> Result<Sandbox, SandboxError> {
    Sandbox::new(sandbox_config())
}

/// An engine on the tests' cache, for sessions that share one.
pub fn engine() -> Result<SandboxEngine, SandboxError> {
    SandboxEngine::new(&sandbox_config())
}
