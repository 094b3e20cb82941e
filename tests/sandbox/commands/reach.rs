//! The sandbox's own processes — the call's init, the creation guard that
//! judges and makes a command's creating calls, the network bridge — are
//! out of the command's reach: it cannot trace them, open or read their
//! memory, or signal them, so it cannot make the guard create what the
//! guard refuses it. And one part of a command's tree may trace only what
//! it started itself. Each attempt runs as carapace runs it, in the
//! foreground and as a background shell, and without the isolation, where
//! the attempts on the guard and on a sibling succeed.

use super::*;

const PROBE: &str = include_str!("reach.py");

/// The probe's report, `attempt-target outcome` a line, from a command
/// that starts a sibling for it to reach for.
async fn probe(b: &Bench, background: bool) -> Result<String, BoxError> {
    std::fs::write(b.ws.join("reach.py"), PROBE)?;
    let command =
        "sleep 30 & python3 reach.py $! reach.txt 2>&1; kill $! 2>/dev/null; touch reach.done";
    let result = b
        .bash_with(json!({"command": command, "run_in_background": background}))
        .await;
    if background {
        guard::wait_for(&b.ws.join("reach.done")).await?;
    }
    std::fs::read_to_string(b.ws.join("reach.txt"))
        .map_err(|e| format!("no report ({e}): {}", text(&result)).into())
}

fn outcome<'a>(report: &'a str, attempt: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| l.strip_prefix(attempt)?.strip_prefix(' '))
        .unwrap_or("missing")
}

#[tokio::test]
async fn the_guard_and_the_init_are_out_of_the_commands_reach() -> TestResult {
    for background in [false, true] {
        let b = bench(Setup::default()).await?;
        let report = probe(&b, background).await?;
        for target in ["guard", "init"] {
            for (attempt, refusal) in [
                ("attach", "EPERM"),
                ("seize", "EPERM"),
                ("mem", "EACCES"),
                ("vm_read", "EPERM"),
                ("signal", "EPERM"),
            ] {
                let seen = outcome(&report, &format!("{attempt}-{target}"));
                assert_eq!(seen, refusal, "{attempt} {target}: {report}");
            }
        }
        // Only what the command did not start: its own children it traces
        // as strace and debuggers do.
        for attempt in ["attach-sibling", "seize-sibling", "vm_read-sibling"] {
            assert_eq!(outcome(&report, attempt), "EPERM", "{attempt}: {report}");
        }
        assert_eq!(outcome(&report, "seize-child"), "ok", "{report}");
    }
    Ok(())
}

#[tokio::test]
async fn without_the_isolation_the_command_takes_hold_of_its_guard() -> TestResult {
    let b = bench(Setup::without(&[SandboxLayer::GuardIsolation])).await?;
    let report = probe(&b, false).await?;
    for attempt in [
        "attach-guard",
        "seize-guard",
        "mem-guard",
        "vm_read-guard",
        "signal-guard",
        "attach-sibling",
        "vm_read-sibling",
    ] {
        assert_eq!(outcome(&report, attempt), "ok", "{attempt}: {report}");
    }
    Ok(())
}
