//! A Bash rule's specifier (`Bash(npm test)`, `Bash(npm:*)`,
//! `Bash(git * main)`) and what it matches: each simple command a line
//! runs, as the analysis found it.

use super::{Analysis, SimpleCommand, WordText};

/// A Bash rule's specifier: `cmd` exactly, `cmd:*` (the command and any
/// arguments after it), or a pattern with `*` wildcards.
#[derive(Debug, Clone)]
pub struct CommandPattern {
    pub written: String,
    kind: PatternKind,
}

#[derive(Debug, Clone)]
enum PatternKind {
    Exact(String),
    Prefix(String),
    Wildcard(regex::Regex),
}

impl CommandPattern {
    pub fn parse(spec: &str) -> Result<Self, String> {
        let normal = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let kind = if let Some(prefix) = spec.strip_suffix(":*") {
            let prefix = normal(prefix);
            if prefix.is_empty() {
                return Err("`:*` needs a command before it".into());
            }
            PatternKind::Prefix(prefix)
        } else if spec.contains('*') {
            let pattern = normal(spec)
                .split('*')
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join(".*");
            PatternKind::Wildcard(
                regex::Regex::new(&format!("^{pattern}$")).map_err(|e| e.to_string())?,
            )
        } else {
            PatternKind::Exact(normal(spec))
        };
        Ok(Self {
            written: spec.into(),
            kind,
        })
    }

    /// Whether this pattern allows `command`: only wholly known text can be
    /// allowed, except that a `cmd:*` prefix allows any arguments after it.
    fn allows_one(&self, command: &SimpleCommand) -> bool {
        let (literal, whole) = command.literal_prefix();
        match &self.kind {
            PatternKind::Exact(exact) => whole && literal == *exact,
            PatternKind::Prefix(prefix) => {
                starts_with_words(&literal, prefix) && !command.runs_code_through_options()
            }
            PatternKind::Wildcard(regex) => {
                whole && regex.is_match(&literal) && !command.runs_code_through_options()
            }
        }
    }

    /// Whether `command` could be what this pattern names: a dynamic word
    /// could be anything, so it is caught when its known part fits.
    fn catches_one(&self, command: &SimpleCommand) -> bool {
        let (literal, whole) = command.literal_prefix();
        if self.catches_text(&literal, whole) {
            return true;
        }
        // The same command without its assignments, its program by name:
        // only different when there are assignments or a path.
        let by_path = matches!(command.words.get(command.name), Some(WordText::Literal(n)) if n.contains('/'));
        if command.name > 0 || by_path {
            for by_base_name in [false, true] {
                let (literal, whole) = command.program_text(by_base_name);
                if self.catches_text(&literal, whole) {
                    return true;
                }
            }
        }
        command.runs.iter().any(|run| self.catches_one(run))
    }

    fn catches_text(&self, literal: &str, whole: bool) -> bool {
        let literal = literal.to_string();
        match &self.kind {
            PatternKind::Exact(exact) => {
                if whole {
                    literal == *exact
                } else {
                    exact.starts_with(&literal)
                }
            }
            PatternKind::Prefix(prefix) => {
                starts_with_words(&literal, prefix) || (!whole && prefix.starts_with(&literal))
            }
            PatternKind::Wildcard(regex) => !whole || regex.is_match(&literal),
        }
    }

    /// A deny or ask rule catches a line when it catches any of its
    /// commands — or the line is opaque.
    pub fn catches(&self, analysis: &Analysis) -> bool {
        match analysis {
            Analysis::Commands(commands) => commands.iter().any(|c| self.catches_one(c)),
            Analysis::Opaque { .. } | Analysis::Exceeds(_) => true,
        }
    }

    /// An allow rule alone allows a line when it allows every command.
    pub fn allows(&self, analysis: &Analysis) -> bool {
        match analysis {
            Analysis::Commands(commands) => commands.iter().all(|c| self.allows_one(c)),
            Analysis::Opaque { .. } | Analysis::Exceeds(_) => false,
        }
    }

    /// Whether this pattern allows one command (for lines allowed part by
    /// part by several rules).
    pub fn allows_command(&self, command: &SimpleCommand) -> bool {
        self.allows_one(command)
    }
}

fn starts_with_words(text: &str, prefix: &str) -> bool {
    text == prefix
        || text
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with(' '))
}
