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
use std::os::fd::OwnedFd;
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

/// A file by what it is rather than by its name: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileIdentity {
    pub dev: u64,
    pub ino: u64,
}

impl FileIdentity {
    /// The regular file at `path` (not through a link at its name).
    pub fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(path).ok()?;
        meta.is_file().then(|| Self {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
}

/// Removes `path` (under `root`) only if it is still the file `identity`
/// names — never a folder, never through or at a link, never another file
/// swapped in under the name; a missing one is not an error. The name is
/// first moved to a private one, so what is checked is exactly what is
/// removed; anything else is put back.
pub fn remove_file_beneath(
    root: &Path,
    path: &Path,
    identity: FileIdentity,
) -> std::io::Result<()> {
    use nix::fcntl::{RenameFlags, renameat2};
    let (folder, name) = match folder_of(root, path, false) {
        Ok(found) => found,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let aside = format!(
        ".{}.carapace-removing-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        nanos()
    );
    let noreplace = RenameFlags::RENAME_NOREPLACE;
    match renameat2(
        &folder,
        name.as_os_str(),
        &folder,
        aside.as_str(),
        noreplace,
    ) {
        Ok(()) => {}
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(io(e)),
    }
    let stat = nix::sys::stat::fstatat(
        &folder,
        aside.as_str(),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    );
    let regular = |st: &nix::sys::stat::FileStat| st.st_mode & libc::S_IFMT == libc::S_IFREG;
    if let Ok(st) = stat
        && regular(&st)
        && (FileIdentity {
            dev: st.st_dev,
            ino: st.st_ino,
        }) == identity
    {
        return nix::unistd::unlinkat(
            &folder,
            aside.as_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        )
        .map_err(io);
    }
    let why = format!(
        "{} is not the file carapace wrote there (it was replaced, or is not a regular file); not removed",
        path.display()
    );
    match renameat2(
        &folder,
        aside.as_str(),
        &folder,
        name.as_os_str(),
        noreplace,
    ) {
        Ok(()) => Err(std::io::Error::other(why)),
        Err(e) => Err(std::io::Error::other(format!(
            "{why}, and it could not be put back ({e}): it is at {}",
            path.with_file_name(&aside).display()
        ))),
    }
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
        let any = FileIdentity { dev: 0, ino: 0 };
        assert!(remove_file_beneath(&ws, &through, any).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.join("settings.json"))?,
            "theirs"
        );
        // Only a regular file is removed.
        assert!(remove_file_beneath(&ws, &ws.join(".carapace"), any).is_err());
        assert!(ws.join(".carapace").is_dir(), "put back");
        let written = FileIdentity::of(&name).ok_or_else(|| std::io::Error::other("no file"))?;
        remove_file_beneath(&ws, &name, written)?;
        assert!(!name.exists());
        remove_file_beneath(&ws, &name, written)?;
        // The control: a plain write follows the link.
        std::os::unix::fs::symlink(outside.join("settings.json"), &name)?;
        std::fs::write(&name, "through")?;
        assert_eq!(
            std::fs::read_to_string(outside.join("settings.json"))?,
            "through"
        );
        Ok(())
    }

    #[test]
    fn only_the_file_carapace_wrote_is_removed_not_one_swapped_in() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let ws = std::fs::canonicalize(dir.path())?;
        let name = ws.join("made.txt");
        replace_beneath(&ws, &name, b"ours", 0o644)?;
        let ours = FileIdentity::of(&name).ok_or_else(|| std::io::Error::other("no file"))?;
        // Another file moved onto the name (the user's, a command's).
        std::fs::write(ws.join("theirs"), "theirs")?;
        std::fs::rename(ws.join("theirs"), &name)?;
        let refused = remove_file_beneath(&ws, &name, ours);
        assert!(
            refused.is_err_and(|e| e.to_string().contains("not the file carapace wrote")),
            "refused"
        );
        assert_eq!(std::fs::read_to_string(&name)?, "theirs", "put back whole");
        assert_eq!(std::fs::read_dir(&ws)?.count(), 1, "nothing left aside");
        // The control: removing by name deletes it.
        std::fs::remove_file(&name)?;
        assert!(!name.exists());
        Ok(())
    }

    #[test]
    fn a_file_swapped_in_during_the_removal_is_never_deleted() -> std::io::Result<()> {
        use nix::fcntl::{RenameFlags, renameat2};
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir()?;
        let ws = std::fs::canonicalize(dir.path())?;
        let (name, other) = (ws.join("made.txt"), ws.join("other.txt"));
        for round in 0..200 {
            replace_beneath(&ws, &name, b"ours", 0o644)?;
            let ours = FileIdentity::of(&name).ok_or_else(|| std::io::Error::other("no file"))?;
            std::fs::write(&other, "innocent")?;
            let stop = std::sync::Arc::new(AtomicBool::new(false));
            let swapper = {
                let (stop, name, other) = (stop.clone(), name.clone(), other.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = renameat2(
                            nix::fcntl::AT_FDCWD,
                            &name,
                            nix::fcntl::AT_FDCWD,
                            &other,
                            RenameFlags::RENAME_EXCHANGE,
                        );
                    }
                })
            };
            let _ = remove_file_beneath(&ws, &name, ours);
            stop.store(true, Ordering::Relaxed);
            let _ = swapper.join();
            let innocent = [&name, &other]
                .iter()
                .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t == "innocent"))
                .count();
            let aside = std::fs::read_dir(&ws)?
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .contains("carapace-removing")
                })
                .count();
            assert_eq!(
                innocent + aside,
                1,
                "round {round}: the innocent file is never deleted"
            );
            for p in [&name, &other] {
                let _ = std::fs::remove_file(p);
            }
            for e in std::fs::read_dir(&ws)?.flatten() {
                std::fs::remove_file(e.path())?;
            }
        }
        Ok(())
    }
}
