//! The withheld rung: a credential file is refused to every tool in every
//! mode, bypassPermissions included, unless a rule of the user's own names
//! it (see `withheld`). A search of a tree skips such files instead of
//! refusing the search; any other tree that holds one is refused, and so
//! is a command line that names one.

use super::decision::{LINKED_SCAN_LIMIT, Policy};
use super::needs::Resolved;
use super::paths::{Visit, walk_tree};
use super::rules::Family;
use super::verdict::{Basis, BasisKind, Need};
use crate::secrets::{CredentialFiles, WithheldFile, key_file};
use std::path::{Path, PathBuf};

/// A credential file at `path` or inside it (by name, by where it is, by a
/// private key in a regular file), judged without rules: what a hook's
/// grant may never reach. `Err` when the tree is larger than `limit`
/// entries.
pub fn credential_within(
    path: &Path,
    home: &Path,
    limit: usize,
) -> Result<Option<PathBuf>, super::paths::TreeTooLarge> {
    let files = CredentialFiles::new(home, Vec::new());
    let judge = |p: &Path| {
        files.by_path(p).or_else(|| {
            let regular = std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file());
            regular.then(|| key_file(p)).flatten()
        })
    };
    Ok(first_credential(path, &files, limit, judge)?.map(|(found, _)| found))
}

/// The first credential at `path`, at one of the anchored paths inside
/// it, or anywhere below it (links not followed), by `judge`: the path
/// that matched, and why.
fn first_credential(
    path: &Path,
    files: &CredentialFiles,
    limit: usize,
    judge: impl Fn(&Path) -> Option<WithheldFile>,
) -> Result<Option<(PathBuf, WithheldFile)>, super::paths::TreeTooLarge> {
    if let Some(file) = judge(path) {
        return Ok(Some((path.to_path_buf(), file)));
    }
    for anchored in files.anchored().into_iter().filter(|a| a.starts_with(path)) {
        if anchored.exists()
            && let Some(file) = judge(&anchored)
        {
            return Ok(Some((anchored, file)));
        }
    }
    if !path.is_dir() {
        return Ok(None);
    }
    let mut found = None;
    walk_tree(path, limit, |entry| {
        if entry.is_dir() {
            return Visit::Descend;
        }
        match judge(entry.path) {
            Some(file) => {
                found = Some((entry.path.to_path_buf(), file));
                Visit::Stop
            }
            None => Visit::Skip,
        }
    })?;
    Ok(found)
}

/// A small regular file a command line names that holds a private key
/// (key files are small: a larger file is not read for this, so a command
/// naming a big log costs nothing).
fn key_by_content(path: &Path) -> Option<WithheldFile> {
    const NAMED_FILE_SCAN_LIMIT: u64 = 1 << 20;
    let small =
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= NAMED_FILE_SCAN_LIMIT);
    small.then(|| key_file(path)).flatten()
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
                        let read = !*write && file.is_some_and(|f| f.is_file);
                        read.then(|| key_file(resolved)).flatten()
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
    /// directory; by its name, where it is, or a private key in a small
    /// file) is refused in every mode: the sandbox hides those named as
    /// credentials under the working directories, this catches the rest of
    /// the disk and the keys a name does not give away.
    pub(super) fn command_withheld(&self, line: &str) -> Option<Need> {
        let cwd = self.working_dirs.first()?;
        let words = line.split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '<' | '>' | '|' | ';' | '&' | '(' | ')' | '\'' | '"' | '=' | '`'
                )
        });
        for word in words.filter(|w| !w.is_empty()) {
            let path = match word.strip_prefix("~/") {
                Some(rest) => self.home.join(rest),
                None => cwd.join(word),
            };
            let Ok(real) = std::fs::canonicalize(&path) else {
                continue;
            };
            if self.withheld.files().is_masked(&real) {
                // The command reads its stand-in copy there.
                continue;
            }
            let found = self
                .withheld
                .judge(&real, false)
                .or_else(|| key_by_content(&real))
                .filter(|f| !self.withheld.named(&real, &f.root, false));
            if let Some(found) = found {
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
        let judge = |p: &Path| self.withheld.judge(p, false);
        match first_credential(dir, self.withheld.files(), LINKED_SCAN_LIMIT, judge) {
            Err(too_large) => Some(Err(too_large.to_string())),
            Ok(found) => found.map(|(_, file)| Ok(file)),
        }
    }
}
