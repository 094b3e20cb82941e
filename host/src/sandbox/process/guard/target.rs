//! The trapped process as the guard sees it: its memory (the path
//! arguments, copied once, so nothing the process changes afterwards is
//! what gets judged or used), its working directory and open files, and
//! where a path it named leads.

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
use nix::sys::stat::Mode;
use nix::unistd::Pid;
use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

/// The longest path the kernel takes, with its NUL.
const PATH_MAX: usize = libc::PATH_MAX as usize;

/// A NUL-terminated string at `addr` in the task `tid`'s memory.
pub(super) fn read_string(tid: Pid, addr: u64) -> Result<Vec<u8>, Errno> {
    use nix::sys::uio::{RemoteIoVec, process_vm_readv};
    if addr == 0 {
        return Err(Errno::EFAULT);
    }
    let mut text = Vec::new();
    let mut at = usize::try_from(addr).map_err(|_| Errno::EFAULT)?;
    while text.len() < PATH_MAX {
        // Never across a page boundary in one read: the next page may be
        // unmapped while the string ends on this one.
        let want = (4096 - at % 4096).min(PATH_MAX - text.len());
        let mut buf = vec![0u8; want];
        let read = process_vm_readv(
            tid,
            &mut [std::io::IoSliceMut::new(&mut buf)],
            &[RemoteIoVec {
                base: at,
                len: want,
            }],
        )?;
        if read == 0 {
            return Err(Errno::EFAULT);
        }
        if let Some(end) = buf[..read].iter().position(|b| *b == 0) {
            text.extend_from_slice(&buf[..end]);
            return Ok(text);
        }
        text.extend_from_slice(&buf[..read]);
        at += read;
    }
    Err(Errno::ENAMETOOLONG)
}

/// The task's umask (each task has its own).
pub(super) fn umask(tid: Pid) -> Mode {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        .map_or(Mode::from_bits_truncate(0o022), Mode::from_bits_truncate)
}

/// Where a path leads: a name in a folder, or one of the task's own open
/// files (`/dev/stdout`, `/proc/self/fd/3`).
pub(super) enum Located {
    Entry(Entry),
    /// `/proc/<tid>/fd/<n>`, to be opened (or linked) as it stands.
    OpenFile(CString),
}

/// The last component of a path and the folder it is in.
pub(super) struct Entry {
    pub parent: OwnedFd,
    /// As the syscall takes it (a trailing `/` kept).
    pub name: CString,
    /// The component itself, for judging.
    pub bare: String,
}

impl Entry {
    /// The folder's path, as the guard's own view of it.
    pub fn folder(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", self.parent.as_raw_fd())).unwrap_or_default()
    }
}

/// The task's spellings of its own open files, as paths under its
/// `/proc/<tid>` (the guard's own `/proc/self` is the guard).
fn own_files(tid: Pid, path: &[u8]) -> Option<Vec<u8>> {
    let fd = |n: &str| format!("/proc/{tid}/fd/{n}").into_bytes();
    for (name, to) in [
        (&b"/dev/stdin"[..], fd("0")),
        (b"/dev/stdout", fd("1")),
        (b"/dev/stderr", fd("2")),
    ] {
        if path == name {
            return Some(to);
        }
    }
    for (prefix, to) in [
        (&b"/proc/self"[..], format!("/proc/{tid}")),
        (b"/proc/thread-self", format!("/proc/{tid}")),
        (b"/dev/fd", format!("/proc/{tid}/fd")),
    ] {
        if let Some(rest) = path.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with(b"/"))
        {
            return Some([to.as_bytes(), rest].concat());
        }
    }
    None
}

fn c_string(bytes: &[u8]) -> Result<CString, Errno> {
    CString::new(bytes).map_err(|_| Errno::EINVAL)
}

/// Opens a folder, following ordinary symlinks but never a magic link: a
/// path can reach the task's open files only through the spellings
/// [`own_files`] turns into the task's `/proc` entries.
fn open_folder<Fd: AsFd>(base: Fd, path: &[u8]) -> Result<OwnedFd, Errno> {
    let path = if path.is_empty() { &b"."[..] } else { path };
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_MAGICLINKS);
    openat2(base, c_string(path)?.as_c_str(), how)
}

/// Opens one of the task's own entries (`cwd`, `fd/<n>`), a magic link the
/// guard may follow because it is the task's.
pub(super) fn open_task_entry(tid: Pid, entry: &str) -> Result<OwnedFd, Errno> {
    nix::fcntl::open(
        format!("/proc/{tid}/{entry}").as_str(),
        OFlag::O_PATH | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// Where `path`, relative to `dirfd` in the task `tid`, leads.
pub(super) fn locate(tid: Pid, dirfd: i32, path: &[u8]) -> Result<Located, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let rewritten = own_files(tid, path);
    let path = rewritten.as_deref().unwrap_or(path);
    // `/proc/<tid>/fd/<n>`, `cwd` or `root`, and what lies below it: one
    // hop through the task's own entry, then ordinary resolution.
    if rewritten.is_some()
        && let Some((entry, below)) = task_hop(tid, path)
    {
        if below.iter().all(|b| *b == b'/') && entry.starts_with("fd/") {
            return Ok(Located::OpenFile(c_string(
                format!("/proc/{tid}/{entry}").as_bytes(),
            )?));
        }
        let base = open_task_entry(tid, &entry)?;
        let below = below.strip_prefix(b"/").unwrap_or(below);
        return entry_below(base, below).map(Located::Entry);
    }
    let base = if path.starts_with(b"/") {
        open_task_entry(tid, "root")?
    } else if dirfd == libc::AT_FDCWD {
        open_task_entry(tid, "cwd")?
    } else if dirfd >= 0 {
        open_task_entry(tid, &format!("fd/{dirfd}")).map_err(|_| Errno::EBADF)?
    } else {
        return Err(Errno::EBADF);
    };
    let relative = path.strip_prefix(b"/").unwrap_or(path);
    entry_below(base, relative).map(Located::Entry)
}

/// The task's own entry a rewritten path starts with (`fd/3`, `cwd`,
/// `root`), and the rest of the path.
fn task_hop(tid: Pid, path: &[u8]) -> Option<(String, &[u8])> {
    let rest = path.strip_prefix(format!("/proc/{tid}/").as_bytes())?;
    let split = |rest: &'_ [u8]| {
        let end = rest.iter().position(|b| *b == b'/').unwrap_or(rest.len());
        (rest[..end].to_vec(), end)
    };
    let (first, end) = split(rest);
    let (entry, used) = match first.as_slice() {
        b"cwd" | b"root" => (String::from_utf8_lossy(&first).into_owned(), end),
        b"fd" => {
            let after = rest.get(end + 1..)?;
            let (number, len) = split(after);
            if number.is_empty() || !number.iter().all(u8::is_ascii_digit) {
                return None;
            }
            (
                format!("fd/{}", String::from_utf8_lossy(&number)),
                end + 1 + len,
            )
        }
        _ => return None,
    };
    Some((entry, &rest[used..]))
}

/// Splits `path` (relative to `base`) into its folder, opened, and its
/// last component. `.` and `..` are never new names: their folder is the
/// path itself.
pub(super) fn entry_below(base: OwnedFd, path: &[u8]) -> Result<Entry, Errno> {
    let trimmed_len = path.len() - path.iter().rev().take_while(|b| **b == b'/').count();
    let trimmed = &path[..trimmed_len];
    let (folder, last) = match trimmed.iter().rposition(|b| *b == b'/') {
        Some(slash) => (&trimmed[..slash], &trimmed[slash + 1..]),
        None => (&b""[..], trimmed),
    };
    if last.is_empty() || last == b"." || last == b".." {
        return Ok(Entry {
            parent: open_folder(&base, trimmed)?,
            name: c_string(b".")?,
            bare: ".".into(),
        });
    }
    let parent = if folder.is_empty() {
        base
    } else {
        open_folder(&base, folder)?
    };
    Ok(Entry {
        parent,
        name: c_string(&path[folder.len() + usize::from(!folder.is_empty())..])?,
        bare: String::from_utf8_lossy(last).into_owned(),
    })
}
