//! The policy layer: permission modes and the per-call capability decision.
//!
//! For each call the tool says what it needs; the policy grants the
//! intersection of that need, the mode (and, later, the rules), and the
//! plugin's ceiling, or denies the call with a message that names what
//! denied it. The policy never grants more than the call asked for, and never
//! anything outside the ceiling.

use crate::sandbox::{Capability, FileAccess, Grant};
use std::path::{Component, Path, PathBuf};

/// Claude Code's permission modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
pub enum PermissionMode {
    #[default]
    #[value(name = "default")]
    #[serde(rename = "default")]
    Default,
    #[value(name = "acceptEdits")]
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    #[value(name = "plan")]
    #[serde(rename = "plan")]
    Plan,
    #[value(name = "dontAsk")]
    #[serde(rename = "dontAsk")]
    DontAsk,
    #[value(name = "bypassPermissions")]
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }
}

/// What a plugin may ever be granted, approved when it was installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ceiling {
    files: Vec<(PathBuf, FileAccess)>,
}

impl Ceiling {
    pub fn none() -> Self {
        Self::default()
    }

    /// Files under `root`, up to `access` (write includes read).
    pub fn with_files(mut self, root: impl Into<PathBuf>, access: FileAccess) -> Self {
        self.files.push((root.into(), access));
        self
    }

    fn allows_file(&self, path: &Path, access: FileAccess) -> bool {
        self.files
            .iter()
            .any(|(root, ceiling)| path.starts_with(root) && *ceiling >= access)
    }
}

/// The outcome for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Allow(Grant),
    /// The message tells the model (and the user) what denied the call.
    Deny(String),
}

#[derive(Debug, Clone)]
pub struct Policy {
    mode: PermissionMode,
    /// The working directory, symlinks resolved.
    cwd: PathBuf,
}

impl Policy {
    pub fn new(mode: PermissionMode, cwd: &Path) -> Self {
        let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        Self { mode, cwd }
    }

    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// Grants `needs` for one call of `tool`, or denies the whole call.
    pub fn decide(&self, tool: &str, needs: &[Capability], ceiling: &Ceiling) -> Decision {
        let mut grant = Grant::none();
        for need in needs {
            grant = match self.grant_one(tool, need, ceiling, grant) {
                Ok(grant) => grant,
                Err(message) => return Decision::Deny(message),
            };
        }
        Decision::Allow(grant)
    }

    fn grant_one(
        &self,
        tool: &str,
        need: &Capability,
        ceiling: &Ceiling,
        grant: Grant,
    ) -> Result<Grant, String> {
        match need {
            Capability::ReadFile(path) | Capability::ReadTree(path) => {
                let requested = lexical_absolute(path).ok_or_else(|| {
                    format!("{tool} asked to read `{path}`, which is not an absolute path")
                })?;
                let resolved = resolve_symlinks(&requested);
                if !ceiling.allows_file(&resolved, FileAccess::Read) {
                    return Err(format!(
                        "Permission to read {} was denied: it is outside what the plugin providing {tool} was approved to read.",
                        shown(&requested, &resolved)
                    ));
                }
                let inside_cwd = resolved.starts_with(&self.cwd);
                if !inside_cwd && self.mode != PermissionMode::BypassPermissions {
                    return Err(format!(
                        "Permission to read {} was denied: it is outside the working directory {}, and permission mode `{}` would have to ask, which print mode cannot do. Run with --permission-mode bypassPermissions to allow it.",
                        shown(&requested, &resolved),
                        self.cwd.display(),
                        self.mode.as_str()
                    ));
                }
                let granted = match need {
                    Capability::ReadFile(_) => grant.read_file_as(requested, resolved),
                    _ => grant.tree(resolved, FileAccess::Read),
                };
                granted.map_err(|e| format!("{tool}: {e}"))
            }
            Capability::WriteTree(path) => {
                let requested = lexical_absolute(path).ok_or_else(|| {
                    format!("{tool} asked to write `{path}`, which is not an absolute path")
                })?;
                let resolved = resolve_symlinks(&requested);
                if !ceiling.allows_file(&resolved, FileAccess::Write) {
                    return Err(format!(
                        "Permission to write in {} was denied: it is outside what the plugin providing {tool} was approved to write.",
                        shown(&requested, &resolved)
                    ));
                }
                let allowed = match self.mode {
                    PermissionMode::BypassPermissions => true,
                    PermissionMode::AcceptEdits => resolved.starts_with(&self.cwd),
                    PermissionMode::Default | PermissionMode::DontAsk | PermissionMode::Plan => {
                        false
                    }
                };
                if !allowed {
                    return Err(format!(
                        "Permission to write in {} was denied: permission mode `{}` does not allow writing there without asking, which print mode cannot do. Run with --permission-mode acceptEdits (inside the working directory) or bypassPermissions.",
                        shown(&requested, &resolved),
                        self.mode.as_str()
                    ));
                }
                grant
                    .tree(resolved, FileAccess::Write)
                    .map_err(|e| format!("{tool}: {e}"))
            }
            Capability::WriteFile(path) => Err(format!(
                "{tool} asked to write the file `{path}`; this build of carapace cannot grant single-file writes yet."
            )),
            Capability::Http(host) => Err(format!(
                "{tool} asked for network access to `{host}`; this build of carapace grants no network access yet."
            )),
            Capability::Env(name) => Err(format!(
                "{tool} asked for the environment variable `{name}`; this build of carapace grants no environment variables yet."
            )),
        }
    }
}

fn shown(requested: &Path, resolved: &Path) -> String {
    if requested == resolved {
        requested.display().to_string()
    } else {
        format!("{} (a link to {})", requested.display(), resolved.display())
    }
}

/// `path` made absolute-and-normal without touching the filesystem, or
/// `None` if it is relative.
pub fn lexical_absolute(path: &str) -> Option<PathBuf> {
    let path = Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    let mut normal = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::Normal(name) => normal.push(name),
            Component::ParentDir => {
                normal.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(normal)
}

/// The real location of `path`: every symlink resolved. For a path that does
/// not exist yet, the deepest existing ancestor is resolved and the rest
/// appended, so a link in a parent directory cannot hide where a new file
/// would go.
fn resolve_symlinks(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let mut rest = Vec::new();
    let mut ancestor = path;
    while let Some(parent) = ancestor.parent() {
        if let Some(name) = ancestor.file_name() {
            rest.push(name.to_owned());
        }
        if let Ok(real) = std::fs::canonicalize(parent) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        ancestor = parent;
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_anywhere() -> Ceiling {
        Ceiling::none().with_files("/", FileAccess::Read)
    }

    #[test]
    fn reads_inside_the_working_directory_are_granted_for_that_file_only()
    -> Result<(), Box<dyn std::error::Error>> {
        let cwd = tempfile::tempdir()?;
        let cwd_real = std::fs::canonicalize(cwd.path())?;
        let file = cwd_real.join("a.txt");
        std::fs::write(&file, "x")?;
        let policy = Policy::new(PermissionMode::Default, cwd.path());
        let decision = policy.decide(
            "Read",
            &[Capability::ReadFile(file.to_string_lossy().into())],
            &read_anywhere(),
        );
        assert_eq!(decision, Decision::Allow(Grant::none().read_file(&file)?));
        Ok(())
    }

    #[test]
    fn reads_outside_the_working_directory_need_bypass() -> Result<(), Box<dyn std::error::Error>> {
        let cwd = tempfile::tempdir()?;
        let other = tempfile::tempdir()?;
        let file = std::fs::canonicalize(other.path())?.join("secret.txt");
        std::fs::write(&file, "x")?;
        let need = [Capability::ReadFile(file.to_string_lossy().into())];
        let default = Policy::new(PermissionMode::Default, cwd.path());
        assert!(
            matches!(default.decide("Read", &need, &read_anywhere()), Decision::Deny(m) if m.contains("outside the working directory"))
        );
        let bypass = Policy::new(PermissionMode::BypassPermissions, cwd.path());
        assert_eq!(
            bypass.decide("Read", &need, &read_anywhere()),
            Decision::Allow(Grant::none().read_file(&file)?)
        );
        Ok(())
    }

    #[test]
    fn a_symlink_in_the_working_directory_is_judged_by_its_target()
    -> Result<(), Box<dyn std::error::Error>> {
        let cwd = tempfile::tempdir()?;
        let other = tempfile::tempdir()?;
        let secret = std::fs::canonicalize(other.path())?.join("secret.txt");
        std::fs::write(&secret, "x")?;
        let link = std::fs::canonicalize(cwd.path())?.join("innocent.txt");
        std::os::unix::fs::symlink(&secret, &link)?;
        let policy = Policy::new(PermissionMode::Default, cwd.path());
        let decision = policy.decide(
            "Read",
            &[Capability::ReadFile(link.to_string_lossy().into())],
            &read_anywhere(),
        );
        assert!(matches!(decision, Decision::Deny(m) if m.contains("a link to")));
        Ok(())
    }

    #[test]
    fn the_ceiling_bounds_even_bypass_mode() -> Result<(), Box<dyn std::error::Error>> {
        let cwd = tempfile::tempdir()?;
        let policy = Policy::new(PermissionMode::BypassPermissions, cwd.path());
        let only_tmp_data =
            Ceiling::none().with_files("/nonexistent-root-for-test", FileAccess::Read);
        let decision = policy.decide(
            "Read",
            &[Capability::ReadFile("/etc/hostname".into())],
            &only_tmp_data,
        );
        assert!(matches!(decision, Decision::Deny(m) if m.contains("approved to read")));
        Ok(())
    }

    #[test]
    fn write_trees_follow_the_mode() -> Result<(), Box<dyn std::error::Error>> {
        let cwd = tempfile::tempdir()?;
        let inside = std::fs::canonicalize(cwd.path())?.join("out");
        std::fs::create_dir(&inside)?;
        let need = [Capability::WriteTree(inside.to_string_lossy().into())];
        let ceiling = Ceiling::none().with_files("/", FileAccess::Write);
        for (mode, allowed) in [
            (PermissionMode::Default, false),
            (PermissionMode::Plan, false),
            (PermissionMode::DontAsk, false),
            (PermissionMode::AcceptEdits, true),
            (PermissionMode::BypassPermissions, true),
        ] {
            let decision = Policy::new(mode, cwd.path()).decide("Probe", &need, &ceiling);
            assert_eq!(
                matches!(decision, Decision::Allow(_)),
                allowed,
                "{mode:?}: {decision:?}"
            );
        }
        let read_only = Ceiling::none().with_files("/", FileAccess::Read);
        let decision = Policy::new(PermissionMode::BypassPermissions, cwd.path())
            .decide("Probe", &need, &read_only);
        assert!(matches!(decision, Decision::Deny(m) if m.contains("approved to write")));
        Ok(())
    }

    #[test]
    fn lexical_absolute_resolves_dots_and_rejects_relative() {
        assert_eq!(lexical_absolute("/a/./b/../c"), Some(PathBuf::from("/a/c")));
        assert_eq!(lexical_absolute("/../../etc"), Some(PathBuf::from("/etc")));
        assert_eq!(lexical_absolute("a/b"), None);
    }
}
