//! The machine and workspace the model works in, as the system prompt's
//! environment section states them: read from the filesystem (no process
//! is started), once per session.

use std::path::{Path, PathBuf};

/// What the environment section says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    pub cwd: PathBuf,
    /// Further working directories (`--add-dir`, `additionalDirectories`).
    pub additional_dirs: Vec<PathBuf>,
    /// The branch checked out, when the working directory is in a git
    /// repository (`None` inside: a detached HEAD).
    pub git: Option<GitState>,
    pub platform: String,
    pub os_version: String,
    /// YYYY-MM-DD.
    pub date: String,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitState {
    pub branch: Option<String>,
}

impl Environment {
    /// The environment of a session in `cwd` on `model`.
    pub fn detect(cwd: &Path, additional_dirs: &[PathBuf], model: &str, date: &str) -> Self {
        Self {
            cwd: cwd.to_path_buf(),
            additional_dirs: additional_dirs.to_vec(),
            git: git_state(cwd),
            platform: std::env::consts::OS.to_string(),
            os_version: os_version(),
            date: date.to_string(),
            model: model.to_string(),
        }
    }

    /// The section, as the system prompt carries it.
    pub fn section(&self) -> String {
        let mut lines = vec![
            "# Environment".to_string(),
            format!("- Working directory: {}", self.cwd.display()),
        ];
        for dir in &self.additional_dirs {
            lines.push(format!("- Also a working directory: {}", dir.display()));
        }
        lines.push(match &self.git {
            None => "- Git repository: no".to_string(),
            Some(GitState { branch: Some(b) }) => format!("- Git repository: yes, on branch {b}"),
            Some(GitState { branch: None }) => {
                "- Git repository: yes, HEAD detached (no branch)".to_string()
            }
        });
        lines.push(format!("- Platform: {}", self.platform));
        lines.push(format!("- OS version: {}", self.os_version));
        lines.push(format!("- Today's date: {}", self.date));
        lines.push(match model_family(&self.model) {
            Some(family) => format!("- Model: {family} (model ID {})", self.model),
            None => format!("- Model ID: {}", self.model),
        });
        lines.join("\n")
    }
}

/// The repository `cwd` is in, read from `.git` (a directory, or a file
/// naming one, as in a worktree) in it or an ancestor.
fn git_state(cwd: &Path) -> Option<GitState> {
    for dir in cwd.ancestors() {
        let dot_git = dir.join(".git");
        let git_dir = if dot_git.is_dir() {
            dot_git
        } else if dot_git.is_file() {
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let named = text.strip_prefix("gitdir:")?.trim();
            dir.join(named)
        } else {
            continue;
        };
        let head = std::fs::read_to_string(git_dir.join("HEAD")).unwrap_or_default();
        let branch = head
            .trim()
            .strip_prefix("ref: refs/heads/")
            .map(str::to_string);
        return Some(GitState { branch });
    }
    None
}

fn os_version() -> String {
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    match (read("ostype"), read("osrelease")) {
        (Some(kind), Some(release)) => format!("{kind} {release}"),
        _ => std::env::consts::OS.to_string(),
    }
}

/// `claude-sonnet-4-5…` → `Claude Sonnet 4.5`; other names are left alone.
fn model_family(model: &str) -> Option<String> {
    let rest = model.strip_prefix("claude-")?;
    let mut parts = rest.split('-');
    let family = parts.next()?;
    if !matches!(family, "opus" | "sonnet" | "haiku") {
        return None;
    }
    let major = parts.next().filter(|p| p.len() == 1)?;
    let minor = parts.next().filter(|p| p.len() == 1);
    let mut name = format!(
        "Claude {}{} {major}",
        family[..1].to_uppercase(),
        &family[1..]
    );
    if let Some(minor) = minor {
        name.push('.');
        name.push_str(minor);
    }
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_are_named_by_family() {
        assert_eq!(
            model_family("claude-sonnet-4-5").as_deref(),
            Some("Claude Sonnet 4.5")
        );
        assert_eq!(
            model_family("claude-opus-4-1-20250805").as_deref(),
            Some("Claude Opus 4.1")
        );
        assert_eq!(
            model_family("claude-haiku-4").as_deref(),
            Some("Claude Haiku 4")
        );
        assert_eq!(model_family("claude-3-5-haiku-20241022"), None);
        assert_eq!(model_family("scripted-model"), None);
    }

    #[test]
    fn the_branch_is_read_from_git_or_a_worktree_file() -> std::io::Result<()> {
        let root = tempfile::tempdir()?;
        let repo = root.path().join("repo");
        std::fs::create_dir_all(repo.join(".git"))?;
        std::fs::create_dir_all(repo.join("src/deep"))?;
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n")?;
        let state = git_state(&repo.join("src/deep"));
        assert_eq!(state.and_then(|s| s.branch).as_deref(), Some("feature/x"));

        let worktree = root.path().join("wt");
        std::fs::create_dir_all(root.path().join("meta"))?;
        std::fs::create_dir_all(&worktree)?;
        std::fs::write(worktree.join(".git"), "gitdir: ../meta\n")?;
        std::fs::write(root.path().join("meta/HEAD"), "0123abcd\n")?;
        assert_eq!(git_state(&worktree), Some(GitState { branch: None }));
        assert_eq!(git_state(&root.path().join("meta")), None);
        Ok(())
    }
}
