//! Claude Code's `command` hooks — a shell line, usually running a Python
//! or shell script — run through the same OS sandbox as Bash, with Claude
//! Code's protocol (the event as JSON on stdin; exit code 0, 2 or other;
//! JSON on stdout). Claude Code runs these with all of the user's rights;
//! carapace runs the same line confined:
//!
//! - it reads the workspace, its own folder (the plugin's, or the `hooks/`
//!   folder beside the settings file that names it), what its `grants.read`
//!   list, and the system's programs and libraries — not the home
//!   directory, not `~/.ssh`, not carapace's configuration;
//! - it writes only what its `grants.write` list, and a private temp dir;
//! - it reaches no network but the domains the user allowed (through the
//!   egress proxy, as commands do);
//! - its environment is the commands' fresh one, `CLAUDE_PROJECT_DIR`,
//!   `CLAUDE_PLUGIN_ROOT` for a plugin's hook, and the variables its
//!   `grants.env` name — never carapace's own.

use super::component::CommandRun;
use crate::sandbox::{Feed, Grant, ProcessConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A loaded `command` hook, or why it cannot run here.
#[derive(Clone)]
pub enum ShellHook {
    Ready(Arc<Confined>),
    /// The line cannot run on this machine or in this session: a
    /// PreToolUse hook refuses the call it would have judged, others are
    /// reported each time they miss.
    CannotRun(String),
}

/// A command line and the sandbox it runs in.
pub struct Confined {
    command: String,
    config: ProcessConfig,
    env: Vec<(String, String)>,
}

/// What the hook was configured as, beyond its grant.
pub(super) struct ShellSpec<'a> {
    pub command: &'a str,
    /// The folder the hook's script is looked for in (read-only).
    pub own_folder: &'a Path,
    /// The plugin the hook comes from, if any (`CLAUDE_PLUGIN_ROOT`).
    pub plugin_root: Option<&'a Path>,
}

impl ShellHook {
    /// The hook for `spec`, confined from the session's command sandbox
    /// `session` (`None`: this session runs no processes).
    pub(super) fn new(
        spec: &ShellSpec<'_>,
        grant: &Grant,
        session: Option<&ProcessConfig>,
        project: &Path,
    ) -> Self {
        let Some(session) = session else {
            return ShellHook::CannotRun(
                "this session runs no processes, so a command hook cannot run".into(),
            );
        };
        let mut reads: Vec<PathBuf> = crate::sandbox::system_read_roots();
        reads.push(project.to_path_buf());
        reads.push(spec.own_folder.to_path_buf());
        reads.extend(spec.plugin_root.map(Path::to_path_buf));
        reads.extend(grant.read_paths().map(Path::to_path_buf));
        let writes: Vec<PathBuf> = grant
            .write_trees()
            .chain(grant.write_files())
            .map(Path::to_path_buf)
            .collect();
        let config = ProcessConfig {
            cwd: project.to_path_buf(),
            write_roots: writes,
            read_roots: Some(reads),
            // A hook reaches out only where commands may: the domains the
            // user allowed, through the proxy.
            allow_network: false,
            allow_local_binding: false,
            walk_cache: Arc::default(),
            ..session.clone()
        };
        let mut env = vec![(
            "CLAUDE_PROJECT_DIR".to_string(),
            project.display().to_string(),
        )];
        if let Some(root) = spec.plugin_root {
            env.push(("CLAUDE_PLUGIN_ROOT".into(), root.display().to_string()));
        }
        env.extend(grant.env_vars().iter().cloned());
        ShellHook::Ready(Arc::new(Confined {
            command: spec.command.to_string(),
            config,
            env,
        }))
    }
}

impl Confined {
    /// Runs the line with `stdin`; `Err` when it could not run at all
    /// (the OS sandbox refused it), which is not the hook's answer.
    pub(super) async fn run(&self, stdin: Vec<u8>, timeout: Duration) -> Result<RunEnd, String> {
        let feed = Feed {
            stdin,
            env: self.env.clone(),
        };
        let output =
            crate::sandbox::run_command_fed(&self.config, &self.command, &feed, timeout).await?;
        if output.timed_out {
            return Ok(RunEnd::TimedOut);
        }
        Ok(RunEnd::Exited(CommandRun {
            stdout: output.stdout,
            stderr: output.stderr,
            exit_code: output.exit_code.unwrap_or(1),
        }))
    }
}

/// How a hook's run ended.
pub(super) enum RunEnd {
    Exited(CommandRun),
    TimedOut,
}

/// The line a hook's settings give: `command`, with `args` (Claude Code's
/// exec form) as words no shell splits again.
pub(super) fn command_line(command: &str, args: &[String]) -> String {
    if args.is_empty() {
        return command.to_string();
    }
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(|word| format!("'{}'", word.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exec_form_keeps_each_word_whole() {
        assert_eq!(command_line("echo hi", &[]), "echo hi");
        assert_eq!(
            command_line("/bin/x", &["a b".into(), "it's".into()]),
            "'/bin/x' 'a b' 'it'\\''s'"
        );
    }
}
