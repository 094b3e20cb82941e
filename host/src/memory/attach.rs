//! Memory that joins the session later: a folder's own `CLAUDE.md` (and
//! `CLAUDE.local.md`, `.claude/CLAUDE.md`) below the working directory,
//! and a rule scoped to some paths, each attached once, beside the result
//! of the first Read of a file it covers — as Claude Code attaches them.

use super::{MemorySources, read_bounded, rules, stays_within};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A rule attached only to the files its patterns match (relative to the
/// folder holding its `.claude`).
struct ScopedRule {
    path: PathBuf,
    root: PathBuf,
    patterns: globset::GlobSet,
    body: String,
}

/// What may still be attached in this session.
pub struct NestedMemory {
    cwd: PathBuf,
    sources: MemorySources,
    rules: Vec<ScopedRule>,
    /// Files already shown (loaded at the start, or attached since).
    shown: Mutex<HashSet<PathBuf>>,
}

impl NestedMemory {
    /// For a session in `cwd` that loaded `loaded` at its start.
    pub fn new(cwd: &Path, home: &Path, sources: MemorySources, loaded: HashSet<PathBuf>) -> Self {
        let mut roots: Vec<PathBuf> = Vec::new();
        if sources.project {
            roots.extend(
                cwd.ancestors()
                    .filter(|d| d.parent().is_some())
                    .map(Path::to_path_buf),
            );
        }
        if sources.user {
            roots.push(home.to_path_buf());
        }
        // The user's own rules may be links anywhere; a project's stay in
        // the project.
        let rules = roots
            .iter()
            .flat_map(|root| scoped_rules(root, (root != home).then_some(cwd)))
            .collect();
        Self {
            cwd: cwd.to_path_buf(),
            sources,
            rules,
            shown: Mutex::new(loaded),
        }
    }

    /// The reminders to put beside the result of a Read of `file`: each
    /// memory file that covers it and was not shown yet.
    pub fn for_read(&self, file: &Path) -> Vec<String> {
        let Ok(mut shown) = self.shown.lock() else {
            return Vec::new();
        };
        let mut found: Vec<(PathBuf, String)> = Vec::new();
        if file.starts_with(&self.cwd) && file != self.cwd {
            for dir in folders_between(&self.cwd, file) {
                for (name, wanted) in [
                    ("CLAUDE.md", self.sources.project),
                    (".claude/CLAUDE.md", self.sources.project),
                    ("CLAUDE.local.md", self.sources.local),
                ] {
                    let path = dir.join(name);
                    if wanted
                        && !shown.contains(&path)
                        && stays_within(&path, &dir, &self.cwd)
                        && let Ok(Some(text)) = read_bounded(&path)
                    {
                        shown.insert(path.clone());
                        found.push((path, text));
                    }
                }
            }
        }
        for rule in &self.rules {
            let relative = file.strip_prefix(&rule.root).unwrap_or(file);
            if !shown.contains(&rule.path) && rule.patterns.is_match(relative) {
                shown.insert(rule.path.clone());
                found.push((rule.path.clone(), rule.body.clone()));
            }
        }
        found
            .into_iter()
            .map(|(path, text)| {
                format!(
                    "<system-reminder>\nContents of {}:\n\n{}\n\n</system-reminder>",
                    path.display(),
                    text.trim_end()
                )
            })
            .collect()
    }
}

/// The folders below `cwd` down to `file`'s own, outermost first.
fn folders_between(cwd: &Path, file: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = file
        .ancestors()
        .skip(1)
        .take_while(|d| d.starts_with(cwd) && *d != cwd)
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// The rules with `paths:` under `root/.claude/rules` (each staying in
/// that folder or `project`, when a project's).
fn scoped_rules(root: &Path, project: Option<&Path>) -> Vec<ScopedRule> {
    let mut found = Vec::new();
    let folder = root.join(".claude/rules");
    for path in rules::rule_files(&folder) {
        if project.is_some_and(|cwd| !stays_within(&path, &folder, cwd)) {
            continue;
        }
        let Ok(Some(text)) = read_bounded(&path) else {
            continue;
        };
        let Some(patterns) = rules::scope(&text) else {
            continue;
        };
        let mut set = globset::GlobSetBuilder::new();
        for pattern in &patterns {
            if let Ok(glob) = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
            {
                set.add(glob);
            }
        }
        let Ok(patterns) = set.build() else {
            continue;
        };
        found.push(ScopedRule {
            body: rules::body(&text).to_string(),
            path,
            root: root.to_path_buf(),
            patterns,
        });
    }
    found
}
