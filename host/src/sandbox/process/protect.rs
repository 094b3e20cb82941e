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
const NOT_ENTERED: &[&str] = &["node_modules", "target", "__pycache__", ".venv"];

/// The protected paths under `roots`: each name at each root (whether it
/// exists or not), plus what the walk finds deeper that exists.
pub fn protected_under(roots: &[PathBuf], names: &[String]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = roots
        .iter()
        .flat_map(|root| names.iter().map(move |name| root.join(name)))
        .collect();
    let mut budget = WALK_LIMIT;
    for root in roots {
        walk(root, names, &mut budget, &mut found);
    }
    found
}

fn walk(root: &Path, names: &[String], budget: &mut usize, found: &mut Vec<PathBuf>) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut looks_like_git = 0;
        for entry in entries.flatten() {
            if *budget == 0 {
                return;
            }
            *budget -= 1;
            let name = entry.file_name().to_string_lossy().to_lowercase();
            if matches!(name.as_str(), "head" | "objects" | "refs") {
                looks_like_git += 1;
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let protected = names
                .iter()
                .any(|n| n.split('/').next().is_some_and(|first| first == name));
            if protected {
                if dir != root {
                    // Deeper than a root, a name of several parts
                    // (`.cargo/config.toml`) protects its whole folder:
                    // the file may not exist yet, and only what exists
                    // can be made read-only.
                    found.push(entry.path());
                }
                continue; // read-only as a whole: nothing inside to find
            }
            if is_dir && !NOT_ENTERED.contains(&name.as_str()) {
                stack.push(entry.path());
            }
        }
        if looks_like_git == 3 && dir != root && is_git_dir(&dir) {
            found.push(dir);
        }
    }
}

/// git takes a folder holding `HEAD`, `objects/` and `refs/` as a git
/// directory, whatever its name.
fn is_git_dir(dir: &Path) -> bool {
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
        let found = protected_under(std::slice::from_ref(&ws), &names);
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
}
