//! The connection to a stdio MCP server: the host owns the server's
//! process and its pipes ([`McpChannel`]) and only moves lines, bounded;
//! a bridge instance is lent the line ([`McpLine`]) for one operation.

use crate::sandbox::process::{ConfinedChild, Sweep, end_helper};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// The longest message a server may send on one line.
const MAX_MESSAGE_BYTES: usize = 16 << 20;
/// What is kept of a server's stderr, to explain its death.
const STDERR_TAIL_BYTES: usize = 4096;

/// A connection a bridge instance speaks JSON-RPC over, one message at a
/// time: a stdio server's pipes, or the Agent SDK's in-process server
/// reached through the control protocol.
pub trait McpLine: Send + Sync {
    fn send<'a>(&'a self, message: &'a str) -> futures::future::BoxFuture<'a, Result<(), String>>;
    /// The next message, or `None` when none came within `timeout` (zero:
    /// only one already there).
    fn receive(
        &self,
        timeout: Duration,
    ) -> futures::future::BoxFuture<'_, Result<Option<String>, String>>;
    fn shutdown(&self) -> futures::future::BoxFuture<'_, ()>;
}

impl McpLine for McpChannel {
    fn send<'a>(&'a self, message: &'a str) -> futures::future::BoxFuture<'a, Result<(), String>> {
        Box::pin(McpChannel::send(self, message))
    }

    fn receive(
        &self,
        timeout: Duration,
    ) -> futures::future::BoxFuture<'_, Result<Option<String>, String>> {
        Box::pin(McpChannel::receive(self, timeout))
    }

    fn shutdown(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(McpChannel::shutdown(self))
    }
}

/// A running stdio server: its stdin, the lines it wrote, its stderr tail.
pub struct McpChannel {
    pub(super) server: String,
    stdin: tokio::sync::Mutex<Option<tokio::process::ChildStdin>>,
    lines: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Result<String, String>>>,
    stderr: Arc<std::sync::Mutex<VecDeque<u8>>>,
    child: std::sync::Mutex<Option<tokio::process::Child>>,
    /// The server's private temp dir, removed with the channel.
    _temp_dir: Option<tempfile::TempDir>,
    /// Protected paths it must not leave behind.
    sweep: Sweep,
}

impl std::fmt::Debug for McpChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpChannel")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl McpChannel {
    /// Wraps a spawned process whose stdin, stdout and stderr are piped.
    pub fn from_child(server: &str, confined: ConfinedChild) -> Result<Arc<Self>, String> {
        let ConfinedChild {
            mut child,
            temp_dir,
            sweep,
        } = confined;
        let stdin = child
            .stdin
            .take()
            .ok_or("the server's stdin is not piped")?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the server's stdout is not piped")?;
        let stderr = child
            .stderr
            .take()
            .ok_or("the server's stderr is not piped")?;
        // One message waits while the next is read: a server that floods
        // holds at most two messages at the cap, not a queue of them.
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tokio::spawn(read_lines(stdout, tx));
        let tail = Arc::new(std::sync::Mutex::new(VecDeque::new()));
        tokio::spawn(keep_tail(stderr, tail.clone()));
        Ok(Arc::new(Self {
            server: server.to_string(),
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            lines: tokio::sync::Mutex::new(rx),
            stderr: tail,
            child: std::sync::Mutex::new(Some(child)),
            _temp_dir: Some(temp_dir),
            sweep,
        }))
    }

    async fn send(&self, message: &str) -> Result<(), String> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(self.gone("its input is closed"));
        };
        let mut line = message.replace('\n', " ");
        line.push('\n');
        if let Err(e) = pipe.write_all(line.as_bytes()).await {
            *stdin = None;
            return Err(self.gone(&format!("writing failed: {e}")));
        }
        pipe.flush()
            .await
            .map_err(|e| self.gone(&format!("writing failed: {e}")))
    }

    async fn receive(&self, timeout: Duration) -> Result<Option<String>, String> {
        let mut lines = self.lines.lock().await;
        let next = if timeout.is_zero() {
            match lines.try_recv() {
                Ok(line) => Some(line),
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => return Ok(None),
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => None,
            }
        } else {
            match tokio::time::timeout(timeout, lines.recv()).await {
                Ok(line) => line,
                Err(_) => return Ok(None),
            }
        };
        match next {
            Some(Ok(line)) => Ok(Some(line)),
            Some(Err(e)) => Err(self.gone(&e)),
            None => Err(self.gone("it closed its output")),
        }
    }

    /// "server X exited (status): stderr tail".
    fn gone(&self, what: &str) -> String {
        let status = self
            .child
            .lock()
            .ok()
            .and_then(|mut c| c.as_mut().and_then(|c| c.try_wait().ok().flatten()));
        let tail = self
            .stderr
            .lock()
            .map(|t| String::from_utf8_lossy(&t.iter().copied().collect::<Vec<_>>()).into_owned())
            .unwrap_or_default();
        let mut message = format!("MCP server `{}` is gone: {what}", self.server);
        if let Some(status) = status {
            message.push_str(&format!(" ({status})"));
        }
        if !tail.trim().is_empty() {
            message.push_str(&format!("; it last wrote to stderr: {}", tail.trim()));
        }
        message
    }

    /// Ends the server: closes its input, then kills what is left.
    pub async fn shutdown(&self) {
        self.stdin.lock().await.take();
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(mut child) = child {
            // A moment to exit on its own once its input is closed; then
            // the helper ends the server's tree and removes its cgroup, and
            // what the server created among protected paths goes too.
            let _ = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
            end_helper(child, self.sweep.clone(), self.server.clone());
        }
    }
}

impl Drop for McpChannel {
    fn drop(&mut self) {
        if let Some(child) = self.child.get_mut().ok().and_then(Option::take) {
            end_helper(child, self.sweep.clone(), self.server.clone());
        }
    }
}

async fn read_lines(
    stdout: tokio::process::ChildStdout,
    tx: tokio::sync::mpsc::Sender<Result<String, String>>,
) {
    let mut reader = tokio::io::BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        // A flood's buffer is not kept for the ordinary messages after it.
        line.shrink_to(64 << 10);
        // Bounded: a server cannot make the host buffer without limit.
        let read = (&mut reader)
            .take(MAX_MESSAGE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => return,
            Ok(_) if line.len() > MAX_MESSAGE_BYTES => {
                let _ = tx
                    .send(Err(format!(
                        "it sent a message longer than {MAX_MESSAGE_BYTES} bytes"
                    )))
                    .await;
                return;
            }
            Ok(_) => {
                let text = String::from_utf8_lossy(&line).trim().to_string();
                if !text.is_empty() && tx.send(Ok(text)).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Err(format!("reading failed: {e}"))).await;
                return;
            }
        }
    }
}

async fn keep_tail(
    mut stderr: tokio::process::ChildStderr,
    tail: Arc<std::sync::Mutex<VecDeque<u8>>>,
) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            return;
        }
        if let Ok(mut tail) = tail.lock() {
            tail.extend(&buf[..n]);
            while tail.len() > STDERR_TAIL_BYTES {
                tail.pop_front();
            }
        }
    }
}
