//! What the read deny rules cover, listed for the command sandbox: a
//! command (Bash, a stdio MCP server) reads with the OS's own calls, so the
//! paths the rules deny are hidden from its view of the filesystem before it
//! starts, listed afresh for each command.

use super::credential_listing::CredentialListing;
use super::paths::{Visit, multiply_linked, walk_tree};
use super::rules::{Family, PathPattern, RuleKind, RuleSet, Specifier, ToolMatcher};
use super::withheld::Withheld;
use crate::sandbox::{DeniedPaths, FileId};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Entries a listing may visit before it gives up: a floating pattern
/// (`*.env`) is matched at every depth of its tree, and a tree this large
/// makes every command slow — the command is refused with a way out.
const WALK_LIMIT: usize = 100_000;

/// The path patterns of the Read family's deny rules.
#[derive(Debug, Clone)]
pub struct ReadDenials {
    patterns: Vec<PathPattern>,
    /// Directories that must stay visible (the working directory, the
    /// write roots): hiding one would blank the command's workspace.
    keep: Vec<PathBuf>,
    limit: usize,
}

impl ReadDenials {
    /// `None` when no rule denies reading a path.
    pub fn from_rules(rules: &RuleSet, keep: Vec<PathBuf>) -> Option<Self> {
        let patterns: Vec<PathPattern> = rules
            .iter()
            .filter(|rule| rule.kind == RuleKind::Deny)
            .filter(|rule| {
                matches!(&rule.tool, ToolMatcher::Exact(tool) if Family::of_tool(tool) == Some(Family::Read))
            })
            .filter_map(|rule| match &rule.specifier {
                Some(Specifier::Paths(pattern)) => Some(pattern.clone()),
                _ => None,
            })
            .collect();
        (!patterns.is_empty()).then_some(Self {
            patterns,
            keep,
            limit: WALK_LIMIT,
        })
    }

    #[cfg(test)]
    fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Adds what `pattern` covers to `found`; a link that matches hides
    /// what it points to.
    fn walk(
        &self,
        pattern: &PathPattern,
        seen: &mut usize,
        found: &mut Vec<PathBuf>,
    ) -> Result<(), String> {
        let start = pattern.search_root();
        let Ok(meta) = start.symlink_metadata() else {
            return Ok(());
        };
        let covered = |path: &Path, is_dir: bool| {
            pattern.matches(path, is_dir) || (is_dir && pattern.covers_tree(path))
        };
        if covered(start, meta.is_dir()) {
            return self.add(
                start,
                meta.file_type().is_symlink(),
                &pattern.written,
                found,
            );
        }
        if !meta.is_dir() {
            return Ok(());
        }
        // The bound counts every pattern's entries together.
        let mut failed = None;
        let _ = walk_tree(start, usize::MAX, |entry| {
            *seen += 1;
            if *seen > self.limit {
                failed = Some(format!(
                    "the read deny rule `{}` is matched at any depth below {}, which holds more than {} entries: listing what it covers for every command is too slow. Anchor the rule (for example `Read(./config/{})` or `Read(//abs/path)`) so commands can run",
                    pattern.written,
                    start.display(),
                    self.limit,
                    pattern.written.trim_start_matches("./"),
                ));
                return Visit::Stop;
            }
            if covered(entry.path, entry.is_dir()) {
                if let Err(e) = self.add(entry.path, entry.is_link(), &pattern.written, found) {
                    failed = Some(e);
                    return Visit::Stop;
                }
                Visit::Skip
            } else if entry.is_dir() && pattern.may_match_inside(entry.path) {
                // Links to directories are not followed: what they point
                // to is judged by its own path.
                Visit::Descend
            } else {
                Visit::Skip
            }
        });
        failed.map_or(Ok(()), Err)
    }

    fn add(
        &self,
        path: &Path,
        is_link: bool,
        rule: &str,
        found: &mut Vec<PathBuf>,
    ) -> Result<(), String> {
        let target = if is_link {
            match std::fs::canonicalize(path) {
                Ok(target) => target,
                // A dangling link reaches nothing.
                Err(_) => return Ok(()),
            }
        } else {
            path.to_path_buf()
        };
        if target == Path::new("/") || self.keep.iter().any(|k| k.starts_with(&target)) {
            return Err(format!(
                "the read deny rule `{rule}` covers {}{}, which would hide the command's own working directory; the command was not run (remove the link or narrow the rule)",
                path.display(),
                if is_link {
                    format!(" (a link to {})", target.display())
                } else {
                    String::new()
                },
            ));
        }
        found.push(target);
        Ok(())
    }
}

/// The credential files a command would find: the anchored ones (the
/// home directory's, what settings add) and, under the command's working
/// and write roots, every file whose name says it holds credentials and
/// no allow rule names. A command reads with the OS's own calls, so they
/// are hidden before it starts (it sees empty stand-ins); outside those
/// roots a command that names such a file is refused by the policy.
fn withheld_for_commands(
    withheld: &Withheld,
    listing: &CredentialListing,
    keep: &[PathBuf],
    limit: usize,
) -> Result<Vec<PathBuf>, String> {
    let mut found: Vec<PathBuf> = withheld
        .files()
        .anchored()
        .into_iter()
        .filter(|p| p.exists() && withheld.judge(p, false).is_some())
        .collect();
    // Names are looked for in project folders; a folder that holds the
    // home directory (`/`, `~` given as a write root) is the whole disk's
    // worth of entries: there only the anchored paths are hidden, and a
    // command naming a credential file is refused by the policy.
    let home = withheld.home();
    let projects: Vec<PathBuf> = keep
        .iter()
        .filter(|root| !home.starts_with(root))
        .cloned()
        .collect();
    for (path, is_link) in listing.named(&projects, limit)? {
        if withheld.judge(&path, false).is_none() {
            continue;
        }
        if is_link {
            // What a link names is hidden where it points.
            if let Ok(target) = std::fs::canonicalize(&path) {
                found.push(target);
            }
        } else {
            found.push(path);
        }
    }
    // A stand-in never covers the command's own folders.
    found.retain(|p| *p != Path::new("/") && !keep.iter().any(|k| k.starts_with(p)));
    Ok(found)
}

/// What the read deny rules cover as the session's rules are now: rules
/// can join while the session runs (the SDK's `apply_flag_settings`), and
/// every command started after sees them. Nothing is hidden while no rule
/// denies reading a path.
#[derive(Debug)]
pub struct LiveReadDenials {
    keep: Vec<PathBuf>,
    /// The command folders' credential names, kept between commands.
    listing: CredentialListing,
    current: std::sync::RwLock<(Option<ReadDenials>, Arc<Withheld>)>,
}

impl LiveReadDenials {
    pub fn new(rules: &RuleSet, withheld: Arc<Withheld>, keep: Vec<PathBuf>) -> Self {
        Self {
            current: std::sync::RwLock::new((
                ReadDenials::from_rules(rules, keep.clone()),
                withheld,
            )),
            keep,
            listing: CredentialListing::default(),
        }
    }

    /// From now on, what `rules` deny and withhold.
    pub fn update(&self, rules: &RuleSet, withheld: Arc<Withheld>) {
        if let Ok(mut current) = self.current.write() {
            *current = (ReadDenials::from_rules(rules, self.keep.clone()), withheld);
        }
    }
}

impl DeniedPaths for LiveReadDenials {
    fn list(&self) -> Result<Vec<PathBuf>, String> {
        let current = self
            .current
            .read()
            .map_err(|_| "the read deny rules are unusable".to_string())?;
        let (denials, withheld) = &*current;
        let mut hidden = match denials {
            Some(denials) => denials.list()?,
            None => Vec::new(),
        };
        hidden.extend(withheld_for_commands(
            withheld,
            &self.listing,
            &self.keep,
            WALK_LIMIT,
        )?);
        Ok(outermost(hidden))
    }
}

impl DeniedPaths for ReadDenials {
    fn list(&self) -> Result<Vec<PathBuf>, String> {
        let mut found = Vec::new();
        let mut seen = 0;
        for pattern in &self.patterns {
            self.walk(pattern, &mut seen, &mut found)?;
        }
        // A path inside one already hidden is hidden with it (and could not
        // be mounted on once its parent is covered).
        let mut hidden = outermost(found);
        // A denied file with another name inside the workspace (a hard
        // link) would be read through that name: hide those names too.
        let linked = denied_links(&hidden, self.limit)?;
        if !linked.is_empty() {
            for root in &self.keep {
                hidden.extend(names_of(root, &linked, self.limit)?);
            }
            hidden = outermost(hidden);
        }
        Ok(hidden)
    }
}

/// Drops every path inside another of the list.
fn outermost(mut found: Vec<PathBuf>) -> Vec<PathBuf> {
    found.sort();
    found.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in found {
        if !kept.iter().any(|o| path.starts_with(o)) {
            kept.push(path);
        }
    }
    kept
}

/// The identities of the hidden files that have more than one name.
fn denied_links(hidden: &[PathBuf], limit: usize) -> Result<Vec<FileId>, String> {
    use std::os::unix::fs::MetadataExt;
    let mut linked = Vec::new();
    for path in hidden {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if meta.is_dir() {
            linked.extend(multiply_linked(path, limit).map_err(|e| {
                format!(
                    "{} (hidden by a read deny rule) cannot be checked for hard links: {e}; the command was not run",
                    path.display()
                )
            })?);
        } else if meta.is_file() && meta.nlink() > 1 {
            linked.push(FileId {
                dev: meta.dev(),
                ino: meta.ino(),
            });
        }
    }
    Ok(linked)
}

/// The names under `root` of the files `ids` (links not followed).
fn names_of(root: &Path, ids: &[FileId], limit: usize) -> Result<Vec<PathBuf>, String> {
    let mut names = Vec::new();
    walk_tree(root, limit, |entry| {
        if entry.file().is_some_and(|(id, _)| ids.contains(&id)) {
            names.push(entry.path.to_path_buf());
        }
        Visit::Descend
    })
    .map_err(|e| {
        format!(
            "a file a read deny rule covers has another name (a hard link), and {} cannot be searched for it ({e}); the command was not run",
            root.display()
        )
    })?;
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Anchors, Rule, RuleSource, SourceKind};

    fn denials(root: &Path, rules: &[&str]) -> Option<ReadDenials> {
        let anchors = Anchors {
            cwd: root.join("ws"),
            home: root.join("home"),
            project: root.join("ws"),
        };
        let source = RuleSource {
            kind: SourceKind::User,
            file: None,
        };
        let rules = rules
            .iter()
            .map(|r| Rule::parse(r, RuleKind::Deny, source.clone(), &anchors))
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        ReadDenials::from_rules(&RuleSet::new(rules), vec![root.join("ws")])
    }

    #[test]
    fn lists_what_the_rules_cover_outermost_first() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        for d in ["ws/src/deep", "home/.ssh", "ws/node_modules/pkg"] {
            std::fs::create_dir_all(root.join(d))?;
        }
        for f in [
            "ws/.env",
            "ws/src/deep/prod.env",
            "ws/src/main.rs",
            "home/.ssh/id_ed25519",
            "ws/node_modules/pkg/x.env",
        ] {
            std::fs::write(root.join(f), "x")?;
        }
        std::os::unix::fs::symlink(root.join("home/.ssh/id_ed25519"), root.join("ws/key.pem"))?;
        let listing = denials(
            root,
            &[
                "Read(*.env)",
                "Grep(~/.ssh/**)",
                "Read(~/.ssh/id_ed25519)",
                "Read(*.pem)",
                "Bash(cat:*)",
            ],
        )
        .ok_or("no denials")?;
        let mut listed = listing.list()?;
        listed.sort();
        let real = |p: &str| std::fs::canonicalize(root.join(p));
        let mut expected = vec![
            root.join("home/.ssh"),
            root.join("ws/.env"),
            root.join("ws/node_modules/pkg/x.env"),
            root.join("ws/src/deep/prod.env"),
        ];
        expected.sort();
        // The link's target is inside ~/.ssh, already hidden whole — unless
        // the temp dir itself sits behind a link.
        if real("home/.ssh")? != root.join("home/.ssh") {
            expected.push(real("home/.ssh/id_ed25519")?);
            expected.sort();
        }
        assert_eq!(listed, expected);
        // Another name for a denied file, in the workspace: hidden too.
        std::fs::hard_link(
            root.join("home/.ssh/id_ed25519"),
            root.join("ws/src/innocent.txt"),
        )?;
        assert!(listing.list()?.contains(&root.join("ws/src/innocent.txt")));
        assert!(
            denials(root, &["Edit(*.env)", "Read"]).is_none(),
            "only the Read family's path denials hide anything"
        );
        Ok(())
    }

    #[test]
    fn refuses_what_it_cannot_list_or_must_not_hide() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        std::fs::create_dir_all(root.join("ws/a"))?;
        for i in 0..20 {
            std::fs::write(root.join(format!("ws/a/{i}.txt")), "x")?;
        }
        let listing = denials(root, &["Read(*.env)"])
            .ok_or("no denials")?
            .with_limit(10);
        let err = listing
            .list()
            .err()
            .ok_or("a tree past the limit is refused")?;
        assert!(err.contains("Anchor the rule"), "{err}");
        std::os::unix::fs::symlink("/", root.join("ws/escape.env"))?;
        let err = denials(root, &["Read(*.env)"])
            .ok_or("no denials")?
            .list()
            .err()
            .ok_or("a link to / is not hidden")?;
        assert!(err.contains("a link to /"), "{err}");
        Ok(())
    }
}
