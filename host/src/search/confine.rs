//! The wall around one search: the root opened without following links,
//! threads that Landlock lets read nothing but what is beneath it, and
//! files opened again beneath it with `openat2`.

use super::SearchError;
use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::Mode;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// The granted root of one search, held open.
pub(super) struct Root {
    pub(super) path: PathBuf,
    /// A directory (`O_PATH`), or the file itself, opened for reading.
    fd: OwnedFd,
    pub(super) is_dir: bool,
}

impl Root {
    /// Opens `path` (absolute, normal) with no symlink in any component:
    /// the walk starts from exactly what the policy decided on.
    pub(super) fn open(path: &Path) -> Result<Self, SearchError> {
        let fail = |reason: String| SearchError::Root {
            path: path.to_path_buf(),
            reason,
        };
        if !path.is_absolute() || path.components().any(|c| !is_normal(&c)) {
            return Err(fail("it is not an absolute, normal path".into()));
        }
        let fd = match open_nofollow(AT_FDCWD, path, OFlag::O_PATH) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => {
                return Err(SearchError::Missing {
                    path: path.to_path_buf(),
                });
            }
            Err(Errno::ELOOP) => {
                return Err(fail("a component of it is a symbolic link".into()));
            }
            Err(errno) => return Err(fail(errno.desc().into())),
        };
        let stat = nix::sys::stat::fstat(&fd).map_err(|e| fail(e.desc().into()))?;
        let kind =
            nix::sys::stat::SFlag::from_bits_truncate(stat.st_mode) & nix::sys::stat::SFlag::S_IFMT;
        let is_dir = kind == nix::sys::stat::SFlag::S_IFDIR;
        if !is_dir && kind != nix::sys::stat::SFlag::S_IFREG {
            return Err(fail("it is neither a file nor a directory".into()));
        }
        let fd = match is_dir {
            true => fd,
            // The file itself, read through what was opened.
            false => reopen(&fd).map_err(|e| fail(e.desc().into()))?,
        };
        Ok(Self {
            path: path.to_path_buf(),
            fd,
            is_dir,
        })
    }

    /// Opens `path`, found by the walk, for reading: beneath the root, no
    /// symlink anywhere below it.
    pub(super) fn open_file(&self, path: &Path) -> std::io::Result<File> {
        if !self.is_dir {
            return Ok(File::from(self.fd.try_clone()?));
        }
        let relative = path
            .strip_prefix(&self.path)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::PermissionDenied))?;
        if relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(std::io::ErrorKind::PermissionDenied.into());
        }
        let flags = OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NOCTTY | OFlag::O_NONBLOCK;
        Ok(File::from(open_nofollow(self.fd.as_fd(), relative, flags)?))
    }

    /// Whether `path` is still beneath the root with no symlink on the way
    /// (checked for every name a Glob returns when Landlock is missing).
    pub(super) fn holds(&self, path: &Path) -> bool {
        let Ok(relative) = path.strip_prefix(&self.path) else {
            return false;
        };
        relative.as_os_str().is_empty()
            || open_nofollow(self.fd.as_fd(), relative, OFlag::O_PATH).is_ok()
    }
}

fn is_normal(component: &Component<'_>) -> bool {
    matches!(component, Component::RootDir | Component::Normal(_))
}

/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, or — on a kernel
/// without it — the same walked by hand, one component at a time with
/// `O_NOFOLLOW`.
fn open_nofollow(
    dir: std::os::fd::BorrowedFd<'_>,
    path: &Path,
    flags: OFlag,
) -> Result<OwnedFd, Errno> {
    let resolve = if path.is_absolute() {
        ResolveFlag::RESOLVE_NO_SYMLINKS
    } else {
        ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS
    };
    let how = OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW)
        .resolve(resolve);
    match openat2(dir, path, how) {
        Err(Errno::ENOSYS) => open_by_hand(dir, path, flags),
        other => other,
    }
}

fn open_by_hand(
    dir: std::os::fd::BorrowedFd<'_>,
    path: &Path,
    flags: OFlag,
) -> Result<OwnedFd, Errno> {
    let parts: Vec<&std::ffi::OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let start = if path.is_absolute() {
        Path::new("/")
    } else {
        Path::new(".")
    };
    let mut current = openat(
        dir,
        start,
        OFlag::O_PATH | OFlag::O_CLOEXEC | OFlag::O_DIRECTORY,
        Mode::empty(),
    )?;
    for (i, name) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let step = match last {
            true => flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            false => OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        };
        current = openat(current.as_fd(), *name, step, Mode::empty())?;
    }
    Ok(current)
}

/// The file behind an `O_PATH` descriptor, opened for reading.
fn reopen(fd: &OwnedFd) -> Result<OwnedFd, Errno> {
    use std::os::fd::AsRawFd;
    let through = format!("/proc/self/fd/{}", fd.as_raw_fd());
    openat(
        AT_FDCWD,
        through.as_str(),
        OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NOCTTY | OFlag::O_NONBLOCK,
        Mode::empty(),
    )
}

/// Runs `work` on a thread of its own that can read only beneath `root`
/// (and the `extra` files: the ignore files of the root's repository above
/// it), as can every thread it starts. `work` is told whether the kernel
/// enforces that; without Landlock the `openat2` opens still hold.
pub(super) fn confined<T: Send>(
    root: &Root,
    extra: Vec<OwnedFd>,
    work: impl FnOnce(bool) -> T + Send,
) -> Result<T, SearchError> {
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let enforced = restrict(root, extra).map_err(|reason| SearchError::Confinement {
                path: root.path.clone(),
                reason,
            })?;
            Ok(work(enforced))
        });
        worker.join().unwrap_or_else(|_| {
            Err(SearchError::Confinement {
                path: root.path.clone(),
                reason: "the search thread panicked".into(),
            })
        })
    })
}

/// This thread (and those it starts) may from now on read only beneath
/// the root, write nowhere, execute nothing. `Ok(false)`: the kernel has
/// no Landlock to enforce it.
fn restrict(root: &Root, extra: Vec<OwnedFd>) -> Result<bool, String> {
    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus,
    };
    let abi = ABI::V10;
    let read = match root.is_dir {
        true => AccessFs::from_read(abi),
        false => AccessFs::ReadFile.into(),
    };
    let status =
        Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))
            .map_err(|e| e.to_string())?
            .create()
            .map_err(|e| e.to_string())?
            .add_rule(PathBeneath::new(root.fd.as_fd(), read))
            .map_err(|e| e.to_string())?
            .add_rules(extra.into_iter().map(|fd| {
                Ok::<_, landlock::RulesetError>(PathBeneath::new(fd, AccessFs::ReadFile))
            }))
            .map_err(|e| e.to_string())?
            .restrict_self()
            .map_err(|e| e.to_string())?;
    Ok(!matches!(status.ruleset, RulesetStatus::NotEnforced))
}

/// The ignore files above a root inside a git repository, up to the
/// repository's top, as ripgrep reads them: regular files only (a symlink
/// is left out, never followed), held open for [`confined`].
pub(super) fn parent_ignore_files(root: &Path) -> Vec<OwnedFd> {
    let mut files = Vec::new();
    if std::fs::symlink_metadata(root.join(".git")).is_ok() {
        return files;
    }
    let mut dir = root.parent();
    while let Some(current) = dir {
        for name in [".gitignore", ".ignore", ".rgignore", ".git/info/exclude"] {
            if let Ok(fd) = open_nofollow(AT_FDCWD, &current.join(name), OFlag::O_PATH)
                && nix::sys::stat::fstat(&fd).is_ok_and(|s| {
                    nix::sys::stat::SFlag::from_bits_truncate(s.st_mode)
                        & nix::sys::stat::SFlag::S_IFMT
                        == nix::sys::stat::SFlag::S_IFREG
                })
            {
                files.push(fd);
            }
        }
        if std::fs::symlink_metadata(current.join(".git")).is_ok() {
            break;
        }
        dir = current.parent();
    }
    // Not in a repository: ripgrep applies no parent's .gitignore then.
    if dir.is_none() {
        files.clear();
    }
    files
}
