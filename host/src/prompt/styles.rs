//! Output styles: how the model should answer, chosen by the `outputStyle`
//! setting. Two are built in (`Explanatory`, `Learning`, in carapace's
//! words); others are Markdown files in `output-styles/` folders, as in
//! Claude Code. A style changes the system prompt as Claude Code 2.1.197
//! changes it (recorded, `tests/claude-code/output-style-*.json`): the
//! opening names the style, the style's text closes the prompt, and a
//! custom style drops the coding instructions unless its front matter says
//! `keep-coding-instructions: true`.

use crate::memory::{read_bounded, split_front_matter, stays_within};
use std::path::{Path, PathBuf};

/// The style of a session that names none.
pub const DEFAULT_STYLE: &str = "default";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStyle {
    pub name: String,
    pub description: String,
    /// The text that closes the system prompt.
    pub prompt: String,
    /// Whether the coding instructions stay in the prompt.
    pub keep_coding_instructions: bool,
}

/// The closing part both built-in styles share.
macro_rules! notes {
    () => {
        "## Notes
Before and after you write code, add a short note of two or three points about what is worth knowing here, set off like this:
\"`── Note ─────────────────────────────`
[the points]
`───────────────────────────────────────`\"

Notes belong in the conversation, never in the code."
    };
}

const EXPLANATORY: &str = concat!("Besides doing the software engineering work, help the user understand the codebase as you go.

Stay on the task, but explain the choices you make: why this approach, what the surrounding code expects, what would break otherwise. Explanations may make answers longer than usual; keep them specific to this code rather than general programming lessons.

", notes!());

const LEARNING: &str = concat!("Besides doing the software engineering work, help the user learn by doing part of it themselves.

Be collaborative and encouraging. Do the routine parts yourself, and leave the user the pieces where a real decision is made.

## Asking for the user's part
When a change involves more than about twenty lines and includes a design decision (error handling, a data structure, business logic with several valid answers, a key algorithm or interface), ask the user to write that piece, two to ten lines:
- First put exactly one `TODO(human)` marker in the code with your editing tools, where their piece goes.
- Then ask, in this form, and stop until they answer:
```
**Your turn**
**Context:** what is built and why this decision matters
**Your task:** the function or section to write, in which file (look for TODO(human))
**Guidance:** the trade-offs and constraints to weigh
```
- If you keep a task list, include an item for the user's part.

## After their part
Say in a sentence or two how their code fits the larger design. No praise, no repetition.

", notes!());

/// The built-in styles besides the default.
fn built_in() -> [OutputStyle; 2] {
    [
        OutputStyle {
            name: "Explanatory".into(),
            description: "Explains the implementation choices and the codebase as it works".into(),
            prompt: EXPLANATORY.into(),
            keep_coding_instructions: true,
        },
        OutputStyle {
            name: "Learning".into(),
            description: "Works with you: leaves you the key pieces to write, with guidance".into(),
            prompt: LEARNING.into(),
            keep_coding_instructions: true,
        },
    ]
}

/// The folders custom styles are read from, the project's first (they win
/// a name), and carapace's own beside Claude Code's.
pub fn style_folders(cwd: &Path, home: &Path, project: bool, user: bool) -> Vec<PathBuf> {
    let mut folders = Vec::new();
    for (base, wanted) in [(cwd, project), (home, user)] {
        if wanted {
            folders.push(base.join(".claude/output-styles"));
            folders.push(base.join(".carapace/output-styles"));
        }
    }
    folders
}

/// What `outputStyle` names: `Ok(None)` for the default; an error says why
/// a named style cannot be used (the session then keeps the default).
pub fn find_style(name: &str, folders: &[PathBuf]) -> Result<Option<OutputStyle>, String> {
    if name.eq_ignore_ascii_case(DEFAULT_STYLE) {
        return Ok(None);
    }
    if let Some(style) = built_in()
        .into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
    {
        return Ok(Some(style));
    }
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        // A style is its folder's owner's own file: a link may lead
        // elsewhere in their project (or home), never out of it.
        let owner = folder
            .parent()
            .and_then(Path::parent)
            .unwrap_or(folder.as_path());
        for path in paths
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .filter(|p| stays_within(p, owner, owner))
        {
            match read_style(&path)? {
                Some(style) if style.name.eq_ignore_ascii_case(name) => return Ok(Some(style)),
                _ => {}
            }
        }
    }
    Err(format!(
        "outputStyle `{name}` names no built-in style and no file in an output-styles folder; the default style is used"
    ))
}

fn read_style(path: &Path) -> Result<Option<OutputStyle>, String> {
    let shown = path.display();
    let Some(text) = read_bounded(path).map_err(|e| format!("output style {shown}: {e}"))? else {
        return Ok(None);
    };
    let (front, body) = split_front_matter(&text);
    let front: serde_norway::Value = match front {
        Some(front) if !front.trim().is_empty() => serde_norway::from_str(front)
            .map_err(|e| format!("output style {shown}: its front matter is not YAML: {e}"))?,
        _ => serde_norway::Value::Null,
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text_of = |key: &str| front.get(key).and_then(|v| v.as_str()).map(str::to_string);
    Ok(Some(OutputStyle {
        name: text_of("name").unwrap_or(stem),
        description: text_of("description").unwrap_or_default(),
        prompt: body.trim().to_string(),
        keep_coding_instructions: front
            .get("keep-coding-instructions")
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles_are_found_by_name_built_in_or_in_a_folder() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let folder = dir.path().join("styles");
        std::fs::create_dir_all(&folder)?;
        std::fs::write(
            folder.join("pirate.md"),
            "---\nname: Pirate\ndescription: Talks like a pirate\n---\nAnswer as a pirate would.\n",
        )?;
        std::fs::write(folder.join("plain.md"), "Plain style.\n")?;
        let folders = [folder];
        assert_eq!(find_style("default", &folders)?, None);
        let learning = find_style("Learning", &folders)?.ok_or("no Learning")?;
        assert!(learning.keep_coding_instructions);
        let pirate = find_style("Pirate", &folders)?.ok_or("no Pirate")?;
        assert_eq!(pirate.prompt, "Answer as a pirate would.");
        assert!(!pirate.keep_coding_instructions);
        assert_eq!(
            find_style("plain", &folders)?.map(|s| s.name).as_deref(),
            Some("plain")
        );
        assert!(find_style("nosuch", &folders).is_err());
        Ok(())
    }
}
