//! Namespaces, the call's init process, and what it mounts.
//!
//! Runs in the helper, which is single-threaded: forking here is sound.

use super::SandboxLayer;
use super::cgroup::CallGroup;
use super::plan::{Plan, refuse, warn};
use nix::mount::{MsFlags, mount};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// The exit code of an init that ended the call because nobody was left to
/// read it (carapace or the helper went away).
const ABANDONED_EXIT: i32 = 137;

/// Enters new PID, mount and IPC namespaces (and a network namespace
/// without a network grant) — directly when privileged, else inside a new
/// user namespace that maps only the caller's own ids. Says whether it made
/// that user namespace.
pub(super) fn enter(network: bool) -> Result<bool, String> {
    let mut flags = CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC;
    if !network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if unshare(flags).is_ok() {
        return Ok(false);
    }
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    unshare(flags | CloneFlags::CLONE_NEWUSER).map_err(|e| format!("no user namespace: {e}"))?;
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text)
            .map_err(|e| format!("cannot write {file}: {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))?;
    Ok(true)
}

/// The helper's side, once in the namespaces: start the init, place it in
/// the call's cgroup, wait for it, end it on SIGTERM, clean up.
/// `own_user_ns`: the helper made a user namespace, in which the user's
/// task count starts afresh.
pub(super) fn supervise(plan: &mut Plan, own_user_ns: bool) -> i32 {
    let group = if plan.uses(SandboxLayer::Limits) {
        // Without one (no delegated cgroup), the per-process limits apply:
        // documented, and not worth a warning on every call.
        CallGroup::create(plan.memory, plan.tasks).ok()
    } else {
        None
    };
    if group.is_none()
        && plan.uses(SandboxLayer::Limits)
        && !own_user_ns
        && !nix::unistd::getuid().is_root()
    {
        plan.user_tasks = super::confine::count_user_tasks();
    }
    let plan = &*plan;
    let mut signals = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        signals.add(signal);
    }
    if let Err(e) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&signals), None) {
        return refuse(&format!("cannot block signals: {e}"));
    }
    let Ok((lifeline_read, lifeline_write)) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
    else {
        return refuse("cannot make a pipe");
    };
    let Ok((go_read, go_write)) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) else {
        return refuse("cannot make a pipe");
    };
    let limited_by_group = group.is_some();
    // SAFETY: the helper is single-threaded (it runs before carapace starts
    // any runtime), so the child may do anything the parent could.
    #[allow(unsafe_code)]
    let fork = unsafe { nix::unistd::fork() };
    match fork {
        Err(e) => refuse(&format!("cannot fork: {e}")),
        Ok(ForkResult::Child) => {
            drop(lifeline_write);
            drop(go_write);
            let code = init(plan, lifeline_read, go_read, limited_by_group);
            std::process::exit(code);
        }
        Ok(ForkResult::Parent { child }) => {
            drop(lifeline_read);
            drop(go_read);
            if let Some(group) = &group
                && let Err(e) = group.admit(child)
            {
                warn(&format!("cannot place the command in its cgroup: {e}"));
            }
            let _ = nix::unistd::write(&go_write, &[1]);
            drop(go_write);
            let code = wait_for_init(child, &signals);
            drop(lifeline_write);
            if let Some(group) = group {
                group.remove();
            }
            code
        }
    }
}

fn wait_for_init(child: Pid, signals: &SigSet) -> i32 {
    let Ok(events) = SignalFd::with_flags(signals, SfdFlags::SFD_CLOEXEC) else {
        return status_code(waitpid(child, None));
    };
    loop {
        match events.read_signal() {
            Ok(Some(info)) if info.ssi_signo == Signal::SIGCHLD as u32 => {
                let status = waitpid(child, Some(WaitPidFlag::WNOHANG));
                if !matches!(status, Ok(WaitStatus::StillAlive)) {
                    return status_code(status);
                }
            }
            Ok(Some(_)) => {
                // SIGTERM/SIGINT/SIGHUP: end the call (the init's death
                // takes the whole namespace with it).
                let _ = kill(child, Signal::SIGKILL);
            }
            Ok(None) => {}
            Err(_) => return status_code(waitpid(child, None)),
        }
    }
}

fn status_code(status: nix::Result<WaitStatus>) -> i32 {
    match status {
        Ok(WaitStatus::Exited(_, code)) => code,
        Ok(WaitStatus::Signaled(_, signal, _)) => 128 + signal as i32,
        _ => ABANDONED_EXIT,
    }
}

/// PID 1 of the call's namespace.
fn init(plan: &Plan, lifeline: OwnedFd, go: OwnedFd, limited_by_group: bool) -> i32 {
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    // Not dumpable: without `CAP_SYS_PTRACE` (which no command has) nothing
    // may trace this process or open its memory, whatever its user. The
    // bridge and the guard are forked from it and keep that; the command
    // gets it back when it execs.
    if plan.uses(SandboxLayer::GuardIsolation)
        && let Err(e) = nix::sys::prctl::set_dumpable(false)
    {
        return refuse(&format!(
            "cannot keep the sandbox's own processes from being traced ({e}); the command was not run"
        ));
    }
    // Wait until the helper has placed us in the cgroup (EOF: it died).
    let mut byte = [0u8; 1];
    if !matches!(nix::unistd::read(&go, &mut byte), Ok(1)) {
        return ABANDONED_EXIT;
    }
    drop(go);
    if let Err(reason) = prepare_mounts(plan) {
        return refuse(&format!(
            "cannot prepare the command's view of the filesystem ({reason}); the command was not run"
        ));
    }
    if let Some(socket) = plan.egress.as_ref().filter(|_| !plan.network)
        && let Err(reason) = super::bridge::start(socket)
    {
        return refuse(&format!("{reason}; the command was not run"));
    }
    // Something to listen on (`allowLocalBinding`).
    if plan.bind
        && !plan.network
        && plan.egress.is_none()
        && let Err(reason) = super::bridge::loopback_up()
    {
        return refuse(&format!("{reason}; the command was not run"));
    }
    // Our own copy of stdout: when carapace stops reading, writing to it
    // errors out — the signal that the call is over, even if carapace was
    // killed outright.
    let stdout = std::io::stdout().as_fd().try_clone_to_owned().ok();
    let mut children = SigSet::empty();
    children.add(Signal::SIGCHLD);
    // Non-blocking: after poll says a signal is there, reading drains them
    // all and must not wait for the next.
    let Ok(reaped) =
        SignalFd::with_flags(&children, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
    else {
        return refuse("cannot watch for the command's end");
    };
    // SAFETY: still single-threaded (the helper's fork of a single thread).
    #[allow(unsafe_code)]
    let fork = unsafe { nix::unistd::fork() };
    let command = match fork {
        Err(e) => return refuse(&format!("cannot fork: {e}")),
        Ok(ForkResult::Child) => {
            drop(lifeline);
            drop(stdout);
            drop(reaped);
            let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
            let _ = nix::unistd::setsid();
            std::process::exit(super::guard::start(plan, limited_by_group));
        }
        Ok(ForkResult::Parent { child }) => child,
    };
    loop {
        let mut fds = vec![
            PollFd::new(reaped.as_fd(), PollFlags::POLLIN),
            PollFd::new(lifeline.as_fd(), PollFlags::POLLIN),
        ];
        if let Some(out) = &stdout {
            fds.push(PollFd::new(out.as_fd(), PollFlags::empty()));
        }
        if poll(&mut fds, PollTimeout::NONE).is_err() {
            continue;
        }
        let gone = |fd: &PollFd| {
            fd.revents().is_some_and(|r| {
                r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLIN)
            })
        };
        if fds[1..].iter().any(gone) {
            return ABANDONED_EXIT;
        }
        if gone(&fds[0]) {
            while let Ok(Some(_)) = reaped.read_signal() {}
            // Reap every child that ended (orphans are ours too); the
            // command's end is the call's end.
            loop {
                match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) | Err(_) => break,
                    Ok(status) if status.pid() == Some(command) => {
                        return status_code(Ok(status));
                    }
                    Ok(_) => {}
                }
            }
        }
    }
}

/// A private `/proc` (only this namespace's processes), a private
/// `/dev/shm`, read-only protected paths, hidden denied paths.
fn prepare_mounts(plan: &Plan) -> Result<(), String> {
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    let hardened = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), "/proc", Some("proc"), hardened, none)
        .map_err(|e| format!("cannot mount a private /proc: {e}"))?;
    if Path::new("/dev/shm").is_dir() {
        mount(
            Some("tmpfs"),
            "/dev/shm",
            Some("tmpfs"),
            hardened,
            Some("size=64m,mode=1777"),
        )
        .map_err(|e| format!("cannot mount a private /dev/shm: {e}"))?;
    }
    if let Some((dir, bytes)) = &plan.temp
        && plan.uses(SandboxLayer::Limits)
    {
        // The temp dir is a tmpfs of its own size: what a command writes
        // there is bounded, and its pages are charged to the call's cgroup.
        let options = format!("size={bytes},mode=0700");
        mount(
            Some("tmpfs"),
            dir,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(options.as_str()),
        )
        .map_err(|e| format!("cannot give {} its size limit: {e}", dir.display()))?;
    }
    if plan.uses(SandboxLayer::ProtectedPaths) {
        // A mount point cannot be renamed or removed: the folder stays, and
        // the read-only binds below go inside it.
        for path in &plan.pinned {
            bind_in_place(path).map_err(|e| format!("cannot pin {}: {e}", path.display()))?;
        }
        for path in &plan.readonly {
            bind_read_only(path, path)
                .map_err(|e| format!("cannot make {} read-only: {e}", path.display()))?;
        }
    }
    let covered: Vec<&Path> = plan.covers.iter().map(|(at, _)| at.as_path()).collect();
    for path in &plan.hide {
        hide(path, &covered).map_err(|e| format!("cannot hide {}: {e}", path.display()))?;
    }
    // After the hiding: a masked file the credential table hides gets its
    // stand-in copy on top.
    for (at, shown) in &plan.covers {
        bind_read_only(shown, at).map_err(|e| {
            format!(
                "cannot show {} in place of {}: {e}",
                shown.display(),
                at.display()
            )
        })?;
    }
    Ok(())
}

/// Mounts `path` on itself, writable as it was.
fn bind_in_place(path: &Path) -> nix::Result<()> {
    let none: Option<&str> = None;
    mount(
        Some(path),
        path,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        none,
    )
}

/// Mounts `source` on `target`, read-only, keeping the flags the kernel
/// locks on mounts from a less privileged namespace.
fn bind_read_only(source: &Path, target: &Path) -> nix::Result<()> {
    let none: Option<&str> = None;
    mount(
        Some(source),
        target,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        none,
    )?;
    let kept = locked_flags(target);
    mount(
        none,
        target,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept,
        none,
    )
}

fn locked_flags(path: &Path) -> MsFlags {
    use nix::sys::statvfs::{FsFlags, statvfs};
    let Ok(stat) = statvfs(path) else {
        return MsFlags::empty();
    };
    let flags = stat.flags();
    let mut kept = MsFlags::empty();
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if flags.contains(fs) {
            kept |= ms;
        }
    }
    kept
}

/// Covers a directory with an empty read-only one, a file with an empty
/// read-only file (mounts follow symlinks, so what a link points to is
/// what gets covered). `covered`: files that get a stand-in copy on top
/// afterwards; inside a hidden directory each gets an empty file to be
/// mounted on.
fn hide(path: &Path, covered: &[&Path]) -> nix::Result<()> {
    let meta = std::fs::metadata(path).map_err(|_| nix::errno::Errno::ENOENT)?;
    if !meta.is_dir() {
        return bind_read_only(Path::new("/dev/null"), path);
    }
    let inside: Vec<&Path> = covered
        .iter()
        .filter(|c| c.starts_with(path) && **c != path)
        .copied()
        .collect();
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    let first = if inside.is_empty() {
        flags | MsFlags::MS_RDONLY
    } else {
        flags
    };
    mount(
        Some("tmpfs"),
        path,
        Some("tmpfs"),
        first,
        Some("size=4k,mode=0555"),
    )?;
    if inside.is_empty() {
        return Ok(());
    }
    let io = |e: std::io::Error| nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO));
    for file in inside {
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::File::create(file).map_err(io)?;
    }
    let none: Option<&str> = None;
    mount(
        none,
        path,
        none,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | flags,
        none,
    )
}
