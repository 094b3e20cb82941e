//! What a call leaves behind must not reach another: the memory of an
//! instance (its pool slot is reused, and kept mapped, by the next one),
//! and the file a write grant saves (moved into place, never a granted
//! file the guest linked onto the written name).

use super::{TestResult, attempt, ok, probe, probe_in, workspace};
use carapace::sandbox::{CallLimits, Grant, SandboxConfig};
use serde_json::json;
use std::os::unix::fs::MetadataExt;

#[tokio::test]
async fn a_fresh_instance_finds_nothing_an_earlier_one_left_in_memory() -> TestResult {
    let probe = std::sync::Arc::new(probe().await?);
    let limits = CallLimits::default();
    let grant = Grant::none();
    // Control: within one instance the scan finds what was left.
    let same = attempt(
        &probe,
        &grant,
        &limits,
        json!([{"op": "stash", "secret": "control-3b9f0c7e51a2d846"},
               {"op": "scan", "secret": "control-3b9f0c7e51a2d846"}]),
    )
    .await?;
    assert!(ok(&same[1]), "the scan works: {}", same[1]);

    for round in 0..4 {
        // One after another: the next instance most likely takes the slot
        // the last one left.
        let secret = format!("serial-{round}-9d2e4a71c0b35f68");
        attempt(
            &probe,
            &grant,
            &limits,
            json!([{"op": "stash", "secret": secret}]),
        )
        .await?;
        let scan = attempt(
            &probe,
            &grant,
            &limits,
            json!([{"op": "scan", "secret": secret}]),
        )
        .await?;
        assert!(!ok(&scan[0]), "round {round}: {}", scan[0]);

        // Many at once, then many scanning: slots change hands in any order.
        let secret = format!("parallel-{round}-5c81f3a09e2b7d46");
        in_parallel(&probe, "stash", &secret).await?;
        for scan in in_parallel(&probe, "scan", &secret).await? {
            assert!(!ok(&scan[0]), "round {round}, in parallel: {}", scan[0]);
        }
    }
    Ok(())
}

/// Six calls of the probe at once, each making the one attempt `op` with
/// `secret`; their reports.
async fn in_parallel(
    probe: &std::sync::Arc<carapace::sandbox::ToolComponent>,
    op: &str,
    secret: &str,
) -> Result<Vec<Vec<serde_json::Value>>, Box<dyn std::error::Error>> {
    let calls = (0..6).map(|_| {
        let (probe, attempts) = (probe.clone(), json!([{"op": op, "secret": secret}]));
        tokio::spawn(async move {
            attempt(&probe, &Grant::none(), &CallLimits::default(), attempts).await
        })
    });
    let mut reports = Vec::new();
    for call in futures::future::join_all(calls).await {
        reports.push(call??);
    }
    Ok(reports)
}

/// Links the read-granted `granted.txt` onto the write-granted `out.txt`
/// in the call's staging directory; returns the saved file's and the
/// granted file's inode numbers.
async fn link_onto_the_written_name(
    config: SandboxConfig,
) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let (_dir, root) = workspace()?;
    let probe = probe_in(config).await?;
    let granted = root.join("ws/granted.txt");
    let out = root.join("ws/out.txt");
    let grant = Grant::none().read_file(&granted)?.write_file(&out)?;
    let reports = attempt(
        &probe,
        &grant,
        &CallLimits::default(),
        json!([{"op": "link", "from": granted, "to": out}]),
    )
    .await?;
    assert!(
        ok(&reports[0]),
        "the guest may name its own file so: {}",
        reports[0]
    );
    assert_eq!(
        std::fs::read_to_string(&out)?,
        "granted content",
        "what the guest left under the name is saved"
    );
    Ok((
        std::fs::metadata(&out)?.ino(),
        std::fs::metadata(&granted)?.ino(),
    ))
}

#[tokio::test]
async fn a_granted_file_linked_onto_the_written_name_is_saved_as_a_copy() -> TestResult {
    let (saved, granted) = link_onto_the_written_name(SandboxConfig::default()).await?;
    assert_ne!(
        saved, granted,
        "the saved file must be a copy: as another name of the granted file, writing it \
         would write a file the call could only read"
    );
    // Control: moving whatever the name holds would make it that file.
    let (saved, granted) = link_onto_the_written_name(SandboxConfig {
        weakened_commit: true,
        ..SandboxConfig::default()
    })
    .await?;
    assert_eq!(
        saved, granted,
        "the weakened commit moves the granted file itself"
    );
    Ok(())
}
