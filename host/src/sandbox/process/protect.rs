//! What a command finds read-only under its write roots: the protected
//! names (given by the session, from the policy's table) at the top of
//! every write root and wherever else they already are in the tree, and
//! every git directory whatever its name — found by a bounded walk before
//! each command, so that a nested clone's `lib/.git` or a bare repository
//! in `vendor/` is as safe as the workspace's own `.git`.

use std::path::{Path, PathBuf};

/// The most directory entries the walk reads for one command; what lies
/// beyond is protected only at the top of the write roots (the README says
/// so). The workspace of this project, with its build output skipped, has
/// about 2,000.
pub const WALK_LIMIT: usize = 20_000;

/// Folders the walk does not enter: build output and installed packages,
/// filled by tools, never where git, an editor or a shell reads its
/// configuration from, and often holding most of a tree's entries.
pub(super) const NOT_ENTERED: &[&str] = &["node_modules", "target", "__pycache__", ".venv"];

/// What the walk found in each folder, kept for the session's later
/// commands: a folder whose identity and change time are the same has the
/// same entries, so it is not read again — one `stat` per folder instead
/// of a listing (a folder's change time moves whenever an entry is added,
/// removed or renamed in it).
#[derive(Debug, Default)]
pub struct WalkCache(std::sync::Mutex<std::collections::HashMap<PathBuf, Listed>>);

#[derive(Debug, Clone)]
struct Listed {
    /// Inode, change time (s, ns), modification time (s, ns).
    stamp: (u64, i64, i64, i64, i64),
    entries: usize,
    subdirs: Vec<PathBuf>,
    found: Vec<PathBuf>,
}

/// The protected paths under `roots`: each name at each root (whether it
/// exists or not), plus what the walk finds deeper that exists.
pub fn protected_under(roots: &[PathBuf], names: &[String], cache: &WalkCache) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = roots
        .iter()
        .flat_map(|root| names.iter().map(move |name| root.join(name)))
        .collect();
    let mut budget = WALK_LIMIT;
    let Ok(mut listed) = cache.0.lock() else {
        return found;
    };
    for root in roots {
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            let Some(entry) = listing(&dir, dir == *root, names, &mut listed) else {
                continue;
            };
            if entry.entries > budget {
                return found;
            }
            budget -= entry.entries;
            found.extend(entry.found.iter().cloned());
            stack.extend(entry.subdirs.iter().cloned());
        }
    }
    found
}

/// Whether a change time of `secs`.`nanos` is within two seconds of now:
/// a folder's listing kept by its times is not trusted that soon (file
/// times come from a coarse clock; a change in the same tick leaves them
/// as they were).
pub fn changed_lately(secs: i64, nanos: i64) -> bool {
    let changed = std::time::UNIX_EPOCH
        + std::time::Duration::new(
            u64::try_from(secs).unwrap_or(0),
            u32::try_from(nanos).unwrap_or(0),
        );
    std::time::SystemTime::now()
        .duration_since(changed)
        .map_or(true, |age| age < std::time::Duration::from_secs(2))
}

fn stamp(dir: &Path) -> Option<(u64, i64, i64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir).ok()?;
    Some((
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec(),
        meta.mtime(),
        meta.mtime_nsec(),
    ))
}

/// `dir`'s listing, from the cache when the folder has not changed.
fn listing<'a>(
    dir: &Path,
    is_root: bool,
    names: &[String],
    listed: &'a mut std::collections::HashMap<PathBuf, Listed>,
) -> Option<&'a Listed> {
    let now = stamp(dir)?;
    // A folder changed within the clock's tick of now may change again
    // without its times moving (file times come from a coarse clock):
    // read again until it settles.
    let fresh = listed.get(dir).is_some_and(|l| l.stamp == now) && !changed_lately(now.1, now.2);
    if !fresh {
        let read = read_listing(dir, is_root, names, now)?;
        listed.insert(dir.to_path_buf(), read);
    }
    listed.get(dir)
}

fn read_listing(
    dir: &Path,
    is_root: bool,
    names: &[String],
    stamp: (u64, i64, i64, i64, i64),
) -> Option<Listed> {
    let mut listed = Listed {
        stamp,
        entries: 0,
        subdirs: Vec::new(),
        found: Vec::new(),
    };
    let mut looks_like_git = 0;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        listed.entries += 1;
        let raw = entry.file_name();
        let bytes = raw.as_encoded_bytes();
        // Every protected name starts with a dot; a git directory is known
        // by three names of its own. Other entries only matter as folders.
        if bytes.first() == Some(&b'.')
            || matches!(bytes.first(), Some(b'H' | b'h' | b'O' | b'o' | b'R' | b'r'))
        {
            let name = raw.to_string_lossy().to_lowercase();
            if matches!(name.as_str(), "head" | "objects" | "refs") {
                looks_like_git += 1;
            }
            let protected = names
                .iter()
                .any(|n| n.split('/').next().is_some_and(|first| first == name));
            if protected {
                if !is_root {
                    // Deeper than a root, a name of several parts
                    // (`.cargo/config.toml`) protects its whole folder:
                    // the file may not exist yet, and only what exists
                    // can be made read-only.
                    listed.found.push(entry.path());
                }
                continue; // read-only as a whole: nothing inside to find
            }
        }
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && !NOT_ENTERED.iter().any(|n| n.as_bytes() == bytes) {
            listed.subdirs.push(entry.path());
        }
    }
    if looks_like_git == 3 && !is_root && is_git_dir(dir) {
        listed.found.push(dir.to_path_buf());
    }
    Some(listed)
}

/// Names protected wherever they appear, at any depth, with why (a name
/// with `/` is that sequence of components). `.git` is judged by
/// the git rules: git itself writes most of it.
pub const PROTECTED_NAMES: &[(&str, &str)] = &[
    (".carapace", "holds carapace settings, hooks and plugins"),
    (".claude", "holds Claude Code settings, hooks and commands"),
    (".mcp.json", "configures MCP servers (programs that run)"),
    (
        ".vscode",
        "holds editor tasks and settings that run programs when the folder is opened",
    ),
    (
        ".idea",
        "holds IDE run configurations and settings that run programs",
    ),
    (".zed", "holds editor tasks and settings that run programs"),
    (".fleet", "holds editor run configurations"),
    (
        ".devcontainer",
        "runs its commands when the folder is opened in a container",
    ),
    (".envrc", "is run by direnv on entering the folder"),
    (
        ".exrc",
        "is run by vi and Neovim when they start in the folder",
    ),
    (".nvim.lua", "is run by Neovim when it starts in the folder"),
    (".nvimrc", "is run by Neovim when it starts in the folder"),
    (".husky", "holds git hooks (husky)"),
    (
        ".pre-commit-config.yaml",
        "names programs pre-commit runs on every commit",
    ),
    (
        ".npmrc",
        "can make npm run programs (node-options, script-shell)",
    ),
    (".yarnrc", "can make yarn run programs"),
    (
        ".yarnrc.yml",
        "can make yarn run a program of its choosing (yarnPath)",
    ),
    (
        ".cargo/config.toml",
        "can make cargo run a program on every build",
    ),
    (
        ".cargo/config",
        "can make cargo run a program on every build",
    ),
    (".ripgreprc", "can make ripgrep run programs (--pre)"),
    (
        "CLAUDE.md",
        "is read into the model's instructions at the start of every session",
    ),
    (
        "CLAUDE.local.md",
        "is read into the model's instructions at the start of every session",
    ),
];

/// The names no sandboxed writer may make and commands find read-only
/// under every write root: the table above, and `.git` whole (git's own
/// writes go through the user).
pub fn command_protected_names() -> Vec<String> {
    std::iter::once(".git")
        .chain(PROTECTED_NAMES.iter().map(|(name, _)| *name))
        .map(str::to_string)
        .collect()
}

/// Inside a git directory, what makes git run programs or read another
/// configuration.
pub const GIT_CONTROL: &[&str] = &["config", "config.worktree", "hooks", "commondir"];

/// The most entries read below one `.git`'s `worktrees/` and `modules/`.
const GIT_WALK_LIMIT: usize = 2_000;

/// How the protected paths that exist are kept: a `.git` folder stays
/// writable for git's own data (objects, index, refs, logs, `HEAD`), so
/// commits, stashes, checkouts and rebases work, but is pinned in place
/// with its control files read-only — and those of its worktrees' and
/// submodules' git directories; anything else is read-only whole.
/// Returns (pinned, read-only).
pub(super) fn keep(existing: Vec<PathBuf>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut pinned = Vec::new();
    let mut readonly = Vec::new();
    for path in existing {
        let is_dot_git = path
            .file_name()
            .is_some_and(|n| n.eq_ignore_ascii_case(".git"));
        let is_folder = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if is_dot_git && is_folder {
            let mut budget = GIT_WALK_LIMIT;
            control_entries(&path, &mut readonly, &mut budget);
            pinned.push(path);
        } else {
            readonly.push(path);
        }
    }
    (pinned, readonly)
}

/// The control files of the git directory `dir` that exist, and of the
/// git directories inside it (`worktrees/*`, and every git directory
/// below `modules/`: a submodule's name may hold slashes).
fn control_entries(dir: &Path, out: &mut Vec<PathBuf>, budget: &mut usize) {
    out.extend(
        GIT_CONTROL
            .iter()
            .map(|name| dir.join(name))
            .filter(|p| p.symlink_metadata().is_ok()),
    );
    let subdirs = |folder: &Path, budget: &mut usize| -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(folder) else {
            return Vec::new();
        };
        let mut dirs = Vec::new();
        for entry in entries.flatten() {
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(entry.path());
            }
        }
        dirs
    };
    for worktree in subdirs(&dir.join("worktrees"), budget) {
        out.extend(
            GIT_CONTROL
                .iter()
                .map(|name| worktree.join(name))
                .filter(|p| p.symlink_metadata().is_ok()),
        );
    }
    let mut stack = subdirs(&dir.join("modules"), budget);
    while let Some(folder) = stack.pop() {
        if is_git_dir(&folder) {
            control_entries(&folder, out, budget);
        } else {
            stack.extend(subdirs(&folder, budget));
        }
    }
}

/// Whether `folder` (lower-cased components) is where a git directory
/// keeps what makes git run programs: a `.git` itself, one of its
/// worktrees' folders, or anywhere below its `modules/` (a submodule's
/// name may hold slashes, so no depth there is only data) — not its
/// `refs/`, `logs/` or `objects/`, where a branch may be called `config`.
pub(super) fn is_git_control_folder(folder: &[String]) -> bool {
    let Some(at) = folder.iter().position(|c| c == ".git") else {
        return false;
    };
    match &folder[at + 1..] {
        [] => true,
        [first, ..] if first == "modules" => true,
        [first, _] => first == "worktrees",
        _ => false,
    }
}

/// git takes a folder holding `HEAD`, `objects/` and `refs/` as a git
/// directory, whatever its name (a bare repository, a
/// `--separate-git-dir`, a `commondir` target).
pub fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_protected_names_and_git_directories_are_found() -> std::io::Result<()> {
        let root = tempfile::tempdir()?;
        let ws = root.path().to_path_buf();
        std::fs::create_dir_all(ws.join("lib/.git/hooks"))?;
        std::fs::create_dir_all(ws.join("a/b/.vscode"))?;
        std::fs::create_dir_all(ws.join("tool/.cargo"))?;
        std::fs::write(ws.join("tool/.cargo/config.toml"), "")?;
        for dir in ["vendor/x/objects", "vendor/x/refs"] {
            std::fs::create_dir_all(ws.join(dir))?;
        }
        std::fs::write(ws.join("vendor/x/HEAD"), "ref: refs/heads/main\n")?;
        // Inside build output: not entered.
        std::fs::create_dir_all(ws.join("target/debug/.git"))?;
        let names: Vec<String> = [".git", ".vscode", ".cargo/config.toml"]
            .map(String::from)
            .to_vec();
        let cache = WalkCache::default();
        let found = protected_under(std::slice::from_ref(&ws), &names, &cache);
        for expected in [
            ws.join(".git"),
            ws.join(".vscode"),
            ws.join("lib/.git"),
            ws.join("a/b/.vscode"),
            ws.join("tool/.cargo"),
            ws.join("vendor/x"),
        ] {
            assert!(
                found.contains(&expected),
                "{} not in {found:?}",
                expected.display()
            );
        }
        assert!(!found.contains(&ws.join("target/debug/.git")));
        Ok(())
    }

    #[test]
    fn a_git_folder_is_pinned_with_its_control_files_read_only() -> std::io::Result<()> {
        let root = tempfile::tempdir()?;
        let git = root.path().join(".git");
        for dir in [
            "hooks",
            "objects",
            "refs",
            "worktrees/wt",
            "modules/lib/deep/objects",
            "modules/lib/deep/refs",
        ] {
            std::fs::create_dir_all(git.join(dir))?;
        }
        for file in [
            "config",
            "HEAD",
            "worktrees/wt/commondir",
            "modules/lib/deep/HEAD",
            "modules/lib/deep/config",
        ] {
            std::fs::write(git.join(file), "")?;
        }
        let bare = root.path().join("vendor");
        std::fs::create_dir(&bare)?;
        let (pinned, readonly) = keep(vec![git.clone(), bare.clone()]);
        assert_eq!(pinned, vec![git.clone()]);
        let mut expected: Vec<PathBuf> = [
            "config",
            "hooks",
            "worktrees/wt/commondir",
            "modules/lib/deep/config",
        ]
        .iter()
        .map(|p| git.join(p))
        .chain([bare])
        .collect();
        let mut readonly = readonly;
        readonly.sort();
        expected.sort();
        assert_eq!(readonly, expected);
        Ok(())
    }

    #[test]
    fn git_control_folders_are_the_git_directories_not_their_data() {
        let folder = |p: &str| -> Vec<String> { p.split('/').map(str::to_string).collect() };
        for yes in [
            ".git",
            "w/.git",
            "w/.git/worktrees/x",
            "w/.git/modules/a/refs",
        ] {
            assert!(is_git_control_folder(&folder(yes)), "{yes}");
        }
        for no in [
            "w",
            "w/.git/refs/heads",
            "w/.git/logs",
            "w/.git/worktrees",
            "w/.git/info",
        ] {
            assert!(!is_git_control_folder(&folder(no)), "{no}");
        }
    }

    #[test]
    fn a_folder_that_changed_is_read_again() -> std::io::Result<()> {
        let root = tempfile::tempdir()?;
        let ws = root.path().to_path_buf();
        std::fs::create_dir_all(ws.join("a/b"))?;
        let names = vec![".vscode".to_string()];
        let cache = WalkCache::default();
        let roots = std::slice::from_ref(&ws);
        assert!(!protected_under(roots, &names, &cache).contains(&ws.join("a/b/.vscode")));
        // The user adds one between two commands: its folder changed.
        std::fs::create_dir(ws.join("a/b/.vscode"))?;
        assert!(protected_under(roots, &names, &cache).contains(&ws.join("a/b/.vscode")));
        std::fs::remove_dir(ws.join("a/b/.vscode"))?;
        assert!(!protected_under(roots, &names, &cache).contains(&ws.join("a/b/.vscode")));
        Ok(())
    }
}
