//! The grant: what one call's instance may reach. Deny by default; every
//! capability is added explicitly, and [`Grant`] is the only input from which
//! an instance's WASI context is built.
//!
//! Single files are granted through a per-call staging directory: WASI
//! preopens are directories only (WebAssembly/WASI#91), so the file's
//! directory is presented to the guest, at its real path, as a fresh
//! directory that holds a hard link to that one file (a copy when a hard link
//! is impossible, e.g. across filesystems). The guest opens the file with its
//! language's ordinary file API at the path the model gave; the file's
//! siblings do not exist for it. We chose staging over a host file resource
//! so that guests in every language keep using plain WASI, unchanged.

use super::staging::{StagingDir, StagingPool};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// How a granted path may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAccess {
    Read,
    Write,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FileGrant {
    /// The absolute path the guest uses.
    guest: PathBuf,
    /// The host file behind it (differs from `guest` when the policy
    /// resolved a symlink).
    host: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct TreeGrant {
    path: PathBuf,
    access: FileAccess,
}

/// The capabilities granted to one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    read_files: Vec<FileGrant>,
    trees: Vec<TreeGrant>,
    env: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GrantError {
    #[error("granted path `{0}` is not absolute")]
    NotAbsolute(PathBuf),
    #[error("granted path `{0}` contains `.` or `..`; grants take normalised paths")]
    NotNormal(PathBuf),
    #[error("cannot grant the root directory as a single file")]
    RootAsFile,
    #[error("cannot stage `{path}` for the call: {reason}")]
    Staging { path: PathBuf, reason: String },
    #[error("cannot open granted directory `{path}`: {reason}")]
    Preopen { path: PathBuf, reason: String },
}

impl Grant {
    /// A grant that reaches nothing.
    pub fn none() -> Self {
        Self::default()
    }

    /// Read access to one file, at its own path.
    pub fn read_file(self, path: impl Into<PathBuf>) -> Result<Self, GrantError> {
        let path = path.into();
        self.read_file_as(path.clone(), path)
    }

    /// Read access to the host file `host`, shown to the guest at `guest`
    /// (used when the policy resolved a symlink and decided on its target).
    pub fn read_file_as(
        mut self,
        guest: impl Into<PathBuf>,
        host: impl Into<PathBuf>,
    ) -> Result<Self, GrantError> {
        let guest = normal_absolute(guest.into())?;
        let host = normal_absolute(host.into())?;
        if guest.parent().is_none() {
            return Err(GrantError::RootAsFile);
        }
        self.read_files.push(FileGrant { guest, host });
        Ok(self)
    }

    /// Access to a directory and everything below it.
    pub fn tree(
        mut self,
        path: impl Into<PathBuf>,
        access: FileAccess,
    ) -> Result<Self, GrantError> {
        let path = normal_absolute(path.into())?;
        self.trees.push(TreeGrant { path, access });
        Ok(self)
    }

    /// One environment variable, visible to the guest.
    pub fn env_var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.read_files.is_empty() && self.trees.is_empty() && self.env.is_empty()
    }

    /// A short human description, for logs and `--debug`.
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .read_files
            .iter()
            .map(|f| format!("read {}", f.guest.display()))
            .collect();
        out.extend(self.trees.iter().map(|t| {
            let mode = match t.access {
                FileAccess::Read => "read",
                FileAccess::Write => "write",
            };
            format!("{mode} tree {}", t.path.display())
        }));
        out.extend(self.env.iter().map(|(name, _)| format!("env {name}")));
        out
    }

    /// Builds the call's filesystem view: staging directories for single
    /// files, preopens for trees, and applies them to `wasi`. The returned
    /// [`StagedGrant`] must live until the call ends; dropping it removes the
    /// staging directories (never the granted files).
    pub(crate) fn apply(
        &self,
        staging: &Arc<StagingPool>,
        wasi: &mut WasiCtxBuilder,
    ) -> Result<StagedGrant, GrantError> {
        let mut staged = StagedGrant { dirs: Vec::new() };

        for tree in &self.trees {
            let perms = match tree.access {
                FileAccess::Read => FsPerms::ReadOnly,
                FileAccess::Write => FsPerms::ReadWrite,
            };
            preopen(wasi, &tree.path, &tree.path, perms)?;
        }

        // One staging directory per parent directory, holding every granted
        // file of that directory.
        let mut by_parent: Vec<(PathBuf, Vec<&FileGrant>)> = Vec::new();
        for file in &self.read_files {
            if self.trees.iter().any(|t| file.guest.starts_with(&t.path)) {
                continue; // already visible through a tree grant
            }
            let Some(parent) = file.guest.parent() else {
                return Err(GrantError::RootAsFile);
            };
            match by_parent.iter_mut().find(|(p, _)| p == parent) {
                Some((_, files)) => files.push(file),
                None => by_parent.push((parent.to_path_buf(), vec![file])),
            }
        }
        for (parent, files) in by_parent {
            let mut dir = staging.take().map_err(|e| GrantError::Staging {
                path: parent.clone(),
                reason: format!("taking a staging directory: {e}"),
            })?;
            for file in files {
                if let Some(entry) = stage_file(file, dir.path())? {
                    dir.record(entry);
                }
            }
            preopen(wasi, dir.path(), &parent, FsPerms::ReadOnly)?;
            staged.dirs.push(dir);
        }

        for (name, value) in &self.env {
            wasi.env(name, value);
        }
        Ok(staged)
    }
}

/// The staging directories of one call; emptied when dropped.
pub(crate) struct StagedGrant {
    dirs: Vec<StagingDir>,
}

impl StagedGrant {
    #[cfg(test)]
    pub(crate) fn staging_dirs(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.path().to_path_buf()).collect()
    }
}

fn preopen(
    wasi: &mut WasiCtxBuilder,
    host: &Path,
    guest: &Path,
    perms: FsPerms,
) -> Result<(), GrantError> {
    let guest = guest.to_str().ok_or_else(|| GrantError::Preopen {
        path: guest.to_path_buf(),
        reason: "the path is not valid UTF-8".into(),
    })?;
    wasi.preopened_dir(host, guest, perms)
        .map_err(|e| GrantError::Preopen {
            path: host.to_path_buf(),
            reason: e.to_string(),
        })?;
    Ok(())
}

/// Puts the granted file into the staging directory under its own name. A
/// missing file stays missing and a directory appears as an empty directory,
/// so the guest itself sees and reports "not found" or "is a directory".
/// Anything else (FIFO, socket, device) is not staged: opening it could block
/// or reach a device. Returns the staged entry, if any.
fn stage_file(file: &FileGrant, staging: &Path) -> Result<Option<PathBuf>, GrantError> {
    let Some(name) = file.guest.file_name() else {
        return Err(GrantError::RootAsFile);
    };
    let target = staging.join(name);
    let staging_error = |reason: String| GrantError::Staging {
        path: file.guest.clone(),
        reason,
    };
    let meta = match std::fs::metadata(&file.host) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(staging_error(e.to_string())),
    };
    if meta.is_dir() {
        std::fs::create_dir(&target).map_err(|e| staging_error(e.to_string()))?;
        return Ok(Some(target));
    }
    if !meta.is_file() {
        return Ok(None);
    }
    // `hard_link` does not follow a symlink at `host`; resolve it first so the
    // link is to the file itself (the policy decided on the resolved path).
    let real = std::fs::canonicalize(&file.host).map_err(|e| staging_error(e.to_string()))?;
    if std::fs::hard_link(&real, &target).is_err() {
        std::fs::copy(&real, &target)
            .map_err(|e| staging_error(format!("neither a hard link nor a copy worked: {e}")))?;
    }
    Ok(Some(target))
}

fn normal_absolute(path: PathBuf) -> Result<PathBuf, GrantError> {
    if !path.is_absolute() {
        return Err(GrantError::NotAbsolute(path));
    }
    if path
        .components()
        .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
    {
        return Err(GrantError::NotNormal(path));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_take_absolute_normal_paths_only() {
        assert_eq!(
            Grant::none().read_file("relative.txt"),
            Err(GrantError::NotAbsolute("relative.txt".into()))
        );
        assert_eq!(
            Grant::none().read_file("/a/../etc/passwd"),
            Err(GrantError::NotNormal("/a/../etc/passwd".into()))
        );
        assert_eq!(Grant::none().read_file("/"), Err(GrantError::RootAsFile));
    }

    #[test]
    fn staging_holds_only_the_granted_file() -> Result<(), Box<dyn std::error::Error>> {
        let work = tempfile::tempdir()?;
        let staging_root = tempfile::tempdir()?;
        let pool = StagingPool::new(staging_root.path())?;
        std::fs::write(work.path().join("granted.txt"), "yes")?;
        std::fs::write(work.path().join("sibling.txt"), "no")?;
        let grant = Grant::none().read_file(work.path().join("granted.txt"))?;
        let mut wasi = WasiCtxBuilder::new();
        let staged = grant.apply(&pool, &mut wasi)?;
        let dirs = staged.staging_dirs();
        assert_eq!(dirs.len(), 1);
        let mut names: Vec<_> = std::fs::read_dir(&dirs[0])?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()?;
        names.sort();
        assert_eq!(names, vec![std::ffi::OsString::from("granted.txt")]);
        assert_eq!(std::fs::read_to_string(dirs[0].join("granted.txt"))?, "yes");
        drop(staged);
        assert_eq!(
            std::fs::read_dir(&dirs[0])?.count(),
            0,
            "staging directory emptied after the call"
        );
        // The next call reuses the emptied directory, holding only its file.
        let again = Grant::none()
            .read_file(work.path().join("sibling.txt"))?
            .apply(&pool, &mut WasiCtxBuilder::new())?;
        assert_eq!(again.staging_dirs(), dirs);
        let names: Vec<_> = std::fs::read_dir(&dirs[0])?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()?;
        assert_eq!(names, vec![std::ffi::OsString::from("sibling.txt")]);
        assert_eq!(
            std::fs::read_to_string(work.path().join("granted.txt"))?,
            "yes"
        );
        Ok(())
    }
}
