//! Where a marketplace comes from, in Claude Code's words: a folder
//! (`{"source": "directory", "path": …}`) or a git repository, by path or
//! URL, pinned to a commit when the user names one (`{"source": "git",
//! "url": …, "ref": …}`) — and, carapace's, an archive (`.tar.gz`, `.tgz`,
//! `.tar`) checked against the SHA-256 the user gives.

use super::MarketplaceError;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Directory(PathBuf),
    Git { url: String, rev: Option<String> },
    Archive { path: PathBuf, sha256: String },
}

impl Source {
    /// What `carapace plugin marketplace add SOURCE [--rev REV]` names: a
    /// URL or a path ending in `.git` is a repository; a folder holding a
    /// `.git` is one too when a revision is asked for; else a folder.
    pub fn parse(
        text: &str,
        rev: Option<String>,
        sha256: Option<String>,
    ) -> Result<Self, MarketplaceError> {
        let is_archive = [".tar.gz", ".tgz", ".tar"]
            .iter()
            .any(|e| text.ends_with(e));
        if is_archive {
            let sha256 = sha256.ok_or_else(|| MarketplaceError::Source {
                source_text: text.to_string(),
                reason: "an archive is added only with its --sha256".into(),
            })?;
            let path = std::fs::canonicalize(text).map_err(|e| MarketplaceError::Source {
                source_text: text.to_string(),
                reason: e.to_string(),
            })?;
            return Ok(Source::Archive {
                path,
                sha256: sha256.trim().to_lowercase(),
            });
        }
        let is_url = ["https://", "http://", "ssh://", "git://", "file://", "git@"]
            .iter()
            .any(|p| text.starts_with(p));
        if is_url || text.ends_with(".git") {
            return Ok(Source::Git {
                url: text.to_string(),
                rev,
            });
        }
        let path = std::fs::canonicalize(text).map_err(|e| MarketplaceError::Source {
            source_text: text.to_string(),
            reason: e.to_string(),
        })?;
        if rev.is_some() {
            return Ok(Source::Git {
                url: path.display().to_string(),
                rev,
            });
        }
        Ok(Source::Directory(path))
    }

    pub fn to_json(&self) -> Value {
        match self {
            Source::Directory(path) => json!({"source": "directory", "path": path}),
            Source::Git { url, rev: None } => json!({"source": "git", "url": url}),
            Source::Git {
                url,
                rev: Some(rev),
            } => json!({"source": "git", "url": url, "ref": rev}),
            Source::Archive { path, sha256 } => {
                json!({"source": "archive", "path": path, "sha256": sha256})
            }
        }
    }

    pub fn from_json(value: &Value) -> Option<Self> {
        match value["source"].as_str()? {
            "directory" => Some(Source::Directory(PathBuf::from(value["path"].as_str()?))),
            "git" => Some(Source::Git {
                url: value["url"].as_str()?.to_string(),
                rev: value["ref"].as_str().map(str::to_string),
            }),
            "archive" => Some(Source::Archive {
                path: PathBuf::from(value["path"].as_str()?),
                sha256: value["sha256"].as_str()?.to_string(),
            }),
            _ => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Source::Directory(path) => path.display().to_string(),
            Source::Git { url, rev: None } => format!("git {url}"),
            Source::Git {
                url,
                rev: Some(rev),
            } => format!("git {url} at {rev}"),
            Source::Archive { path, sha256 } => {
                format!("archive {} (sha256 {sha256})", path.display())
            }
        }
    }
}

/// Unpacks the archive at `path` into `dest` (made), after checking that
/// its SHA-256 is `sha256`; nothing is unpacked from an archive that is
/// not the one the user named. GNU tar, with its refusals: no member
/// outside `dest` (`..`, absolute names), no owners or modes carried over.
pub fn unpack_archive(path: &Path, sha256: &str, dest: &Path) -> Result<(), MarketplaceError> {
    use sha2::{Digest, Sha256};
    let fail = |reason: String| MarketplaceError::Source {
        source_text: path.display().to_string(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
    let found = hex::encode(Sha256::digest(&bytes));
    if found != sha256 {
        return Err(fail(format!(
            "its SHA-256 is {found}, not the {sha256} given; not unpacked"
        )));
    }
    std::fs::create_dir_all(dest).map_err(|e| fail(e.to_string()))?;
    let output = Command::new("tar")
        .args([
            "--extract",
            "--no-same-owner",
            "--no-same-permissions",
            "--file",
        ])
        .arg(path)
        .arg("--directory")
        .arg(dest)
        .output()
        .map_err(|e| fail(format!("cannot run tar: {e}")))?;
    if !output.status.success() {
        return Err(fail(format!(
            "tar: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}

/// Clones `url` into `dest` (which must not exist) and checks out `rev`
/// (else the default branch's head); the commit checked out.
pub fn clone_git(url: &str, rev: Option<&str>, dest: &Path) -> Result<String, MarketplaceError> {
    git(
        &["clone", "--quiet", "--no-hardlinks", "--", url],
        Some(dest),
        None,
    )?;
    if let Some(rev) = rev {
        git(&["checkout", "--quiet", "--detach", rev], None, Some(dest))?;
    }
    head(dest)
}

/// Fetches `dest`'s origin and moves to its default branch's head (a
/// pinned marketplace stays where it is pinned).
pub fn refresh_git(dest: &Path, rev: Option<&str>) -> Result<String, MarketplaceError> {
    git(&["fetch", "--quiet", "origin"], None, Some(dest))?;
    let target = rev.unwrap_or("origin/HEAD");
    git(
        &["checkout", "--quiet", "--detach", target],
        None,
        Some(dest),
    )?;
    head(dest)
}

fn head(dest: &Path) -> Result<String, MarketplaceError> {
    let out = git(&["rev-parse", "HEAD"], None, Some(dest))?;
    Ok(out.trim().to_string())
}

/// Runs git with no prompt for credentials; its error is the command's.
fn git(args: &[&str], last: Option<&Path>, cwd: Option<&Path>) -> Result<String, MarketplaceError> {
    let mut command = Command::new("git");
    command.args(args).env("GIT_TERMINAL_PROMPT", "0");
    if let Some(last) = last {
        command.arg(last);
    }
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let shown = format!("git {}", args.join(" "));
    let output = command.output().map_err(|e| MarketplaceError::Git {
        command: shown.clone(),
        reason: e.to_string(),
    })?;
    if !output.status.success() {
        return Err(MarketplaceError::Git {
            command: shown,
            reason: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_read_as_claude_code_writes_them() -> Result<(), MarketplaceError> {
        let dir = tempfile::tempdir().map_err(|e| MarketplaceError::Source {
            source_text: "tempdir".into(),
            reason: e.to_string(),
        })?;
        let folder = Source::parse(&dir.path().display().to_string(), None, None)?;
        assert!(matches!(folder, Source::Directory(_)));
        assert_eq!(Source::from_json(&folder.to_json()), Some(folder));
        let git = Source::parse("https://example.com/m.git", Some("abc".into()), None)?;
        assert_eq!(git.to_json()["ref"], "abc");
        assert_eq!(Source::from_json(&git.to_json()), Some(git));
        Ok(())
    }
}
