//! A file a tool wrote in its call's staging directory, saved at its real
//! path after the call: atomically (a new file beside it, renamed over
//! it), through a directory reached without following a link, keeping the
//! old file's mode (or the process's umask for a new one).

use super::bound;
use std::path::Path;

/// Saves the staged file `staged` at `host`, atomically: a new file beside
/// it, renamed over it. The directory is reached without following a link
/// (made if missing), and every step is relative to it.
pub(super) fn save(
    staged: &Path,
    host: &Path,
    staged_meta: &std::fs::Metadata,
    any_links: bool,
) -> Result<(), String> {
    use nix::fcntl::{AtFlags, OFlag, openat, renameat};
    use nix::sys::stat::{Mode, fstatat};
    let (Some(parent), Some(name)) = (host.parent(), host.file_name()) else {
        return Err("no parent directory".into());
    };
    let dir = bound::open_dir(parent, true)
        .map_err(|e| e.to_string())?
        .ok_or("the directory is missing")?;
    let old_mode = fstatat(&dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .ok()
        .map(|s| s.st_mode & 0o7777);
    // A new file gets the mode any program's new file gets (Claude Code's
    // Write too): 0666 less the process's umask.
    let mode = old_mode.unwrap_or_else(|| 0o666 & !process_umask());
    // Opened once, without following a link: what is moved or copied is
    // what was checked.
    let mut wrote = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::File::options()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(staged)
            .map_err(|e| format!("cannot open what the tool wrote: {e}"))?
    };
    if move_into_place(&wrote, staged, &dir, name, mode, any_links)? {
        return Ok(());
    }
    let mut attempt = 0u32;
    let (temp_name, temp) = loop {
        let temp_name = format!(
            ".carapace-write-{}-{}-{attempt}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or_default()
        );
        match openat(
            &dir,
            temp_name.as_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        ) {
            Ok(fd) => break (temp_name, std::fs::File::from(fd)),
            Err(nix::errno::Errno::EEXIST) if attempt < 8 => attempt += 1,
            Err(e) => return Err(format!("cannot create a file beside it: {e}")),
        }
    };
    let written = (|| -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let mut temp = temp;
        std::io::copy(&mut wrote, &mut temp)?;
        temp.set_permissions(std::fs::Permissions::from_mode(mode))?;
        // The saved file keeps the staged file's modification time, so what
        // the tool recorded as read is what is on disk.
        if let Ok(modified) = staged_meta.modified() {
            let _ = temp.set_modified(modified);
        }
        temp.sync_all()
    })();
    let renamed = written
        .map_err(|e| e.to_string())
        .and_then(|()| renameat(&dir, temp_name.as_str(), &dir, name).map_err(|e| e.to_string()));
    if renamed.is_err() {
        let _ = nix::unistd::unlinkat(
            &dir,
            temp_name.as_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
    }
    renamed
}

/// The process's umask, read (not set: setting it to read it would race
/// with other threads creating files); 022 where Linux does not say.
fn process_umask() -> u32 {
    static UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UMASK.get_or_init(|| {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix("Umask:"))
                    .and_then(|value| u32::from_str_radix(value.trim(), 8).ok())
            })
            .unwrap_or(0o022)
    })
}

/// Moves the staged file `wrote` (opened from `staged`) over `name` in
/// `dir`, synced, when nothing
/// but this call's staging names it (one link: not a granted file the guest
/// linked to the name) and it is on the directory's filesystem. Then the
/// commit costs what Claude Code's own atomic write does: one sync, one
/// rename. `Ok(false)`: it cannot be moved, and is copied instead.
/// `any_links`: the weakened control's, which moves it however many names
/// it has.
fn move_into_place(
    wrote: &std::fs::File,
    staged: &Path,
    dir: &std::os::fd::OwnedFd,
    name: &std::ffi::OsStr,
    mode: u32,
    any_links: bool,
) -> Result<bool, String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = wrote.metadata().map_err(|e| e.to_string())?;
    let dir_dev = nix::sys::stat::fstat(dir)
        .map_err(|e| e.to_string())?
        .st_dev;
    if !meta.is_file() || (meta.nlink() != 1 && !any_links) || meta.dev() != dir_dev {
        return Ok(false);
    }
    wrote
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .and_then(|()| wrote.sync_all())
        .map_err(|e| e.to_string())?;
    nix::fcntl::renameat(nix::fcntl::AT_FDCWD, staged, dir, name)
        .map_err(|e| format!("cannot rename it into place: {e}"))?;
    Ok(true)
}
