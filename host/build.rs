//! Builds the first-party plugins (`plugins/`, a separate wasm32-wasip2
//! workspace) so that one `cargo build` of the host yields a binary that
//! carries them: each component is embedded with `include_bytes!`. Also
//! builds the test-only guests (`tests/plugins/`), whose directory the tests
//! find in `CARAPACE_TEST_GUESTS_DIR`; they are never embedded.
//!
//! The nested cargo uses its own target directory (`<target>/plugins`) so it
//! never waits on the lock of the outer build, and always the `release`
//! profile (components are small and optimised for size whatever the host's
//! profile is).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (crate name in plugins/, file name of the built component)
const PLUGINS: &[(&str, &str)] = &[
    ("read", "carapace_read.wasm"),
    ("write", "carapace_write.wasm"),
    ("edit", "carapace_edit.wasm"),
    ("glob", "carapace_glob.wasm"),
    ("grep", "carapace_grep.wasm"),
    ("bash", "carapace_bash.wasm"),
    ("webfetch", "carapace_webfetch.wasm"),
    ("notebook", "carapace_notebook.wasm"),
    ("todo", "carapace_todo.wasm"),
    ("mcp-bridge", "carapace_mcp_bridge.wasm"),
    ("script", "carapace_script.wasm"),
];

fn main() {
    if let Err(message) = run() {
        // Build scripts report through panics; this is the binary's edge.
        panic!("{message}");
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let root = manifest_dir
        .parent()
        .ok_or("host/ has no parent directory")?
        .to_path_buf();
    let plugins_dir = root.join("plugins");
    let test_guests_dir = root.join("tests").join("plugins");
    let wit_dir = root.join("wit");
    for dir in [&plugins_dir, &test_guests_dir, &wit_dir] {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    link_relocations_packed();
    link_in_order();

    let target_dir = match env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                root.join(dir)
            }
        }
        None => root.join("target"),
    }
    .join("plugins");

    build_guests(&plugins_dir, &target_dir)?;
    build_guests(&test_guests_dir, &target_dir)?;

    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let built = target_dir.join("wasm32-wasip2").join("release");
    for (name, file) in PLUGINS {
        let bytes = copy_if_changed(&built.join(file), &out_dir.join(format!("{name}.wasm")))?;
        // The digest the host keys its caches by, computed once here so a
        // run never hashes the embedded components.
        println!(
            "cargo:rustc-env=CARAPACE_DIGEST_{}={}",
            name.to_uppercase().replace('-', "_"),
            hex_digest(&bytes)
        );
    }
    println!(
        "cargo:rustc-env=CARAPACE_TEST_GUESTS_DIR={}",
        built.display()
    );
    Ok(())
}

/// `cargo build --release --target wasm32-wasip2` of one guest workspace.
fn build_guests(workspace: &Path, target_dir: &Path) -> Result<(), String> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .arg("build")
        .arg("--release")
        .arg("--target")
        .arg("wasm32-wasip2")
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    // Cargo reads `cargo:` directives from a build script's stdout; the
    // nested build's output goes to stderr so it can never be taken for one.
    command.stdout(std::io::stderr());
    if workspace.join("Cargo.lock").exists() {
        command.arg("--locked");
    }
    // The outer build's compiler wrappers (clippy, coverage) and flags are
    // for the host target; the components get none of them.
    for var in [
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
    ] {
        command.env_remove(var);
    }
    let status = command
        .status()
        .map_err(|e| format!("could not run cargo to build {}: {e}", workspace.display()))?;
    if !status.success() {
        return Err(format!(
            "building the guests in {} failed ({status}). \
             Is the wasm32-wasip2 target installed? Run `rustup target add wasm32-wasip2`.",
            workspace.display()
        ));
    }

    Ok(())
}

/// Copies `from` to `to` unless it is already there; returns the bytes.
fn copy_if_changed(from: &Path, to: &Path) -> Result<Vec<u8>, String> {
    let bytes = std::fs::read(from).map_err(|e| format!("reading {}: {e}", from.display()))?;
    if std::fs::read(to).ok().as_deref() != Some(bytes.as_slice()) {
        std::fs::write(to, &bytes).map_err(|e| format!("writing {}: {e}", to.display()))?;
    }
    Ok(bytes)
}

fn hex_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Asks the linker for packed relative relocations (`DT_RELR`) in the
/// binaries: the 71,000 relocations a position-independent carapace carries
/// are otherwise a 1.7 MB table that every start reads and keeps resident.
/// GNU ld 2.38 and glibc 2.36 (Debian 12) know it; the binaries then need a
/// glibc that does, and the loader says so on an older one.
fn link_relocations_packed() {
    let target = env::var("TARGET").unwrap_or_default();
    if target.ends_with("-linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// In an optimised build, places the functions a run executes (listed by
/// `link-order.sh` in `link-order.txt`) together at the head of the code,
/// as browsers and phones order their start-up code: each page the kernel
/// maps for a run then holds code the run uses, where the default order
/// scatters that code across 260 windows of 64 KiB (the kernel maps a
/// window around each page fault). Names the build no longer has are
/// skipped, so a stale list costs memory, never correctness. Only with the
/// toolchain's own linker (LLD, the default for this target): another
/// linker may not know the option.
///
/// A release build's symbols are stripped here too, unless
/// `CARAPACE_KEEP_SYMBOLS` is set (what `link-order.sh` reads them from).
fn link_in_order() {
    println!("cargo:rerun-if-env-changed=CARAPACE_KEEP_SYMBOLS");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    let optimised = env::var("OPT_LEVEL").is_ok_and(|level| level != "0");
    let debug_info = env::var("DEBUG").is_ok_and(|debug| debug != "false");
    if optimised && !debug_info && env::var_os("CARAPACE_KEEP_SYMBOLS").is_none() {
        println!("cargo:rustc-link-arg-bins=-Wl,--strip-all");
    }
    let own_linker = env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu")
        && env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_none()
        && !env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|flags| flags.contains("link"));
    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("link-order.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    if optimised && own_linker && order.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
