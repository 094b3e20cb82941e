//! Permission rules in Claude Code's syntax, parsed once into typed values:
//! `Tool` and `Tool(specifier)`, where the specifier's meaning depends on the
//! tool family — gitignore-style paths for Read/Edit (four anchors), command
//! patterns for Bash, `domain:` for WebFetch. Matching never re-parses text.

mod condition;
use super::bash::{Analysis, CommandPattern};
use super::paths::{Visit, walk_tree};
use crate::sandbox::{FileFacts, FileId};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::path::{Path, PathBuf};

/// Where a rule came from; named in denials and in the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSource {
    pub kind: SourceKind,
    /// The settings file, when the rule came from one.
    pub file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    Managed,
    CliSettings,
    CliFlag,
    Local,
    Project,
    User,
}

impl RuleSource {
    pub fn describe(&self) -> String {
        match &self.file {
            Some(file) => file.display().to_string(),
            None => match self.kind {
                SourceKind::CliFlag => "the command line".into(),
                SourceKind::CliSettings => "--settings".into(),
                other => format!("{other:?} settings").to_lowercase(),
            },
        }
    }
}

/// What a rule says when it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    Allow,
    Ask,
    Deny,
}

/// Which tool names a rule covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolMatcher {
    Exact(String),
    /// `mcp__server` or `mcp__server__*`: every tool of one MCP server.
    McpServer(String),
}

impl ToolMatcher {
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            ToolMatcher::Exact(name) => name == tool,
            ToolMatcher::McpServer(server) => tool
                .strip_prefix("mcp__")
                .and_then(|rest| rest.strip_prefix(server.as_str()))
                .is_some_and(|rest| rest.starts_with("__")),
        }
    }
}

/// The tool families whose specifiers have a meaning the policy knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Read, Glob, Grep, and every read capability of any tool.
    Read,
    /// Edit, Write, MultiEdit, NotebookEdit, and every write capability.
    Edit,
    Bash,
    WebFetch,
    /// Skill: a specifier names the skill (`Skill(deploy)`, `Skill(db:*)`).
    Skill,
}

impl Family {
    pub fn of_tool(tool: &str) -> Option<Family> {
        match tool {
            "Read" | "Glob" | "Grep" | "LS" | "NotebookRead" => Some(Family::Read),
            "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => Some(Family::Edit),
            "Bash" => Some(Family::Bash),
            "WebFetch" => Some(Family::WebFetch),
            "Skill" => Some(Family::Skill),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub enum Specifier {
    Paths(PathPattern),
    Command(CommandPattern),
    Domain(DomainPattern),
    /// What a call names (the skill a Skill call starts): exactly, or by
    /// prefix when it ends in `*` (`db:*` covers `db:migrate`).
    Name(String),
    /// A specifier for a tool whose input the policy does not interpret:
    /// a deny or ask rule then covers every call of the tool; an allow rule
    /// covers none (the safe reading of an unknown meaning).
    Opaque(String),
}

#[derive(Debug, Clone)]
pub struct Rule {
    /// The rule as written.
    pub text: String,
    pub kind: RuleKind,
    pub tool: ToolMatcher,
    pub specifier: Option<Specifier>,
    pub source: RuleSource,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RuleError {
    #[error("`{0}` is not a rule: expected `Tool` or `Tool(specifier)`")]
    Syntax(String),
    #[error("`{rule}`: {reason}")]
    Specifier { rule: String, reason: String },
}

/// What relative anchors in path specifiers resolve against.
#[derive(Debug, Clone)]
pub struct Anchors {
    pub cwd: PathBuf,
    pub home: PathBuf,
    /// The project the rule's settings file belongs to (for `/p`).
    pub project: PathBuf,
}

impl Rule {
    pub fn parse(
        text: &str,
        kind: RuleKind,
        source: RuleSource,
        anchors: &Anchors,
    ) -> Result<Rule, RuleError> {
        let trimmed = text.trim();
        let (name, specifier) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(RuleError::Syntax(text.into()));
                };
                (&trimmed[..open], Some(inner.trim()))
            }
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*')
        {
            return Err(RuleError::Syntax(text.into()));
        }
        let tool = match name.strip_prefix("mcp__") {
            Some(rest) => match rest.split_once("__") {
                None => ToolMatcher::McpServer(rest.into()),
                Some((server, "*")) => ToolMatcher::McpServer(server.into()),
                Some(_) => ToolMatcher::Exact(name.into()),
            },
            None if name.contains('*') => return Err(RuleError::Syntax(text.into())),
            None => ToolMatcher::Exact(name.into()),
        };
        let bad = |reason: &str| RuleError::Specifier {
            rule: text.into(),
            reason: reason.into(),
        };
        let specifier = match specifier {
            None => None,
            Some("") => {
                return Err(bad(
                    "the specifier is empty; write the tool name alone to cover every call",
                ));
            }
            Some(spec) => Some(match Family::of_tool(name) {
                Some(Family::Read | Family::Edit) => {
                    Specifier::Paths(PathPattern::parse(spec, anchors).map_err(|e| bad(&e))?)
                }
                Some(Family::Bash) => {
                    Specifier::Command(CommandPattern::parse(spec).map_err(|e| bad(&e))?)
                }
                Some(Family::WebFetch) => {
                    Specifier::Domain(DomainPattern::parse(spec).map_err(|e| bad(&e))?)
                }
                Some(Family::Skill) => Specifier::Name(spec.into()),
                None => Specifier::Opaque(spec.into()),
            }),
        };
        Ok(Rule {
            text: trimmed.into(),
            kind,
            tool,
            specifier,
            source,
        })
    }

    /// A rule with no specifier: it covers the whole tool.
    pub fn is_bare(&self) -> bool {
        self.specifier.is_none()
    }
}

/// How many entries a search for a hard-linked file's other names may
/// visit before it gives up (and counts the file as denied).
pub const LINK_SCAN_LIMIT: usize = 20_000;

/// A gitignore-style path pattern with its anchor resolved: `//abs` from the
/// filesystem root, `~/p` from the home directory, `/p` from the settings
/// file's project, `p` (or `./p`) from the working directory.
#[derive(Debug, Clone)]
pub struct PathPattern {
    pub written: String,
    root: PathBuf,
    /// The pattern's literal part (up to the first glob character), as an
    /// absolute path: whatever it denies lies at or below this.
    literal_prefix: Option<PathBuf>,
    /// Whether the pattern matches at any depth (no slash inside it).
    floating: bool,
    /// For a pattern that names one path with no wildcard: that path, so a
    /// hard link to it (another name for the same file) is caught too.
    literal_file: Option<PathBuf>,
    matcher: Gitignore,
}

impl PathPattern {
    pub fn parse(spec: &str, anchors: &Anchors) -> Result<Self, String> {
        if spec.starts_with('!') {
            return Err("negated patterns are not supported".into());
        }
        let (root, line) = if let Some(abs) = spec.strip_prefix("//") {
            (PathBuf::from("/"), format!("/{abs}"))
        } else if let Some(home) = spec.strip_prefix("~/") {
            (anchors.home.clone(), format!("/{home}"))
        } else if spec == "~" {
            (anchors.home.clone(), "/**".to_string())
        } else if spec.starts_with('/') {
            (anchors.project.clone(), spec.to_string())
        } else if let Some(rel) = spec.strip_prefix("./") {
            (anchors.cwd.clone(), format!("/{rel}"))
        } else {
            (anchors.cwd.clone(), spec.to_string())
        };
        if line.split('/').any(|part| part == "..") {
            return Err(
                "`..` is not allowed in path patterns; use an anchor (`//`, `~/`, `/`)".into(),
            );
        }
        let mut builder = GitignoreBuilder::new(&root);
        builder.add_line(None, &line).map_err(|e| e.to_string())?;
        let matcher = builder.build().map_err(|e| e.to_string())?;
        let body = line.trim_start_matches('/');
        let floating = !line.starts_with('/') && !line.trim_end_matches('/').contains('/');
        let literal: String = body
            .split('/')
            .take_while(|part| !part.contains(['*', '?', '[', '{']))
            .collect::<Vec<_>>()
            .join("/");
        let is_literal = !body.contains(['*', '?', '[', '{']) && !body.is_empty();
        let literal_file = (!floating && is_literal).then(|| root.join(body.trim_end_matches('/')));
        let literal_prefix = (!floating).then(|| root.join(literal));
        Ok(Self {
            written: spec.into(),
            root,
            literal_prefix,
            floating,
            literal_file,
            matcher,
        })
    }

    /// Whether `path` (absolute, normal) or one of its parents matches.
    pub fn matches(&self, path: &Path, is_dir: bool) -> bool {
        let Ok(relative) = path.strip_prefix(&self.root) else {
            return false;
        };
        if relative.as_os_str().is_empty() {
            return false;
        }
        self.matcher
            .matched_path_or_any_parents(relative, is_dir)
            .is_ignore()
    }

    /// Whether `path` is the very file this pattern names, under another
    /// name (a hard link): same device and inode.
    pub fn same_file(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Some(named) = &self.literal_file else {
            return false;
        };
        match (std::fs::metadata(named), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.is_file() && a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }

    /// Whether the file `id` has a name this pattern matches — the question
    /// a hard link raises: another name for a denied file. Walks what the
    /// pattern can match (links not followed); a walk past
    /// [`LINK_SCAN_LIMIT`] entries cannot vouch for the file, so it counts
    /// as named.
    pub fn names_file(&self, id: FileId) -> bool {
        use std::os::unix::fs::MetadataExt;
        let same = |meta: &std::fs::Metadata| meta.dev() == id.dev && meta.ino() == id.ino;
        if let Some(named) = &self.literal_file {
            return std::fs::metadata(named).is_ok_and(|m| same(&m));
        }
        let mut named = false;
        let walked = walk_tree(self.search_root(), LINK_SCAN_LIMIT, |entry| {
            if self.matches(entry.path, false) && entry.file().is_some_and(|(f, _)| f == id) {
                named = true;
                return Visit::Stop;
            }
            if self.may_match_inside(entry.path) {
                Visit::Descend
            } else {
                Visit::Skip
            }
        });
        named || walked.is_err()
    }

    /// Whether some path inside the tree `dir` could match: used to refuse a
    /// tree grant that would expose a denied file.
    pub fn may_match_inside(&self, dir: &Path) -> bool {
        if self.matches(dir, true) {
            return true;
        }
        if self.floating {
            // Matches at any depth below its root: any tree that overlaps.
            return dir.starts_with(&self.root) || self.root.starts_with(dir);
        }
        match &self.literal_prefix {
            Some(prefix) => prefix.starts_with(dir) || dir.starts_with(prefix),
            None => true,
        }
    }

    /// The directory every match lies at or below: the literal part of a
    /// rooted pattern, the anchor of a floating one.
    pub fn search_root(&self) -> &Path {
        self.literal_prefix.as_deref().unwrap_or(&self.root)
    }

    /// Whether the pattern names `root` or a path below it by its literal
    /// part (no wildcard above it): `~/.aws/**` names `~/.aws`, `**` does
    /// not.
    pub fn names_within(&self, root: &Path) -> bool {
        self.literal_prefix
            .as_deref()
            .is_some_and(|prefix| prefix.starts_with(root))
    }

    /// Whether the pattern covers the whole tree `dir` (every entry in it).
    pub fn covers_tree(&self, dir: &Path) -> bool {
        self.matches(dir, true) || self.matches(&dir.join("\u{1}any-entry"), false)
    }
}

/// `domain:example.com` (that host) or `domain:*.example.com` (its
/// subdomains).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainPattern {
    host: String,
    subdomains: bool,
}

impl DomainPattern {
    pub fn parse(spec: &str) -> Result<Self, String> {
        let Some(domain) = spec.strip_prefix("domain:") else {
            return Err("WebFetch rules take `domain:HOST`".into());
        };
        let domain = domain.trim().to_ascii_lowercase();
        let (host, subdomains) = match domain.strip_prefix("*.") {
            Some(rest) => (rest.to_string(), true),
            None => (domain, false),
        };
        if host.is_empty() || host.contains(['/', ':', '*', ' ']) {
            return Err(format!("`{spec}` is not a host name"));
        }
        Ok(Self { host, subdomains })
    }

    /// The pattern as an egress list writes it.
    pub fn as_listed(&self) -> String {
        if self.subdomains {
            format!("*.{}", self.host)
        } else {
            self.host.clone()
        }
    }

    pub fn matches(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        if self.subdomains {
            host.strip_suffix(&self.host)
                .is_some_and(|rest| rest.ends_with('.'))
        } else {
            host == self.host
        }
    }
}

/// What a rule is matched against for one capability or call.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// A path a capability reads or writes; `resolved` has symlinks
    /// resolved.
    Path {
        requested: &'a Path,
        resolved: &'a Path,
        is_dir: bool,
        write: bool,
        /// What was found at `resolved` (its other names, if it has any,
        /// are matched too).
        file: Option<FileFacts>,
    },
    /// A directory tree a capability reads or writes whole.
    Tree {
        dir: &'a Path,
        write: bool,
        /// Files in the tree with more than one name.
        linked: &'a [FileId],
    },
    Host(&'a str),
    Command(&'a Analysis),
}

/// All rules of a session, from every source, with the answer to "which rule
/// decides for this tool and subject".
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    rules: Vec<Rule>,
}

impl RuleSet {
    pub fn new(rules: Vec<Rule>) -> Self {
        Self { rules }
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// The WebFetch domain rules of `kind`, as `sandbox.network` lists
    /// write them (`example.com`, `*.example.com`): they reach commands'
    /// egress too, as in Claude Code.
    pub fn web_fetch_domains(&self, kind: RuleKind) -> Vec<String> {
        self.rules
            .iter()
            .filter(|r| r.kind == kind && r.tool == ToolMatcher::Exact("WebFetch".into()))
            .filter_map(|r| match &r.specifier {
                Some(Specifier::Domain(domain)) => Some(domain.as_listed()),
                _ => None,
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn push(&mut self, rule: Rule) {
        self.rules.push(rule);
    }

    /// A bare deny rule for `tool`: the tool is not offered at all.
    pub fn denies_tool(&self, tool: &str) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.kind == RuleKind::Deny && r.is_bare() && r.tool.matches(tool))
    }

    /// The first rule of `kind` that covers `tool` as a whole (bare, or an
    /// opaque specifier for deny/ask).
    pub fn tool_rule(&self, kind: RuleKind, tool: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| {
            r.kind == kind
                && r.tool.matches(tool)
                && match &r.specifier {
                    None => true,
                    Some(Specifier::Opaque(_)) => kind != RuleKind::Allow,
                    Some(_) => false,
                }
        })
    }

    /// The first rule of `kind` for `tool` whose specifier covers `name`
    /// (the skill a Skill call starts).
    pub fn named_rule(&self, kind: RuleKind, tool: &str, name: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| {
            r.kind == kind
                && r.tool.matches(tool)
                && matches!(&r.specifier, Some(Specifier::Name(pattern)) if name_matches(pattern, name))
        })
    }

    /// The first rule of `kind` whose specifier matches `subject`. Path
    /// rules come from the Read family for reads and the Edit family for
    /// writes (an Edit allow also allows reading, as in Claude Code); deny
    /// and ask match when the requested path *or* its resolved target
    /// matches, allow only when the resolved target does.
    pub fn matching(&self, kind: RuleKind, subject: Subject<'_>) -> Option<&Rule> {
        self.rules.iter().filter(|r| r.kind == kind).find(|rule| {
            let Some(specifier) = &rule.specifier else {
                return false;
            };
            let ToolMatcher::Exact(tool) = &rule.tool else {
                return false;
            };
            let family = Family::of_tool(tool);
            match (specifier, subject) {
                (
                    Specifier::Paths(pattern),
                    Subject::Path {
                        requested,
                        resolved,
                        is_dir,
                        write,
                        file,
                    },
                ) => {
                    let applies = match family {
                        Some(Family::Edit) => write || kind == RuleKind::Allow,
                        Some(Family::Read) => !write || kind != RuleKind::Allow,
                        _ => false,
                    };
                    applies
                        && match kind {
                            RuleKind::Allow => pattern.matches(resolved, is_dir),
                            RuleKind::Ask | RuleKind::Deny => {
                                pattern.matches(resolved, is_dir)
                                    || pattern.matches(requested, is_dir)
                                    || pattern.same_file(resolved)
                                    || file.is_some_and(|f| {
                                        f.is_file && f.links > 1 && pattern.names_file(f.id)
                                    })
                            }
                        }
                }
                (Specifier::Paths(pattern), Subject::Tree { dir, write, linked }) => {
                    let applies = match family {
                        Some(Family::Edit) => write || kind == RuleKind::Allow,
                        Some(Family::Read) => !write || kind != RuleKind::Allow,
                        _ => false,
                    };
                    applies
                        && match kind {
                            RuleKind::Allow => pattern.covers_tree(dir),
                            RuleKind::Ask | RuleKind::Deny => {
                                pattern.may_match_inside(dir)
                                    || linked.iter().any(|id| pattern.names_file(*id))
                            }
                        }
                }
                (Specifier::Domain(pattern), Subject::Host(host)) => pattern.matches(host),
                (Specifier::Command(pattern), Subject::Command(analysis)) => match kind {
                    RuleKind::Allow => pattern.allows(analysis),
                    RuleKind::Ask | RuleKind::Deny => pattern.catches(analysis),
                },
                _ => false,
            }
        })
    }

    /// Whether any deny or ask rule names paths (then a tree's hard links
    /// are worth listing).
    pub fn has_path_limits(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.kind != RuleKind::Allow && matches!(r.specifier, Some(Specifier::Paths(_))))
    }

    /// Whether any rule of `kind` is a Bash rule (an unanalysable command
    /// meets a deny or ask rule by default).
    pub fn has_command_rules(&self, kind: RuleKind) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.kind == kind && matches!(r.specifier, Some(Specifier::Command(_))))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter()
    }
}

/// `db:*` covers `db` and every `db:…`; `db*` every name starting `db`;
/// anything else covers itself only.
fn name_matches(pattern: &str, name: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix(":*") {
        return name == prefix
            || name
                .strip_prefix(prefix)
                .is_some_and(|r| r.starts_with(':'));
    }
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Splits a list of rules (`--allowedTools`, a skill's `allowed-tools`) on commas outside parentheses, so
/// `Read,Bash(echo a,b)` is two rules.
pub fn split_rules(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in value.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .collect()
}

#[cfg(test)]
mod tests;
