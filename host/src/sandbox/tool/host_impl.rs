//! The host functions, once, for every contract version's binding: running
//! a granted command, logging, progress, the read ledger, searching.

use super::{FileStamp, ToolState};
use crate::sandbox::CommandOutput;
use crate::sandbox::process::run_command;
use crate::search::{Cancel, SearchError};

/// Longest command a tool may run.
const MAX_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Longest log line or progress message kept from a guest.
const MAX_GUEST_MESSAGE: usize = 4096;

fn bounded(message: &str) -> &str {
    match message.char_indices().nth(MAX_GUEST_MESSAGE) {
        Some((cut, _)) => &message[..cut],
        None => message,
    }
}

pub(super) async fn run(
    state: &mut ToolState,
    command: String,
    timeout_ms: u64,
) -> Result<CommandOutput, String> {
    if !state.commands.contains(&command) {
        return Err("this call was not granted that command line".into());
    }
    let Some(config) = state.process.clone() else {
        return Err("this host runs no processes".into());
    };
    let timeout = std::time::Duration::from_millis(timeout_ms).min(MAX_COMMAND_TIMEOUT);
    run_command(&config, &command, timeout).await
}

/// Starts a granted command in the background; its shell's id.
pub(super) fn start(state: &mut ToolState, command: String) -> Result<String, String> {
    if !state.commands.contains(&command) {
        return Err("this call was not granted that command line".into());
    }
    let Some(shells) = state.shells.clone() else {
        return Err("this host runs no processes".into());
    };
    shells.start(&command)
}

pub(super) fn log(state: &ToolState, level: tracing::Level, message: &str) {
    let plugin = &*state.core.plugin;
    let message = bounded(message);
    match level {
        tracing::Level::TRACE => tracing::trace!(plugin, "{message}"),
        tracing::Level::DEBUG => tracing::debug!(plugin, "{message}"),
        tracing::Level::INFO => tracing::info!(plugin, "{message}"),
        tracing::Level::WARN => tracing::warn!(plugin, "{message}"),
        _ => tracing::error!(plugin, "{message}"),
    }
}

pub(super) fn progress(state: &ToolState, message: &str) {
    tracing::info!(plugin = &*state.core.plugin, progress = bounded(message));
}

pub(super) fn record_read(state: &ToolState, path: &str, stamp: FileStamp) {
    if let Some(ledger) = &state.reads {
        ledger.record(path, stamp);
    }
}

pub(super) fn last_read(state: &ToolState, path: &str) -> Option<FileStamp> {
    state.reads.as_ref()?.last(path)
}

/// Runs a search on the host's threads, if the call was granted its
/// path; stopped when the call is (its future dropped).
pub(super) fn search<T: Send + 'static>(
    state: &ToolState,
    path: &str,
    run: impl FnOnce(std::path::PathBuf, &Cancel) -> Result<T, SearchError> + Send + 'static,
) -> impl std::future::Future<Output = Result<T, String>> + Send + 'static {
    let root = state.searchable.resolve(std::path::Path::new(path));
    let path = path.to_string();
    async move {
        let Some(root) = root else {
            return Err(format!("this call was not granted to read {path}"));
        };
        searched(root, run).await
    }
}

async fn searched<T: Send + 'static>(
    root: std::path::PathBuf,
    run: impl FnOnce(std::path::PathBuf, &Cancel) -> Result<T, SearchError> + Send + 'static,
) -> Result<T, String> {
    let cancel = Cancel::default();
    // Dropped with the call: the search stops at its next file.
    struct StopOnDrop(Cancel);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.cancel();
        }
    }
    let guard = StopOnDrop(cancel.clone());
    let answer = tokio::task::spawn_blocking(move || run(root, &cancel)).await;
    drop(guard);
    match answer {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(e) => Err(format!("the search failed: {e}")),
    }
}
