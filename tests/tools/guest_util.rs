//! The unit tests of `plugins/guest-util`, the helpers every first-party
//! tool component shares. That crate lives in the plugins' own workspace
//! (built for wasm32-wasip2 by host/build.rs), which `cargo test
//! --workspace` does not reach; it is pure Rust, so its tests run here on
//! the host, in a target directory of their own beside this build.

use std::path::Path;
use std::process::Command;

#[test]
fn the_shared_guest_helpers_pass_their_own_unit_tests() -> Result<(), Box<dyn std::error::Error>> {
    let plugins = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/Cargo.toml");
    let target = carapace_test_support::deps::target_dir().join("guest-util-host");
    let output = Command::new(env!("CARGO"))
        .args([
            "test",
            "--locked",
            "-p",
            "carapace-guest-util",
            "--manifest-path",
        ])
        .arg(&plugins)
        .arg("--target-dir")
        .arg(&target)
        // The outer build's flags are for the host's own crates.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // Ran some: a crate whose tests were compiled out would pass too.
    let ran: u32 = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("test result: ok. "))
        .filter_map(|l| l.split(' ').next()?.parse::<u32>().ok())
        .sum();
    assert!(ran > 0, "no test ran:\n{stdout}");
    Ok(())
}
