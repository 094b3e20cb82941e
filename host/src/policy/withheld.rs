//! The withheld rung: a credential file (the sandbox's table, what
//! settings add, a file holding a private key) is refused to every tool in
//! every mode, bypassPermissions included — unless an allow rule from the
//! user's own places (user or managed settings, `--settings`, the command
//! line; never a project's file) names it. A search of a tree skips such
//! files instead of refusing the search; any other tree that holds one is
//! refused.

use super::decision::{LINKED_SCAN_LIMIT, Policy};
use super::needs::Resolved;
use super::paths::{Visit, walk_tree};
use super::rules::{Family, Rule, RuleKind, RuleSet, SourceKind, Specifier, ToolMatcher};
use super::verdict::{Basis, BasisKind, Need};
use crate::secrets::{CredentialFiles, WithheldFile, Withholding, file_holds_private_key};
use std::path::{Path, PathBuf};

/// Bytes of a file read for a private-key block before it is read by a
/// tool (a key past this is not looked for: a file this large is not a
/// key file).
const CONTENT_SCAN_LIMIT: u64 = 64 << 20;

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

    /// Why `path` is withheld from reading (`write`: writing), judged by
    /// its path, or `None` (not a credential, or a rule names it).
    pub fn judge(&self, path: &Path, write: bool) -> Option<WithheldFile> {
        let found = self.files.by_path(path)?;
        (!self.named(path, &found.root, write)).then_some(found)
    }

    /// Whether an allow rule of the user's own names `path` at or below
    /// the withheld `root`, for the family that reads (or writes) it.
    fn named(&self, path: &Path, root: &Path, write: bool) -> bool {
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
}

/// A credential file at `path` or inside it (by name, by where it is, by a
/// private key in it), judged without rules: what a hook's grant may
/// never reach. `Err` when the tree is larger than `limit` entries.
pub fn credential_within(
    path: &Path,
    home: &Path,
    limit: usize,
) -> Result<Option<PathBuf>, super::paths::TreeTooLarge> {
    let files = CredentialFiles::new(home, Vec::new());
    let is_credential = |p: &Path| files.by_path(p).is_some() || file_holds_private_key(p);
    if is_credential(path) {
        return Ok(Some(path.to_path_buf()));
    }
    if let Some(anchored) = files.anchored().into_iter().find(|a| a.starts_with(path))
        && anchored.exists()
    {
        return Ok(Some(anchored));
    }
    if !path.is_dir() {
        return Ok(None);
    }
    let mut found = None;
    walk_tree(path, limit, |entry| {
        if entry.is_dir() {
            return Visit::Descend;
        }
        let small = std::fs::symlink_metadata(entry.path)
            .is_ok_and(|m| m.is_file() && m.len() <= CONTENT_SCAN_LIMIT);
        if files.by_path(entry.path).is_some() || (small && file_holds_private_key(entry.path)) {
            found = Some(entry.path.to_path_buf());
            return Visit::Stop;
        }
        Visit::Skip
    })?;
    Ok(found)
}

/// The places whose allow rules may name a credential file.
fn trusted(kind: SourceKind) -> bool {
    matches!(
        kind,
        SourceKind::Managed | SourceKind::User | SourceKind::CliSettings | SourceKind::CliFlag
    )
}

impl Policy {
    /// The withheld rung of one need.
    pub(super) fn withheld_need(&self, tool: &str, need: &Resolved) -> Option<Need> {
        let deny = |message: String| Need::Deny(message, Basis::of(BasisKind::Secret));
        match need {
            Resolved::File {
                requested,
                resolved,
                write,
                file,
                is_dir: false,
            } => {
                let found = self
                    .withheld
                    .judge(resolved, *write)
                    .or_else(|| self.withheld.judge(requested, *write))
                    .or_else(|| {
                        let small = !*write
                            && file.is_some_and(|f| f.is_file)
                            && std::fs::metadata(resolved)
                                .is_ok_and(|m| m.len() <= CONTENT_SCAN_LIMIT);
                        (small && file_holds_private_key(resolved)).then(|| WithheldFile {
                            holds: "a private key".into(),
                            root: resolved.clone(),
                        })
                    })
                    .filter(|f| !self.withheld.named(resolved, &f.root, *write))?;
                Some(deny(self.withheld.refusal(tool, requested, &found, *write)))
            }
            Resolved::Tree { dir, write, .. } => {
                // A search of a tree skips what is withheld (the grant
                // carries the judgement); any other use of a tree that
                // holds a credential could read it.
                if !write && Family::of_tool(tool) == Some(Family::Read) {
                    return None;
                }
                let found = self.withheld_inside(dir)?;
                Some(deny(match found {
                    Ok(file) => format!(
                        "{tool} may not use the folder {}: it holds {}, which is withheld because it holds {}. Narrow the call to a folder without credentials, or name the file in an allow rule (`{}`) in your user settings.",
                        dir.display(),
                        file.root.display(),
                        file.holds,
                        self.withheld.rule_for(&file.root, *write),
                    ),
                    Err(why) => format!(
                        "{tool} may not use the folder {}: {why}, so it cannot be checked for credential files.",
                        dir.display()
                    ),
                }))
            }
            _ => None,
        }
    }

    /// A command line that names a credential file (an existing one, by
    /// any word of it, `~/` and relative paths read from the working
    /// directory) is refused in every mode: the sandbox hides those under
    /// the working directories, this catches the rest of the disk.
    pub(super) fn command_withheld(&self, line: &str) -> Option<Need> {
        let cwd = self.working_dirs.first()?;
        let words = line.split(|c: char| {
            c.is_whitespace() || matches!(c, '<' | '>' | '|' | ';' | '&' | '(' | ')' | '\'' | '"' | '=' | '`')
        });
        for word in words.filter(|w| !w.is_empty()) {
            let path = match word.strip_prefix("~/") {
                Some(rest) => self.home.join(rest),
                None => cwd.join(word),
            };
            let Ok(real) = std::fs::canonicalize(&path) else {
                continue;
            };
            if let Some(found) = self.withheld.judge(&real, false) {
                return Some(Need::Deny(
                    self.withheld.refusal("The command", &path, &found, false),
                    Basis::of(BasisKind::Secret),
                ));
            }
        }
        None
    }

    /// A withheld file inside `dir` (or holding it), or why the tree could
    /// not be listed.
    fn withheld_inside(&self, dir: &Path) -> Option<Result<WithheldFile, String>> {
        if let Some(found) = self.withheld.judge(dir, false) {
            return Some(Ok(found));
        }
        let files = self.withheld.files();
        if let Some(root) = files.anchored().into_iter().find(|a| a.starts_with(dir))
            && root.exists()
            && let Some(found) = self.withheld.judge(&root, false)
        {
            return Some(Ok(found));
        }
        let mut found = None;
        let walked = walk_tree(dir, LINKED_SCAN_LIMIT, |entry| {
            if entry.is_dir() {
                return Visit::Descend;
            }
            match self.withheld.judge(entry.path, false) {
                Some(file) => {
                    found = Some(file);
                    Visit::Stop
                }
                None => Visit::Skip,
            }
        });
        match walked {
            Err(too_large) => Some(Err(too_large.to_string())),
            Ok(()) => found.map(Ok),
        }
    }
}
