//! Protected paths: never written without an explicit prompt, whatever the
//! mode or the allow rules, whether they exist yet or not. Matched
//! case-insensitively (case-insensitive filesystems exist) on the path with
//! symlinks resolved.

use super::paths::{Visit, walk_tree};
use std::path::{Path, PathBuf};

/// Shell start-up files in the home directory.
pub const SHELL_START_UP: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".inputrc",
];

/// Why writing `path` needs a prompt, or `None` when it is not protected.
/// `config_dir` is carapace's own configuration directory.
pub fn protected_reason(path: &Path, home: &Path, config_dir: &Path) -> Option<String> {
    let lower = |p: &Path| PathBuf::from(p.to_string_lossy().to_lowercase());
    let (path, home, config_dir) = (lower(path), lower(home), lower(config_dir));
    if path.starts_with(&config_dir) {
        return Some(format!(
            "{} holds carapace's own settings, hooks and plugins",
            config_dir.display()
        ));
    }
    let parts: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    for (i, part) in parts.iter().enumerate() {
        match part.as_str() {
            ".carapace" => {
                return Some("`.carapace/` holds carapace settings, hooks and plugins".into());
            }
            ".claude" => return Some("`.claude/` holds Claude Code settings and hooks".into()),
            ".mcp.json" => {
                return Some("`.mcp.json` configures MCP servers (programs that run)".into());
            }
            ".git" => match parts.get(i + 1).map(String::as_str) {
                Some("config") => return Some("`.git/config` can make git run programs".into()),
                Some("hooks") => return Some("`.git/hooks/` holds programs git runs".into()),
                None => {
                    return Some(
                        "`.git` itself (its config and hooks make git run programs)".into(),
                    );
                }
                _ => {}
            },
            _ => {}
        }
    }
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
        let name = name.to_string_lossy();
        if parent == home && SHELL_START_UP.contains(&name.as_ref()) {
            return Some(format!("`~/{name}` runs in every new shell"));
        }
    }
    if path.starts_with(home.join(".config/fish")) {
        return Some("fish's configuration runs in every new shell".into());
    }
    None
}

/// A tree with more entries than the scan may visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the tree has more than {0} entries")]
pub struct TreeTooLarge(pub usize);

/// Every protected entry inside the tree `dir`, visiting at most `limit`
/// entries (a larger tree cannot be vouched for). A write grant on a tree is
/// given only when this is empty, and the tree is checked again after the
/// call.
pub fn protected_entries(
    dir: &Path,
    home: &Path,
    config_dir: &Path,
    limit: usize,
) -> Result<Vec<PathBuf>, TreeTooLarge> {
    let mut found = Vec::new();
    // Links are not followed: a link is judged by where it points when it
    // is used, not here.
    walk_tree(dir, limit, |entry| {
        if protected_reason(entry.path, home, config_dir).is_some() {
            found.push(entry.path.to_path_buf());
            Visit::Skip
        } else {
            Visit::Descend
        }
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(path: &str) -> Option<String> {
        protected_reason(
            Path::new(path),
            Path::new("/home/u"),
            Path::new("/home/u/.carapace"),
        )
    }

    #[test]
    fn protected_paths_whatever_their_case() {
        for protected in [
            "/home/u/.carapace/settings.json",
            "/home/u/.CARAPACE/hooks/x.wasm",
            "/work/p/.carapace/settings.json",
            "/work/p/.Carapace/Settings.JSON",
            "/work/p/.mcp.json",
            "/work/p/sub/.MCP.json",
            "/work/p/.claude/settings.json",
            "/work/p/.git/config",
            "/work/p/.GIT/Config",
            "/work/p/.git/hooks/pre-commit",
            "/work/p/.git",
            "/home/u/.bashrc",
            "/home/u/.ZSHRC",
            "/home/u/.config/fish/config.fish",
        ] {
            assert!(reason(protected).is_some(), "{protected} must be protected");
        }
        for free in [
            "/work/p/src/main.rs",
            "/work/p/.git/objects/ab/cd",
            "/work/p/.bashrc",
            "/work/p/git/config",
            "/home/u/notes.txt",
        ] {
            assert!(reason(free).is_none(), "{free} must not be protected");
        }
    }

    #[test]
    fn finds_protected_entries_inside_a_tree() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join("a/b/.git/hooks"))?;
        std::fs::write(dir.path().join("a/.mcp.json"), "{}")?;
        std::fs::write(dir.path().join("a/b/ok.txt"), "")?;
        let home = Path::new("/nonexistent-home");
        let found = protected_entries(dir.path(), home, &home.join(".carapace"), 1000)?;
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(protected_entries(dir.path(), home, &home.join(".carapace"), 2).is_err());
        Ok(())
    }
}
