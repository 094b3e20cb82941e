//! One command or skill as read from its file: the front matter's fields
//! carapace acts on, and the body.

use crate::memory::{read_bounded, split_front_matter, stays_within};
use std::path::{Path, PathBuf};

/// Front-matter keys that only describe an entry. Any other key (tools it
/// pre-approves, a model it switches to, hooks) makes the model's call of
/// it ask first, as Claude Code asks for such a skill.
const DESCRIPTIVE_KEYS: &[&str] = &[
    "name",
    "description",
    "when_to_use",
    "argument-hint",
    "arguments",
    "disable-model-invocation",
    "user-invocable",
    "version",
    "license",
    "metadata",
];

/// Longest description shown in the skills listing; a longer one is cut.
const MAX_LISTED_CHARS: usize = 1_024;

/// What kind of file an entry came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A Markdown file in a `commands/` folder.
    Command,
    /// A `SKILL.md` in a folder of its own, which the skill may refer to.
    Skill { dir: PathBuf },
}

/// Whose folder an entry came from: the user's may pre-approve tools
/// always, the project's only in a trusted workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    User,
    Project,
}

/// One command or skill.
#[derive(Debug, Clone)]
pub struct CustomCommand {
    pub name: String,
    pub path: PathBuf,
    pub kind: Kind,
    pub origin: Origin,
    pub description: Option<String>,
    pub when_to_use: Option<String>,
    /// `argument-hint`, shown beside the name.
    pub argument_hint: Option<String>,
    /// `allowed-tools`, as written (permission rules).
    pub allowed_tools: Vec<String>,
    /// `disable-model-invocation: true` makes this false.
    pub model_invocable: bool,
    /// `user-invocable: false` makes this false (no `/name`).
    pub user_invocable: bool,
    /// Whether a model's call needs approval (see [`DESCRIPTIVE_KEYS`]).
    pub asks: bool,
    /// The plugin folder it came from (`${CLAUDE_PLUGIN_ROOT}`).
    pub plugin_root: Option<PathBuf>,
    /// `model`: the model of the turn a `/name` starts (`inherit` or none:
    /// the session's). A model's Skill call keeps its own model, as in
    /// Claude Code.
    pub model: Option<String>,
    pub(super) body: String,
}

/// The project folder holding `path`'s `.claude` or `.carapace`.
fn project_root(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n == ".claude" || n == ".carapace")
        })
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

impl CustomCommand {
    /// Reads `path`; `Ok(None)` when it is not there (or not a file).
    pub(super) fn read(
        path: &Path,
        name: String,
        kind: Kind,
        origin: Origin,
    ) -> Result<Option<Self>, String> {
        // A project's command is the repository's own file, not a link
        // out of it (to a key of the user's, say): its text reaches the
        // model.
        if origin == Origin::Project
            && let Some(root) = project_root(path)
            && !stays_within(path, &root, &root)
        {
            return Err("it is a link out of the project; not read".into());
        }
        let Some(text) = read_bounded(path)? else {
            return Ok(None);
        };
        let (front, body) = split_front_matter(&text);
        let front = match front {
            None => serde_norway::Mapping::new(),
            Some(front) if front.trim().is_empty() => serde_norway::Mapping::new(),
            Some(front) => match serde_norway::from_str::<serde_norway::Value>(front) {
                Ok(serde_norway::Value::Mapping(map)) => map,
                Ok(_) => return Err("its front matter is not a mapping".into()),
                Err(e) => return Err(format!("its front matter is not YAML: {e}")),
            },
        };
        let text_of = |key: &str| {
            front
                .get(key)
                .and_then(|v| v.as_str())
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let flag = |key: &str| front.get(key).and_then(|v| v.as_bool());
        let name = match (&kind, text_of("name")) {
            (Kind::Skill { .. }, Some(named)) if valid_name(&named) => named,
            _ => name,
        };
        let asks = front
            .keys()
            .filter_map(|k| k.as_str())
            .any(|k| !DESCRIPTIVE_KEYS.contains(&k));
        Ok(Some(Self {
            name,
            path: path.to_path_buf(),
            kind,
            origin,
            description: text_of("description").or_else(|| first_line(body)),
            when_to_use: text_of("when_to_use"),
            argument_hint: text_of("argument-hint"),
            allowed_tools: front
                .get("allowed-tools")
                .map(tool_list)
                .unwrap_or_default(),
            model_invocable: !flag("disable-model-invocation").unwrap_or(false),
            user_invocable: flag("user-invocable").unwrap_or(true),
            asks,
            plugin_root: None,
            model: text_of("model").filter(|m| m != "inherit"),
            body: body.to_string(),
        }))
    }

    /// The line the skills listing shows for this entry.
    pub(super) fn listed(&self) -> String {
        let mut line = format!("- {}", self.name);
        if let Some(description) = &self.description {
            line.push_str(": ");
            line.push_str(&cut(description));
        }
        if let Some(when) = &self.when_to_use {
            line.push_str(" - ");
            line.push_str(&cut(when));
        }
        line
    }

    /// The skill's folder (`None` for a command).
    pub fn dir(&self) -> Option<&Path> {
        match &self.kind {
            Kind::Skill { dir } => Some(dir),
            Kind::Command => None,
        }
    }
}

/// A skill may name itself with letters, digits, `-`, `_` and `:`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
}

/// A body's first non-empty line stands in for a missing description.
fn first_line(body: &str) -> Option<String> {
    body.lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_LISTED_CHARS {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(MAX_LISTED_CHARS).collect();
    cut.push('…');
    cut
}

/// `allowed-tools` as a YAML list or one string of comma-separated rules
/// (a comma inside a rule's parentheses belongs to the rule).
fn tool_list(value: &serde_norway::Value) -> Vec<String> {
    match value {
        serde_norway::Value::Sequence(items) => items
            .iter()
            .filter_map(|v| v.as_str())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        serde_norway::Value::String(text) => crate::policy::split_rules(text),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_tools_split_on_commas_outside_parentheses() -> Result<(), serde_norway::Error> {
        let value = serde_norway::Value::String("Bash(git add:*), Read, Bash(a, b)".into());
        assert_eq!(tool_list(&value), ["Bash(git add:*)", "Read", "Bash(a, b)"]);
        let list: serde_norway::Value = serde_norway::from_str("[Read, 'Bash(x:*)']")?;
        assert_eq!(tool_list(&list), ["Read", "Bash(x:*)"]);
        Ok(())
    }

    #[test]
    fn descriptive_front_matter_does_not_ask_and_tools_do() -> Result<(), String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let plain = dir.path().join("plain.md");
        let granting = dir.path().join("granting.md");
        std::fs::write(&plain, "---\ndescription: d\nwhen_to_use: w\n---\nbody\n")
            .map_err(|e| e.to_string())?;
        std::fs::write(
            &granting,
            "---\nallowed-tools: Read\n---\n# Heading\nbody\n",
        )
        .map_err(|e| e.to_string())?;
        let read = |p: &Path| {
            CustomCommand::read(p, "x".into(), Kind::Command, Origin::User)?
                .ok_or_else(|| "missing".to_string())
        };
        let plain = read(&plain)?;
        assert!(!plain.asks);
        assert_eq!(plain.listed(), "- x: d - w");
        let granting = read(&granting)?;
        assert!(granting.asks);
        assert_eq!(granting.allowed_tools, ["Read"]);
        assert_eq!(granting.description.as_deref(), Some("Heading"));
        Ok(())
    }

    #[test]
    fn a_projects_command_that_links_out_of_the_project_is_not_read() -> Result<(), String> {
        let root = tempfile::tempdir().map_err(|e| e.to_string())?;
        let base = std::fs::canonicalize(root.path()).map_err(|e| e.to_string())?;
        let (project, home) = (base.join("project"), base.join("home"));
        let commands = project.join(".claude/commands");
        std::fs::create_dir_all(&commands).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
        std::fs::write(home.join("id_rsa"), "PRIVATE KEY").map_err(|e| e.to_string())?;
        let link = commands.join("key.md");
        std::os::unix::fs::symlink(home.join("id_rsa"), &link).map_err(|e| e.to_string())?;
        let refused = CustomCommand::read(&link, "key".into(), Kind::Command, Origin::Project);
        assert!(refused.is_err_and(|e| e.contains("link out of the project")));
        // The same link in the user's own commands is theirs to make.
        let theirs = CustomCommand::read(&link, "key".into(), Kind::Command, Origin::User)?;
        assert!(theirs.is_some_and(|c| c.body.contains("PRIVATE KEY")));
        Ok(())
    }
}
