//! Opening exactly what the policy decided on.
//!
//! The policy decides on names with every symlink resolved. Between that
//! decision and the moment a file is staged or saved, a component of the
//! name can be swapped for a symlink (by a server running beside the
//! session, by anything else of the user's). So the host never re-resolves
//! a decided name: it walks it from `/` one component at a time with
//! `O_NOFOLLOW` — a symlink anywhere is an error, not a detour — and then
//! works on the descriptor it holds (linking, copying, creating, renaming
//! relative to it). This is `openat2(RESOLVE_NO_SYMLINKS)` done by hand, so
//! it works on every Linux kernel.

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, mkdirat};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// A file's identity: what a decision is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    fn of(stat: &FileStat) -> Self {
        FileId {
            dev: stat.st_dev,
            ino: stat.st_ino,
        }
    }
}

/// What the policy learns about a decided path when it opens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileFacts {
    pub id: FileId,
    /// How many names the file has (more than one: a hard link exists).
    pub links: u64,
    pub is_file: bool,
    pub is_dir: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BoundError {
    #[error("`{0}` passes through a symbolic link that was not there when it was checked")]
    LinkInPath(PathBuf),
    #[error("`{0}` is not an absolute, normal path")]
    NotNormal(PathBuf),
    #[error("cannot open `{path}`: {errno}")]
    Open { path: PathBuf, errno: Errno },
}

/// An open `O_PATH` descriptor of a decided path.
#[derive(Debug)]
pub struct Bound {
    fd: OwnedFd,
    stat: FileStat,
}

impl Bound {
    pub fn facts(&self) -> FileFacts {
        FileFacts {
            id: FileId::of(&self.stat),
            links: self.stat.st_nlink,
            is_file: self.is_file(),
            is_dir: self.is_dir(),
        }
    }

    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    pub fn is_file(&self) -> bool {
        self.kind() == SFlag::S_IFREG
    }

    pub fn is_dir(&self) -> bool {
        self.kind() == SFlag::S_IFDIR
    }

    fn kind(&self) -> SFlag {
        SFlag::from_bits_truncate(self.stat.st_mode) & SFlag::S_IFMT
    }

    /// A path that names this very descriptor's file (`/proc/self/fd/N`):
    /// opening or linking it reaches what was opened, whatever its name
    /// has become since.
    pub fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// Gives the opened file the name `target` (a hard link to exactly
    /// it): `linkat(AT_EMPTY_PATH)`, which needs Linux 6.10 or
    /// `CAP_DAC_READ_SEARCH`, else through `/proc/self/fd`.
    pub fn link_to(&self, target: &Path) -> nix::Result<()> {
        use nix::fcntl::AtFlags;
        use nix::unistd::linkat;
        linkat(&self.fd, "", AT_FDCWD, target, AtFlags::AT_EMPTY_PATH).or_else(|_| {
            linkat(
                AT_FDCWD,
                &self.proc_path(),
                AT_FDCWD,
                target,
                AtFlags::AT_SYMLINK_FOLLOW,
            )
        })
    }
}

fn components(path: &Path) -> Result<Vec<&std::ffi::OsStr>, BoundError> {
    if !path.is_absolute() {
        return Err(BoundError::NotNormal(path.to_path_buf()));
    }
    path.components()
        .filter(|c| !matches!(c, Component::RootDir))
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(BoundError::NotNormal(path.to_path_buf())),
        })
        .collect()
}

fn root() -> Result<OwnedFd, BoundError> {
    openat(
        AT_FDCWD,
        "/",
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| BoundError::Open {
        path: "/".into(),
        errno,
    })
}

/// Opens the directory `name` inside `dir`, never through a link; makes it
/// first when `create`. `Ok(None)`: it does not exist (or is not a
/// directory).
fn step(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    create: bool,
    whole: &Path,
) -> Result<Option<OwnedFd>, BoundError> {
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    for _ in 0..2 {
        match openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => return Ok(Some(fd)),
            Err(Errno::ENOENT) if create => {
                match mkdirat(dir, name, Mode::from_bits_truncate(0o777)) {
                    Ok(()) | Err(Errno::EEXIST) => continue,
                    Err(errno) => {
                        return Err(BoundError::Open {
                            path: whole.to_path_buf(),
                            errno,
                        });
                    }
                }
            }
            Err(Errno::ENOENT) => return Ok(None),
            // A symlink opened with O_NOFOLLOW | O_DIRECTORY fails with
            // ENOTDIR, as does a regular file: tell them apart.
            Err(Errno::ENOTDIR | Errno::ELOOP) => {
                return match is_link(dir, name) {
                    true => Err(BoundError::LinkInPath(whole.to_path_buf())),
                    false => Ok(None),
                };
            }
            Err(errno) => {
                return Err(BoundError::Open {
                    path: whole.to_path_buf(),
                    errno,
                });
            }
        }
    }
    Err(BoundError::Open {
        path: whole.to_path_buf(),
        errno: Errno::EAGAIN,
    })
}

fn is_link(dir: &OwnedFd, name: &std::ffi::OsStr) -> bool {
    nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|s| SFlag::from_bits_truncate(s.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK)
}

/// Opens `path` (absolute, normal) without following a link in any of its
/// components, the last included. `Ok(None)`: nothing is there. One
/// `openat2(RESOLVE_NO_SYMLINKS)` where the kernel has it (Linux 5.6), else
/// the same walk by hand.
pub fn open(path: &Path) -> Result<Option<Bound>, BoundError> {
    use nix::fcntl::{OpenHow, ResolveFlag, openat2};
    components(path)?;
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    match openat2(AT_FDCWD, path, how) {
        Ok(fd) => bound(fd, path).map(Some),
        // Missing, or a component is not a directory: nothing is there.
        Err(Errno::ENOENT | Errno::ENOTDIR) => Ok(None),
        Err(Errno::ELOOP) => Err(BoundError::LinkInPath(path.to_path_buf())),
        // No openat2 here (or a filter refuses it): walk.
        Err(Errno::ENOSYS | Errno::EPERM | Errno::EINVAL) => open_by_walking(path),
        Err(errno) => Err(BoundError::Open {
            path: path.to_path_buf(),
            errno,
        }),
    }
}

/// [`open`] one component at a time.
fn open_by_walking(path: &Path) -> Result<Option<Bound>, BoundError> {
    let parts = components(path)?;
    let Some((last, parents)) = parts.split_last() else {
        return bound(root()?, path).map(Some);
    };
    let mut dir = root()?;
    for name in parents {
        match step(&dir, name, false, path)? {
            Some(next) => dir = next,
            None => return Ok(None),
        }
    }
    let fd = match openat(
        &dir,
        *last,
        OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(None),
        Err(errno) => {
            return Err(BoundError::Open {
                path: path.to_path_buf(),
                errno,
            });
        }
    };
    bound(fd, path).map(Some)
}

/// The opened `path` with what it is; a link there (opened itself, not
/// followed) means the path passes through one.
fn bound(fd: OwnedFd, path: &Path) -> Result<Bound, BoundError> {
    let stat = fstat(&fd).map_err(|errno| BoundError::Open {
        path: path.to_path_buf(),
        errno,
    })?;
    let bound = Bound { fd, stat };
    if bound.kind() == SFlag::S_IFLNK {
        return Err(BoundError::LinkInPath(path.to_path_buf()));
    }
    Ok(bound)
}

/// Opens the directory `path` the same way, creating what is missing when
/// `create`. `Ok(None)`: it does not exist (and was not to be created).
pub fn open_dir(path: &Path, create: bool) -> Result<Option<OwnedFd>, BoundError> {
    use nix::fcntl::{OpenHow, ResolveFlag, openat2};
    components(path)?;
    if !create {
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
        match openat2(AT_FDCWD, path, how) {
            Ok(fd) => return Ok(Some(fd)),
            Err(Errno::ENOENT) => return Ok(None),
            // A link, or something that is not a directory, somewhere on
            // the way: the walk tells which. No openat2 here (or a filter
            // refuses it): walk too.
            Err(Errno::ENOTDIR | Errno::ELOOP | Errno::ENOSYS | Errno::EPERM | Errno::EINVAL) => {}
            Err(errno) => {
                return Err(BoundError::Open {
                    path: path.to_path_buf(),
                    errno,
                });
            }
        }
    }
    open_dir_by_walking(path, create)
}

/// [`open_dir`] one component at a time.
fn open_dir_by_walking(path: &Path, create: bool) -> Result<Option<OwnedFd>, BoundError> {
    let mut dir = root()?;
    for name in components(path)? {
        match step(&dir, name, create, path)? {
            Some(next) => dir = next,
            None => return Ok(None),
        }
    }
    Ok(Some(dir))
}

/// The facts about `path` as [`open`] finds them.
pub fn facts(path: &Path) -> Result<Option<FileFacts>, BoundError> {
    Ok(open(path)?.map(|b| b.facts()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_link_is_followed_anywhere_in_the_path() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let base = std::fs::canonicalize(dir.path())?;
        std::fs::create_dir(base.join("real"))?;
        std::fs::write(base.join("real/f"), "x")?;
        std::os::unix::fs::symlink(base.join("real"), base.join("link"))?;
        std::os::unix::fs::symlink(base.join("real/f"), base.join("real/g"))?;
        let opened = open(&base.join("real/f"))?.ok_or("real/f is there")?;
        assert!(opened.is_file() && opened.facts().links == 1);
        assert_eq!(std::fs::read_to_string(opened.proc_path())?, "x");
        assert_eq!(
            open(&base.join("link/f")).err(),
            Some(BoundError::LinkInPath(base.join("link/f")))
        );
        assert_eq!(
            open(&base.join("real/g")).err(),
            Some(BoundError::LinkInPath(base.join("real/g")))
        );
        assert!(open(&base.join("real/missing"))?.is_none());
        // The walk the kernel's openat2 stands in for agrees.
        assert!(open_by_walking(&base.join("real/f"))?.is_some_and(|b| b.is_file()));
        assert_eq!(
            open_by_walking(&base.join("link/f")).err(),
            Some(BoundError::LinkInPath(base.join("link/f")))
        );
        assert!(open_by_walking(&base.join("real/f/under-a-file"))?.is_none());
        assert!(open(&base.join("real/f/under-a-file"))?.is_none());
        assert!(open_dir(&base.join("link"), false).is_err());
        assert!(open_dir_by_walking(&base.join("link"), false).is_err());
        assert!(open_dir(&base.join("real/f"), false)?.is_none());
        assert!(open_dir_by_walking(&base.join("real/f"), false)?.is_none());
        assert!(open_dir(&base.join("link/sub"), false).is_err());
        let made = base.join("new/deeper");
        assert!(open_dir(&made, true)?.is_some() && made.is_dir());
        assert!(open_dir(&base.join("link/sub"), true).is_err());
        assert!(
            !base.join("real/sub").exists(),
            "nothing made through a link"
        );
        std::fs::hard_link(base.join("real/f"), base.join("h"))?;
        assert_eq!(facts(&base.join("h"))?.map(|f| f.links), Some(2));
        Ok(())
    }
}
