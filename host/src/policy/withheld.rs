//! Which credential files a session withholds: the secrets table, what
//! settings add — less what an allow rule from the user's own places
//! (user or managed settings, `--settings`, the command line; never a
//! project's file) names. The rung that refuses them is `withheld_rung`.

use super::rules::{Family, Rule, RuleKind, RuleSet, SourceKind, Specifier, ToolMatcher};
use crate::secrets::{CredentialFiles, WithheldFile, Withholding};
use std::path::{Path, PathBuf};

/// The session's credential files and the allow rules that name some.
#[derive(Debug)]
pub struct Withheld {
    files: CredentialFiles,
    home: PathBuf,
    /// Allow rules with paths, from the user's own places.
    allowing: Vec<Rule>,
}

impl Withheld {
    pub fn new(files: CredentialFiles, home: &Path, rules: &RuleSet) -> Self {
        let allowing = rules
            .iter()
            .filter(|r| r.kind == RuleKind::Allow && trusted(r.source.kind))
            .filter(|r| matches!(r.specifier, Some(Specifier::Paths(_))))
            .cloned()
            .collect();
        Self {
            files,
            home: home.to_path_buf(),
            allowing,
        }
    }

    pub fn files(&self) -> &CredentialFiles {
        &self.files
    }

    /// The home directory the anchored paths are read against.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Why `path` is withheld from reading (`write`: writing), judged by
    /// its path, or `None` (not a credential, or a rule names it).
    pub fn judge(&self, path: &Path, write: bool) -> Option<WithheldFile> {
        let found = self.files.by_path(path)?;
        (!self.named(path, &found.root, write)).then_some(found)
    }

    /// Whether an allow rule of the user's own names `path` at or below
    /// the withheld `root`, for the family that reads (or writes) it.
    pub(super) fn named(&self, path: &Path, root: &Path, write: bool) -> bool {
        let family = if write { Family::Edit } else { Family::Read };
        self.allowing.iter().any(|rule| {
            let ToolMatcher::Exact(tool) = &rule.tool else {
                return false;
            };
            let Some(Specifier::Paths(pattern)) = &rule.specifier else {
                return false;
            };
            Family::of_tool(tool) == Some(family)
                && (pattern.matches(path, false) || pattern.covers_tree(path))
                && pattern.names_within(root)
        })
    }

    /// The rule that would let tools read `root`, as the user writes it.
    pub fn rule_for(&self, root: &Path, write: bool) -> String {
        let tool = if write { "Edit" } else { "Read" };
        let shown = match root.strip_prefix(&self.home) {
            Ok(rel) => format!("~/{}", rel.display()),
            Err(_) => format!("/{}", root.display()),
        };
        let tail = if self.files.anchored().iter().any(|a| a == root) && root.is_dir() {
            "/**"
        } else {
            ""
        };
        format!("{tool}({shown}{tail})")
    }

    /// The refusal for `found`, saying how to lift it.
    pub fn refusal(&self, tool: &str, path: &Path, found: &WithheldFile, write: bool) -> String {
        format!(
            "{tool} may not {} {}: it is withheld because it holds {}. Credential files are kept from every tool in every mode; to let tools {} it, add the allow rule `{}` to your user settings (~/.claude/settings.json) or pass it with --allowedTools (a project's settings cannot).",
            if write { "write" } else { "read" },
            path.display(),
            found.holds,
            if write { "write" } else { "read" },
            self.rule_for(&found.root, write),
        )
    }
}

impl Withholding for Withheld {
    fn withheld(&self, path: &Path) -> Option<WithheldFile> {
        self.judge(path, false)
    }

    fn lifting_rule(&self, file: &WithheldFile) -> String {
        self.rule_for(&file.root, false)
    }
}

/// The places whose allow rules may name a credential file.
fn trusted(kind: SourceKind) -> bool {
    matches!(
        kind,
        SourceKind::Managed | SourceKind::User | SourceKind::CliSettings | SourceKind::CliFlag
    )
}
