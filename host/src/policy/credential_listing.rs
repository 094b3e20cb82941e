//! The files under a command's folders whose names say they hold
//! credentials, listed before each command — and kept per folder between
//! commands: a folder whose identity and change time are unchanged has the
//! same entries (its change time moves whenever an entry is added, removed
//! or renamed in it), so it costs one `stat` instead of a listing. A folder
//! changed in the last two seconds is listed again each time: file times
//! come from a coarse clock, and a change in the same tick would not move
//! them.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Folders filled by tools, not by the user — installed packages, build
/// output, version control's store — where a user's credentials do not
/// live: not entered (they often hold most of a tree's entries).
pub(super) const NOT_ENTERED: &[&str] = &[
    "node_modules",
    "target",
    "__pycache__",
    ".venv",
    ".git",
    ".hg",
    ".svn",
    ".jj",
];

/// One folder as it was last listed.
#[derive(Debug)]
struct Folder {
    /// Device, inode, change time (seconds, nanoseconds).
    stamp: (u64, u64, i64, i64),
    subfolders: Vec<PathBuf>,
    /// Entries named as credentials, and whether each is a link.
    named: Vec<(PathBuf, bool)>,
    entries: usize,
    /// Changed too recently to be trusted: file times come from a coarse
    /// clock, so an entry made in the same tick as the last change would
    /// leave the change time as it was. Listed again until it settles.
    recent: bool,
}

/// The listing of one session's command folders, kept between commands.
#[derive(Debug, Default)]
pub(super) struct CredentialListing {
    folders: Mutex<HashMap<PathBuf, Folder>>,
}

impl CredentialListing {
    /// The entries under `roots` named as credentials (each with whether
    /// it is a link), or why the trees hold more than `limit` entries.
    pub(super) fn named(
        &self,
        roots: &[PathBuf],
        limit: usize,
    ) -> Result<Vec<(PathBuf, bool)>, String> {
        let mut folders = self
            .folders
            .lock()
            .map_err(|_| "the credential listing is unusable".to_string())?;
        let mut found = Vec::new();
        let mut seen = 0usize;
        let mut stack: Vec<PathBuf> = roots.to_vec();
        let mut visited = std::collections::HashSet::new();
        while let Some(dir) = stack.pop() {
            let Some(stamp) = stamp(&dir) else {
                folders.remove(&dir);
                continue;
            };
            visited.insert(dir.clone());
            let fresh = folders
                .get(&dir)
                .is_some_and(|f| f.stamp == stamp && !f.recent);
            if !fresh {
                folders.insert(dir.clone(), list(&dir, stamp));
            }
            let Some(folder) = folders.get(&dir) else {
                continue;
            };
            seen += folder.entries;
            if seen > limit {
                return Err(format!(
                    "{} hold more than {limit} entries: they cannot be searched for credential files (.env, keys, tokens) to keep from the command; the command was not run. Run commands from a smaller folder",
                    roots
                        .iter()
                        .map(|r| r.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            found.extend(folder.named.iter().cloned());
            stack.extend(folder.subfolders.iter().cloned());
        }
        // Folders gone from the trees are forgotten.
        folders.retain(|dir, _| visited.contains(dir));
        Ok(found)
    }
}

fn stamp(dir: &Path) -> Option<(u64, u64, i64, i64)> {
    let meta = std::fs::symlink_metadata(dir).ok()?;
    meta.is_dir()
        .then(|| (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec()))
}

fn list(dir: &Path, stamp: (u64, u64, i64, i64)) -> Folder {
    let recent = crate::sandbox::process::changed_lately(stamp.2, stamp.3);
    let mut folder = Folder {
        stamp,
        subfolders: Vec::new(),
        named: Vec::new(),
        entries: 0,
        recent,
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return folder;
    };
    for entry in entries.flatten() {
        folder.entries += 1;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if crate::secrets::name_holds(&text).is_some() {
            folder.named.push((entry.path(), kind.is_symlink()));
        } else if kind.is_dir() && !NOT_ENTERED.iter().any(|n| name == *n) {
            folder.subfolders.push(entry.path());
        }
    }
    folder
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second listing sees what was added since, in a folder listed
    /// before, and forgets what was removed.
    #[test]
    fn a_kept_listing_follows_the_folders_changes() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("app/node_modules/pkg"))?;
        std::fs::write(root.join("app/node_modules/pkg/.env"), "x")?;
        std::fs::write(root.join("app/.env"), "x")?;
        let listing = CredentialListing::default();
        let names = |found: Vec<(PathBuf, bool)>| {
            let mut names: Vec<PathBuf> = found.into_iter().map(|(p, _)| p).collect();
            names.sort();
            names
        };
        let roots = [root.clone()];
        assert_eq!(names(listing.named(&roots, 100)?), [root.join("app/.env")]);
        std::fs::write(root.join("app/id_ed25519"), "x")?;
        std::fs::remove_file(root.join("app/.env"))?;
        assert_eq!(
            names(listing.named(&roots, 100)?),
            [root.join("app/id_ed25519")]
        );
        assert!(listing.named(&roots, 2).is_err(), "past the limit");
        Ok(())
    }
}
