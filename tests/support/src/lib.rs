//! What carapace's integration tests and benchmarks share: the one
//! compiled-component cache they all use (so each component is compiled
//! once per target directory, not once per test), and sandboxes on it.

pub mod deps;
pub mod pong;
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

/// Runs one test of the running test binary again in a process of its own
/// — alone, or inside `wrapper` (`unshare …`) — with `marker` set in its
/// environment, which the test reads to know it is the run inside; fails
/// with what the run printed unless it passed.
pub fn run_test_again(
    name: &str,
    marker: &str,
    wrapper: &[&str],
) -> Result<(), Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = std::process::Command::new(program);
            command.args(args).arg(&exe);
            command
        }
        None => std::process::Command::new(&exe),
    };
    let child = command
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env(marker, "1")
        .output()?;
    let said = String::from_utf8_lossy(&child.stdout);
    if child.status.success() && said.contains("1 passed") {
        return Ok(());
    }
    Err(format!("{said}\n{}", String::from_utf8_lossy(&child.stderr)).into())
}

/// Whether this process runs as root (its effective uid is 0): a control
/// that shows what a privilege would do can only run then.
pub fn runs_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|uids| uids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}
