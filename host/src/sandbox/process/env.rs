//! What a command starts with besides its sandbox: the `PATH` it gets,
//! the variables SessionStart hooks set for it, and — for a hook's
//! commands, which may not read everywhere — the system's folders every
//! program needs to read.

use std::path::PathBuf;

/// The `PATH` every command starts with.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What every program needs to read to run: the system's programs,
/// libraries and configuration, and the call's own `/proc` — never a home
/// directory.
pub fn system_read_roots() -> Vec<PathBuf> {
    [
        "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc",
        "/sys", "/nix",
    ]
    .iter()
    .map(PathBuf::from)
    .filter(|p| p.exists())
    .collect()
}

/// The variables SessionStart hooks set for later commands.
#[derive(Debug, Default)]
pub struct CommandEnv(std::sync::RwLock<Vec<(String, String)>>);

impl CommandEnv {
    pub fn get(&self) -> Vec<(String, String)> {
        self.0.read().map(|v| v.clone()).unwrap_or_default()
    }

    /// Sets `name` (replacing what was set before under it).
    pub fn set(&self, name: String, value: String) {
        if let Ok(mut vars) = self.0.write() {
            vars.retain(|(n, _)| *n != name);
            vars.push((name, value));
        }
    }
}
