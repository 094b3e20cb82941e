//! How a tool's calls are shown — their kind, the input field that names
//! a call, the file it touches, the change it makes — declared where the
//! tool is registered (the first-party table, a host tool itself), so the
//! screen and an editor show a call alike and no front end keeps a table
//! of tool names of its own.

use serde_json::Value;

/// What kind of work a tool's calls do: an editor's icon and grouping, the
/// screen's wording, how much of a result the screen shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolKind {
    /// Reads a file.
    Read,
    /// Changes a file.
    Edit,
    /// Runs or controls a command.
    Execute,
    /// Searches files.
    Search,
    /// Reaches the web.
    Fetch,
    /// Plans or delegates (a task list, a subagent).
    Think,
    /// Changes the session's mode.
    SwitchMode,
    /// Anything else (an installed plugin's or an MCP server's tool).
    #[default]
    Other,
}

/// Which part of a call's input names it in a few words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Subject {
    /// The whole input, as JSON: a tool whose schema carapace does not know.
    #[default]
    Input,
    /// Nothing: the tool's name says it all.
    Nothing,
    /// One field's text.
    Field(&'static str),
    /// A pattern and, when given, the folder it searches (`p in dir`).
    Within {
        pattern: &'static str,
        folder: &'static str,
    },
}

/// How a call's input states the change it makes, in Claude Code's field
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Change {
    #[default]
    None,
    /// `file_path`'s `old_string` becomes `new_string`.
    Replace,
    /// `file_path` becomes `content`.
    Whole,
    /// A plan to approve, in markdown (`plan`).
    Plan,
    /// A task list (`todos`: `content`, `status`).
    Todos,
}

/// A tool's presentation, as registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Presentation {
    pub kind: ToolKind,
    /// What approving lets a call do, after "wants to" ("run a command").
    pub action: Option<&'static str>,
    /// The title's first words, where the tool's name is not the best
    /// ("Fetch", "Search the web:").
    pub lead: Option<&'static str>,
    pub subject: Subject,
    /// The input field holding the file or folder a call touches.
    pub location: Option<&'static str>,
    pub change: Change,
}

/// The presentations of a session's tools, kept by a front end that shows
/// calls without holding the session's pipeline (the screen).
#[derive(Debug, Clone, Default)]
pub struct Presentations(std::collections::HashMap<String, Presentation>);

impl FromIterator<(String, Presentation)> for Presentations {
    fn from_iter<I: IntoIterator<Item = (String, Presentation)>>(tools: I) -> Self {
        Self(tools.into_iter().collect())
    }
}

impl Presentations {
    /// `name`'s call with `input`, as front ends show it.
    pub fn view(&self, name: &str, input: &Value) -> CallView {
        let presentation = self.0.get(name).copied().unwrap_or_default();
        presentation.view(name, input)
    }
}

/// A file's change as a call's input states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    /// What it replaces; `None` for a whole new content.
    pub old: Option<String>,
    pub new: String,
}

/// One entry of a task list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// One call as front ends show it, from its tool's presentation and input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallView {
    pub kind: ToolKind,
    pub action: &'static str,
    /// The input in a few words (the command, the file, the pattern).
    pub subject: String,
    /// A one-line title: the lead (or the tool's name) and the subject.
    pub title: String,
    pub location: Option<String>,
    pub change: Option<FileChange>,
    pub plan: Option<String>,
    pub todos: Vec<Todo>,
}

fn text<'a>(input: &'a Value, field: &str) -> Option<&'a str> {
    input.get(field).and_then(Value::as_str)
}

impl Default for Presentation {
    fn default() -> Self {
        Self::UNKNOWN
    }
}

impl Presentation {
    /// A tool that declared nothing: shown by its name and input.
    pub const UNKNOWN: Self = Self {
        kind: ToolKind::Other,
        action: None,
        lead: None,
        subject: Subject::Input,
        location: None,
        change: Change::None,
    };

    /// `name`'s call with `input`, as front ends show it.
    pub fn view(&self, name: &str, input: &Value) -> CallView {
        let subject = self.subject(input);
        let lead = self.lead.unwrap_or(name);
        let title = if subject.is_empty() {
            lead.to_string()
        } else {
            format!("{lead} {subject}")
        };
        CallView {
            kind: self.kind,
            action: self.action.unwrap_or("be used"),
            subject,
            title,
            location: self
                .location
                .and_then(|f| text(input, f))
                .map(str::to_string),
            change: self.file_change(input),
            plan: (self.change == Change::Plan)
                .then(|| text(input, "plan").map(str::to_string))
                .flatten(),
            todos: if self.change == Change::Todos {
                todos(input)
            } else {
                Vec::new()
            },
        }
    }

    fn subject(&self, input: &Value) -> String {
        match self.subject {
            Subject::Nothing => String::new(),
            Subject::Field(field) => text(input, field).unwrap_or_default().to_string(),
            Subject::Within { pattern, folder } => {
                match (text(input, pattern), text(input, folder)) {
                    (Some(p), Some(dir)) => format!("{p} in {dir}"),
                    (Some(p), None) => p.to_string(),
                    (None, _) => String::new(),
                }
            }
            Subject::Input => match input {
                Value::Object(map) if map.is_empty() => String::new(),
                other => other.to_string(),
            },
        }
    }

    fn file_change(&self, input: &Value) -> Option<FileChange> {
        let path = text(input, "file_path")?.to_string();
        let (old, new) = match self.change {
            Change::Replace => (
                Some(text(input, "old_string")?.to_string()),
                text(input, "new_string")?,
            ),
            Change::Whole => (None, text(input, "content")?),
            Change::None | Change::Plan | Change::Todos => return None,
        };
        Some(FileChange {
            path,
            old,
            new: new.to_string(),
        })
    }
}

fn todos(input: &Value) -> Vec<Todo> {
    input["todos"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|todo| {
            Some(Todo {
                content: text(todo, "content")?.to_string(),
                status: text(todo, "status").unwrap_or("pending").to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const EDIT: Presentation = Presentation {
        kind: ToolKind::Edit,
        action: Some("edit a file"),
        lead: None,
        subject: Subject::Field("file_path"),
        location: Some("file_path"),
        change: Change::Replace,
    };

    #[test]
    fn an_edit_is_shown_by_its_file_and_its_change() {
        let input = json!({"file_path": "/ws/a.rs", "old_string": "a", "new_string": "b"});
        let view = EDIT.view("Edit", &input);
        assert_eq!(view.title, "Edit /ws/a.rs");
        assert_eq!(view.location.as_deref(), Some("/ws/a.rs"));
        assert_eq!(
            view.change,
            Some(FileChange {
                path: "/ws/a.rs".into(),
                old: Some("a".into()),
                new: "b".into()
            })
        );
        // Without its strings the call shows no change rather than half of one.
        let half = EDIT.view("Edit", &json!({"file_path": "/ws/a.rs"}));
        assert_eq!(half.change, None);
    }

    #[test]
    fn an_unknown_tool_is_shown_by_its_input() {
        let view = Presentation::default().view("mcp__s__t", &json!({"q": 1}));
        assert_eq!(view.subject, r#"{"q":1}"#);
        assert_eq!(view.title, r#"mcp__s__t {"q":1}"#);
        assert_eq!(view.action, "be used");
        let empty = Presentation::default().view("mcp__s__t", &json!({}));
        assert_eq!(empty.title, "mcp__s__t");
    }

    #[test]
    fn a_search_names_its_folder_when_it_has_one() {
        let grep = Presentation {
            subject: Subject::Within {
                pattern: "pattern",
                folder: "path",
            },
            ..Presentation::default()
        };
        assert_eq!(grep.view("Grep", &json!({"pattern": "fn"})).subject, "fn");
        let within = grep.view("Grep", &json!({"pattern": "fn", "path": "src"}));
        assert_eq!(within.subject, "fn in src");
    }
}
