//! Limits.

use super::*;

#[tokio::test]
async fn an_infinite_loop_is_stopped_by_the_deadline() -> TestResult {
    let w = world()?;
    let tight = CallLimits {
        deadline: Duration::from_millis(300),
        ..CallLimits::default()
    };
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .limits(tight)
        .call("Probe", probe(json!([]), json!([{"op": "spin"}])))
        .await?;
    assert!(
        strong.is_error && text(&strong).contains("deadline"),
        "{strong:?}"
    );
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .limits(tight)
        .call(
            "Probe",
            probe(json!([]), json!([{"op": "sleep", "ms": 10}])),
        )
        .await?;
    assert!(
        worked(&weak, 0),
        "a call within the deadline completes: {weak:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_memory_bomb_meets_the_cap() -> TestResult {
    let w = world()?;
    let capped = CallLimits {
        memory_bytes: 64 << 20,
        ..CallLimits::default()
    };
    let bomb = probe(json!([]), json!([{"op": "alloc", "mib": 900}]));
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .limits(capped)
        .call("Probe", bomb.clone())
        .await?;
    assert!(
        strong.is_error && text(&strong).contains("memory cap"),
        "{strong:?}"
    );
    let roomy = CallLimits {
        memory_bytes: 1 << 30,
        ..CallLimits::default()
    };
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .limits(roomy)
        .call("Probe", bomb)
        .await?;
    assert!(
        worked(&weak, 0),
        "under a 1 GiB cap the same allocation works: {weak:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_gigabyte_of_output_meets_the_caps() -> TestResult {
    let w = world()?;
    // A gigabyte cannot even be built inside the guest: the memory cap.
    let flood = probe(json!([]), json!([{"op": "output", "bytes": 1u64 << 30}]));
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Probe", flood)
        .await?;
    assert!(
        strong.is_error,
        "{}",
        text(&strong).chars().take(300).collect::<String>()
    );
    assert!(
        text(&strong).len() < 10_000,
        "the error is short, not the flood"
    );
    // 32 MiB fits in the guest's memory but not through the 16 MiB output
    // cap: that cap, named, is what refuses it.
    let over = probe(json!([]), json!([{"op": "output", "bytes": 32u64 << 20}]));
    let capped = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Probe", over)
        .await?;
    assert!(
        capped.is_error && text(&capped).contains("output cap"),
        "{}",
        text(&capped).chars().take(300).collect::<String>()
    );
    // Weakened: under the caps, the same call returns its output.
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call(
            "Probe",
            probe(json!([]), json!([{"op": "output", "bytes": 1000}])),
        )
        .await?;
    assert!(worked(&weak, 0));
    Ok(())
}

#[tokio::test]
async fn a_panicking_guest_is_an_error_result_and_the_host_lives() -> TestResult {
    let w = world()?;
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Probe", probe(json!([]), json!([{"op": "panic"}])))
        .await?;
    assert!(
        strong.is_error && text(&strong).contains("panicked on purpose"),
        "{strong:?}"
    );
    let after = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Probe", probe(json!([]), json!([{"op": "sleep", "ms": 1}])))
        .await?;
    assert!(worked(&after, 0), "the next call works: {after:?}");
    Ok(())
}
