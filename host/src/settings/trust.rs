//! Workspace trust, in one place: whether this workspace is trusted, and
//! what a project's own files (`.carapace/settings*.json`, `.mcp.json`,
//! `.carapace/plugins`) may bring to a session because of it.
//!
//! Trust comes from the user — `--trust-workspace`, or the workspace listed
//! in `trustedWorkspaces` of the user's or the administrator's settings —
//! never from the project itself. Whoever wrote the repository must not be
//! able to make carapace run their code or widen what a call may do: in an
//! untrusted workspace a project's files may only tighten — their deny and
//! ask rules apply; their allow rules, additional directories, a mode wider
//! than the default, environment, hooks, plugins and MCP servers do not.

use std::path::Path;

/// What a project file may bring that only a trusted workspace admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectItem {
    Hooks,
    Plugins,
    McpServers,
    /// `defaultMode` `acceptEdits` or `bypassPermissions`.
    WiderMode,
    AllowRules,
    AdditionalDirectories,
    Env,
    /// `.carapace/agents/*.md`.
    Agents,
    /// A project skill's or command's `allowed-tools`.
    SkillAllowedTools,
}

impl ProjectItem {
    fn describe(self) -> &'static str {
        match self {
            ProjectItem::Hooks => "hooks from a project file load",
            ProjectItem::Plugins => "project plugins load",
            ProjectItem::McpServers => "MCP servers from a project file start",
            ProjectItem::WiderMode => "a project file may set a defaultMode wider than `default`",
            ProjectItem::AllowRules => "a project file's allow rules apply",
            ProjectItem::AdditionalDirectories => "a project file's additionalDirectories apply",
            ProjectItem::Env => "a project file's env applies",
            ProjectItem::Agents => "the project's agent definitions load",
            ProjectItem::SkillAllowedTools => "a project skill's allowed-tools pre-approve tools",
        }
    }
}

/// Whether the workspace is trusted, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkspaceTrust {
    trusted: bool,
    /// Trusted by `--trust-workspace`: the workspace as it is now.
    by_flag: bool,
}

impl WorkspaceTrust {
    /// `flag` is `--trust-workspace`; `listed` are the `trustedWorkspaces`
    /// of the user's and the administrator's settings (never a project's).
    pub fn determine<'a>(
        flag: bool,
        listed: impl IntoIterator<Item = &'a Path>,
        workspace: &Path,
    ) -> Self {
        let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let workspace = real(workspace);
        let trusted = flag || listed.into_iter().any(|w| real(w) == workspace);
        Self {
            trusted,
            by_flag: flag,
        }
    }

    pub fn is_trusted(&self) -> bool {
        self.trusted
    }

    /// Trusted by `--trust-workspace` on this run: what the project holds
    /// now is approved, its hooks as they are included.
    pub fn approves_as_it_is(&self) -> bool {
        self.by_flag
    }

    /// Whether `item`, brought by the project file (or directory) `from`,
    /// may be used; when not, says so in `warnings`.
    pub fn admits(&self, item: ProjectItem, from: &str, warnings: &mut Vec<String>) -> bool {
        if !self.trusted {
            warnings.push(format!(
                "{from}: {} only in a trusted workspace (pass --trust-workspace, or list the workspace in trustedWorkspaces in ~/.carapace/settings.json); skipped",
                item.describe()
            ));
        }
        self.trusted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_comes_from_the_flag_or_a_listed_workspace_and_gates_project_items() {
        let dir = std::env::temp_dir();
        let untrusted = WorkspaceTrust::determine(false, [Path::new("/elsewhere")], &dir);
        let mut warnings = Vec::new();
        assert!(!untrusted.admits(ProjectItem::Hooks, "x.json", &mut warnings));
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("hooks from a project file load only in a trusted"));
        assert!(WorkspaceTrust::determine(true, [], &dir).is_trusted());
        assert!(WorkspaceTrust::determine(false, [dir.as_path()], &dir).is_trusted());
    }
}
