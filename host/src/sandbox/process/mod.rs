//! Running granted commands as real processes, inside the OS sandbox.
//!
//! The host never runs a command a guest names unless the call's grant holds
//! that exact command line. It runs it through carapace's own binary in a
//! helper mode (`carapace __sandbox-exec …`, see [`helper`]) that confines
//! the command before it starts: its own PID, mount, IPC and network
//! namespaces (a private `/proc`; the whole tree dies with the call), a
//! cgroup capping memory and tasks, the workspace's protected paths
//! read-only and impossible to create (the creation guard), read-denied
//! paths hidden, Landlock (writes only in the working
//! directory, a private temp dir and the directories the user named;
//! signals and abstract sockets scoped to the sandbox), no capabilities,
//! `no_new_privs`, and a seccomp filter. The environment is fresh for every
//! call: a few neutral variables, never the host's.
//!
//! When the sandbox is required (the default) and the kernel cannot enforce
//! it, the command is refused — never silently run unsandboxed.

mod background;
mod bridge;
mod cgroup;
mod confine;
mod creation;
mod env;
mod guard;
mod helper;
mod isolate;
mod plan;
mod protect;
mod run;

pub use background::{BackgroundShells, ShellReport, ShellStatus};
pub(crate) use creation::CreationRules;
pub use env::{CommandEnv, DEFAULT_PATH, system_read_roots};
pub use helper::helper_main;
pub use plan::HELPER_ARG;
pub use protect::{
    GIT_CONTROL, PROTECTED_NAMES, WalkCache, changed_lately, command_protected_names, is_git_dir,
};
pub use run::{Feed, run_command, run_command_fed};

use plan::Plan;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

/// Names under the write roots commands may never write, create or
/// replace unless the session names others: what makes git, carapace,
/// Claude Code or an editor run programs later. A session gives the
/// policy's whole table (`ProcessConfig::protected_names`).
pub const DEFAULT_PROTECTED_NAMES: &[&str] = &[
    ".git",
    ".carapace",
    ".claude",
    ".mcp.json",
    ".vscode",
    ".idea",
];

/// How long a helper asked to stop (timeout) gets before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// One layer of the command sandbox. All are on; tests turn one off to show
/// what it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxLayer {
    /// PID, mount, IPC (and network) namespaces: a private `/proc`, the
    /// tree killed with the call, read-only and hidden paths.
    Namespaces,
    Landlock,
    Seccomp,
    Capabilities,
    /// The cgroup (or per-process rlimits) and the temp dir's size.
    Limits,
    /// Read-only protected paths, and moving aside ones that appeared
    /// when the creation guard may have been missing.
    ProtectedPaths,
    /// The creation guard: protected names cannot be made at all.
    CreationGuard,
    /// What keeps the sandbox's own processes (the call's init, the
    /// creation guard, the network bridge) out of the command's reach:
    /// they cannot be traced, have their memory read or written, or be
    /// signalled by it, and a command process may trace only its own
    /// descendants.
    GuardIsolation,
}

impl SandboxLayer {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxLayer::Namespaces => "namespaces",
            SandboxLayer::Landlock => "landlock",
            SandboxLayer::Seccomp => "seccomp",
            SandboxLayer::Capabilities => "capabilities",
            SandboxLayer::Limits => "limits",
            SandboxLayer::ProtectedPaths => "protected-paths",
            SandboxLayer::CreationGuard => "creation-guard",
            SandboxLayer::GuardIsolation => "guard-isolation",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [
            SandboxLayer::Namespaces,
            SandboxLayer::Landlock,
            SandboxLayer::Seccomp,
            SandboxLayer::Capabilities,
            SandboxLayer::Limits,
            SandboxLayer::ProtectedPaths,
            SandboxLayer::CreationGuard,
            SandboxLayer::GuardIsolation,
        ]
        .into_iter()
        .find(|l| l.as_str() == name)
    }
}

/// Paths commands must not read (what the read deny rules cover), listed
/// afresh for each command.
pub trait DeniedPaths: Send + Sync + std::fmt::Debug {
    /// The existing paths to hide, or why they cannot be listed (then the
    /// command is refused).
    fn list(&self) -> Result<Vec<PathBuf>, String>;
}

/// How commands run, fixed for a session.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    /// The carapace binary (its helper mode applies the OS sandbox).
    pub helper: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Where commands may write (the working directory, the directories the
    /// user named); each call also gets a private temp dir.
    pub write_roots: Vec<PathBuf>,
    /// Further paths commands may never write or create when they lie under
    /// a write root (shell start-up files, carapace's configuration), beside
    /// [`Self::protected_names`] under every write root.
    pub protected: Vec<PathBuf>,
    /// Names protected at the top of every write root, whether they exist
    /// or not, and wherever they already exist deeper (a name with `/` is
    /// that path).
    pub protected_names: Vec<String>,
    /// What commands may not read.
    pub read_denied: Option<Arc<dyn DeniedPaths>>,
    /// Files commands read in place of others: (where, what is read
    /// there). Masked credentials' stand-in copies; the system's trusted
    /// authorities with the terminating proxy's.
    pub covers: Vec<(PathBuf, PathBuf)>,
    /// Variables a SessionStart hook set for the session's commands
    /// (Claude Code's `CLAUDE_ENV_FILE`), shared by every copy of this
    /// configuration.
    pub command_env: Arc<CommandEnv>,
    /// Where commands may read at all (`None`: everywhere but what
    /// `read_denied` hides). A hook's commands read only the workspace,
    /// their own folder and the system's ([`system_read_roots`]).
    pub read_roots: Option<Vec<PathBuf>>,
    pub allow_network: bool,
    /// `sandbox.network.allowLocalBinding`: commands may listen on ports of
    /// their own network namespace.
    pub allow_local_binding: bool,
    /// Refuse to run when the OS sandbox cannot be applied.
    pub require_os_sandbox: bool,
    /// Bytes kept of each of stdout and stderr.
    pub output_cap: usize,
    /// Memory for a command's whole process tree.
    pub memory_limit: u64,
    /// Processes and threads for a command's whole tree.
    pub task_limit: u64,
    /// Bytes a command may write into its private temp dir: a tmpfs of
    /// that size, its pages charged to the call's memory cgroup.
    pub temp_limit: u64,
    /// carapace's egress proxy (`sandbox.network.allowedDomains`): without
    /// a network grant, a command reaches out only through it.
    pub egress: Option<PathBuf>,
    /// What the walk for nested protected paths found, shared by the
    /// session's commands (folders that did not change are not re-read).
    pub walk_cache: Arc<WalkCache>,
    /// Layers turned off: only for tests that show what each layer stops.
    #[doc(hidden)]
    pub without: Vec<SandboxLayer>,
}

/// What a command may write into its private temp dir unless the settings
/// say otherwise (`sandbox.tempDirMaxMb`).
pub const DEFAULT_TEMP_LIMIT: u64 = 1 << 30;

/// The helper's own binary, installed beside carapace's.
pub const HELPER_BINARY: &str = "carapace-sandbox";

/// The binary that applies the OS sandbox: `carapace-sandbox` beside this
/// executable when it is there (it starts faster: it links only the
/// sandbox), else this executable's own helper mode.
pub fn default_helper() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let sibling = exe.with_file_name(HELPER_BINARY);
    Some(if sibling.is_file() { sibling } else { exe })
}

impl ProcessConfig {
    pub fn new(cwd: &Path) -> Self {
        Self {
            helper: default_helper(),
            cwd: cwd.to_path_buf(),
            write_roots: vec![cwd.to_path_buf()],
            protected: Vec::new(),
            protected_names: DEFAULT_PROTECTED_NAMES
                .iter()
                .map(|n| n.to_string())
                .collect(),
            read_denied: None,
            covers: Vec::new(),
            read_roots: None,
            command_env: Arc::default(),
            allow_network: false,
            allow_local_binding: false,
            require_os_sandbox: true,
            output_cap: 1 << 20,
            memory_limit: 4 << 30,
            task_limit: 1024,
            temp_limit: DEFAULT_TEMP_LIMIT,
            egress: None,
            walk_cache: Arc::default(),
            without: Vec::new(),
        }
    }

    /// The protected paths under this configuration's write roots.
    fn protected_paths(&self, writes: &[PathBuf]) -> Vec<PathBuf> {
        let mut paths =
            protect::protected_under(&self.write_roots, &self.protected_names, &self.walk_cache);
        paths.extend(
            self.protected
                .iter()
                .filter(|p| writes.iter().any(|w| p.starts_with(w)))
                .cloned(),
        );
        paths.sort();
        paths.dedup();
        paths
    }

    /// The helper's plan for `command`, with its private temp dir.
    fn plan(&self, command: String, temp: &Path) -> Result<(Plan, Vec<PathBuf>), String> {
        let mut writes = self.write_roots.clone();
        writes.push(temp.to_path_buf());
        let (existing, absent): (Vec<PathBuf>, Vec<PathBuf>) = self
            .protected_paths(&writes)
            .into_iter()
            .partition(|p| p.symlink_metadata().is_ok());
        let hide = match &self.read_denied {
            Some(denied) => denied.list()?,
            None => Vec::new(),
        };
        let guarded = !self.without.contains(&SandboxLayer::ProtectedPaths);
        let (pinned, readonly) = protect::keep(existing);
        let reads = self
            .read_roots
            .iter()
            .flatten()
            .filter(|p| p.exists())
            .cloned()
            .collect();
        let plan = Plan {
            writes,
            reads,
            pinned,
            readonly,
            hide,
            covers: self
                .covers
                .iter()
                .filter(|(at, shown)| at.is_file() && shown.is_file())
                .cloned()
                .collect(),
            guard_names: if guarded {
                self.protected_names.clone()
            } else {
                Vec::new()
            },
            guard_paths: if guarded { absent.clone() } else { Vec::new() },
            network: self.allow_network,
            bind: self.allow_local_binding,
            required: self.require_os_sandbox,
            memory: Some(self.memory_limit),
            tasks: Some(self.task_limit),
            temp: Some((temp.to_path_buf(), self.temp_limit)),
            egress: self.egress.clone().filter(|_| !self.allow_network),
            without: self.without.clone(),
            command,
            user_tasks: 0,
        };
        Ok((plan, absent))
    }
}

/// What a command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub truncated: bool,
}

/// The environment every command starts with.
fn fresh_env(config: &ProcessConfig, temp: &Path) -> Vec<(String, String)> {
    let path = DEFAULT_PATH.to_string();
    let mut vars = vec![
        ("PATH".into(), path),
        ("HOME".into(), config.cwd.to_string_lossy().into_owned()),
        ("LANG".into(), "C.UTF-8".into()),
        ("TERM".into(), "dumb".into()),
        ("TMPDIR".into(), temp.to_string_lossy().into_owned()),
        ("PWD".into(), config.cwd.to_string_lossy().into_owned()),
    ];
    for (name, value) in config.command_env.get() {
        vars.retain(|(n, _)| *n != name);
        vars.push((name, value));
    }
    // After what hooks set: a command's way out is always the bridge.
    if config.egress.is_some() && !config.allow_network {
        vars.extend(bridge::proxy_env());
    }
    vars
}

/// A private temp dir for one command (or one server's life).
fn private_temp_dir() -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix("carapace-cmd-")
        .tempdir()
        .map_err(|e| format!("cannot make the command's temp dir: {e}"))
}

/// A program started under the OS sandbox, with the temp dir it owns.
pub struct ConfinedChild {
    pub child: tokio::process::Child,
    /// Removed when this is dropped.
    pub temp_dir: tempfile::TempDir,
    /// Protected paths that did not exist when it started: whatever the
    /// program creates there is removed when it ends.
    pub sweep: Sweep,
}

/// Protected paths absent when a program started, removed if it created
/// them (see [`end_helper`]).
#[derive(Debug, Clone, Default)]
pub struct Sweep(Vec<PathBuf>);

impl Sweep {
    /// Removes what was created; each removal is reported (to the log).
    pub fn run(&self, program: &str) {
        for note in remove_created(&self.0) {
            tracing::warn!(program, "{note}");
        }
    }
}

/// Starts a long-running program (an MCP server) under the OS sandbox of
/// `config`, with stdin, stdout and stderr piped, in a fresh environment:
/// the usual minimal variables, the host's `PATH` (so the program is found
/// as the user would find it), and `env`. `program` and `args` are passed
/// as words, never through a shell's parsing of user text.
pub fn spawn_confined(
    config: &ProcessConfig,
    program: &str,
    args: &[String],
    env: &[(String, String)],
) -> Result<ConfinedChild, String> {
    let helper = config
        .helper
        .as_ref()
        .ok_or("carapace cannot find its own binary to sandbox the server")?;
    let quoted: Vec<String> = std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .map(shell_quote)
        .collect();
    let temp_dir = private_temp_dir()?;
    let (plan, absent) = config.plan(format!("exec {}", quoted.join(" ")), temp_dir.path())?;
    let sweep = if plan.sweeps() {
        Sweep(absent)
    } else {
        Sweep::default()
    };
    let mut vars = fresh_env(config, temp_dir.path());
    if let Some(path) = std::env::var_os("PATH") {
        vars.retain(|(k, _)| k != "PATH");
        vars.push(("PATH".into(), path.to_string_lossy().into_owned()));
    }
    let mut process = tokio::process::Command::new(helper);
    process
        .args(plan.to_args())
        .current_dir(&config.cwd)
        .env_clear()
        .envs(vars)
        .envs(env.iter().cloned())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let child = process
        .spawn()
        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    Ok(ConfinedChild {
        child,
        temp_dir,
        sweep,
    })
}

/// One word for `/bin/sh`, single-quoted.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

impl ProcessConfig {
    /// The helper's process for `command` (with its temp dir at `temp`),
    /// its plan, and the protected paths absent before it runs.
    fn command(
        &self,
        command: &str,
        temp: &Path,
    ) -> Result<(tokio::process::Command, Plan, Vec<PathBuf>), String> {
        let helper = self
            .helper
            .as_ref()
            .ok_or("carapace cannot find its own binary to sandbox the command")?;
        let (plan, absent) = self.plan(command.to_string(), temp)?;
        let mut process = tokio::process::Command::new(helper);
        process
            .args(plan.to_args())
            .current_dir(&self.cwd)
            .env_clear()
            .envs(fresh_env(self, temp))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        Ok((process, plan, absent))
    }
}

/// Ends a command past its deadline: the helper is asked first (it kills
/// the tree and removes the call's cgroup), then killed with its group.
async fn stop(
    child: &mut tokio::process::Child,
    pid: Option<u32>,
) -> Option<std::process::ExitStatus> {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    if let Ok(status) = tokio::time::timeout(STOP_GRACE, child.wait()).await {
        return status.ok();
    }
    kill_group(pid);
    let status = child.wait().await.ok();
    if let Some(pid) = pid {
        let _ = tokio::task::spawn_blocking(move || cgroup::remove_leftover(pid)).await;
    }
    status
}

/// Ends a helper whose call was abandoned (its future dropped, its server
/// shut down): asked first with SIGTERM — it ends the command's whole tree
/// and removes the call's cgroup — then killed after [`STOP_GRACE`], and
/// its cgroup removed for it. Never blocks the caller.
pub(crate) fn end_helper(mut child: tokio::process::Child, sweep: Sweep, program: String) {
    if !matches!(child.try_wait(), Ok(None)) {
        sweep.run(&program);
        return; // already ended (and reaped)
    }
    let Some(pid) = child.id() else {
        sweep.run(&program);
        return;
    };
    if let Ok(raw) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(raw),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    std::thread::spawn(move || {
        let ended = |child: &mut tokio::process::Child, within: Duration| {
            let deadline = std::time::Instant::now() + within;
            loop {
                if !matches!(child.try_wait(), Ok(None)) {
                    return true;
                }
                if std::time::Instant::now() >= deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        if !ended(&mut child, STOP_GRACE) {
            let _ = child.start_kill();
            ended(&mut child, STOP_GRACE);
            cgroup::remove_leftover(pid);
        }
        sweep.run(&program);
    });
}

/// A running helper: ended with [`end_helper`] if its call is abandoned.
struct RunningHelper(Option<tokio::process::Child>, Sweep);

impl Drop for RunningHelper {
    fn drop(&mut self) {
        if let Some(child) = self.0.take() {
            end_helper(child, std::mem::take(&mut self.1), "a command".into());
        }
    }
}

/// Moves aside the protected paths that appeared while a command ran (they
/// did not exist before it); says where each went. Nothing is deleted:
/// whoever made it — the command, or the user at the same time (`git init`
/// while a test suite runs) — finds it whole under a name nothing reads
/// (`.git.carapace-moved-<time>`), beside where it was.
fn remove_created(absent: &[PathBuf]) -> Vec<String> {
    let mut notes = Vec::new();
    for path in absent {
        if path.symlink_metadata().is_err() {
            continue;
        }
        notes.push(match move_aside(path) {
            Ok(moved) => format!(
                "moved {} to {}: commands may not create it (it can make git, carapace or an editor run programs); nothing was deleted — if you made it, move it back",
                path.display(),
                moved.display()
            ),
            Err(e) => format!(
                "{} appeared while a command ran, which commands may not create, and it could not be moved aside ({e}): check it before trusting this workspace",
                path.display()
            ),
        });
    }
    notes
}

/// Renames `path` to a free name beside it that no program reads
/// (`NAME.carapace-moved-<time>`), never replacing anything.
pub fn move_aside(path: &Path) -> std::io::Result<PathBuf> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for n in 0..100u32 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let target = path.with_file_name(format!("{name}.carapace-moved-{stamp}{suffix}"));
        // No replacing: renameat2(RENAME_NOREPLACE) fails when the name is
        // taken, so nothing already there is overwritten.
        match nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            path,
            nix::fcntl::AT_FDCWD,
            &target,
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        ) {
            Ok(()) => return Ok(target),
            Err(nix::errno::Errno::EEXIST) => continue,
            Err(errno) => return Err(std::io::Error::from(errno)),
        }
    }
    Err(std::io::Error::other("no free name beside it"))
}

fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}
