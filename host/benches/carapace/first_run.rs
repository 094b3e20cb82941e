//! The read probe's first run as a CI job or a fresh container meets it:
//! an empty HOME and an empty component cache every run; a cache baked
//! into the image that the run may not write (as `nobody` when the bench
//! runs as root, to whom no folder is read-only); and, for comparison, the
//! warm run with a cache of its own.

use super::{BenchResult, report};
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

fn runs_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

/// One probe run, spawn → exit: one Read, one final answer.
fn probe(
    base: &Path,
    home: &Path,
    cache: &Path,
    as_nobody: bool,
) -> Result<Duration, Box<dyn std::error::Error>> {
    let fixture = base.join("ws/probe-fixture.txt");
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_probe",
            "Read",
            json!({"file_path": fixture}),
        )]),
        Reply::text("TOOL_EXECUTION_OK"),
    ])?;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_carapace"));
    command
        .current_dir(base.join("ws"))
        .env_clear()
        .env("HOME", home)
        .env("CARAPACE_CACHE_DIR", cache)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "bench")
        .args([
            "-p",
            "probe",
            "--tools",
            "Read",
            "--permission-mode",
            "bypassPermissions",
        ])
        .args(["--no-session-persistence"])
        .stdout(std::process::Stdio::null());
    if as_nobody {
        command.uid(NOBODY).gid(NOBODY);
    }
    let started = Instant::now();
    let status = command.status()?;
    let took = started.elapsed();
    if !status.success() || server.requests().len() != 2 {
        return Err("the read probe failed".into());
    }
    Ok(took)
}

/// A folder the run's user may write (owned by `nobody` under root).
fn own_dir(path: &Path, for_nobody: bool) -> std::io::Result<()> {
    std::fs::create_dir_all(path)?;
    if for_nobody {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY))?;
    }
    Ok(())
}

pub fn first_run_benches() -> BenchResult {
    let dir = tempfile::tempdir()?;
    let base = std::fs::canonicalize(dir.path())?;
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755))?;
    let nobody = runs_as_root();
    own_dir(&base.join("ws"), nobody)?;
    std::fs::write(
        base.join("ws/probe-fixture.txt"),
        "AGENT_LOOP_FILE_MARKER\n",
    )?;

    let mut fresh = Vec::new();
    for run in 0..6 {
        let home = base.join(format!("fresh-home-{run}"));
        own_dir(&home, false)?;
        fresh.push(probe(&base, &home, &home.join("cache"), false)?);
    }
    report(
        "first run: read probe, fresh HOME and empty cache, spawn → exit",
        &fresh,
        "compiles only Read, on its first call; tool definitions embedded",
    );

    let baked = base.join("baked");
    let builder_home = base.join("builder-home");
    own_dir(&builder_home, false)?;
    probe(&base, &builder_home, &baked, false)?;
    for folder in [baked.join("components"), baked.clone()] {
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555))?;
    }
    let mut read_only = Vec::new();
    for run in 0..10 {
        let home = base.join(format!("job-home-{run}"));
        own_dir(&home, nobody)?;
        read_only.push(probe(&base, &home, &baked, nobody)?);
    }
    report(
        "first run: read probe, fresh HOME, read-only baked cache, spawn → exit",
        &read_only,
        if nobody {
            "run as nobody: the cache is not theirs to write"
        } else {
            "cache mode 0555"
        },
    );

    let mut warm = Vec::new();
    for _ in 0..10 {
        warm.push(probe(
            &base,
            &builder_home,
            &builder_home.join("cache"),
            false,
        )?);
    }
    report(
        "first run: the same probe warm (its own cache, filled)",
        &warm[1..],
        "",
    );
    Ok(())
}
