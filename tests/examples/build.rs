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

/// Examples this test process built already. Built once: a second build
/// rewrites the artifact and its manifest (`cp` truncates first) while a
/// test running beside it reads them.
static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());

/// Builds `examples/KIND/LANGUAGE` once per test process (under a file
/// lock too: test binaries may run at once) and returns `OUT/ARTIFACT`.
pub fn build(kind: &str, language: &str, artifact: &str) -> Result<PathBuf, BoxError> {
    let key = format!("{kind}/{language}/{artifact}");
    let mut built = BUILT.lock().map_err(|_| "an earlier build panicked")?;
    if let Some((_, path)) = built.iter().find(|(k, _)| *k == key) {
        return Ok(path.clone());
    }
    let path = build_now(kind, language, artifact)?;
    built.push((key, path.clone()));
    Ok(path)
}

fn build_now(kind: &str, language: &str, artifact: &str) -> Result<PathBuf, BoxError> {
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
        // The toolchains tests/setup.sh installed (componentize-py, Zig,
        // componentize-js), none of them in the source tree, which a build
        // only reads.
        .env("PATH", carapace_test_support::deps::path_with_deps())
        .env(
            "COMPONENTIZE_JS_PREFIX",
            carapace_test_support::deps::deps_dir().join("node/componentize-js"),
        )
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
