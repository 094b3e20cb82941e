//! A command run to its end (or its deadline) under a configuration: the
//! helper started with its plan, fed its stdin, its output kept up to a
//! cap, stopped at the deadline, and what it made that it may not sweep.

use super::plan::{MESSAGE_PREFIX, REFUSED_EXIT};
use super::{
    CommandOutput, ProcessConfig, RunningHelper, Sweep, kill_group, private_temp_dir,
    remove_created, stop,
};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// Runs `command` under `config`, for at most `timeout`.
pub async fn run_command(
    config: &ProcessConfig,
    command: &str,
    timeout: Duration,
) -> Result<CommandOutput, String> {
    run_command_fed(config, command, &Feed::default(), timeout).await
}

/// What a command is given beyond its command line: bytes on its stdin
/// (then closed) and variables beside the fresh environment's.
#[derive(Debug, Clone, Default)]
pub struct Feed {
    pub stdin: Vec<u8>,
    pub env: Vec<(String, String)>,
}

/// [`run_command`], fed `feed`.
pub async fn run_command_fed(
    config: &ProcessConfig,
    command: &str,
    feed: &Feed,
    timeout: Duration,
) -> Result<CommandOutput, String> {
    let temp_dir = private_temp_dir()?;
    let (mut process, plan, absent) = config.command(command, temp_dir.path())?;
    process.stdin(if feed.stdin.is_empty() {
        Stdio::null()
    } else {
        Stdio::piped()
    });
    process.envs(feed.env.iter().cloned());
    let abandoned_sweep = if plan.sweeps() {
        Sweep(absent.clone())
    } else {
        Sweep::default()
    };
    let mut running = RunningHelper(
        Some(
            process
                .spawn()
                .map_err(|e| format!("cannot start the command: {e}"))?,
        ),
        abandoned_sweep,
    );
    let child = running.0.as_mut().ok_or("no command")?;
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        let bytes = feed.stdin.clone();
        // A command that never reads its input must not hold up the call:
        // written beside it, and a broken pipe is its own business.
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let cap = config.output_cap;
    let read_out = tokio::spawn(async move { read_capped(&mut stdout, cap).await });
    let read_err = tokio::spawn(async move { read_capped(&mut stderr, cap).await });

    let (status, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => (status.ok(), false),
        Err(_) => (stop(child, pid).await, true),
    };
    // Ended: nothing to do when `running` is dropped.
    running.0.take();
    // Without namespaces the group may have children still holding the
    // pipes: end them too.
    kill_group(pid);
    let (stdout, out_truncated) = read_out.await.unwrap_or_default();
    let (mut stderr, err_truncated) = read_err.await.unwrap_or_default();
    let exit_code = status.and_then(|s| s.code());
    if exit_code == Some(REFUSED_EXIT)
        && stdout.is_empty()
        && stderr.starts_with(MESSAGE_PREFIX.as_bytes())
    {
        return Err(String::from_utf8_lossy(&stderr).trim().to_string());
    }
    if plan.sweeps() {
        for note in remove_created(&absent) {
            stderr.extend_from_slice(format!("\ncarapace: {note}\n").as_bytes());
        }
    }
    // Removed before the call returns (a later call or the model must not
    // find it), off the async threads: the command may have filled it.
    let _ = tokio::task::spawn_blocking(move || drop(temp_dir)).await;
    Ok(CommandOutput {
        stdout,
        stderr,
        exit_code: if timed_out { None } else { exit_code },
        timed_out,
        truncated: out_truncated || err_truncated,
    })
}

async fn read_capped(reader: &mut (impl AsyncReadExt + Unpin), cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                if n > room {
                    truncated = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (kept, truncated)
}
