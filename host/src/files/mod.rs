//! carapace's own files — transcripts, audit logs, saved tool results,
//! agents' outputs, the plugin store, the component cache: created private
//! to the account that runs carapace (folders 0700, files 0600), whatever
//! the umask, since they hold what the model read and what the user typed.
//!
//! Files that tools and commands write in the user's workspace never go
//! through here: they keep the user's umask.
//!
//! Imports nothing of carapace's: a leaf every folder above may use.

mod beneath;

pub use beneath::{FileIdentity, remove_file_beneath, replace_beneath};

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Folders carapace creates for itself.
pub const DIR_MODE: u32 = 0o700;
/// Files carapace creates for itself.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` and its missing parents, each new one private.
pub fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Creates `dir` (and its parents) private, and makes an existing `dir`
/// private too when it is readable by others: an earlier version created
/// carapace's folders world-readable.
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    create_dir_all(dir)?;
    let metadata = std::fs::symlink_metadata(dir)?;
    if metadata.is_dir() && metadata.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}

/// Opens `path` for appending, creating it private (and its folder) if
/// it is not there.
pub fn open_append(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        create_dir_all(dir)?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)
}

/// Creates `path` private for appending; fails if it exists.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        create_dir_all(dir)?;
    }
    OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
}

/// Writes `bytes` to `path`, created private (and its folder); an existing
/// file is replaced and made private.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> std::io::Result<u32> {
        Ok(std::fs::metadata(path)?.permissions().mode() & 0o777)
    }

    #[test]
    fn everything_created_here_is_private_whatever_the_umask() -> std::io::Result<()> {
        let root = tempfile::tempdir()?;
        let dir = root.path().join("a/b");
        create_dir_all(&dir)?;
        assert_eq!(mode(&root.path().join("a"))?, DIR_MODE);
        assert_eq!(mode(&dir)?, DIR_MODE);
        create_new(&dir.join("new"))?;
        open_append(&dir.join("c/appended"))?;
        write(&dir.join("written"), b"x")?;
        for file in ["new", "c/appended", "written"] {
            assert_eq!(mode(&dir.join(file))?, FILE_MODE, "{file}");
        }
        assert_eq!(mode(&dir.join("c"))?, DIR_MODE);
        // An existing world-readable file is made private when replaced.
        let open = dir.join("open");
        std::fs::write(&open, "x")?;
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644))?;
        write(&open, b"y")?;
        assert_eq!(mode(&open)?, FILE_MODE);
        Ok(())
    }

    #[test]
    fn an_old_world_readable_folder_is_made_private() -> std::io::Result<()> {
        let root = tempfile::tempdir()?;
        let dir = root.path().join("config");
        std::fs::create_dir(&dir)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        ensure_private_dir(&dir)?;
        assert_eq!(mode(&dir)?, DIR_MODE);
        Ok(())
    }
}
