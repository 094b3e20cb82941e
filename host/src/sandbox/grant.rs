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
//!
//! A write grant on one file stages its directory read-write: in-place
//! writes reach the file through the hard link; a file the guest created or
//! replaced under the granted name is committed to the real path after the
//! call, atomically: moved over it (synced) when the staging alone names it,
//! otherwise copied beside it and renamed over it. Nothing else the guest
//! puts in the staging directory ever leaves it.

use super::bound::{self, BoundError, FileId};
use super::hosts::HostPattern;
use super::staging::{StagingDir, StagingPool};
use crate::secrets::Withholding;
use std::os::fd::AsRawFd;
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
    access: FileAccess,
    /// What the policy found at `host`: staging refuses anything else.
    decided: Decided,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decided {
    /// Not granted by a policy decision (a hook's configured grants).
    Unchecked,
    /// Nothing was there.
    Absent,
    /// This file (or directory) was there.
    Present(FileId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct TreeGrant {
    path: PathBuf,
    access: FileAccess,
}

/// The paths a call may have the host search for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Searchable {
    trees: Vec<PathBuf>,
    /// Files inside the trees the call may not read.
    pub(crate) withholding: Option<Arc<dyn Withholding>>,
    /// (the name granted, the file behind it).
    files: Vec<(PathBuf, PathBuf)>,
}

impl Searchable {
    /// Where the host may search for `path` (absolute, normal): the very
    /// file granted, or a directory under a granted tree; `None` for
    /// anything else.
    pub(crate) fn resolve(&self, path: &Path) -> Option<PathBuf> {
        if !path.is_absolute()
            || path.components().any(|c| {
                !matches!(
                    c,
                    std::path::Component::RootDir | std::path::Component::Normal(_)
                )
            })
        {
            return None;
        }
        if let Some((_, host)) = self.files.iter().find(|(guest, _)| guest == path) {
            return Some(host.clone());
        }
        self.trees
            .iter()
            .any(|tree| path.starts_with(tree))
            .then(|| path.to_path_buf())
    }
}

/// The capabilities granted to one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    files: Vec<FileGrant>,
    trees: Vec<TreeGrant>,
    env: Vec<(String, String)>,
    http_hosts: Vec<HostPattern>,
    /// Of `http_hosts`, those that may lead to an internal address (the
    /// user's own settings named them, or configured the server).
    http_internal: Vec<HostPattern>,
    commands: Vec<String>,
    /// Files inside the granted trees that the call may not read
    /// (credentials): the host's search skips them.
    withholding: Withholds,
}

/// A grant's [`Withholding`]; grants compare equal whatever it is.
#[derive(Clone, Default)]
struct Withholds(Option<Arc<dyn Withholding>>);

impl std::fmt::Debug for Withholds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Withholds(..)"
        } else {
            "None"
        })
    }
}

impl PartialEq for Withholds {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Withholds {}

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
    #[error("cannot save `{path}` after the call: {reason}")]
    Commit { path: PathBuf, reason: String },
    #[error("{0}")]
    ProcessInfo(String),
}

impl Grant {
    /// A grant that reaches nothing.
    pub fn none() -> Self {
        Self::default()
    }

    /// Read access to one file, at its own path.
    pub fn read_file(self, path: impl Into<PathBuf>) -> Result<Self, GrantError> {
        let path = path.into();
        self.file(path.clone(), path, FileAccess::Read, Decided::Unchecked)
    }

    /// Read access to the host file `host`, shown to the guest at `guest`
    /// (used when the policy resolved a symlink and decided on its target);
    /// `decided`: what the policy found there (`None`: nothing), the only
    /// thing that may be staged.
    pub fn read_file_as(
        self,
        guest: impl Into<PathBuf>,
        host: impl Into<PathBuf>,
        decided: Option<FileId>,
    ) -> Result<Self, GrantError> {
        self.file(guest.into(), host.into(), FileAccess::Read, decided.into())
    }

    /// Create, overwrite or modify one file (and read it), at its own path.
    pub fn write_file(self, path: impl Into<PathBuf>) -> Result<Self, GrantError> {
        let path = path.into();
        self.file(path.clone(), path, FileAccess::Write, Decided::Unchecked)
    }

    /// Write access to the host file `host`, shown to the guest at `guest`.
    pub fn write_file_as(
        self,
        guest: impl Into<PathBuf>,
        host: impl Into<PathBuf>,
        decided: Option<FileId>,
    ) -> Result<Self, GrantError> {
        self.file(guest.into(), host.into(), FileAccess::Write, decided.into())
    }

    fn file(
        mut self,
        guest: PathBuf,
        host: PathBuf,
        access: FileAccess,
        decided: Decided,
    ) -> Result<Self, GrantError> {
        let guest = normal_absolute(guest)?;
        let host = normal_absolute(host)?;
        if guest.parent().is_none() || guest.file_name().is_none() {
            return Err(GrantError::RootAsFile);
        }
        self.files.push(FileGrant {
            guest,
            host,
            access,
            decided,
        });
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

    /// Outgoing HTTP to hosts matching `host` — never to an internal
    /// address (loopback, private, link-local, this machine's own).
    pub fn http_host(mut self, host: HostPattern) -> Self {
        self.http_hosts.push(host);
        self
    }

    /// Outgoing HTTP to `host`, which may be (or resolve to) an internal
    /// address: only for what the user named themselves.
    pub fn http_internal(mut self, host: HostPattern) -> Self {
        self.http_internal.push(host.clone());
        self.http_hosts.push(host);
        self
    }

    /// Running exactly this command line (through the host's process
    /// interface, in the OS sandbox).
    pub fn command(mut self, command: impl Into<String>) -> Self {
        self.commands.push(command.into());
        self
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
            && self.trees.is_empty()
            && self.env.is_empty()
            && self.http_hosts.is_empty()
            && self.commands.is_empty()
    }

    pub(crate) fn commands(&self) -> &[String] {
        &self.commands
    }

    /// Files inside the granted trees this call may not read.
    pub fn withholding(mut self, withholding: Arc<dyn Withholding>) -> Self {
        self.withholding = Withholds(Some(withholding));
        self
    }

    /// What a call may have the host search (`carapace:tool/search`): its
    /// trees (less what it withholds), and its files (the name it was
    /// granted, the file decided on).
    pub(crate) fn searchable(&self) -> Searchable {
        Searchable {
            withholding: self.withholding.0.clone(),
            trees: self.trees.iter().map(|t| t.path.clone()).collect(),
            files: self
                .files
                .iter()
                .map(|f| (f.guest.clone(), f.host.clone()))
                .collect(),
        }
    }

    pub(crate) fn http_hosts(&self) -> &[HostPattern] {
        &self.http_hosts
    }

    pub(crate) fn internal_http_hosts(&self) -> &[HostPattern] {
        &self.http_internal
    }

    /// The single files this grant may write (kept before a write when
    /// file checkpoints are on).
    pub fn write_files(&self) -> impl Iterator<Item = &Path> {
        self.files
            .iter()
            .filter(|f| f.access == FileAccess::Write)
            .map(|f| f.host.as_path())
    }

    /// The files and trees this grant reads (beside what it writes).
    pub fn read_paths(&self) -> impl Iterator<Item = &Path> {
        let files = self
            .files
            .iter()
            .filter(|f| f.access == FileAccess::Read)
            .map(|f| f.host.as_path());
        let trees = self
            .trees
            .iter()
            .filter(|t| t.access == FileAccess::Read)
            .map(|t| t.path.as_path());
        files.chain(trees)
    }

    /// The variables this grant hands over, by name.
    pub fn env_vars(&self) -> &[(String, String)] {
        &self.env
    }

    /// The write trees of this grant (checked again after the call).
    pub fn write_trees(&self) -> impl Iterator<Item = &Path> {
        self.trees
            .iter()
            .filter(|t| t.access == FileAccess::Write)
            .map(|t| t.path.as_path())
    }

    /// A short human description, for logs, the audit log and `--debug`.
    pub fn describe(&self) -> Vec<String> {
        let mode = |access: FileAccess| match access {
            FileAccess::Read => "read",
            FileAccess::Write => "write",
        };
        let mut out: Vec<String> = self
            .files
            .iter()
            .map(|f| format!("{} {}", mode(f.access), f.guest.display()))
            .collect();
        out.extend(
            self.trees
                .iter()
                .map(|t| format!("{} tree {}", mode(t.access), t.path.display())),
        );
        out.extend(self.env.iter().map(|(name, _)| format!("env {name}")));
        out.extend(self.http_hosts.iter().map(|h| format!("http {h}")));
        out.extend(self.commands.iter().map(|c| format!("run {c}")));
        out
    }

    /// Builds the call's filesystem view: staging directories for single
    /// files, preopens for trees, and applies them to `wasi`. The returned
    /// [`StagedGrant`] must live until the call ends; dropping it empties the
    /// staging directories (never touching the granted files).
    pub(crate) fn apply(
        &self,
        staging: &Arc<StagingPool>,
        wasi: &mut WasiCtxBuilder,
    ) -> Result<StagedGrant, GrantError> {
        let mut staged = StagedGrant {
            dirs: Vec::new(),
            writes: Vec::new(),
        };

        for tree in &self.trees {
            let perms = match tree.access {
                FileAccess::Read => FsPerms::ReadOnly,
                FileAccess::Write => FsPerms::ReadWrite,
            };
            // The decided directory itself, reached without a link: the
            // preopen goes through this descriptor, not the name.
            let preopen_error = |reason: String| GrantError::Preopen {
                path: tree.path.clone(),
                reason,
            };
            let dir = bound::open_dir(&tree.path, false)
                .map_err(|e| preopen_error(e.to_string()))?
                .ok_or_else(|| preopen_error("it does not exist".into()))?;
            if let Some(reason) = super::procfs::refused_fd(&dir, &tree.path, true) {
                return Err(GrantError::ProcessInfo(reason));
            }
            let through = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
            preopen(wasi, &through, &tree.path, perms)?;
        }

        // One staging directory per parent directory, holding every granted
        // file of that directory.
        let mut by_parent: Vec<(PathBuf, Vec<&FileGrant>)> = Vec::new();
        for file in &self.files {
            let covered = self
                .trees
                .iter()
                .any(|t| file.guest.starts_with(&t.path) && t.access >= file.access);
            if covered {
                continue; // already reachable through a tree grant
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
            let mut writable = false;
            for file in files {
                let (staged_entry, original) = stage_file(file, dir.path())?;
                if let Some(entry) = &staged_entry {
                    dir.record(entry.clone());
                }
                if file.access == FileAccess::Write {
                    writable = true;
                    let Some(name) = file.guest.file_name() else {
                        return Err(GrantError::RootAsFile);
                    };
                    let staged_path = dir.path().join(name);
                    if staged_entry.is_none() {
                        dir.record(staged_path.clone()); // what the guest may create
                    }
                    staged.writes.push(PendingWrite {
                        original,
                        staged: staged_path,
                        host: file.host.clone(),
                    });
                }
            }
            let perms = if writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            preopen(wasi, dir.path(), &parent, perms)?;
            staged.dirs.push(dir);
        }

        for (name, value) in &self.env {
            wasi.env(name, value);
        }
        Ok(staged)
    }
}

struct PendingWrite {
    /// The granted file staged for the call, if it existed.
    original: Option<FileId>,
    staged: PathBuf,
    host: PathBuf,
}

/// The staging directories of one call; emptied when dropped.
pub(crate) struct StagedGrant {
    dirs: Vec<StagingDir>,
    writes: Vec<PendingWrite>,
}

impl StagedGrant {
    /// After a call that returned normally: every granted file the guest
    /// created or replaced is saved to its real path, atomically. A file
    /// written in place (through the hard link) is already there. A staged
    /// entry that is not a regular file (a directory, a symlink) is refused.
    pub(crate) fn commit(&self, any_links: bool) -> Result<Vec<PathBuf>, GrantError> {
        use std::os::unix::fs::MetadataExt;
        let mut saved = Vec::new();
        for write in &self.writes {
            let Ok(meta) = std::fs::symlink_metadata(&write.staged) else {
                continue; // the guest did not create it (or removed it)
            };
            let error = |reason: String| GrantError::Commit {
                path: write.host.clone(),
                reason,
            };
            if !meta.file_type().is_file() {
                return Err(error(
                    "the tool left something other than a regular file".into(),
                ));
            }
            if write.original
                == Some(FileId {
                    dev: meta.dev(),
                    ino: meta.ino(),
                })
            {
                continue; // written in place
            }
            super::commit::save(&write.staged, &write.host, &meta, any_links).map_err(error)?;
            saved.push(write.host.clone());
        }
        Ok(saved)
    }

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
/// or reach a device. The file is reached without following a link and must
/// be the one the policy decided on. Returns the staged entry, if any, and
/// the staged file's identity.
fn stage_file(
    file: &FileGrant,
    staging: &Path,
) -> Result<(Option<PathBuf>, Option<FileId>), GrantError> {
    let Some(name) = file.guest.file_name() else {
        return Err(GrantError::RootAsFile);
    };
    let target = staging.join(name);
    let staging_error = |reason: String| GrantError::Staging {
        path: file.guest.clone(),
        reason,
    };
    let replaced =
        || staging_error("it was replaced after the policy's check; nothing was staged".into());
    let opened = match bound::open(&file.host) {
        Ok(Some(opened)) => opened,
        Ok(None) if matches!(file.decided, Decided::Present(_)) => return Err(replaced()),
        Ok(None) => return Ok((None, None)),
        Err(e @ BoundError::LinkInPath(_)) => {
            return Err(staging_error(format!("{e}; nothing was staged")));
        }
        Err(e) => return Err(staging_error(e.to_string())),
    };
    if let Some(reason) = super::procfs::refused_fd(opened.fd(), &file.host, opened.is_dir()) {
        return Err(GrantError::ProcessInfo(reason));
    }
    let facts = opened.facts();
    match file.decided {
        Decided::Present(decided) if decided != facts.id => return Err(replaced()),
        // Something appeared since the policy found nothing there.
        Decided::Absent => return Err(replaced()),
        Decided::Present(_) | Decided::Unchecked => {}
    }
    if opened.is_dir() {
        std::fs::create_dir(&target).map_err(|e| staging_error(e.to_string()))?;
        return Ok((Some(target), None));
    }
    if !opened.is_file() {
        return Ok((None, None));
    }
    // Link (or copy) the opened file itself, whatever its name is now.
    let source = opened.proc_path();
    if opened.link_to(&target).is_err() {
        std::fs::copy(&source, &target)
            .map_err(|e| staging_error(format!("neither a hard link nor a copy worked: {e}")))?;
        // A copy keeps the original's modification time, so tools that
        // compare what was read with what is there see the same file.
        if let Ok(modified) = std::fs::metadata(&source).and_then(|m| m.modified()) {
            let _ = std::fs::File::options()
                .write(true)
                .open(&target)
                .and_then(|f| f.set_modified(modified));
        }
    }
    Ok((Some(target), Some(facts.id)))
}

impl From<Option<FileId>> for Decided {
    fn from(found: Option<FileId>) -> Self {
        found.map_or(Decided::Absent, Decided::Present)
    }
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
        let names: Vec<_> = std::fs::read_dir(&dirs[0])?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()?;
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

    #[test]
    fn a_replaced_or_created_file_is_committed_atomically_and_nothing_else()
    -> Result<(), Box<dyn std::error::Error>> {
        let work = tempfile::tempdir()?;
        let staging_root = tempfile::tempdir()?;
        let pool = StagingPool::new(staging_root.path())?;
        let target = work.path().join("new.txt");
        let staged = Grant::none()
            .write_file(&target)?
            .apply(&pool, &mut WasiCtxBuilder::new())?;
        let dir = staged.staging_dirs()[0].clone();
        std::fs::write(dir.join("new.txt"), "created")?;
        std::fs::write(dir.join("smuggled.txt"), "not granted")?;
        assert_eq!(staged.commit(false)?, vec![target.clone()]);
        drop(staged);
        assert_eq!(std::fs::read_to_string(&target)?, "created");
        assert!(!work.path().join("smuggled.txt").exists());
        assert!(
            !dir.exists() || std::fs::read_dir(&dir)?.count() == 0,
            "staging left clean"
        );
        Ok(())
    }
}
