//! Protected paths: never written without an explicit prompt, whatever the
//! mode or the allow rules, whether they exist yet or not. What is
//! protected is what makes a program run later, outside the sandbox, on an
//! ordinary action of the user's — opening the folder in an editor, `cd`
//! into it, `git status`, a new shell, `npm install`, `cargo build` — by
//! what it means, not where it sits: git's configuration and hooks wherever
//! git reads them (a `.git` at any depth, a git directory under another
//! name, a `core.hooksPath`), editors' task and settings files, shell and
//! tool start-up files, user-level bin folders. Matched case-insensitively
//! (case-insensitive filesystems exist) on the path with symlinks resolved.
//! The same table serves every writing tool, commands, hooks and plugins.

use super::paths::{TreeTooLarge, Visit, walk_tree};
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

/// Names protected wherever they appear, at any depth, with why: the
/// sandbox's table, one for the policy and every sandboxed writer.
pub use crate::sandbox::process::PROTECTED_NAMES;

/// The names commands find read-only under every write root: the
/// sandbox's list, one for commands and every other writer.
pub use crate::sandbox::process::command_protected_names;

/// Inside a git directory, what makes git run programs or read another
/// configuration: the command sandbox's list, one for both.
pub use crate::sandbox::process::GIT_CONTROL;

/// Paths under the home directory that make programs run, with why (a
/// folder protects everything inside it).
pub const HOME_START_UP: &[(&str, &str)] = &[
    (
        ".gitconfig",
        "is git's configuration: it can make git run programs",
    ),
    (".config/git", "is git's configuration and hooks"),
    (
        ".ssh",
        "holds ssh's configuration, keys and authorized keys",
    ),
    (
        ".config/fish",
        "is fish's configuration: it runs in every new shell",
    ),
    (".config/nushell", "runs in every new shell"),
    (".config/autostart", "starts programs when you log in"),
    (".config/systemd", "holds services that start programs"),
    (
        ".config/environment.d",
        "sets the environment of every session",
    ),
    (".config/nvim", "runs when Neovim starts"),
    (".config/Code/User", "holds the editor's settings and tasks"),
    (".config/pip", "chooses where pip installs packages from"),
    (".local/bin", "holds programs found first on your PATH"),
    ("bin", "holds programs found first on your PATH"),
    (".cargo/bin", "holds programs found first on your PATH"),
    (".npmrc", "can make npm run programs"),
    (".yarnrc", "can make yarn run programs"),
    (".pam_environment", "sets the environment of every session"),
    (".xprofile", "runs when you log in"),
    (".xinitrc", "runs when X starts"),
    (".xsession", "runs when you log in"),
    (".vimrc", "runs when vim starts"),
    (".emacs", "runs when Emacs starts"),
    (".emacs.d", "runs when Emacs starts"),
    (".tmux.conf", "runs when tmux starts (run-shell)"),
    (
        ".docker/config.json",
        "names credential helper programs docker runs",
    ),
    (
        ".kube/config",
        "names programs kubectl runs for credentials",
    ),
    (
        ".aws/config",
        "names programs the AWS tools run for credentials (credential_process)",
    ),
    (".curlrc", "changes what every curl does"),
    (".wgetrc", "changes what every wget does"),
    (".netrc", "holds credentials"),
    (".gnupg", "holds gpg's keys and configuration"),
];

/// Why writing `path` needs a prompt, or `None` when it is not protected.
/// `config_dir` is carapace's own configuration directory.
pub fn protected_reason(path: &Path, home: &Path, config_dir: &Path) -> Option<String> {
    lexical_reason(path, home, config_dir)
        .or_else(|| git_by_content(path))
        .or_else(|| hooks_path_reason(path, home))
}

/// The part of [`protected_reason`] read off the path alone.
fn lexical_reason(path: &Path, home: &Path, config_dir: &Path) -> Option<String> {
    let lower = |p: &Path| PathBuf::from(p.to_string_lossy().to_lowercase());
    let (lowered, home_l, config_l) = (lower(path), lower(home), lower(config_dir));
    if lowered.starts_with(&config_l) {
        return Some(format!(
            "{} holds carapace's own settings, hooks and plugins",
            config_dir.display()
        ));
    }
    let parts: Vec<String> = lowered
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    for (i, part) in parts.iter().enumerate() {
        let here = |name: &str| {
            name.split('/').zip(&parts[i..]).all(|(a, b)| a == b)
                && name.split('/').count() <= parts.len() - i
        };
        if let Some((name, why)) = PROTECTED_NAMES.iter().find(|(name, _)| here(name)) {
            return Some(format!("`{name}` {why}"));
        }
        if part == ".git"
            && let Some(reason) = git_control(&parts[i + 1..], ".git")
        {
            return Some(reason);
        }
    }
    if let Ok(rest) = lowered.strip_prefix(&home_l) {
        let shell = rest.to_str().is_some_and(|r| SHELL_START_UP.contains(&r));
        if shell {
            return Some(format!("`~/{}` runs in every new shell", rest.display()));
        }
        if let Some((name, why)) = HOME_START_UP
            .iter()
            .find(|(name, _)| rest.starts_with(name.to_lowercase()))
        {
            return Some(format!("`~/{name}` {why}"));
        }
    }
    None
}

/// Why the path `rest` inside a git directory (`shown`) is protected: the
/// directory itself, or what makes git run programs in it — and in its
/// submodules' and worktrees' own git directories.
fn git_control(rest: &[String], shown: &str) -> Option<String> {
    let Some(first) = rest.first() else {
        return Some(format!(
            "`{shown}` itself (its config and hooks make git run programs)"
        ));
    };
    if GIT_CONTROL.contains(&first.as_str()) {
        return Some(format!("`{shown}/{first}` can make git run programs"));
    }
    match first.as_str() {
        "modules" | "worktrees" if rest.len() > 2 => git_control(&rest[2..], shown),
        _ => None,
    }
}

/// Whether `dir` is a git directory, whatever its name: the command
/// sandbox's test, one for both.
pub use crate::sandbox::process::is_git_dir;

/// A path inside a git directory found by its content.
fn git_by_content(path: &Path) -> Option<String> {
    let mut inner: Vec<String> = Vec::new();
    for ancestor in path.ancestors() {
        if is_git_dir(ancestor) {
            inner.reverse();
            return git_control(&inner, &ancestor.display().to_string());
        }
        let name = ancestor.file_name()?;
        inner.push(name.to_string_lossy().to_lowercase());
    }
    None
}

/// A path inside the folder `core.hooksPath` names, for the repository the
/// path is in or for the user (`~/.gitconfig`, `~/.config/git/config`).
fn hooks_path_reason(path: &Path, home: &Path) -> Option<String> {
    hooks_paths(path, home)
        .into_iter()
        .find(|hooks| path.starts_with(hooks))
        .map(|hooks| {
            format!(
                "{} is git's hooks folder (core.hooksPath): git runs the programs there",
                hooks.display()
            )
        })
}

/// The hooks folders `core.hooksPath` names for the repository holding
/// `path` and for the user.
pub fn hooks_paths(path: &Path, home: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let user = [home.join(".gitconfig"), home.join(".config/git/config")];
    for config in user {
        if let Some(hooks) = read_hooks_path(&config) {
            found.push(if hooks.is_absolute() {
                hooks
            } else {
                home.join(hooks)
            });
        }
    }
    // The repository: the nearest ancestor with a `.git` folder; a
    // relative hooksPath is relative to its working tree.
    if let Some(top) = path.ancestors().skip(1).find(|a| a.join(".git").is_dir())
        && let Some(hooks) = read_hooks_path(&top.join(".git/config"))
    {
        found.push(if hooks.is_absolute() {
            hooks
        } else {
            top.join(hooks)
        });
    }
    found
}

/// `core.hooksPath` in one git configuration file (git's own syntax: a
/// `[core]` section, keys case-insensitive, `~/` expanded by the caller's
/// base only when relative).
fn read_hooks_path(config: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(config).ok()?;
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_core = line
                .trim_start_matches('[')
                .trim()
                .to_lowercase()
                .starts_with("core")
                && !line.contains('"');
            continue;
        }
        if !in_core {
            continue;
        }
        if let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("hookspath")
        {
            let value = value.trim().trim_matches('"');
            if !value.is_empty() {
                found = Some(PathBuf::from(value));
            }
        }
    }
    found
}

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
    if protected_reason(dir, home, config_dir).is_some() {
        found.push(dir.to_path_buf());
        return Ok(found);
    }
    let hooks = hooks_paths(dir, home);
    // Links are not followed: a link is judged by where it points when it
    // is used, not here.
    walk_tree(dir, limit, |entry| {
        let protected = lexical_reason(entry.path, home, config_dir).is_some()
            || (entry.is_dir() && is_git_dir(entry.path))
            || hooks.iter().any(|h| entry.path.starts_with(h));
        if protected {
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
            // By meaning, not by a list of top-level names.
            "/work/p/.git/commondir",
            "/work/p/.git/config.worktree",
            "/work/p/lib/.git/hooks/post-checkout",
            "/work/p/.git/modules/sub/config",
            "/work/p/.git/worktrees/w/commondir",
            "/work/p/sub/.vscode/tasks.json",
            "/work/p/.idea/workspace.xml",
            "/work/p/a/b/.envrc",
            "/work/p/.husky/pre-commit",
            "/work/p/.cargo/config.toml",
            "/home/u/.gitconfig",
            "/home/u/.config/git/config",
            "/home/u/.ssh/config",
            "/home/u/.npmrc",
            "/home/u/.local/bin/git",
            "/home/u/.config/autostart/x.desktop",
            "/home/u/.cargo/bin/cargo",
        ] {
            assert!(reason(protected).is_some(), "{protected} must be protected");
        }
        for free in [
            "/work/p/src/main.rs",
            "/work/p/.git/objects/ab/cd",
            "/work/p/.bashrc",
            "/work/p/git/config",
            "/home/u/notes.txt",
            "/work/p/.git/index",
            "/work/p/.git/refs/heads/main",
            "/home/u/.cargo/registry/cache/x.crate",
            "/home/u/.config/other/x",
        ] {
            assert!(reason(free).is_none(), "{free} must not be protected");
        }
    }

    #[test]
    fn a_git_directory_under_another_name_and_a_hooks_path_are_protected()
    -> Result<(), Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let home = root.path().join("home");
        let ws = root.path().join("ws");
        // A bare repository named like any folder.
        let bare = ws.join("vendor/thing");
        for dir in ["objects", "refs"] {
            std::fs::create_dir_all(bare.join(dir))?;
        }
        std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n")?;
        // A repository whose hooks live in `.husky-like/` (core.hooksPath).
        std::fs::create_dir_all(ws.join(".git"))?;
        std::fs::write(
            ws.join(".git/config"),
            "[core]\n\tbare = false\n\thooksPath = tools/hooks\n",
        )?;
        let config = home.join(".carapace");
        let why = |p: &Path| protected_reason(p, &home, &config);
        assert!(why(&bare.join("config")).is_some());
        assert!(why(&bare.join("hooks/pre-commit")).is_some());
        assert!(
            why(&bare.join("objects/ab")).is_none(),
            "git writes its objects"
        );
        assert!(why(&ws.join("tools/hooks/pre-commit")).is_some());
        assert!(why(&ws.join("tools/other.sh")).is_none());
        // The same found inside a tree a grant would cover.
        let found = protected_entries(&ws, &home, &config, 1000)?;
        assert!(found.contains(&bare), "{found:?}");
        assert!(found.contains(&ws.join(".git")), "{found:?}");
        // A user-level hooksPath too.
        std::fs::create_dir_all(&home)?;
        std::fs::write(
            home.join(".gitconfig"),
            "[Core]\n  HooksPath = ~/githooks\n",
        )?;
        std::fs::write(
            home.join(".gitconfig"),
            "[core]\nhooksPath = /opt/githooks\n",
        )?;
        assert!(why(Path::new("/opt/githooks/pre-push")).is_some());
        Ok(())
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
