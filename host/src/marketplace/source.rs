//! Where a marketplace comes from, in Claude Code's words: a folder
//! (`{"source": "directory", "path": …}`) or a git repository, by path or
//! URL, pinned to a commit when the user names one (`{"source": "git",
//! "url": …, "ref": …}`).

use super::MarketplaceError;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Directory(PathBuf),
    Git { url: String, rev: Option<String> },
}

impl Source {
    /// What `carapace plugin marketplace add SOURCE [--rev REV]` names: a
    /// URL or a path ending in `.git` is a repository; a folder holding a
    /// `.git` is one too when a revision is asked for; else a folder.
    pub fn parse(text: &str, rev: Option<String>) -> Result<Self, MarketplaceError> {
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
        }
    }

    pub fn from_json(value: &Value) -> Option<Self> {
        match value["source"].as_str()? {
            "directory" => Some(Source::Directory(PathBuf::from(value["path"].as_str()?))),
            "git" => Some(Source::Git {
                url: value["url"].as_str()?.to_string(),
                rev: value["ref"].as_str().map(str::to_string),
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
        }
    }
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
        let folder = Source::parse(&dir.path().display().to_string(), None)?;
        assert!(matches!(folder, Source::Directory(_)));
        assert_eq!(Source::from_json(&folder.to_json()), Some(folder));
        let git = Source::parse("https://example.com/m.git", Some("abc".into()))?;
        assert_eq!(git.to_json()["ref"], "abc");
        assert_eq!(Source::from_json(&git.to_json()), Some(git));
        Ok(())
    }
}
