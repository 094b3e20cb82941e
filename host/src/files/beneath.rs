//! Writing and deleting in a folder someone else can write — the workspace
//! a model, a command or a repository shapes — without being led
//! elsewhere: every folder on the way is opened beneath a root with no
//! link followed (openat2 `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), a file
//! is written to a temp file carapace creates exclusively there and renamed
//! over the name (a link planted at the name is replaced, never written
//! through), and only a regular file is ever removed.

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
use nix::sys::stat::Mode;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};

fn io(errno: Errno) -> std::io::Error {
    std::io::Error::from(errno)
}

/// `path` split under `root`: its folders' names and its own name.
fn split<'a>(
    root: &Path,
    path: &'a Path,
) -> std::io::Result<(Vec<&'a std::ffi::OsStr>, &'a std::ffi::OsStr)> {
    let relative = path.strip_prefix(root).map_err(|_| {
        std::io::Error::other(format!(
            "{} is not under {}",
            path.display(),
            root.display()
        ))
    })?;
    let mut parts = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => parts.push(name),
            _ => {
                return Err(std::io::Error::other(format!(
                    "{} is not a plain path",
                    path.display()
                )));
            }
        }
    }
    let name = parts
        .pop()
        .ok_or_else(|| std::io::Error::other(format!("{} names no file", path.display())))?;
    Ok((parts, name))
}

/// The folder holding `path`, opened beneath `root` without following a
/// link; missing folders are made (private) when `make` says so.
fn folder_of(
    root: &Path,
    path: &Path,
    make: bool,
) -> std::io::Result<(OwnedFd, std::ffi::OsString)> {
    let (folders, name) = split(root, path)?;
    let mut at = nix::fcntl::open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(io)?;
    for folder in folders {
        if make {
            match nix::sys::stat::mkdirat(&at, folder, Mode::from_bits_truncate(super::DIR_MODE)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(io(e)),
            }
        }
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
        at = openat2(&at, folder, how).map_err(io)?;
    }
    Ok((at, name.to_os_string()))
}

/// Replaces `path` (under `root`) whole with `bytes`, a new file created
/// with `mode`.
pub fn replace_beneath(root: &Path, path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let (folder, name) = folder_of(root, path, true)?;
    let temp = format!(
        ".{}.carapace-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        nanos()
    );
    let file = nix::fcntl::openat(
        &folder,
        temp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(mode),
    )
    .map_err(io)?;
    let mut file = std::fs::File::from(file);
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            nix::fcntl::renameat(&folder, temp.as_str(), &folder, name.as_os_str()).map_err(io)
        });
    if written.is_err() {
        let _ = nix::unistd::unlinkat(
            &folder,
            temp.as_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
    }
    written
}

/// Removes `path` (under `root`) if it is a regular file there — never a
/// folder, never through or at a link; a missing one is not an error.
pub fn remove_file_beneath(root: &Path, path: &Path) -> std::io::Result<()> {
    let (folder, name) = match folder_of(root, path, false) {
        Ok(found) => found,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let stat = match nix::sys::stat::fstatat(
        &folder,
        name.as_os_str(),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    ) {
        Ok(stat) => stat,
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(io(e)),
    };
    if nix::sys::stat::SFlag::from_bits_truncate(stat.st_mode) & nix::sys::stat::SFlag::S_IFMT
        != nix::sys::stat::SFlag::S_IFREG
    {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file; not removed",
            path.display()
        )));
    }
    nix::unistd::unlinkat(
        folder.as_fd(),
        name.as_os_str(),
        nix::unistd::UnlinkatFlags::NoRemoveDir,
    )
    .map_err(io)
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_link_is_replaced_never_written_through() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = std::fs::canonicalize(dir.path())?;
        let (ws, outside) = (root.join("ws"), root.join("outside"));
        std::fs::create_dir_all(ws.join(".carapace"))?;
        std::fs::create_dir_all(&outside)?;
        std::fs::write(outside.join("settings.json"), "theirs")?;
        // A link at the name: replaced.
        let name = ws.join(".carapace/settings.local.json");
        std::os::unix::fs::symlink(outside.join("settings.json"), &name)?;
        replace_beneath(&ws, &name, b"mine", 0o600)?;
        assert_eq!(
            std::fs::read_to_string(outside.join("settings.json"))?,
            "theirs"
        );
        assert_eq!(std::fs::read_to_string(&name)?, "mine");
        assert!(!std::fs::symlink_metadata(&name)?.file_type().is_symlink());
        // A link on the way: refused.
        std::os::unix::fs::symlink(&outside, ws.join("lnk"))?;
        let through = ws.join("lnk/settings.json");
        assert!(replace_beneath(&ws, &through, b"x", 0o600).is_err());
        assert!(remove_file_beneath(&ws, &through).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.join("settings.json"))?,
            "theirs"
        );
        // Only a regular file is removed.
        assert!(remove_file_beneath(&ws, &ws.join(".carapace")).is_err());
        remove_file_beneath(&ws, &name)?;
        assert!(!name.exists());
        remove_file_beneath(&ws, &name)?;
        // The control: a plain write follows the link.
        std::os::unix::fs::symlink(outside.join("settings.json"), &name)?;
        std::fs::write(&name, "through")?;
        assert_eq!(
            std::fs::read_to_string(outside.join("settings.json"))?,
            "through"
        );
        Ok(())
    }
}
