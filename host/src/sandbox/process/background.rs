//! Background shells: a granted command line started without waiting for
//! it (Bash's `run_in_background`), then read (BashOutput) and stopped
//! (KillShell) by id. Each runs exactly as a foreground command does —
//! through the helper, in the same OS sandbox, cgroup limits and private
//! temp dir — but without a deadline; it ends when it exits, when it is
//! killed, or when the session ends ([`BackgroundShells::kill_all`], and
//! the drop of the registry as a last resort).
//!
//! Output is bounded: what has not been read is kept up to [`KEEP_BYTES`]
//! per stream, older unread bytes are dropped (and counted) beyond it.

use super::{
    ProcessConfig, RunningHelper, Sweep, kill_group, private_temp_dir, remove_created, stop,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

/// Unread output kept per stream of one shell.
pub const KEEP_BYTES: usize = 1 << 20;

/// Shells running at once in one session.
pub const MAX_RUNNING: usize = 16;

/// How a shell stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellStatus {
    Running,
    /// Exited on its own, with this code (`None`: killed by a signal).
    Exited(Option<i32>),
    /// Stopped by KillShell or the session's end.
    Killed,
}

impl ShellStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ShellStatus::Running => "running",
            ShellStatus::Exited(Some(0)) => "completed",
            ShellStatus::Exited(_) => "failed",
            ShellStatus::Killed => "killed",
        }
    }
}

/// What a read of a shell returns: its status and the output not read
/// before.
#[derive(Debug, Clone)]
pub struct ShellReport {
    pub id: String,
    pub command: String,
    pub status: ShellStatus,
    pub stdout: String,
    pub stderr: String,
    /// Unread bytes dropped because the shell wrote faster than it was read.
    pub dropped: usize,
}

#[derive(Default)]
struct Unread {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    dropped: usize,
}

impl Unread {
    fn push(&mut self, err: bool, bytes: &[u8]) {
        let stream = if err {
            &mut self.stderr
        } else {
            &mut self.stdout
        };
        stream.extend_from_slice(bytes);
        if stream.len() > KEEP_BYTES {
            let over = stream.len() - KEEP_BYTES;
            stream.drain(..over);
            self.dropped += over;
        }
    }
}

struct Shell {
    command: String,
    unread: Mutex<Unread>,
    status: Mutex<ShellStatus>,
    stop: CancellationToken,
    ended: CancellationToken,
}

impl Shell {
    fn status(&self) -> ShellStatus {
        self.status
            .lock()
            .map(|s| *s)
            .unwrap_or(ShellStatus::Killed)
    }
}

/// The session's background shells.
pub struct BackgroundShells {
    config: Arc<ProcessConfig>,
    shells: Mutex<BTreeMap<String, Arc<Shell>>>,
    next: AtomicU64,
}

impl BackgroundShells {
    pub fn new(config: Arc<ProcessConfig>) -> Self {
        Self {
            config,
            shells: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
        }
    }

    /// Starts `command` (already granted) and returns its shell's id.
    pub fn start(&self, command: &str) -> Result<String, String> {
        let running = self
            .shells
            .lock()
            .map_err(|_| "the shell registry is unusable")?
            .values()
            .filter(|s| s.status() == ShellStatus::Running)
            .count();
        if running >= MAX_RUNNING {
            return Err(format!(
                "{MAX_RUNNING} background shells are running already; stop one with KillShell first"
            ));
        }
        let temp_dir = private_temp_dir()?;
        let (mut process, plan, absent) = self.config.command(command, temp_dir.path())?;
        let sweep = if plan.sweeps() {
            Sweep(absent)
        } else {
            Sweep::default()
        };
        process.stdin(std::process::Stdio::null());
        let mut child = process
            .spawn()
            .map_err(|e| format!("cannot start the command: {e}"))?;
        let id = format!("bash_{}", self.next.fetch_add(1, Ordering::Relaxed));
        let shell = Arc::new(Shell {
            command: command.to_string(),
            unread: Mutex::new(Unread::default()),
            status: Mutex::new(ShellStatus::Running),
            stop: CancellationToken::new(),
            ended: CancellationToken::new(),
        });
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let running = RunningHelper(Some(child), sweep);
        tokio::spawn(watch(shell.clone(), running, stdout, stderr, temp_dir));
        self.shells
            .lock()
            .map_err(|_| "the shell registry is unusable")?
            .insert(id.clone(), shell);
        Ok(id)
    }

    /// The shell's status and the output written since the last read.
    pub fn read(&self, id: &str) -> Result<ShellReport, String> {
        let shell = self.get(id)?;
        // The status first: output that arrives after it is read next time.
        let status = shell.status();
        let mut unread = shell
            .unread
            .lock()
            .map_err(|_| "the shell's output is unusable")?;
        let taken = std::mem::take(&mut *unread);
        Ok(ShellReport {
            id: id.to_string(),
            command: shell.command.clone(),
            status,
            stdout: String::from_utf8_lossy(&taken.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&taken.stderr).into_owned(),
            dropped: taken.dropped,
        })
    }

    /// The shell's status, its output left unread.
    pub fn read_status(&self, id: &str) -> Result<ShellStatus, String> {
        Ok(self.get(id)?.status())
    }

    /// Stops a running shell (its whole process tree) and waits until it
    /// has ended; a shell that already ended is reported as it is.
    pub async fn kill(&self, id: &str) -> Result<ShellStatus, String> {
        let shell = self.get(id)?;
        if shell.status() == ShellStatus::Running {
            shell.stop.cancel();
            shell.ended.cancelled().await;
        }
        Ok(shell.status())
    }

    /// Asks a running shell to stop, without waiting for it (the SDK's
    /// `stop_task`); false when it had already ended. The shell reads as
    /// killed from now on, as in Claude Code: what asks next (BashOutput,
    /// the next turn) must not see it running while its processes die.
    pub fn stop(&self, id: &str) -> Result<bool, String> {
        let shell = self.get(id)?;
        let running = match shell.status.lock() {
            Ok(mut status) if *status == ShellStatus::Running => {
                *status = ShellStatus::Killed;
                true
            }
            _ => false,
        };
        if running {
            shell.stop.cancel();
        }
        Ok(running)
    }

    /// Stops every running shell and waits (boundedly) for them to end:
    /// the session is over.
    pub async fn kill_all(&self) {
        let shells: Vec<Arc<Shell>> = match self.shells.lock() {
            Ok(shells) => shells.values().cloned().collect(),
            Err(_) => return,
        };
        for shell in &shells {
            shell.stop.cancel();
        }
        let all_ended = futures::future::join_all(shells.iter().map(|s| s.ended.cancelled()));
        let _ = tokio::time::timeout(Duration::from_secs(10), all_ended).await;
    }

    /// Every shell's id, command and status.
    pub fn list(&self) -> Vec<(String, String, ShellStatus)> {
        match self.shells.lock() {
            Ok(shells) => shells
                .iter()
                .map(|(id, s)| (id.clone(), s.command.clone(), s.status()))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// How many shells are running now (read for every frame of the
    /// interactive screen's status line: nothing is copied).
    pub fn running(&self) -> usize {
        self.shells.lock().map_or(0, |shells| {
            shells
                .values()
                .filter(|s| s.status() == ShellStatus::Running)
                .count()
        })
    }

    fn get(&self, id: &str) -> Result<Arc<Shell>, String> {
        let shells = self
            .shells
            .lock()
            .map_err(|_| "the shell registry is unusable")?;
        shells.get(id).cloned().ok_or_else(|| {
            let known: Vec<&str> = shells.keys().map(String::as_str).collect();
            match known.is_empty() {
                true => format!("No background shell `{id}`: none was started in this session."),
                false => format!("No background shell `{id}` (known: {}).", known.join(", ")),
            }
        })
    }
}

impl Drop for BackgroundShells {
    fn drop(&mut self) {
        // The last resort: each watcher ends its helper when told to stop
        // (or when its task is dropped with the runtime).
        if let Ok(shells) = self.shells.lock() {
            for shell in shells.values() {
                shell.stop.cancel();
            }
        }
    }
}

/// Copies one stream into the shell's unread output until it closes.
async fn pump(shell: Arc<Shell>, mut reader: impl AsyncReadExt + Unpin, err: bool) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut unread) = shell.unread.lock() {
                    unread.push(err, &buf[..n]);
                }
            }
        }
    }
}

/// Runs beside the shell until it ends: its output pumped, its status set,
/// its protected-path sweep and temp dir done.
async fn watch(
    shell: Arc<Shell>,
    mut running: RunningHelper,
    stdout: tokio::process::ChildStdout,
    stderr: tokio::process::ChildStderr,
    temp_dir: tempfile::TempDir,
) {
    let out = tokio::spawn(pump(shell.clone(), stdout, false));
    let err = tokio::spawn(pump(shell.clone(), stderr, true));
    let Some(child) = running.0.as_mut() else {
        return;
    };
    let pid = child.id();
    let status = tokio::select! {
        status = child.wait() => ShellStatus::Exited(status.ok().and_then(|s| s.code())),
        () = shell.stop.cancelled() => {
            stop(child, pid).await;
            ShellStatus::Killed
        }
    };
    running.0.take();
    kill_group(pid);
    let _ = out.await;
    let _ = err.await;
    // The protected paths it created (none are listed when that layer is
    // off).
    for note in remove_created(&running.1.0) {
        if let Ok(mut unread) = shell.unread.lock() {
            unread.push(true, format!("\ncarapace: {note}\n").as_bytes());
        }
    }
    let _ = tokio::task::spawn_blocking(move || drop(temp_dir)).await;
    // A shell told to stop stays killed, even if it ended by itself while
    // being stopped.
    if let Ok(mut current) = shell.status.lock()
        && *current != ShellStatus::Killed
    {
        *current = status;
    }
    shell.ended.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unread_output_keeps_the_latest_bytes_and_counts_the_rest() {
        let mut unread = Unread::default();
        unread.push(false, &vec![b'a'; KEEP_BYTES]);
        unread.push(false, b"tail");
        unread.push(true, b"err");
        assert_eq!(unread.stdout.len(), KEEP_BYTES);
        assert!(unread.stdout.ends_with(b"tail"));
        assert_eq!(unread.dropped, 4);
        assert_eq!(unread.stderr, b"err");
    }
}
