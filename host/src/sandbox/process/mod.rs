//! Running granted commands as real processes, inside the OS sandbox.
//!
//! The host never runs a command a guest names unless the call's grant holds
//! that exact command line. It runs it through carapace's own binary in a
//! helper mode (`carapace __sandbox-exec …`): the helper, still
//! single-threaded, leaves the network namespace (no network unless
//! granted), restricts itself with Landlock (reads anywhere; writes only in
//! the working directory and the temporary directory; no TCP connect or bind
//! unless the network is granted) and only then execs `/bin/sh -c`. The
//! environment is fresh for every call: a few neutral variables, never the
//! host's (no API key, no shell state).
//!
//! When the sandbox is required (the default) and the kernel cannot enforce
//! it, the command is refused — never silently run unsandboxed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// The helper mode's argument.
pub const HELPER_ARG: &str = "__sandbox-exec";
/// The exit code of a helper that refused to run the command.
const REFUSED_EXIT: i32 = 125;

/// How commands run, fixed for a session.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    /// The carapace binary (its helper mode applies the OS sandbox).
    pub helper: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Where commands may write (the working directory, the temp dir…).
    pub write_roots: Vec<PathBuf>,
    pub allow_network: bool,
    /// Refuse to run when the OS sandbox cannot be applied.
    pub require_os_sandbox: bool,
    /// Bytes kept of each of stdout and stderr.
    pub output_cap: usize,
}

impl ProcessConfig {
    pub fn new(cwd: &Path) -> Self {
        let tmp = std::env::temp_dir();
        Self {
            helper: std::env::current_exe().ok(),
            cwd: cwd.to_path_buf(),
            write_roots: vec![cwd.to_path_buf(), tmp],
            allow_network: false,
            require_os_sandbox: true,
            output_cap: 1 << 20,
        }
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
fn fresh_env(config: &ProcessConfig) -> Vec<(String, String)> {
    let path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string();
    let tmp = std::env::temp_dir().to_string_lossy().into_owned();
    vec![
        ("PATH".into(), path),
        ("HOME".into(), config.cwd.to_string_lossy().into_owned()),
        ("LANG".into(), "C.UTF-8".into()),
        ("TERM".into(), "dumb".into()),
        ("TMPDIR".into(), tmp),
        ("PWD".into(), config.cwd.to_string_lossy().into_owned()),
    ]
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
) -> Result<tokio::process::Child, String> {
    let helper = config
        .helper
        .as_ref()
        .ok_or("carapace cannot find its own binary to sandbox the server")?;
    let quoted: Vec<String> = std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .map(shell_quote)
        .collect();
    let mut process = tokio::process::Command::new(helper);
    process.arg(HELPER_ARG);
    for root in &config.write_roots {
        process.arg("--write").arg(root);
    }
    if config.allow_network {
        process.arg("--network");
    }
    if !config.require_os_sandbox {
        process.arg("--sandbox-optional");
    }
    let mut vars = fresh_env(config);
    if let Some(path) = std::env::var_os("PATH") {
        vars.retain(|(k, _)| k != "PATH");
        vars.push(("PATH".into(), path.to_string_lossy().into_owned()));
    }
    process
        .arg("--")
        .arg(format!("exec {}", quoted.join(" ")))
        .current_dir(&config.cwd)
        .env_clear()
        .envs(vars)
        .envs(env.iter().cloned())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    process
        .spawn()
        .map_err(|e| format!("cannot start `{program}`: {e}"))
}

/// One word for `/bin/sh`, single-quoted.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// Runs `command` under `config`, for at most `timeout`.
pub async fn run_command(
    config: &ProcessConfig,
    command: &str,
    timeout: Duration,
) -> Result<CommandOutput, String> {
    let helper = config
        .helper
        .as_ref()
        .ok_or("carapace cannot find its own binary to sandbox the command")?;
    let mut process = tokio::process::Command::new(helper);
    process.arg(HELPER_ARG);
    for root in &config.write_roots {
        process.arg("--write").arg(root);
    }
    if config.allow_network {
        process.arg("--network");
    }
    if !config.require_os_sandbox {
        process.arg("--sandbox-optional");
    }
    process
        .arg("--")
        .arg(command)
        .current_dir(&config.cwd)
        .env_clear()
        .envs(fresh_env(config))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = process
        .spawn()
        .map_err(|e| format!("cannot start the command: {e}"))?;
    let pid = child.id();
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let cap = config.output_cap;
    let read_out = tokio::spawn(async move { read_capped(&mut stdout, cap).await });
    let read_err = tokio::spawn(async move { read_capped(&mut stderr, cap).await });

    let (status, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            kill_group(pid);
            (child.wait().await.ok(), true)
        }
    };
    // The group may have children still holding the pipes: end them too.
    kill_group(pid);
    let (stdout, out_truncated) = read_out.await.unwrap_or_default();
    let (stderr, err_truncated) = read_err.await.unwrap_or_default();
    let exit_code = status.and_then(|s| s.code());
    if exit_code == Some(REFUSED_EXIT)
        && stdout.is_empty()
        && stderr.starts_with(b"carapace sandbox:")
    {
        return Err(String::from_utf8_lossy(&stderr).trim().to_string());
    }
    Ok(CommandOutput {
        stdout,
        stderr,
        exit_code: if timed_out { None } else { exit_code },
        timed_out,
        truncated: out_truncated || err_truncated,
    })
}

fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
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

/// The helper mode: `carapace __sandbox-exec [--write DIR]… [--network]
/// [--sandbox-optional] -- COMMAND`. Applies the sandbox to itself, then
/// execs `/bin/sh -c COMMAND`; returns only if that failed.
pub fn helper_main(args: &[String]) -> i32 {
    let mut writes = Vec::new();
    let mut network = false;
    let mut required = true;
    let mut command = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--write" => match iter.next() {
                Some(dir) => writes.push(PathBuf::from(dir)),
                None => return refuse("--write needs a directory"),
            },
            "--network" => network = true,
            "--sandbox-optional" => required = false,
            "--" => {
                command = iter.next().cloned();
                break;
            }
            other => return refuse(&format!("unknown argument {other}")),
        }
    }
    let Some(command) = command else {
        return refuse("no command");
    };
    if let Err(reason) = confine(&writes, network) {
        if required {
            return refuse(&format!(
                "the OS sandbox is required but cannot be applied here ({reason}); the command was not run"
            ));
        }
        eprintln!("carapace sandbox: warning: running without the OS sandbox ({reason})");
    }
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(&command)
        .exec();
    refuse(&format!("cannot run /bin/sh: {error}"))
}

fn refuse(message: &str) -> i32 {
    eprintln!("carapace sandbox: {message}");
    REFUSED_EXIT
}

/// Leaves the network (unless granted) and applies Landlock to this process.
#[cfg(target_os = "linux")]
fn confine(writes: &[PathBuf], network: bool) -> Result<(), String> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
    };
    let abi = ABI::V5;
    let mut no_network_namespace = None;
    if !network && let Err(e) = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET) {
        // Not permitted here (no user namespaces): Landlock's TCP rules
        // below still refuse every connection.
        no_network_namespace = Some(e);
    }
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| e.to_string())?;
    if !network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| e.to_string())?;
    }
    let status = ruleset
        .create()
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(
            ["/dev/null", "/dev/zero", "/dev/tty", "/dev/urandom"],
            AccessFs::from_all(abi),
        ))
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(writes, AccessFs::from_all(abi)))
        .map_err(|e| e.to_string())?
        .restrict_self()
        .map_err(|e| e.to_string())?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        RulesetStatus::PartiallyEnforced if network || no_network_namespace.is_none() => Ok(()),
        RulesetStatus::PartiallyEnforced => Err(format!(
            "Landlock is only partly supported and no network namespace could be made ({})",
            no_network_namespace
                .map(|e| e.to_string())
                .unwrap_or_default()
        )),
        RulesetStatus::NotEnforced => Err("the kernel does not enforce Landlock".into()),
    }
}

#[cfg(not(target_os = "linux"))]
fn confine(_writes: &[PathBuf], _network: bool) -> Result<(), String> {
    Err("no OS sandbox is implemented for this platform".into())
}
