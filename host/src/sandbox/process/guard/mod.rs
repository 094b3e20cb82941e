//! The creation guard: a command cannot make a protected name — `.git`,
//! `.vscode`, `.cargo/config.toml`, … at any depth under its write roots,
//! whether or not it exists — so nothing it plants is found by the user's
//! next `git status` or editor, even after carapace is killed, and nothing
//! the user makes meanwhile is ever touched.
//!
//! Landlock grants writes by folder, not by name, so the calls that make a
//! name (`open` with `O_CREAT`, `mkdir`, `mknod`, `symlink`, `link`,
//! `rename`, in every form) are trapped by a seccomp user-notification
//! filter and answered by the guard: a process between the call's init and
//! the command, with no capabilities, not dumpable, in the Landlock domain
//! the command's own is nested in — so the command can neither trace nor
//! signal it, while the guard reads the command's memory. The
//! guard copies the call's arguments once, judges the name and makes the
//! call itself (handing an opened file over with `SECCOMP_IOCTL_NOTIF_ADDFD`),
//! so a second thread rewriting the path after the check changes nothing —
//! the race `SECCOMP_USER_NOTIF_FLAG_CONTINUE` would lose. `openat2` and
//! `io_uring` (which would go around the filter) are refused: programs fall
//! back to `openat`.
//!
//! The command's private temp dir and `/dev/shm` are exempt (they are gone
//! when the call ends), and below build output and installed packages
//! (`node_modules`, `target`, …) only `.git` is judged.

mod emulate;
mod filter;
mod target;
mod trace;

pub(super) use filter::install;

use super::creation::CreationRules;
use super::plan::Plan;
use emulate::{Call, Reply};
use nix::errno::Errno;
use nix::unistd::Pid;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;

/// What the guard refuses to make, and how it answers.
pub(super) struct Rules {
    /// The judgement every writer shares.
    creation: CreationRules,
    /// Paths already said to the command (once each).
    said: std::cell::RefCell<std::collections::HashSet<PathBuf>>,
    /// A command process may trace only its own descendants.
    isolate: bool,
}

impl Rules {
    pub fn for_plan(plan: &Plan) -> Self {
        let mut exempt = vec![PathBuf::from("/dev/shm")];
        if let Some((temp, _)) = &plan.temp {
            exempt.push(temp.clone());
        }
        Rules {
            creation: CreationRules::new(&plan.guard_names, plan.guard_paths.clone(), exempt),
            said: Default::default(),
            isolate: plan.uses(super::SandboxLayer::GuardIsolation),
        }
    }

    /// Refuses (`EACCES`) making `entry`'s name, and says why on the
    /// command's stderr.
    fn judge(&self, entry: &target::Entry) -> Result<(), Errno> {
        if !self.creation.may_refuse(&entry.bare) {
            return Ok(());
        }
        let folder = entry.folder();
        if !self.creation.refuses(&folder, &entry.bare) {
            return Ok(());
        }
        let path = folder.join(&entry.bare);
        if let Ok(mut said) = self.said.try_borrow_mut()
            && said.insert(path.clone())
        {
            eprintln!(
                "carapace: {} was not created: commands may not create it (it can make git, an editor or another tool run programs later, outside the sandbox)",
                path.display()
            );
        }
        Err(Errno::EACCES)
    }

    /// Whether renaming the folder `old` to `new` would bring in, whole,
    /// what may not be made there entry by entry.
    fn brings_in(&self, old: &target::Entry, new: &target::Entry) -> bool {
        self.creation
            .brings_in(&old.folder(), &new.folder(), &new.bare)
    }
}

/// Serves the trapped calls of the command `command` until it ends;
/// returns its exit code (128 + the signal that ended it).
pub(super) fn serve(
    listener: OwnedFd,
    rules: &Rules,
    command: Pid,
    signals: &nix::sys::signalfd::SignalFd,
) -> i32 {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    loop {
        let mut fds = [
            PollFd::new(listener.as_fd(), PollFlags::POLLIN),
            PollFd::new(signals.as_fd(), PollFlags::POLLIN),
        ];
        if poll(&mut fds, PollTimeout::NONE).is_err() {
            continue;
        }
        let ready = |fd: &PollFd| fd.revents().is_some_and(|r| r.contains(PollFlags::POLLIN));
        if ready(&fds[0]) {
            serve_one(&listener, rules);
        }
        if ready(&fds[1])
            || fds[0]
                .revents()
                .is_some_and(|r| r.contains(PollFlags::POLLHUP))
        {
            while let Ok(Some(_)) = signals.read_signal() {}
            if let Some(code) = reap(command) {
                return code;
            }
        }
    }
}

/// Reaps every ended child (orphans of the command come to the guard, a
/// subreaper); the command's own end is returned.
pub(super) fn reap(command: Pid) -> Option<i32> {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    loop {
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == command => return Some(code),
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == command => {
                return Some(128 + signal as i32);
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// Receives, judges and answers one trapped call.
fn serve_one(listener: &OwnedFd, rules: &Rules) {
    let Some(request) = filter::receive(listener) else {
        return;
    };
    let id = request.id;
    let call = Call {
        tid: Pid::from_raw(request.pid as i32),
        nr: i64::from(request.data.nr),
        args: request.data.args,
    };
    let still_waiting = || filter::is_waiting(listener, id);
    if trace::is_tracing(call.nr) {
        match trace::judge(&call, rules.isolate, &still_waiting) {
            Ok(()) => filter::let_through(listener, id),
            Err(errno) => filter::respond(listener, id, -(errno as i32)),
        }
        return;
    }
    match emulate::answer(&call, rules, &still_waiting) {
        Reply::Done => filter::respond(listener, id, 0),
        Reply::Failed(errno) => filter::respond(listener, id, -(errno as i32)),
        Reply::File { file, cloexec } => filter::hand_over(listener, id, file.as_raw_fd(), cloexec),
    }
}

/// In the call's init's child: becomes the guard of the command it forks,
/// or, when the plan has no guard, the command itself. Returns only with
/// an exit code.
pub(super) fn start(plan: &Plan, limited_by_group: bool) -> i32 {
    use super::SandboxLayer;
    use super::confine;
    if !plan.uses(SandboxLayer::CreationGuard)
        || plan.guard_names.is_empty() && plan.guard_paths.is_empty()
    {
        let confined = confine::apply(plan, true, limited_by_group);
        return confine::exec_or_refuse(plan, confined);
    }
    // Orphans of the command stay below the guard, so their calls can be
    // read (a process may read the memory of its descendants).
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let restricted = confine::restrict(plan, true);
    let abi = restricted.as_ref().copied().unwrap_or(0);
    let rules = Rules::for_plan(plan);
    let mut children = nix::sys::signal::SigSet::empty();
    children.add(nix::sys::signal::Signal::SIGCHLD);
    let blocked = children.thread_block();
    let signals = nix::sys::signalfd::SignalFd::with_flags(
        &children,
        nix::sys::signalfd::SfdFlags::SFD_CLOEXEC | nix::sys::signalfd::SfdFlags::SFD_NONBLOCK,
    );
    let pair = nix::sys::socket::socketpair(
        nix::sys::socket::AddressFamily::Unix,
        nix::sys::socket::SockType::SeqPacket,
        None,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
    );
    let (Ok(()), Ok(signals), Ok((ours, theirs))) = (blocked, signals, pair) else {
        return super::plan::refuse("cannot set up the creation guard; the command was not run");
    };
    // SAFETY: single-threaded (the init's fork of a single thread).
    #[allow(unsafe_code)]
    let fork = unsafe { nix::unistd::fork() };
    match fork {
        Err(e) => super::plan::refuse(&format!("cannot fork: {e}")),
        Ok(nix::unistd::ForkResult::Child) => {
            drop(ours);
            drop(signals);
            let _ = children.thread_unblock();
            let confined = restricted
                .and_then(|abi| confine::nest(plan, abi))
                .and_then(|abi| confine::finish(plan, true, limited_by_group, abi))
                .and_then(|()| install_and_send(&theirs));
            drop(theirs);
            std::process::exit(confine::exec_or_refuse(plan, confined))
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            drop(theirs);
            if let Some(code) = harden(plan, abi, child) {
                return code;
            }
            match receive_listener(&ours) {
                Some(listener) => serve(listener, &rules, child, &signals),
                None => loop {
                    // No guard (the command was refused, or runs without
                    // one): wait for its end.
                    if let Some(code) = reap(child) {
                        return code;
                    }
                    let _ = nix::poll::poll(
                        &mut [nix::poll::PollFd::new(
                            signals.as_fd(),
                            nix::poll::PollFlags::POLLIN,
                        )],
                        nix::poll::PollTimeout::NONE,
                    );
                    while let Ok(Some(_)) = signals.read_signal() {}
                },
            }
        }
    }
}

/// The guard's own filter; `Some(exit code)` when it cannot be applied
/// and the sandbox is required (the command is ended before it runs).
fn harden(plan: &Plan, abi: i32, command: Pid) -> Option<i32> {
    let reason = super::confine::guard_filter(plan, abi).err()?.describe();
    if !plan.required {
        super::plan::warn(&format!(
            "the creation guard runs without its filter ({reason})"
        ));
        return None;
    }
    let _ = nix::sys::signal::kill(command, nix::sys::signal::Signal::SIGKILL);
    let _ = nix::sys::wait::waitpid(command, None);
    Some(super::plan::refuse(&format!(
        "the OS sandbox is required but the creation guard cannot be confined ({reason}); the command was not run"
    )))
}

/// In the command: installs the filter and gives its listener to the
/// guard.
fn install_and_send(to_guard: &OwnedFd) -> Result<(), super::confine::ConfineError> {
    use super::confine::ConfineError;
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    let listener = install().map_err(ConfineError::Guard)?;
    let fds = [listener.as_raw_fd()];
    sendmsg::<()>(
        to_guard.as_raw_fd(),
        &[std::io::IoSlice::new(b"g")],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )
    .map_err(ConfineError::Handoff)?;
    Ok(())
}

/// The listener, once the command sent it; `None` when the command went
/// on (or ended) without one.
fn receive_listener(from_command: &OwnedFd) -> Option<OwnedFd> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    use std::os::fd::FromRawFd;
    let mut byte = [0u8; 1];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let message = recvmsg::<()>(
        from_command.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .ok()?;
    for control in message.cmsgs().ok()? {
        if let ControlMessageOwned::ScmRights(fds) = control
            && let Some(&fd) = fds.first()
        {
            // SAFETY: the kernel just installed this descriptor for us.
            #[allow(unsafe_code)]
            return Some(unsafe { OwnedFd::from_raw_fd(fd) });
        }
    }
    None
}
