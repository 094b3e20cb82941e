//! What the creation guard costs a command: the extra process per call,
//! and a round trip per call that makes a name, beside the same helper
//! with the guard turned off, in the same run.

use super::{BenchResult, report, time_async};
use std::path::Path;

/// How the helper is started: as carapace does, or without one layer.
#[derive(Clone, Copy)]
enum Side {
    GuardOff,
    /// The guard, but not what keeps it out of the command's reach (the
    /// nested Landlock domain, not dumpable, the trace checks).
    GuardNotIsolated,
    AsCarapace,
}

/// The helper as carapace starts it for a command in `dir`.
fn helper(dir: &Path, side: Side, command: &str) -> tokio::process::Command {
    let mut helper = tokio::process::Command::new(env!("CARGO_BIN_EXE_carapace-sandbox"));
    helper.arg("--write").arg(dir).current_dir(dir);
    for name in carapace::policy::command_protected_names() {
        helper.args(["--guard-name", &name]);
    }
    match side {
        Side::GuardOff => {
            helper.args(["--without", "creation-guard"]);
        }
        Side::GuardNotIsolated => {
            helper.args(["--without", "guard-isolation"]);
        }
        Side::AsCarapace => {}
    }
    helper.args(["--", command]);
    helper
}

pub async fn guard_benches(dir: &Path) -> BenchResult {
    let creates =
        "mkdir -p m; i=0; while [ $i -lt 1000 ]; do : > m/f$i; i=$((i+1)); done; rm -rf m";
    for (command, n, what) in [
        ("echo hi", 100, "`echo hi`"),
        (creates, 20, "1,000 files made (`: > f$i`) and removed"),
    ] {
        for side in [Side::GuardOff, Side::GuardNotIsolated, Side::AsCarapace] {
            let samples = time_async(n, |_| async move {
                let out = helper(dir, side, command).output().await?;
                if !out.status.success() {
                    return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
                }
                Ok(())
            })
            .await?;
            let side = match side {
                Side::GuardOff => "guard off",
                Side::GuardNotIsolated => "with the guard, not isolated",
                Side::AsCarapace => "with the creation guard, isolated (as carapace runs it)",
            };
            report(
                &format!("guard: helper, {what}, {side}"),
                &samples,
                "carapace-sandbox run directly (namespaces, cgroup, Landlock, seccomp)",
            );
        }
    }
    Ok(())
}
