//! What a command costs by the helper that confines it, and how soon a run
//! ends on SIGTERM.

use super::*;

/// Bash `echo hi` through the pipeline with each helper carapace can use:
/// `carapace-sandbox` (installed beside it) and, without it, carapace's
/// own binary in helper mode — interleaved, so both see the same machine.
pub(super) async fn helper_benches(cache: &Path) -> BenchResult {
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    let separate = bash_pipeline(cache, &ws, env!("CARGO_BIN_EXE_carapace-sandbox")).await?;
    let own = bash_pipeline(cache, &ws, env!("CARGO_BIN_EXE_carapace")).await?;
    let (with_helper, with_own) =
        time_interleaved(100, |_| echo_hi(&separate), |_| echo_hi(&own)).await?;
    report(
        "commands: Bash `echo hi`, helper `carapace-sandbox`",
        &with_helper,
        "as installed: the helper beside carapace",
    );
    report(
        "commands: Bash `echo hi`, carapace's own helper mode",
        &with_own,
        "no carapace-sandbox beside it; same run, interleaved",
    );
    Ok(())
}

/// Bash `echo hi` through `pipeline`; an error unless it ran.
pub(super) async fn echo_hi(pipeline: &Arc<ToolPipeline>) -> BenchResult {
    let result = pipeline
        .clone()
        .call(ToolCall {
            id: "toolu_bench".into(),
            name: "Bash".into(),
            input: json!({"command": "echo hi"}),
            invalid_input: None,
        })
        .await;
    match result.is_error {
        true => Err(format!("Bash failed: {}", result.content.text()).into()),
        false => Ok(()),
    }
}

/// The first-party tools in `ws`, commands confined by `helper`.
async fn bash_pipeline(
    cache: &Path,
    ws: &Path,
    helper: &str,
) -> Result<Arc<ToolPipeline>, Box<dyn std::error::Error>> {
    let process = carapace::sandbox::ProcessConfig {
        helper: Some(PathBuf::from(helper)),
        ..carapace::sandbox::ProcessConfig::new(ws)
    };
    pipeline_with(cache, ws, process).await
}

/// The first-party tools in `ws` in bypassPermissions, commands run as
/// `process` says.
pub(super) async fn pipeline_with(
    cache: &Path,
    ws: &Path,
    process: carapace::sandbox::ProcessConfig,
) -> Result<Arc<ToolPipeline>, Box<dyn std::error::Error>> {
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: cache.to_path_buf(),
        guest_cwd: Some(ws.to_path_buf()),
        process: Some(process),
        ..SandboxConfig::default()
    })?;
    let registry = ToolRegistry::builtin(&sandbox).await?;
    let policy = Policy::new(PermissionMode::BypassPermissions, ws);
    Ok(Arc::new(ToolPipeline::new(
        registry,
        policy,
        CallLimits::default(),
    )))
}

/// SIGTERM during a response that trickles a byte a millisecond and never
/// completes an event: from the signal to the process's exit, beside a
/// plain process (`sleep`) ended by the same signal — the floor.
pub(super) fn sigterm_benches(cache: &Path, cwd: &Path) -> BenchResult {
    use std::io::BufRead;
    let mut samples = Vec::new();
    for run in 0..21 {
        let server = ScriptedServer::start(vec![Reply::text("the first block").after_block(
            0,
            scripted_server::Step::Raw {
                bytes: vec![b'x'; 1 << 20],
                chunk: 1,
                pause: Duration::from_millis(1),
            },
        )])?;
        let mut child = carapace_command(cache, cwd, &server)
            .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
            .args(["--no-session-persistence"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        // The trickle has begun once the block before it is printed. The
        // pipe stays open until the end: a closed one would end the run.
        let mut stdout = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut line = String::new();
        while !line.contains("\"type\":\"assistant\"") {
            line.clear();
            if stdout.read_line(&mut line)? == 0 {
                return Err("the first block never printed".into());
            }
        }
        let took = terminated(&mut child)?;
        drop(stdout);
        if run > 0 {
            samples.push(took);
        }
    }
    report(
        "signals: carapace -p ended by SIGTERM mid-stream, signal → exit",
        &samples,
        "the stream trickles a byte a millisecond",
    );
    let mut floor = Vec::new();
    for run in 0..21 {
        let mut child = std::process::Command::new("sleep").arg("60").spawn()?;
        let took = terminated(&mut child)?;
        if run > 0 {
            floor.push(took);
        }
    }
    report(
        "signals: `sleep 60` ended by SIGTERM, signal → exit",
        &floor,
        "a process with nothing to clean up",
    );
    Ok(())
}

/// Sends SIGTERM to `child` and waits for it: how long that took.
fn terminated(child: &mut std::process::Child) -> Result<Duration, Box<dyn std::error::Error>> {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let pid = i32::try_from(child.id())?;
    let started = Instant::now();
    kill(Pid::from_raw(pid), Signal::SIGTERM)?;
    child.wait()?;
    Ok(started.elapsed())
}
