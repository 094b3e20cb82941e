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
//!   `grants.env` name — never carapace's own; a SessionStart hook also
//!   gets `CLAUDE_ENV_FILE`, a file in a folder of its own where it may
//!   write `export NAME=VALUE` lines that the session's later commands
//!   get (never carapace's own variables, never the proxy's).

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
    /// A SessionStart hook's `CLAUDE_ENV_FILE` folder (removed with it).
    env_dir: Option<tempfile::TempDir>,
}

/// The most of a `CLAUDE_ENV_FILE` read.
const ENV_FILE_BYTES: u64 = 64 * 1024;

/// What the hook was configured as, beyond its grant.
pub(super) struct ShellSpec<'a> {
    pub command: &'a str,
    /// The folder the hook's script is looked for in (read-only).
    pub own_folder: &'a Path,
    /// The plugin the hook comes from, if any (`CLAUDE_PLUGIN_ROOT`).
    pub plugin_root: Option<&'a Path>,
    /// A SessionStart hook: it gets a `CLAUDE_ENV_FILE`.
    pub sets_env: bool,
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
        let mut writes: Vec<PathBuf> = grant
            .write_trees()
            .chain(grant.write_files())
            .map(Path::to_path_buf)
            .collect();
        let env_dir = if spec.sets_env {
            match tempfile::Builder::new().prefix("carapace-env-").tempdir() {
                Ok(dir) => Some(dir),
                Err(e) => {
                    return ShellHook::CannotRun(format!(
                        "cannot make its CLAUDE_ENV_FILE folder: {e}"
                    ));
                }
            }
        } else {
            None
        };
        writes.extend(env_dir.as_ref().map(|d| d.path().to_path_buf()));
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
        if let Some(dir) = &env_dir {
            env.push((
                "CLAUDE_ENV_FILE".into(),
                dir.path().join("env").display().to_string(),
            ));
        }
        ShellHook::Ready(Arc::new(Confined {
            command: spec.command.to_string(),
            config,
            env,
            env_dir,
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

impl Confined {
    /// What a SessionStart hook wrote to its `CLAUDE_ENV_FILE`, set for
    /// the session's later commands; the file is then emptied for its next
    /// run. Warnings for lines that are not honoured.
    pub(super) fn collect_env(&self) -> Vec<String> {
        let Some(dir) = &self.env_dir else {
            return Vec::new();
        };
        let file = dir.path().join("env");
        let Some(text) = read_env_file(&file) else {
            return Vec::new();
        };
        let _ = std::fs::remove_file(&file);
        // What a command would see: its HOME and PATH, then what hooks set.
        let mut known: Vec<(String, String)> = vec![
            ("HOME".into(), self.config.cwd.display().to_string()),
            ("PATH".into(), crate::sandbox::DEFAULT_PATH.into()),
        ];
        known.extend(self.config.command_env.get());
        let mut warnings = Vec::new();
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            match env_line(line, &known) {
                Some((name, _)) if !may_set(&name) => warnings.push(format!(
                    "CLAUDE_ENV_FILE: `{name}` is not set for commands (carapace's own variables and the proxy's are never a hook's to set)"
                )),
                Some((name, value)) => {
                    self.config.command_env.set(name.clone(), value.clone());
                    known.retain(|(n, _)| *n != name);
                    known.push((name, value));
                }
                None => warnings.push(format!(
                    "CLAUDE_ENV_FILE: `{line}` is not an `export NAME=VALUE` line; ignored"
                )),
            }
        }
        warnings
    }
}

fn read_env_file(file: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(file)
        .ok()?;
    if !opened.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    opened.take(ENV_FILE_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Whether a hook may set `name` for commands.
fn may_set(name: &str) -> bool {
    let proxy = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"]
        .iter()
        .any(|p| name.eq_ignore_ascii_case(p));
    !proxy && !is_carapace_variable(name) && !name.starts_with("CLAUDE_")
}

/// `export NAME=VALUE` (or `NAME=VALUE`): the value unquoted, `'…'`, or
/// `"…"`, with `$NAME` and `${NAME}` taken from `known` outside single
/// quotes (`export PATH="$HOME/bin:$PATH"`).
fn env_line(line: &str, known: &[(String, String)]) -> Option<(String, String)> {
    let assignment = line.strip_prefix("export ").unwrap_or(line).trim();
    let (name, raw) = assignment.split_once('=')?;
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return None;
    }
    let value = if let Some(inner) = raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        inner.to_string()
    } else {
        let inner = raw
            .strip_prefix('"')
            .and_then(|r| r.strip_suffix('"'))
            .unwrap_or(raw);
        expand(inner, known)
    };
    Some((name.to_string(), value))
}

fn expand(text: &str, known: &[(String, String)]) -> String {
    expand_variables(text, &|name: &str| {
        known
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .or_else(|| (name == "PATH").then(|| crate::sandbox::DEFAULT_PATH.to_string()))
            .unwrap_or_default()
    })
}

/// `text` with each `$NAME` and `${NAME}` replaced by `lookup(NAME)`;
/// nothing is run. A `$` that names nothing stays.
pub(super) fn expand_variables(text: &str, lookup: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, tail) = if let Some(braced) = after.strip_prefix('{') {
            match braced.split_once('}') {
                Some((name, tail)) => (name, tail),
                None => ("", after),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&lookup(name));
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// carapace's own credentials and settings: never handed to a plugin or a
/// hook by name, never expanded into an MCP configuration unless the user
/// says so.
pub fn is_carapace_variable(name: &str) -> bool {
    ["ANTHROPIC_", "CARAPACE_", "CLAUDE_CODE_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
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
    fn env_file_lines_set_what_a_shell_would() {
        let known = vec![("HOME".to_string(), "/w".to_string())];
        assert_eq!(
            env_line("export GREETING=hello", &known),
            Some(("GREETING".into(), "hello".into()))
        );
        assert_eq!(
            env_line("export PATH=\"$HOME/bin:${PATH}\"", &known),
            Some((
                "PATH".into(),
                format!("/w/bin:{}", crate::sandbox::DEFAULT_PATH)
            ))
        );
        assert_eq!(
            env_line("X='$HOME stays'", &known),
            Some(("X".into(), "$HOME stays".into()))
        );
        assert_eq!(env_line("not an assignment", &known), None);
        assert!(!may_set("ANTHROPIC_API_KEY") && !may_set("https_proxy") && may_set("PATH"));
    }

    #[test]
    fn the_exec_form_keeps_each_word_whole() {
        assert_eq!(command_line("echo hi", &[]), "echo hi");
        assert_eq!(
            command_line("/bin/x", &["a b".into(), "it's".into()]),
            "'/bin/x' 'a b' 'it'\\''s'"
        );
    }
}
