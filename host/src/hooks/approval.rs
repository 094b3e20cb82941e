//! A project's hooks are trusted by what they are, not only by where they
//! are: trusting a workspace approves its hooks as they are then, and a
//! hook that changes afterwards — its settings entry, its component, the
//! script its command line names — or a hook added later does not run
//! until it is approved again (`--trust-workspace` approves the workspace
//! as it is now). A `git pull` cannot swap the guard the user trusted for
//! another.
//!
//! What was approved is kept in `hook-approvals.json` in carapace's own
//! folder: for each project, each hook's key (its settings file, event and
//! place) and the SHA-256 of its content.

use super::config::{HookSpec, ShellLine};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The largest file a hook's digest reads, and how many it reads.
const MAX_FILE_BYTES: u64 = 4 << 20;
const MAX_FILES: usize = 32;

/// What was approved, for every project.
pub struct HookApprovals {
    file: PathBuf,
    projects: BTreeMap<String, BTreeMap<String, String>>,
    changed: bool,
}

/// One hook held back: its spec and why.
pub struct Held {
    pub spec: HookSpec,
    pub why: String,
}

impl HookApprovals {
    /// The approvals kept under `config_dir` (none when there is no file
    /// yet; one that cannot be read approves nothing new on its own).
    pub fn load(config_dir: &Path) -> Self {
        let file = config_dir.join("hook-approvals.json");
        let projects = std::fs::read(&file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Self {
            file,
            projects,
            changed: false,
        }
    }

    /// Splits `specs` (one project settings file's hooks, in order) into
    /// those that run and those held. `approve` (the workspace trusted as
    /// it is now) approves them all; a project seen for the first time is
    /// approved as it is; otherwise a hook runs only if its content is
    /// what was approved.
    pub fn judge(
        &mut self,
        project: &Path,
        settings_file: &Path,
        specs: Vec<HookSpec>,
        approve: bool,
    ) -> (Vec<HookSpec>, Vec<Held>) {
        let seen_before = self.projects.contains_key(&project_key(project));
        let approved = self.projects.entry(project_key(project)).or_default();
        let (mut run, mut held) = (Vec::new(), Vec::new());
        for (index, spec) in specs.into_iter().enumerate() {
            let key = format!("{}#{}#{index}", settings_file.display(), spec.event.name());
            let digest = digest(&spec, project);
            let matches = approved.get(&key) == Some(&digest);
            if approve || !seen_before {
                if !matches {
                    approved.insert(key, digest);
                    self.changed = true;
                }
                run.push(spec);
            } else if matches {
                run.push(spec);
            } else {
                let why = match approved.contains_key(&key) {
                    true => "it changed since the workspace was trusted",
                    false => "it was added after the workspace was trusted",
                };
                held.push(Held {
                    why: format!(
                        "the {} hook {key} does not run: {why}; run carapace once with --trust-workspace in this workspace to approve it as it is now",
                        spec.event.name()
                    ),
                    spec,
                });
            }
        }
        (run, held)
    }

    /// Keeps what was approved (when anything was).
    pub fn save(&self) -> std::io::Result<()> {
        if !self.changed {
            return Ok(());
        }
        let text = serde_json::to_vec_pretty(&self.projects).map_err(std::io::Error::other)?;
        crate::files::write(&self.file, &text)
    }
}

fn project_key(project: &Path) -> String {
    std::fs::canonicalize(project)
        .unwrap_or_else(|_| project.to_path_buf())
        .display()
        .to_string()
}

/// The SHA-256 of what a hook is: its settings entry as read, and the
/// files it runs — its component, or the files inside the project that
/// its command line names.
pub fn digest(spec: &HookSpec, project: &Path) -> String {
    let mut hash = Sha256::new();
    let entry = format!(
        "{}|{:?}|{:?}|{}|{:?}|{:?}|{:?}|{:?}|{}|{}|{}|{:?}",
        spec.event.name(),
        spec.matcher,
        spec.kind,
        spec.path.display(),
        spec.command,
        spec.http,
        spec.prompt,
        spec.mcp_tool,
        spec.condition.as_ref().map_or("", |r| r.text.as_str()),
        spec.once,
        spec.fail_closed,
        spec.grants,
    );
    hash.update(entry.as_bytes());
    // Only where there is one, so that digests approved before middleware
    // existed still match.
    if let Some(middleware) = &spec.middleware {
        hash.update(format!("|{:?}|{}", middleware.tier, middleware.options).as_bytes());
    }
    for file in files_run(spec, project) {
        hash.update(file.display().to_string().as_bytes());
        match std::fs::metadata(&file) {
            Ok(meta) if meta.len() <= MAX_FILE_BYTES => {
                hash.update(std::fs::read(&file).unwrap_or_default());
            }
            Ok(meta) => hash.update(format!("{} bytes", meta.len()).as_bytes()),
            Err(_) => hash.update(b"missing"),
        }
    }
    format!("{:x}", hash.finalize())
}

/// The files a hook runs: a component's file; for a command line, each
/// word that names a regular file inside the project
/// (`$CLAUDE_PROJECT_DIR/…`, or relative to it).
fn files_run(spec: &HookSpec, project: &Path) -> Vec<PathBuf> {
    let Some(ShellLine::Run(line)) = &spec.command else {
        return match spec.path.is_file() {
            true => vec![spec.path.clone()],
            false => Vec::new(),
        };
    };
    let shown = project.display().to_string();
    let root = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    line.split_whitespace()
        .map(|word| {
            word.trim_matches(|c| c == '"' || c == '\'')
                .replace("${CLAUDE_PROJECT_DIR}", &shown)
                .replace("$CLAUDE_PROJECT_DIR", &shown)
        })
        .filter_map(|word| std::fs::canonicalize(project.join(word)).ok())
        .filter(|path| path.starts_with(&root) && path.is_file())
        .take(MAX_FILES)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{RuleSource, SourceKind};
    use serde_json::json;

    fn specs(settings: serde_json::Value, file: &Path) -> Vec<HookSpec> {
        let source = RuleSource {
            kind: SourceKind::Project,
            file: Some(file.to_path_buf()),
        };
        crate::hooks::parse(&settings, &source)
            .map(|(specs, _)| specs)
            .unwrap_or_default()
    }

    #[test]
    fn a_hook_runs_only_as_it_was_approved() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let project = dir.path().join("p");
        std::fs::create_dir_all(project.join(".claude"))?;
        let file = project.join(".claude/settings.json");
        let script = project.join("guard.sh");
        std::fs::write(&script, "exit 2")?;
        let one =
            json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "sh guard.sh"}]}]});
        let two = json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "sh guard.sh"},
                                                   {"type": "command", "command": "true"}]}]});
        let mut approvals = HookApprovals::load(dir.path());
        // First sight: approved as it is, and kept.
        let (run, held) = approvals.judge(&project, &file, specs(one.clone(), &file), false);
        assert_eq!((run.len(), held.len()), (1, 0));
        approvals.save()?;
        let mut approvals = HookApprovals::load(dir.path());
        let (run, held) = approvals.judge(&project, &file, specs(one.clone(), &file), false);
        assert_eq!((run.len(), held.len()), (1, 0), "unchanged: runs");
        // The script it names changes: held.
        std::fs::write(&script, "exit 0")?;
        let (run, held) = approvals.judge(&project, &file, specs(one.clone(), &file), false);
        assert_eq!((run.len(), held.len()), (0, 1));
        assert!(held[0].why.contains("changed since"));
        // A hook added after: held too, the approved one runs.
        std::fs::write(&script, "exit 2")?;
        let (run, held) = approvals.judge(&project, &file, specs(two.clone(), &file), false);
        assert_eq!((run.len(), held.len()), (1, 1));
        assert!(held[0].why.contains("added after"));
        // Trusted as it is now: all approved.
        let (run, held) = approvals.judge(&project, &file, specs(two, &file), true);
        assert_eq!((run.len(), held.len()), (2, 0));
        Ok(())
    }
}
