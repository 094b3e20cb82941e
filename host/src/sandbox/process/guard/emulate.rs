//! The trapped calls, judged and then made by the guard itself, from the
//! copies of their arguments it read once: what the task changes in its
//! memory after the check is never what gets used. The guard runs under
//! the command's Landlock rules (the command's domain is nested in the
//! guard's, with the same rules), with its user and no capabilities, so a
//! call it makes is allowed exactly when the command's own would be.

use super::Rules;
use super::target::{Entry, Located, entry_below, locate, open_task_entry, read_string, umask};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, OpenHow, RenameFlags, ResolveFlag, openat2};
use nix::sys::stat::{Mode, SFlag};
use nix::unistd::Pid;
use std::os::fd::OwnedFd;

/// What the trapped call returns.
pub(super) enum Reply {
    Done,
    Failed(Errno),
    /// An open file for the task (the call's result is its number there).
    File {
        file: OwnedFd,
        cloexec: bool,
    },
}

/// A trapped call's number and arguments.
pub(super) struct Call {
    pub tid: Pid,
    pub nr: i64,
    pub args: [u64; 6],
}

impl Call {
    fn string(&self, index: usize) -> Result<Vec<u8>, Errno> {
        read_string(self.tid, self.args[index])
    }
    fn fd(&self, index: usize) -> i32 {
        // A file descriptor is an `int`: the low half of the register.
        self.args[index] as u32 as i32
    }
    fn int(&self, index: usize) -> u32 {
        self.args[index] as u32
    }
    fn at(&self, dirfd: usize, path: usize) -> Result<Located, Errno> {
        locate(self.tid, self.fd(dirfd), &self.string(path)?)
    }
}

/// Judges and makes one trapped call; `still_waiting` says the task is
/// still the one that made it (checked after reading it, before acting).
pub(super) fn answer(call: &Call, rules: &Rules, still_waiting: &dyn Fn() -> bool) -> Reply {
    let made = make(call, rules, still_waiting);
    match made {
        Ok(Some(file)) => {
            let flags = open_flags(call).unwrap_or(0);
            Reply::File {
                file,
                cloexec: flags & libc::O_CLOEXEC != 0,
            }
        }
        Ok(None) => Reply::Done,
        Err(errno) => Reply::Failed(errno),
    }
}

/// The open flags of an open-like call.
fn open_flags(call: &Call) -> Option<i32> {
    match call.nr {
        libc::SYS_openat => Some(call.int(2) as i32),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_open => Some(call.int(1) as i32),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_creat => Some(libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC),
        _ => None,
    }
}

fn make(call: &Call, rules: &Rules, ready: &dyn Fn() -> bool) -> Result<Option<OwnedFd>, Errno> {
    let cwd = libc::AT_FDCWD as u32 as u64;
    // The calls without a folder argument are their `*at` form at the
    // working directory.
    let (nr, args) = match call.nr {
        #[cfg(target_arch = "x86_64")]
        libc::SYS_open => (
            libc::SYS_openat,
            [cwd, call.args[0], call.args[1], call.args[2], 0, 0],
        ),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_creat => {
            let flags = (libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as u64;
            (
                libc::SYS_openat,
                [cwd, call.args[0], flags, call.args[1], 0, 0],
            )
        }
        #[cfg(target_arch = "x86_64")]
        libc::SYS_mkdir => (
            libc::SYS_mkdirat,
            [cwd, call.args[0], call.args[1], 0, 0, 0],
        ),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_mknod => (
            libc::SYS_mknodat,
            [cwd, call.args[0], call.args[1], call.args[2], 0, 0],
        ),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_symlink => (
            libc::SYS_symlinkat,
            [call.args[0], cwd, call.args[1], 0, 0, 0],
        ),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_link => (
            libc::SYS_linkat,
            [cwd, call.args[0], cwd, call.args[1], 0, 0],
        ),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_rename => (
            libc::SYS_renameat2,
            [cwd, call.args[0], cwd, call.args[1], 0, 0],
        ),
        libc::SYS_renameat => (
            libc::SYS_renameat2,
            [call.args[0], call.args[1], call.args[2], call.args[3], 0, 0],
        ),
        nr => (nr, call.args),
    };
    let call = Call {
        tid: call.tid,
        nr,
        args,
    };
    match nr {
        libc::SYS_openat => open(&call, rules, ready).map(Some),
        libc::SYS_mkdirat => mkdir(&call, rules, ready).map(|()| None),
        libc::SYS_mknodat => mknod(&call, rules, ready).map(|()| None),
        libc::SYS_symlinkat => symlink(&call, rules, ready).map(|()| None),
        libc::SYS_linkat => link(&call, rules, ready).map(|()| None),
        libc::SYS_renameat2 => rename(&call, rules, ready).map(|()| None),
        _ => Err(Errno::ENOSYS),
    }
}

/// The entry a new name would be made at, judged.
fn new_entry(located: Located, rules: &Rules) -> Result<Entry, Errno> {
    match located {
        // The task's own open file exists: no name is made there.
        Located::OpenFile(_) => Err(Errno::EEXIST),
        Located::Entry(entry) => {
            rules.judge(&entry)?;
            Ok(entry)
        }
    }
}

fn gone() -> Errno {
    Errno::ESRCH
}

fn mkdir(call: &Call, rules: &Rules, ready: &dyn Fn() -> bool) -> Result<(), Errno> {
    let entry = new_entry(call.at(0, 1)?, rules)?;
    let mode = Mode::from_bits_truncate(call.int(2) & 0o7777);
    if !ready() {
        return Err(gone());
    }
    nix::sys::stat::umask(umask(call.tid));
    nix::sys::stat::mkdirat(&entry.parent, entry.name.as_c_str(), mode)
}

fn mknod(call: &Call, rules: &Rules, ready: &dyn Fn() -> bool) -> Result<(), Errno> {
    let entry = new_entry(call.at(0, 1)?, rules)?;
    let mode = call.int(2);
    let kind = SFlag::from_bits_truncate(mode & libc::S_IFMT);
    let kind = if kind.is_empty() {
        SFlag::S_IFREG
    } else {
        kind
    };
    if !ready() {
        return Err(gone());
    }
    nix::sys::stat::umask(umask(call.tid));
    nix::sys::stat::mknodat(
        &entry.parent,
        entry.name.as_c_str(),
        kind,
        Mode::from_bits_truncate(mode & 0o7777),
        call.args[3] as libc::dev_t,
    )
}

fn symlink(call: &Call, rules: &Rules, ready: &dyn Fn() -> bool) -> Result<(), Errno> {
    let points_to = std::ffi::CString::new(call.string(0)?).map_err(|_| Errno::EINVAL)?;
    let entry = new_entry(call.at(1, 2)?, rules)?;
    if !ready() {
        return Err(gone());
    }
    nix::unistd::symlinkat(points_to.as_c_str(), &entry.parent, entry.name.as_c_str())
}

fn link(call: &Call, rules: &Rules, ready: &dyn Fn() -> bool) -> Result<(), Errno> {
    let flags = AtFlags::from_bits_truncate(call.int(4) as i32);
    let old_path = call.string(1)?;
    let entry = new_entry(call.at(2, 3)?, rules)?;
    if flags.contains(AtFlags::AT_EMPTY_PATH) && old_path.is_empty() {
        // The task's open file itself (the kernel asks for
        // CAP_DAC_READ_SEARCH, which neither of us has).
        let file = open_task_entry(call.tid, &format!("fd/{}", call.fd(0)))?;
        if !ready() {
            return Err(gone());
        }
        return nix::unistd::linkat(&file, "", &entry.parent, entry.name.as_c_str(), flags);
    }
    let old = locate(call.tid, call.fd(0), &old_path)?;
    if !ready() {
        return Err(gone());
    }
    match old {
        Located::OpenFile(path) => nix::unistd::linkat(
            nix::fcntl::AT_FDCWD,
            path.as_c_str(),
            &entry.parent,
            entry.name.as_c_str(),
            flags,
        ),
        Located::Entry(old) => nix::unistd::linkat(
            &old.parent,
            old.name.as_c_str(),
            &entry.parent,
            entry.name.as_c_str(),
            flags,
        ),
    }
}

fn rename(call: &Call, rules: &Rules, ready: &dyn Fn() -> bool) -> Result<(), Errno> {
    let flags = RenameFlags::from_bits_retain(call.int(4));
    let Located::Entry(old) = call.at(0, 1)? else {
        return Err(Errno::EXDEV);
    };
    let new = new_entry(call.at(2, 3)?, rules)?;
    if flags.contains(RenameFlags::RENAME_EXCHANGE) {
        // Both names are given something new.
        rules.judge(&old)?;
    }
    let is_folder = nix::sys::stat::fstatat(
        &old.parent,
        old.name.as_c_str(),
        AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .is_ok_and(|s| s.st_mode & libc::S_IFMT == libc::S_IFDIR);
    if is_folder && rules.brings_in(&old, &new) {
        // "Not on this filesystem": `mv` then copies, entry by entry,
        // through the guard.
        return Err(Errno::EXDEV);
    }
    if !ready() {
        return Err(gone());
    }
    nix::fcntl::renameat2(
        &old.parent,
        old.name.as_c_str(),
        &new.parent,
        new.name.as_c_str(),
        flags,
    )
}

/// How many dangling symlinks one open follows before giving up, as the
/// kernel's own limit on nested links.
const MAX_LINKS: usize = 40;

fn open(call: &Call, rules: &Rules, ready: &dyn Fn() -> bool) -> Result<OwnedFd, Errno> {
    // `openat2` refuses what `openat` ignores: unknown flags and mode bits.
    let mut flags = OFlag::from_bits_truncate(call.int(2) as i32) | OFlag::O_CLOEXEC;
    let mode = Mode::from_bits_truncate(call.int(3) & 0o7777);
    if flags.contains(OFlag::O_PATH) {
        flags.remove(OFlag::O_CREAT | OFlag::O_EXCL);
    }
    let located = call.at(0, 1)?;
    if !ready() {
        return Err(gone());
    }
    match located {
        Located::OpenFile(path) => nix::fcntl::open(path.as_c_str(), flags, mode),
        Located::Entry(entry) => open_entry(entry, flags, mode, rules, call.tid, 0),
    }
}

/// Opens (or creates) `entry`'s name. A name made here is made exactly
/// where it was judged: creation uses `O_EXCL`, which never follows a
/// symlink, and a dangling symlink is followed by the guard, its target
/// judged as a new name in turn.
fn open_entry(
    entry: Entry,
    flags: OFlag,
    mode: Mode,
    rules: &Rules,
    tid: Pid,
    links: usize,
) -> Result<OwnedFd, Errno> {
    let how = |flags: OFlag, mode: Mode| {
        OpenHow::new()
            .flags(flags)
            .mode(mode)
            .resolve(ResolveFlag::RESOLVE_NO_MAGICLINKS)
    };
    let name = entry.name.as_c_str();
    if !flags.contains(OFlag::O_CREAT) {
        return openat2(&entry.parent, name, how(flags, Mode::empty()));
    }
    rules.judge(&entry)?;
    if flags.contains(OFlag::O_EXCL) {
        nix::sys::stat::umask(umask(tid));
        return openat2(&entry.parent, name, how(flags, mode));
    }
    for _ in 0..4 {
        match openat2(
            &entry.parent,
            name,
            how(flags - OFlag::O_CREAT, Mode::empty()),
        ) {
            Err(Errno::ENOENT) => {}
            opened => return opened,
        }
        nix::sys::stat::umask(umask(tid));
        match openat2(&entry.parent, name, how(flags | OFlag::O_EXCL, mode)) {
            Err(Errno::EEXIST) => {}
            created => return created,
        }
        // Neither there nor creatable: a symlink to nothing (or the name
        // came and went between the two tries).
        if let Ok(points_to) = nix::fcntl::readlinkat(&entry.parent, name) {
            if links >= MAX_LINKS {
                return Err(Errno::ELOOP);
            }
            let points_to = points_to.as_encoded_bytes();
            let base = if points_to.starts_with(b"/") {
                nix::fcntl::open("/", OFlag::O_PATH | OFlag::O_CLOEXEC, Mode::empty())?
            } else {
                entry.parent.try_clone().map_err(|_| Errno::EMFILE)?
            };
            let relative = points_to.strip_prefix(b"/").unwrap_or(points_to);
            let next = entry_below(base, relative)?;
            return open_entry(next, flags, mode, rules, tid, links + 1);
        }
    }
    Err(Errno::EAGAIN)
}
