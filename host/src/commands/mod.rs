//! Custom commands: Markdown files in `.claude/commands/` and
//! `.carapace/commands/` (the project's, then `~/…`, the user's), used as
//! `/name args` at the start of a prompt and expanded as Claude Code
//! 2.1.197 expands them (recorded, `tests/claude-code/command-*.json`): a
//! block naming the command and its arguments, then the body without its
//! front matter, `$ARGUMENTS` replaced by the arguments and `$N` by the
//! N-th word of them, counted from 0 as Claude Code counts. A name in a
//! subfolder is `folder:name`.

use crate::memory::{read_bounded, split_front_matter};
use std::path::{Path, PathBuf};

/// One command.
#[derive(Debug, Clone)]
pub struct CustomCommand {
    pub name: String,
    pub path: PathBuf,
    pub description: Option<String>,
    body: String,
}

/// The session's commands, the project's first (they win a name).
#[derive(Debug, Default)]
pub struct CustomCommands {
    commands: Vec<CustomCommand>,
    pub warnings: Vec<String>,
}

/// What a prompt that starts with `/` is.
#[derive(Debug, PartialEq, Eq)]
pub enum Invocation {
    /// Not a command (no `/name` at its start): sent as it is.
    NotACommand,
    /// A known command: the texts that replace the prompt.
    Expanded(Vec<String>),
    /// `/name` names no command: answered without a request.
    Unknown(String),
}

impl CustomCommands {
    /// The commands of `folders`, in precedence order.
    pub fn load(folders: &[PathBuf]) -> Self {
        let mut loaded = Self::default();
        for folder in folders {
            loaded.load_folder(folder, "");
        }
        loaded
    }

    /// The folders Claude Code reads, and carapace's own beside each.
    pub fn folders(cwd: &Path, home: &Path, project: bool, user: bool) -> Vec<PathBuf> {
        let mut folders = Vec::new();
        if project {
            folders.push(cwd.join(".claude/commands"));
            folders.push(cwd.join(".carapace/commands"));
        }
        if user {
            folders.push(home.join(".claude/commands"));
            folders.push(home.join(".carapace/commands"));
        }
        folders
    }

    fn load_folder(&mut self, dir: &Path, prefix: &str) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
                continue;
            };
            if path.is_dir() {
                self.load_folder(&path, &format!("{prefix}{stem}:"));
                continue;
            }
            if path.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let name = format!("{prefix}{stem}");
            if self.get(&name).is_some() {
                continue;
            }
            match read_bounded(&path) {
                Ok(None) => {}
                Ok(Some(text)) => {
                    let (front, body) = split_front_matter(&text);
                    let description = front
                        .and_then(|f| serde_norway::from_str::<serde_norway::Value>(f).ok())
                        .and_then(|v| {
                            v.get("description")
                                .and_then(|d| d.as_str())
                                .map(str::to_string)
                        });
                    self.commands.push(CustomCommand {
                        name,
                        path,
                        description,
                        body: body.to_string(),
                    });
                }
                Err(why) => self
                    .warnings
                    .push(format!("command {} skipped: {why}", path.display())),
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// Every command's name (`system`/`init`'s `slash_commands`).
    pub fn names(&self) -> Vec<String> {
        self.commands.iter().map(|c| c.name.clone()).collect()
    }

    /// What `prompt` is, if it starts with `/name`.
    pub fn invocation(&self, prompt: &str) -> Invocation {
        let Some(rest) = prompt.trim_start().strip_prefix('/') else {
            return Invocation::NotACommand;
        };
        let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let args = args.trim();
        // A path (`/tmp/x is…`) or an empty name is not a command.
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        {
            return Invocation::NotACommand;
        }
        match self.get(name) {
            Some(command) => Invocation::Expanded(command.expand(args)),
            None => Invocation::Unknown(format!("Unknown command: /{name}")),
        }
    }
}

impl CustomCommand {
    /// The two texts that replace the prompt.
    fn expand(&self, args: &str) -> Vec<String> {
        let mut header = format!(
            "<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n",
            name = self.name
        );
        if !args.is_empty() {
            header.push_str(&format!("<command-args>{args}</command-args>\n"));
        }
        vec![header, substitute(&self.body, args)]
    }
}

/// `$ARGUMENTS` → all of them; `$N` → the N-th word (from 0), or nothing.
fn substitute(body: &str, args: &str) -> String {
    let words: Vec<&str> = args.split_whitespace().collect();
    let body = body.replace("$ARGUMENTS", args);
    let mut out = String::with_capacity(body.len());
    let mut chars = body.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '$' {
            let digits: String = body[at + 1..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse::<usize>() {
                out.push_str(words.get(n).copied().unwrap_or(""));
                for _ in 0..digits.len() {
                    chars.next();
                }
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_substituted_as_claude_code_does() {
        assert_eq!(
            substitute(
                "Say hello to $ARGUMENTS. First: $1, second: $2.\n",
                "Alice Bob"
            ),
            "Say hello to Alice Bob. First: Bob, second: .\n"
        );
        assert_eq!(substitute("cost $ and $0", "x"), "cost $ and x");
    }

    #[test]
    fn a_path_is_not_a_command() {
        let none = CustomCommands::default();
        assert_eq!(none.invocation("/tmp/x is big"), Invocation::NotACommand);
        assert_eq!(none.invocation("hello"), Invocation::NotACommand);
        assert_eq!(
            none.invocation("/nosuch with args"),
            Invocation::Unknown("Unknown command: /nosuch".into())
        );
    }
}
