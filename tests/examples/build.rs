//! Building an example with its own `build.sh`, once per test run.
//!
//! A language whose toolchain is not installed (the script exits 3) fails
//! the test, saying what is missing: a test never passes for want of what
//! it needs (the README's test command installs every toolchain).

use std::path::{Path, PathBuf};
use std::process::Command;

pub type BoxError = Box<dyn std::error::Error>;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where the examples are built: next to the rest of the build output.
fn build_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("..")
        .join("examples")
}

/// Builds `examples/KIND/LANGUAGE` (under a lock: test binaries may run at
/// once) and returns `OUT/ARTIFACT`; `None` when its toolchain is missing
/// and that is allowed.
pub fn build(kind: &str, language: &str, artifact: &str) -> Result<PathBuf, BoxError> {
    let out = build_dir().join("out");
    std::fs::create_dir_all(&out)?;
    let lock = std::fs::File::create(out.join(format!("{kind}-{language}.lock")))?;
    lock.lock()?;
    let script = root()
        .join("examples")
        .join(kind)
        .join(language)
        .join("build.sh");
    let built = Command::new("bash")
        .arg(&script)
        .arg(&out)
        .env("CARGO_TARGET_DIR", build_dir())
        // The nested cargo (Rust examples, the C componentizer) must not
        // inherit the test build's flags.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()?;
    let stderr = String::from_utf8_lossy(&built.stderr);
    match built.status.code() {
        Some(0) => Ok(out.join(artifact)),
        Some(3) => Err(format!(
            "the {language} {kind} example cannot be built: its toolchain is missing ({}); the README's test command installs it",
            stderr.trim()
        )
        .into()),
        _ => Err(format!("{} failed ({}):\n{stderr}", script.display(), built.status).into()),
    }
}
