//! What one need of a call comes to: the capability made concrete
//! ([`Resolved`]: paths resolved through links, hosts parsed), then the
//! questions in Claude Code's order, each a rung of its own — the ceiling
//! and secrets bound everything; then deny rules, protected paths, ask
//! rules, the mode, allow rules, the defaults.

use super::bash::{Analysis, analyse, edits_of_analysed_line, reads_of_analysed_line};
use super::ceiling::{Ceiling, SECRET_ENV};
use super::decision::{LINKED_SCAN_LIMIT, PROTECTED_SCAN_LIMIT, Policy, ToolRules};
use super::modes::PermissionMode;
use super::paths::{TreeTooLarge, lexical_absolute, multiply_linked, resolve_symlinks};
use super::protected::{protected_entries, protected_reason};
use super::rules::{self, Rule, RuleKind, Subject};
use super::verdict::{Basis, BasisKind, Need, one_line};
use crate::sandbox::{
    Capability, FileAccess, FileFacts, FileId, HostPattern, file_facts, refused_process_info,
};
use std::path::PathBuf;

impl Policy {
    /// One need's questions, in order; the first that settles it wins.
    pub(super) fn decide_need(
        &self,
        tool: &str,
        need: &Resolved,
        ceiling: &Ceiling,
        rules: &ToolRules<'_>,
        mode: PermissionMode,
    ) -> Need {
        outside_ceiling(tool, need, ceiling)
            .or_else(|| match need {
                Resolved::Command(command) => Some(self.decide_command_need(command, mode)),
                _ => None,
            })
            .or_else(|| secret(tool, need))
            .or_else(|| self.denied_by_rule(need))
            .or_else(|| self.withheld_need(tool, need))
            .or_else(|| unlistable_tree(need))
            .or_else(|| self.protected_write(need))
            .or_else(|| self.asked_by_rule(need, rules.ask))
            .or_else(|| self.by_mode(tool, need, mode))
            .or_else(|| self.allowed_by_rule(need, rules.allow))
            .or_else(|| self.allowed_by_default(need))
            .unwrap_or_else(|| self.default_question(need, mode))
    }

    /// A deny rule covering what the need touches.
    fn denied_by_rule(&self, need: &Resolved) -> Option<Need> {
        let rule = self.rules.matching(RuleKind::Deny, need.subject()?)?;
        Some(Need::Deny(
            format!(
                "Permission to {} was denied by {}.",
                need.describe(),
                Basis::rule(rule).describe()
            ),
            Basis::rule(rule),
        ))
    }

    /// Writing a protected path always asks, whatever the mode or the
    /// allow rules.
    fn protected_write(&self, need: &Resolved) -> Option<Need> {
        if !need.is_write() {
            return None;
        }
        let reason = self.protection(need)?;
        Some(Need::Ask(
            format!(
                "{} is protected ({reason}): writing it always needs the user's explicit approval.",
                need.path_shown()
            ),
            Basis::of(BasisKind::Protected),
        ))
    }

    /// An ask rule for the tool, or one covering what the need touches.
    fn asked_by_rule(&self, need: &Resolved, tool_ask: Option<&Rule>) -> Option<Need> {
        let rule = tool_ask.or_else(|| {
            need.subject()
                .and_then(|s| self.rules.matching(RuleKind::Ask, s))
        })?;
        Some(Need::Ask(
            format!(
                "Permission to {} needs approval by {}.",
                need.describe(),
                Basis::rule(rule).describe()
            ),
            Basis::rule(rule),
        ))
    }

    /// What the mode settles: bypass allows, plan refuses all but reading,
    /// acceptEdits — and auto, as Claude Code's, before its classifier —
    /// allows writing inside the working directories.
    fn by_mode(&self, tool: &str, need: &Resolved, mode: PermissionMode) -> Option<Need> {
        match mode {
            PermissionMode::BypassPermissions => Some(Need::Allow(Basis::of(BasisKind::Mode))),
            PermissionMode::Plan if !need.is_read() => Some(Need::Deny(
                format!(
                    "Plan mode is read-only: {tool} may not {}.",
                    need.describe()
                ),
                Basis::of(BasisKind::Mode),
            )),
            PermissionMode::AcceptEdits | PermissionMode::Auto
                if need.is_write() && self.inside_working_dirs(need) =>
            {
                Some(Need::Allow(Basis::of(BasisKind::Mode)))
            }
            _ => None,
        }
    }

    /// An allow rule for the tool, or one covering what the need touches.
    fn allowed_by_rule(&self, need: &Resolved, tool_allow: Option<&Rule>) -> Option<Need> {
        let rule = tool_allow.or_else(|| {
            need.subject()
                .and_then(|s| self.rules.matching(RuleKind::Allow, s))
        })?;
        Some(Need::Allow(Basis::rule(rule)))
    }

    /// Reading inside the working directories, and a variable the ceiling
    /// names (approved with it).
    fn allowed_by_default(&self, need: &Resolved) -> Option<Need> {
        match need {
            Resolved::File { write: false, .. } | Resolved::Tree { write: false, .. }
                if self.inside_working_dirs(need) =>
            {
                Some(Need::Allow(Basis::of(BasisKind::Default)))
            }
            Resolved::Env(_) => Some(Need::Allow(Basis::of(BasisKind::Default))),
            _ => None,
        }
    }

    /// Nothing settled it: the user is asked, and told why.
    fn default_question(&self, need: &Resolved, mode: PermissionMode) -> Need {
        let why = match need {
            Resolved::File { .. } | Resolved::Tree { .. } if !self.inside_working_dirs(need) => {
                format!(
                    "it is outside the working directory {}",
                    self.working_dirs
                        .first()
                        .map(|d| d.display().to_string())
                        .unwrap_or_default()
                )
            }
            _ => format!("permission mode `{}` asks first", mode.as_str()),
        };
        Need::Ask(
            format!("Permission to {} needs approval: {why}.", need.describe()),
            Basis::of(BasisKind::Default),
        )
    }

    /// One Bash command line's questions, in order: a deny rule for Bash;
    /// a line too complex to check; a deny rule for any part; an ask rule;
    /// the mode; an allow rule for Bash, or for every part; else ask.
    fn decide_command_need(&self, command: &str, mode: PermissionMode) -> Need {
        if let Some(rule) = self.rules.tool_rule(RuleKind::Deny, "Bash") {
            return Need::Deny(
                format!("Bash was denied by {}.", Basis::rule(rule).describe()),
                Basis::rule(rule),
            );
        }
        let analysis = analyse(command);
        if let Analysis::Exceeds(exceeded) = &analysis {
            // Nothing could be checked: refused in every mode. A long
            // script is better written to a file and run.
            return Need::Deny(
                format!(
                    "The command was not run: {exceeded}. Write a long or deeply nested script to a file with Write, then run the file."
                ),
                Basis::of(BasisKind::Input),
            );
        }
        self.command_denied(&analysis)
            .or_else(|| self.command_withheld(command))
            .or_else(|| self.command_asked(&analysis))
            .or_else(|| match mode {
                PermissionMode::BypassPermissions => Some(Need::Allow(Basis::of(BasisKind::Mode))),
                PermissionMode::Plan => Some(Need::Deny(
                    "Plan mode does not run commands.".into(),
                    Basis::of(BasisKind::Mode),
                )),
                PermissionMode::Default
                | PermissionMode::AcceptEdits
                | PermissionMode::DontAsk
                | PermissionMode::Auto => None,
            })
            .or_else(|| self.command_allowed(&analysis))
            .or_else(|| match mode {
                PermissionMode::Default
                | PermissionMode::AcceptEdits
                | PermissionMode::DontAsk
                | PermissionMode::Auto => self.read_only_allowed(command, &analysis),
                _ => None,
            })
            .or_else(|| match mode {
                PermissionMode::AcceptEdits | PermissionMode::Auto => {
                    self.edits_allowed(command, &analysis)
                }
                _ => None,
            })
            .unwrap_or_else(|| {
                Need::Ask(
                    format!(
                        "Running `{}` needs approval ({}).",
                        one_line(command),
                        analysis.describe()
                    ),
                    Basis::of(BasisKind::Default),
                )
            })
    }

    /// A line that only reads, everything it names inside the working
    /// directories and under no Read deny or ask rule: it runs without
    /// asking, as in Claude Code (and still in the command sandbox, which
    /// hides what deny rules cover whatever the line's globs expand to).
    fn read_only_allowed(&self, command: &str, analysis: &Analysis) -> Option<Need> {
        let reads = reads_of_analysed_line(command, analysis)?;
        self.reads_allowed(&reads)?;
        Some(Need::Allow(Basis::of(BasisKind::ReadOnly)))
    }

    /// A word of a command line as a path: as written when absolute, else
    /// beneath the first working directory.
    fn line_path(&self, word: &str) -> Option<PathBuf> {
        let written = std::path::Path::new(word);
        match written.is_absolute() {
            true => Some(written.to_path_buf()),
            false => Some(self.working_dirs.first()?.join(written)),
        }
    }

    /// Every path a line reads is inside the working directories and
    /// under no Read deny or ask rule.
    fn reads_allowed(&self, reads: &[String]) -> Option<()> {
        // No working directory: nothing is inside one.
        self.working_dirs.first()?;
        for word in reads {
            let need = read_of(&self.line_path(word)?)?;
            if !self.inside_working_dirs(&need)
                || self.denied_by_rule(&need).is_some()
                || self.asked_by_rule(&need, None).is_some()
            {
                return None;
            }
        }
        Some(())
    }

    /// A line that only makes, copies, moves or removes files (and reads),
    /// in acceptEdits: allowed when every path it writes is one acceptEdits
    /// would let Write or Edit write — inside the working directories,
    /// under no deny or ask rule, not protected, not withheld — and every
    /// path it reads passes [`Self::read_only_allowed`]'s test.
    fn edits_allowed(&self, command: &str, analysis: &Analysis) -> Option<Need> {
        let edits = edits_of_analysed_line(command, analysis)?;
        self.reads_allowed(&edits.reads)?;
        for (word, whole) in &edits.writes {
            let path = self.line_path(word)?.to_string_lossy().into_owned();
            let is_dir = std::path::Path::new(&path).is_dir();
            let capability = if *whole && is_dir {
                Capability::WriteTree(path)
            } else {
                Capability::WriteFile(path)
            };
            let need = self.resolve("Bash", &capability).ok()?;
            let settled_otherwise = !self.inside_working_dirs(&need)
                || self.is_a_working_dir(&need)
                || self.withheld_need("Bash", &need).is_some()
                || self.denied_by_rule(&need).is_some()
                || unlistable_tree(&need).is_some()
                || self.protected_write(&need).is_some()
                || self.asked_by_rule(&need, None).is_some();
            if settled_otherwise {
                return None;
            }
        }
        Some(Need::Allow(Basis::of(BasisKind::Mode)))
    }

    /// Why reading `path` for the model's context (memory files, what
    /// carapace reads on a repository's behalf) is refused: a Read deny
    /// rule covers it, as written or where its links lead.
    pub fn read_refusal(&self, path: &std::path::Path) -> Option<String> {
        let need = read_of(path)?;
        let rule = self.rules.matching(RuleKind::Deny, need.subject()?)?;
        Some(format!("it is denied by {}", Basis::rule(rule).describe()))
    }

    /// A deny rule catching any part of the line.
    fn command_denied(&self, analysis: &Analysis) -> Option<Need> {
        let rule = self
            .rules
            .matching(RuleKind::Deny, Subject::Command(analysis))?;
        Some(Need::Deny(
            format!(
                "The command was denied by {} ({}).",
                Basis::rule(rule).describe(),
                analysis.describe()
            ),
            Basis::rule(rule),
        ))
    }

    /// An ask rule for Bash, or one catching any part of the line.
    fn command_asked(&self, analysis: &Analysis) -> Option<Need> {
        let rule = self.rules.tool_rule(RuleKind::Ask, "Bash").or_else(|| {
            self.rules
                .matching(RuleKind::Ask, Subject::Command(analysis))
        })?;
        Some(Need::Ask(
            format!(
                "The command needs approval by {}.",
                Basis::rule(rule).describe()
            ),
            Basis::rule(rule),
        ))
    }

    /// An allow rule for Bash, or every part of the line allowed by a rule
    /// (a line the analysis cannot follow is never allowed by one).
    fn command_allowed(&self, analysis: &Analysis) -> Option<Need> {
        if let Some(rule) = self.rules.tool_rule(RuleKind::Allow, "Bash") {
            return Some(Need::Allow(Basis::rule(rule)));
        }
        let Analysis::Commands(commands) = analysis else {
            return None;
        };
        let allowed: Option<Vec<&Rule>> = commands
            .iter()
            .map(|command| {
                self.rules.iter().find(|rule| {
                    rule.kind == RuleKind::Allow
                        && matches!(&rule.specifier, Some(rules::Specifier::Command(p)) if p.allows_command(command))
                })
            })
            .collect();
        let first = *allowed?.first()?;
        Some(Need::Allow(Basis::rule(first)))
    }

    fn protection(&self, need: &Resolved) -> Option<String> {
        match need {
            Resolved::File {
                requested,
                resolved,
                ..
            } => protected_reason(resolved, &self.home, &self.config_dir)
                .or_else(|| protected_reason(requested, &self.home, &self.config_dir)),
            Resolved::Tree { dir, .. } => {
                if let Some(reason) = protected_reason(dir, &self.home, &self.config_dir) {
                    return Some(reason);
                }
                if self.config_dir.starts_with(dir) {
                    return Some("the tree contains carapace's configuration directory".into());
                }
                match protected_entries(dir, &self.home, &self.config_dir, PROTECTED_SCAN_LIMIT) {
                    Ok(found) if found.is_empty() => None,
                    Ok(found) => Some(format!("the tree contains {}", found[0].display())),
                    Err(e) => Some(format!("it cannot be checked for protected files ({e})")),
                }
            }
            Resolved::Host(_) | Resolved::Env(_) | Resolved::Command(_) => None,
        }
    }

    fn inside_working_dirs(&self, need: &Resolved) -> bool {
        need.path()
            .is_some_and(|path| self.working_dirs.iter().any(|d| path.starts_with(d)))
    }

    /// The need is a working directory itself (`rm -rf .`).
    fn is_a_working_dir(&self, need: &Resolved) -> bool {
        need.path()
            .is_some_and(|path| self.working_dirs.iter().any(|d| path == d))
    }

    /// Turns a capability into the values the decision works on: paths made
    /// absolute-and-normal and resolved through symlinks, hosts parsed.
    pub(super) fn resolve(&self, tool: &str, need: &Capability) -> Result<Resolved, String> {
        let path = |p: &str| {
            lexical_absolute(p)
                .ok_or_else(|| format!("{tool} asked for `{p}`, which is not an absolute path"))
        };
        Ok(match need {
            Capability::ReadFile(p) | Capability::WriteFile(p) => {
                let requested = path(p)?;
                // Resolving first would follow `/dev/fd/N` (a link into
                // carapace's own open files) to an ordinary-looking name.
                if let Some(reason) = refused_process_info(&requested, false) {
                    return Err(format!("{tool}: {reason}"));
                }
                let resolved = resolve_symlinks(&requested);
                // The file the decision is about, opened without following
                // a link: what gets staged must be this one.
                let file = file_facts(&resolved).map_err(|e| format!("{tool}: {e}"))?;
                let is_dir = file.is_some_and(|f| f.is_dir);
                Resolved::File {
                    requested,
                    resolved,
                    is_dir,
                    write: matches!(need, Capability::WriteFile(_)),
                    file,
                }
            }
            Capability::ReadTree(p) | Capability::WriteTree(p) => {
                let requested = path(p)?;
                if let Some(reason) = refused_process_info(&requested, false) {
                    return Err(format!("{tool}: {reason}"));
                }
                let dir = resolve_symlinks(&requested);
                // Another name for a denied file inside the tree would
                // expose it: list the tree's hard links when rules limit
                // paths at all.
                let linked = if self.rules.has_path_limits() {
                    multiply_linked(&dir, LINKED_SCAN_LIMIT)
                } else {
                    Ok(Vec::new())
                };
                Resolved::Tree {
                    dir,
                    write: matches!(need, Capability::WriteTree(_)),
                    linked,
                }
            }
            Capability::Http(host) => {
                Resolved::Host(HostPattern::parse(host).map_err(|e| format!("{tool}: {e}"))?)
            }
            Capability::Env(name) => Resolved::Env(name.clone()),
            Capability::Process(command) => Resolved::Command(command.clone()),
        })
    }
}

/// Reading `path` (absolute), as rules judge it: as written and where its
/// links lead.
fn read_of(path: &std::path::Path) -> Option<Resolved> {
    let requested = lexical_absolute(&path.to_string_lossy())?;
    let resolved = resolve_symlinks(&requested);
    Some(Resolved::File {
        requested,
        resolved,
        is_dir: false,
        write: false,
        file: None,
    })
}

/// The ceiling and secrets bound everything, rules and modes included.
fn outside_ceiling(tool: &str, need: &Resolved, ceiling: &Ceiling) -> Option<Need> {
    if need.within(ceiling) {
        return None;
    }
    Some(Need::Deny(
        format!(
            "{tool} asked to {}, which is outside the plugin's approved ceiling ({}).",
            need.describe(),
            ceiling.describe().join(", ")
        ),
        Basis::of(BasisKind::Ceiling),
    ))
}

/// The model's credentials never reach a plugin.
fn secret(tool: &str, need: &Resolved) -> Option<Need> {
    match need {
        Resolved::Env(name) if SECRET_ENV.contains(&name.as_str()) => Some(Need::Deny(
            format!("{tool} asked for `{name}`: the model's credentials never reach a plugin."),
            Basis::of(BasisKind::Secret),
        )),
        _ => None,
    }
}

/// A tree too large to list for hard links asks: another name for a
/// denied file inside it could not be ruled out.
fn unlistable_tree(need: &Resolved) -> Option<Need> {
    let Resolved::Tree {
        linked: Err(too_large),
        ..
    } = need
    else {
        return None;
    };
    Some(Need::Ask(
        format!(
            "Permission to {} needs approval: {too_large}, too many to check for hard links to files the deny and ask rules cover.",
            need.describe()
        ),
        Basis::of(BasisKind::Default),
    ))
}

/// A capability made concrete.
#[derive(Debug, Clone)]
pub(super) enum Resolved {
    File {
        requested: PathBuf,
        resolved: PathBuf,
        is_dir: bool,
        write: bool,
        /// What is at `resolved`, if anything.
        file: Option<FileFacts>,
    },
    Tree {
        dir: PathBuf,
        write: bool,
        /// The tree's files with more than one name, or the tree was too
        /// large to list them.
        linked: Result<Vec<FileId>, TreeTooLarge>,
    },
    Host(HostPattern),
    Env(String),
    Command(String),
}

impl Resolved {
    /// Where a file or tree need points, links resolved.
    fn path(&self) -> Option<&std::path::Path> {
        match self {
            Resolved::File { resolved, .. } => Some(resolved),
            Resolved::Tree { dir, .. } => Some(dir),
            Resolved::Host(_) | Resolved::Env(_) | Resolved::Command(_) => None,
        }
    }

    pub(super) fn is_write(&self) -> bool {
        matches!(
            self,
            Resolved::File { write: true, .. } | Resolved::Tree { write: true, .. }
        )
    }

    pub(super) fn is_read(&self) -> bool {
        matches!(
            self,
            Resolved::File { write: false, .. }
                | Resolved::Tree { write: false, .. }
                | Resolved::Env(_)
        )
    }

    pub(super) fn within(&self, ceiling: &Ceiling) -> bool {
        let access = |write: bool| {
            if write {
                FileAccess::Write
            } else {
                FileAccess::Read
            }
        };
        match self {
            Resolved::File {
                requested,
                resolved,
                write,
                ..
            } => {
                ceiling.allows_file(resolved, access(*write))
                    && ceiling.allows_file(requested, access(*write))
            }
            Resolved::Tree { dir, write, .. } => ceiling.allows_file(dir, access(*write)),
            Resolved::Host(host) => ceiling.allows_host(host),
            Resolved::Env(name) => ceiling.allows_env(name),
            Resolved::Command(_) => ceiling.allows_process(),
        }
    }

    pub(super) fn subject(&self) -> Option<Subject<'_>> {
        match self {
            Resolved::File {
                requested,
                resolved,
                is_dir,
                write,
                file,
            } => Some(Subject::Path {
                requested,
                resolved,
                is_dir: *is_dir,
                write: *write,
                file: *file,
            }),
            Resolved::Tree {
                dir, write, linked, ..
            } => Some(Subject::Tree {
                dir,
                write: *write,
                linked: linked.as_deref().unwrap_or(&[]),
            }),
            Resolved::Host(host) => Some(Subject::Host(host.host())),
            Resolved::Env(_) | Resolved::Command(_) => None,
        }
    }

    pub(super) fn path_shown(&self) -> String {
        match self {
            Resolved::File {
                requested,
                resolved,
                ..
            } if requested != resolved => {
                format!("{} (a link to {})", requested.display(), resolved.display())
            }
            Resolved::File { requested, .. } => requested.display().to_string(),
            Resolved::Tree { dir, .. } => dir.display().to_string(),
            Resolved::Host(host) => host.to_string(),
            Resolved::Env(name) => name.clone(),
            Resolved::Command(command) => one_line(command),
        }
    }

    pub(super) fn describe(&self) -> String {
        match self {
            Resolved::File { write: false, .. } => format!("read {}", self.path_shown()),
            Resolved::File { write: true, .. } => format!("write {}", self.path_shown()),
            Resolved::Tree { write: false, .. } => format!("read the tree {}", self.path_shown()),
            Resolved::Tree { write: true, .. } => {
                format!("write in the tree {}", self.path_shown())
            }
            Resolved::Host(host) => format!("reach {host} over HTTP"),
            Resolved::Env(name) => format!("read the environment variable {name}"),
            Resolved::Command(command) => format!("run `{}`", one_line(command)),
        }
    }
}
