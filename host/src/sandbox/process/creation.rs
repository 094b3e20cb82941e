//! Which names a sandboxed writer may not make: one judgement for every
//! writer — the command guard answering a command's trapped calls, and the
//! WASI file system a component or hook writes through — so a name refused
//! to one is refused to all, at the moment it would be made rather than
//! swept away after the call.
//!
//! Folders are real paths (the writer's own view, links resolved); names
//! are compared lower-cased, as a case-insensitive file system would match
//! them, except git's `HEAD`, which git itself spells one way.

use super::protect::{GIT_CONTROL, NOT_ENTERED, is_git_control_folder, is_git_dir};
use std::path::{Path, PathBuf};

/// What may not be made, and where anything may.
#[derive(Debug, Clone, Default)]
pub(crate) struct CreationRules {
    /// Protected names, lower-cased, as their components (`.cargo/config`
    /// is two).
    names: Vec<Vec<String>>,
    /// Protected paths named one by one (`~/.bashrc` under an added home
    /// directory).
    paths: Vec<PathBuf>,
    /// Where anything may be made (a call's private temp dir, a staging
    /// directory: nothing made there outlives the call).
    exempt: Vec<PathBuf>,
    /// Git directories are judged: `.git` is among the names.
    git: bool,
}

impl CreationRules {
    pub(crate) fn new(names: &[String], paths: Vec<PathBuf>, exempt: Vec<PathBuf>) -> Self {
        Self {
            names: names
                .iter()
                .map(|n| n.to_lowercase().split('/').map(str::to_string).collect())
                .collect(),
            paths,
            exempt,
            git: names.iter().any(|n| n.eq_ignore_ascii_case(".git")),
        }
    }

    /// Whether `name` is protected anywhere: most names are not, and need
    /// no look at their folder.
    pub(crate) fn may_refuse(&self, name: &str) -> bool {
        let lowered = name.to_lowercase();
        (self.git && (name == "HEAD" || GIT_CONTROL.contains(&lowered.as_str())))
            || self.names.iter().any(|c| c.last() == Some(&lowered))
            || self.paths.iter().any(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().to_lowercase() == lowered)
            })
    }

    /// Whether `name` may not be made in `folder` (a real path).
    pub(crate) fn refuses(&self, folder: &Path, name: &str) -> bool {
        if name == "." || name == ".." || self.is_exempt(folder) {
            return false;
        }
        let lowered = name.to_lowercase();
        let path = folder.join(&lowered);
        let lower = |p: &Path| p.to_string_lossy().to_lowercase();
        if self.paths.iter().any(|p| lower(p) == lower(&path)) {
            return true;
        }
        if self.git && self.makes_git_control(folder, name, &lowered) {
            return true;
        }
        let installed = folder
            .components()
            .any(|c| NOT_ENTERED.iter().any(|n| c.as_os_str() == *n));
        let parent = folder
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase());
        self.names.iter().any(|components| {
            let Some((last, before)) = components.split_last() else {
                return false;
            };
            if *last != lowered || (installed && lowered != ".git") {
                return false;
            }
            match before {
                [] => true,
                [folder_name] => parent.as_deref() == Some(folder_name.as_str()),
                _ => lower(&path).ends_with(&format!("/{}", components.join("/"))),
            }
        })
    }

    /// Git's control files inside a git directory — a `.git`, its
    /// worktrees' and submodules' — and a git directory under any other
    /// name recognised from its first identifying entry: `config` or
    /// `hooks` next to a `HEAD`, or a `HEAD` next to them, so a bare
    /// repository whose `core.fsmonitor` runs the writer's program on the
    /// user's next `git status` can never be completed.
    fn makes_git_control(&self, folder: &Path, name: &str, lowered: &str) -> bool {
        let control = GIT_CONTROL.contains(&lowered);
        if control {
            let components: Vec<String> = folder
                .components()
                .map(|c| c.as_os_str().to_string_lossy().to_lowercase())
                .collect();
            if is_git_control_folder(&components) {
                return true;
            }
        }
        let holds = |entry: &str| folder.join(entry).symlink_metadata().is_ok();
        if control {
            return holds("HEAD");
        }
        name == "HEAD" && GIT_CONTROL.iter().any(|c| holds(c)) && !is_git_dir(folder)
    }

    /// Whether renaming a folder from `from` to the name `new_name` in `to`
    /// would bring in, whole, what may not be made there entry by entry: a
    /// folder arriving under a name that begins a protected path
    /// (`.cargo`), or leaving an exempt place (a clone made in the temp
    /// dir).
    pub(crate) fn brings_in(&self, from: &Path, to: &Path, new_name: &str) -> bool {
        let new_name = new_name.to_lowercase();
        let begins = self
            .names
            .iter()
            .any(|c| c.len() > 1 && c[..c.len() - 1].contains(&new_name));
        begins || (self.is_exempt(from) && !self.is_exempt(to))
    }

    pub(crate) fn is_exempt(&self, folder: &Path) -> bool {
        self.exempt.iter().any(|e| folder.starts_with(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> CreationRules {
        CreationRules::new(
            &[".git".into(), ".vscode".into(), ".cargo/config.toml".into()],
            vec!["/h/.bashrc".into()],
            vec!["/tmp/carapace-cmd-x".into(), "/dev/shm".into()],
        )
    }

    #[test]
    fn a_name_is_judged_by_what_it_is_not_where_it_sits() {
        let r = rules();
        for (folder, name) in [
            ("/w", ".git"),
            ("/w/a/b/c", ".GIT"),
            ("/w", ".Vscode"),
            ("/w/.cargo", "config.toml"),
            ("/w/sub/.CARGO", "config.toml"),
            ("/h", ".bashrc"),
            ("/w/node_modules/pkg", ".git"),
            ("/w/.git", "commondir"),
            ("/w/.GIT", "config.worktree"),
            ("/w/lib/.git", "hooks"),
            ("/w/.git/worktrees/wt", "commondir"),
            ("/w/.git/modules/a", "config"),
            ("/w/.git/modules/a/refs", "config"),
        ] {
            assert!(r.refuses(Path::new(folder), name), "{folder}/{name}");
        }
        for (folder, name) in [
            ("/w", "git"),
            ("/w", "config.toml"),
            ("/w/cargo", "config.toml"),
            ("/w/sub", ".bashrc"),
            ("/tmp/carapace-cmd-x/clone", ".git"),
            ("/dev/shm", ".git"),
            ("/w/node_modules/pkg", ".vscode"),
            ("/w/.git", "."),
            ("/w/.git", "index.lock"),
            ("/w/.git/refs/heads", "config"),
            ("/w/.git/logs/refs/heads", "hooks"),
            ("/w/.git/worktrees", "config"),
            ("/w/src", "config"),
        ] {
            assert!(!r.refuses(Path::new(folder), name), "{folder}/{name}");
        }
        assert!(!r.may_refuse("main.rs") && r.may_refuse(".bashrc"));
        assert!(r.may_refuse("HEAD") && !r.may_refuse("head"));
    }

    #[test]
    fn a_git_directory_under_any_name_is_refused_from_its_first_entry() -> std::io::Result<()> {
        let r = rules();
        let dir = tempfile::tempdir()?;
        let bare = dir.path().join("bare");
        std::fs::create_dir(&bare)?;
        // Either order: HEAD first refuses the control files after it…
        assert!(!r.refuses(&bare, "HEAD"));
        std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n")?;
        for control in ["config", "CONFIG", "hooks", "commondir", "config.worktree"] {
            assert!(r.refuses(&bare, control), "{control} next to HEAD");
        }
        // …and a control file first refuses the HEAD after it.
        let other = dir.path().join("other");
        std::fs::create_dir_all(other.join("hooks"))?;
        assert!(r.refuses(&other, "HEAD"));
        // A git directory that is whole already updates its HEAD, and
        // ordinary names stay free.
        let whole = dir.path().join("whole");
        for sub in ["objects", "refs"] {
            std::fs::create_dir_all(whole.join(sub))?;
        }
        std::fs::write(whole.join("HEAD"), "ref: refs/heads/main\n")?;
        std::fs::write(whole.join("config"), "")?;
        assert!(!r.refuses(&whole, "HEAD"));
        assert!(!r.refuses(&other, "head") && !r.refuses(&bare, "objects"));
        // Without `.git` among the names nothing of git's is judged.
        let none = CreationRules::new(&[".vscode".into()], Vec::new(), Vec::new());
        assert!(!none.refuses(&bare, "config") && !none.refuses(&other, "HEAD"));
        Ok(())
    }
}
