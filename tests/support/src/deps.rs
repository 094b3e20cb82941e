//! What `tests/setup.sh` installed for the tests, and where: everything
//! under `<target>/test-deps`, beside the build, so the source tree is only
//! read and the tests themselves never reach a registry.
//!
//! - `venv/`: a Python virtual environment with the packages the tests and
//!   examples import (the MCP SDK, the Agent SDK, componentize-py, Zig, the
//!   Kubernetes schemas);
//! - `node/NAME/`: one `npm ci` per pinned lock file of `tests/`.
//!
//! A test that needs one of these and finds it missing fails saying so:
//! nothing is installed from a test.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The target directory the running test or bench binary was built into
/// (`<target>/<profile>/deps/<name>`).
pub fn target_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.parent()?
                .parent()?
                .parent()
                .map(std::path::Path::to_path_buf)
        })
        .unwrap_or_else(std::env::temp_dir)
}

/// `<target>/test-deps`.
pub fn deps_dir() -> PathBuf {
    target_dir().join("test-deps")
}

/// The virtual environment's `bin/`.
pub fn venv_bin() -> PathBuf {
    deps_dir().join("venv").join("bin")
}

/// The Python that has the tests' packages: the virtual environment's,
/// or `python3` on PATH when there is none (a developer's own setup).
pub fn python() -> PathBuf {
    let venv = venv_bin().join("python3");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// PATH with the virtual environment's `bin/` first, for a process that
/// runs `python3` or `componentize-py` by name (an MCP server's command,
/// an example's build script, a hook).
pub fn path_with_deps() -> OsString {
    let mut dirs = vec![venv_bin()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_else(|_| std::env::var_os("PATH").unwrap_or_default())
}

/// The folder where `tests/setup.sh` ran `npm ci` for `name` (a folder of
/// `tests/` with a `package-lock.json`), once it holds `probe` (a path
/// under `node_modules`).
pub fn node_package(name: &str, probe: &str) -> Result<PathBuf, String> {
    let dir = deps_dir().join("node").join(name);
    if dir.join("node_modules").join(probe).exists() {
        Ok(dir)
    } else {
        Err(format!(
            "{} is not installed in {}: run tests/setup.sh (the README's test command does)",
            probe,
            dir.display()
        ))
    }
}

/// A driver script copied beside the packages `tests/setup.sh` installed
/// for `name` (see [`node_package`]): Node resolves an ES module's imports
/// from the module's own folder. Written to a temporary name and renamed,
/// so tests running at once never read half a copy.
pub fn node_driver(name: &str, probe: &str, source: &Path) -> Result<PathBuf, String> {
    let package = node_package(name, probe)?;
    let copied = || -> std::io::Result<PathBuf> {
        let file = source
            .file_name()
            .ok_or_else(|| std::io::Error::other("a driver has a file name"))?;
        let target = package.join(file);
        let staged = tempfile::NamedTempFile::new_in(&package)?;
        std::fs::copy(source, staged.path())?;
        staged.persist(&target).map_err(|e| e.error)?;
        Ok(target)
    };
    copied().map_err(|e| format!("copying {} beside its packages: {e}", source.display()))
}
