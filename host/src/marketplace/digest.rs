//! A plugin folder's content, as one digest: what an approval is pinned
//! to. Every regular file's relative path and bytes, in path order, and
//! every link's target; a change to any of them — a hook script edited, a
//! server swapped, a file added — is a different digest.

use sha2::{Digest, Sha256};
use std::path::Path;

/// The most files a plugin folder may hold for carapace to pin it.
const MAX_FILES: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum DigestError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds more than {MAX_FILES} files")]
    TooMany { path: String },
}

/// `sha256:HEX` of the folder's content.
pub fn folder_digest(root: &Path) -> Result<String, DigestError> {
    let read = |path: &Path, source| DigestError::Read {
        path: path.display().to_string(),
        source,
    };
    let mut entries = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| read(&dir, e))? {
            let entry = entry.map_err(|e| read(&dir, e))?;
            let kind = entry.file_type().map_err(|e| read(&entry.path(), e))?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else {
                entries.push((entry.path(), kind.is_symlink()));
            }
            if entries.len() > MAX_FILES {
                return Err(DigestError::TooMany {
                    path: root.display().to_string(),
                });
            }
        }
    }
    entries.sort();
    let mut hasher = Sha256::new();
    for (path, is_link) in entries {
        let relative = path.strip_prefix(root).unwrap_or(&path);
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update([0]);
        if is_link {
            let target = std::fs::read_link(&path).map_err(|e| read(&path, e))?;
            hasher.update(b"link:");
            hasher.update(target.to_string_lossy().as_bytes());
        } else {
            let bytes = std::fs::read(&path).map_err(|e| read(&path, e))?;
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(&bytes);
        }
        hasher.update([0]);
    }
    Ok(format!("sha256:{}", hex::encode(hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_change_to_the_content_is_another_digest() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir(dir.path().join("hooks"))?;
        std::fs::write(dir.path().join("hooks/guard.py"), "print(1)\n")?;
        let first = folder_digest(dir.path())?;
        assert_eq!(first, folder_digest(dir.path())?);
        std::fs::write(dir.path().join("hooks/guard.py"), "print(2)\n")?;
        let edited = folder_digest(dir.path())?;
        assert_ne!(first, edited);
        std::fs::write(dir.path().join("extra"), "")?;
        assert_ne!(edited, folder_digest(dir.path())?);
        Ok(())
    }
}
