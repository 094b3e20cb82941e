//! Custom commands and skills, one catalogue: Markdown files in
//! `.claude/commands/` and `.carapace/commands/`, and `SKILL.md` folders in
//! `.claude/skills/` and `.carapace/skills/` (each the project's and the
//! user's, `~/…`). Both are used as `/name args` at the start of a prompt,
//! and both are what the `Skill` tool calls, listed to the model as Claude
//! Code 2.1.197 lists them (recorded, `tests/claude-code/skill-*.json` and
//! `command-*.json`): a block naming the command and its arguments, then
//! the body without its front matter, a skill's preceded by its folder.
//! A name in a commands subfolder is `folder:name`. The user's skills win a
//! name over the project's, the project's commands over the user's.
//!
//! Imports: `memory`, `policy` — folders below it; nothing that imports it.

mod entry;
pub mod expand;

pub use entry::{CustomCommand, Kind, Origin};

use std::path::{Path, PathBuf};

/// The session's commands and skills.
#[derive(Debug, Default)]
pub struct CustomCommands {
    /// In precedence order: the user's, then the project's.
    skills: Vec<CustomCommand>,
    /// In precedence order: the project's, then the user's.
    commands: Vec<CustomCommand>,
    pub warnings: Vec<String>,
    /// Where they were read from (`reload` reads there again).
    folders: Folders,
}

/// Where a catalogue is read from.
#[derive(Debug, Clone, Default)]
pub struct Folders {
    /// `commands/` folders, in precedence order.
    pub commands: Vec<(PathBuf, Origin)>,
    /// `skills/` folders, in precedence order.
    pub skills: Vec<(PathBuf, Origin)>,
    /// Plugin folders in Claude Code's layout (`--plugin-dir`), after both.
    pub plugins: Vec<PluginDir>,
}

/// A folder in Claude Code's plugin layout: `.claude-plugin/plugin.json`
/// names it; its `skills/`, `commands/` and `agents/` are offered under
/// `name:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginDir {
    pub name: String,
    pub root: PathBuf,
    /// Why what it would run (hooks, MCP servers) is held back: an
    /// installed plugin whose content is not what was approved.
    pub held: Option<String>,
    /// The settings that enabled it (`None`: `--plugin-dir`, the user's
    /// own choice): its middleware hooks sit in their tier.
    pub enabled_by: Option<crate::policy::SourceKind>,
}

impl PluginDir {
    /// The plugin at `root`: named by its manifest, else by the folder.
    pub fn open(root: &Path) -> Result<Self, String> {
        if !root.is_dir() {
            return Err(format!("--plugin-dir {}: not a folder", root.display()));
        }
        let manifest = root.join(".claude-plugin/plugin.json");
        let named = match std::fs::read_to_string(&manifest) {
            Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| format!("{}: not JSON: {e}", manifest.display()))?["name"]
                .as_str()
                .map(str::to_string),
            Err(_) => None,
        };
        let name = named
            .or_else(|| root.file_name().map(|n| n.to_string_lossy().into_owned()))
            .filter(|n| !n.is_empty() && !n.contains(':'))
            .ok_or_else(|| {
                format!(
                    "--plugin-dir {}: the plugin has no usable name",
                    root.display()
                )
            })?;
        Ok(Self {
            name,
            root: root.to_path_buf(),
            held: None,
            enabled_by: None,
        })
    }
}

impl Folders {
    /// The folders Claude Code reads, and carapace's own beside each.
    pub fn of(cwd: &Path, home: &Path, project: bool, user: bool) -> Self {
        let mut folders = Self::default();
        let places =
            |base: &Path, kind: &str| [".claude", ".carapace"].map(|dot| base.join(dot).join(kind));
        if project {
            folders
                .commands
                .extend(places(cwd, "commands").map(|p| (p, Origin::Project)));
        }
        if user {
            folders
                .commands
                .extend(places(home, "commands").map(|p| (p, Origin::User)));
            folders
                .skills
                .extend(places(home, "skills").map(|p| (p, Origin::User)));
        }
        if project {
            folders
                .skills
                .extend(places(cwd, "skills").map(|p| (p, Origin::Project)));
        }
        folders
    }
}

/// What a prompt that starts with `/` is.
#[derive(Debug, PartialEq, Eq)]
pub enum Invocation<'a> {
    /// Not a command (no `/name` at its start): sent as it is.
    NotACommand,
    /// A known command or skill, and the arguments after its name.
    Known {
        command: &'a CustomCommand,
        args: String,
    },
    /// `/name` names nothing the user may invoke: answered without a
    /// request.
    Unknown(String),
}

impl PartialEq for CustomCommand {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.name == other.name
    }
}
impl Eq for CustomCommand {}

impl CustomCommands {
    pub fn load(folders: &Folders) -> Self {
        let mut loaded = Self {
            folders: folders.clone(),
            ..Self::default()
        };
        for (folder, origin) in &folders.skills {
            loaded.load_skills(folder, *origin);
        }
        for (folder, origin) in &folders.commands {
            loaded.load_commands(folder, "", *origin);
        }
        // The user named these folders: their tools are theirs to grant.
        for plugin in &folders.plugins {
            let prefix = format!("{}:", plugin.name);
            let before = loaded.skills.len();
            loaded.load_skills_as(&plugin.root.join("skills"), Origin::User, &prefix);
            let commands = loaded.commands.len();
            loaded.load_commands(&plugin.root.join("commands"), &prefix, Origin::User);
            for entry in loaded.skills[before..]
                .iter_mut()
                .chain(loaded.commands[commands..].iter_mut())
            {
                entry.plugin_root = Some(plugin.root.clone());
            }
        }
        loaded
    }

    /// None, because reading them failed: a warning says so.
    pub fn failed() -> Self {
        Self::failed_with("reading them stopped unexpectedly".into())
    }

    pub fn failed_with(why: String) -> Self {
        Self {
            warnings: vec![format!("skills and commands were not loaded: {why}")],
            ..Self::default()
        }
    }

    /// The same folders read again (the SDK's `reload_skills`).
    pub fn reload(&self) -> Self {
        Self::load(&self.folders)
    }

    /// What the SDK lists for each (`initialize`'s `commands`,
    /// `reload_skills`'s `skills`): name, description, argument hint.
    pub fn described(&self, skills_only: bool) -> Vec<serde_json::Value> {
        let entries: Box<dyn Iterator<Item = &CustomCommand>> = if skills_only {
            Box::new(self.skills.iter())
        } else {
            Box::new(self.all())
        };
        entries
            .filter(|c| c.user_invocable || skills_only)
            .map(|c| {
                serde_json::json!({
                    "name": c.name,
                    "description": c.description.clone().unwrap_or_default(),
                    "argumentHint": c.argument_hint.clone().unwrap_or_default(),
                })
            })
            .collect()
    }

    fn load_skills(&mut self, dir: &Path, origin: Origin) {
        self.load_skills_as(dir, origin, "");
    }

    fn load_skills_as(&mut self, dir: &Path, origin: Origin, prefix: &str) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut folders: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        folders.sort();
        for folder in folders.into_iter().filter(|f| f.is_dir()) {
            let Some(name) = folder.file_name().map(|s| s.to_string_lossy().into_owned()) else {
                continue;
            };
            let path = folder.join("SKILL.md");
            let kind = Kind::Skill {
                dir: folder.clone(),
            };
            let read = CustomCommand::read(&path, name, kind, origin).map(|entry| {
                entry.map(|mut entry| {
                    entry.name = format!("{prefix}{}", entry.name);
                    entry
                })
            });
            self.admit(read, &path, true);
        }
    }

    fn load_commands(&mut self, dir: &Path, prefix: &str, origin: Origin) {
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
                self.load_commands(&path, &format!("{prefix}{stem}:"), origin);
                continue;
            }
            if path.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let name = format!("{prefix}{stem}");
            if self.get(&name).is_some() {
                continue;
            }
            let read = CustomCommand::read(&path, name, Kind::Command, origin);
            self.admit(read, &path, false);
        }
    }

    fn admit(&mut self, read: Result<Option<CustomCommand>, String>, path: &Path, skill: bool) {
        let what = if skill { "skill" } else { "command" };
        match read {
            Ok(None) => {}
            Ok(Some(entry)) if self.get(&entry.name).is_some() => {}
            Ok(Some(entry)) if skill => self.skills.push(entry),
            Ok(Some(entry)) => self.commands.push(entry),
            Err(why) => self
                .warnings
                .push(format!("{what} {} skipped: {why}", path.display())),
        }
    }

    /// Skills first, then commands.
    fn all(&self) -> impl Iterator<Item = &CustomCommand> {
        self.skills.iter().chain(&self.commands)
    }

    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.all().find(|c| c.name == name)
    }

    /// The names a user may type (`system`/`init`'s `slash_commands`).
    pub fn names(&self) -> Vec<String> {
        self.all()
            .filter(|c| c.user_invocable)
            .map(|c| c.name.clone())
            .collect()
    }

    /// The skills' names (`system`/`init`'s `skills`).
    pub fn skill_names(&self) -> Vec<String> {
        self.skills.iter().map(|c| c.name.clone()).collect()
    }

    /// The project's entries that pre-approve tools.
    pub fn granting_from_project(&self) -> impl Iterator<Item = &CustomCommand> {
        self.all()
            .filter(|c| c.origin == Origin::Project && !c.allowed_tools.is_empty())
    }

    /// Whether the model has anything to call with the Skill tool.
    pub fn has_model_invocable(&self) -> bool {
        self.all().any(|c| c.model_invocable)
    }

    /// The reminder that tells the model what the Skill tool can call:
    /// skills as found, then commands by name, as Claude Code lists them.
    pub fn listing(&self) -> Option<String> {
        let mut commands: Vec<&CustomCommand> = self.commands.iter().collect();
        commands.sort_by(|a, b| a.name.cmp(&b.name));
        let lines: Vec<String> = self
            .skills
            .iter()
            .chain(commands)
            .filter(|c| c.model_invocable)
            .map(CustomCommand::listed)
            .collect();
        (!lines.is_empty()).then(|| {
            format!(
                "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n{}\n</system-reminder>\n",
                lines.join("\n")
            )
        })
    }

    /// What `prompt` is, if it starts with `/name`.
    pub fn invocation(&self, prompt: &str) -> Invocation<'_> {
        let Some(rest) = prompt.trim_start().strip_prefix('/') else {
            return Invocation::NotACommand;
        };
        let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        // A path (`/tmp/x is…`) or an empty name is not a command.
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        {
            return Invocation::NotACommand;
        }
        match self.get(name).filter(|c| c.user_invocable) {
            Some(command) => Invocation::Known {
                command,
                args: args.trim().to_string(),
            },
            None => Invocation::Unknown(format!("Unknown command: /{name}")),
        }
    }
}

/// The block that names a command the user typed, with its arguments
/// (a custom command's, a skill's, an MCP server's prompt's).
pub fn invocation_header(name: &str, args: &str) -> String {
    let mut header = format!(
        "<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n"
    );
    if !args.is_empty() {
        header.push_str(&format!("<command-args>{args}</command-args>\n"));
    }
    header
}

impl CustomCommand {
    /// The block that names an invocation typed by the user.
    pub fn header(&self, args: &str) -> String {
        invocation_header(&self.name, args)
    }

    /// The body with `args` and the session's values put in, a skill's
    /// preceded by its folder; `` !`command` `` spans still in it.
    pub fn instructions(&self, args: &str, session_id: &str) -> String {
        let body = expand::substitute(
            &self.body,
            &expand::Substitutions {
                args,
                skill_dir: self.dir(),
                plugin_root: self.plugin_root.as_deref(),
                session_id,
            },
        );
        match self.dir() {
            Some(dir) => format!("Base directory for this skill: {}\n\n{body}", dir.display()),
            None => body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn user_skills_win_a_name_and_only_model_invocable_ones_are_listed()
    -> Result<(), std::io::Error> {
        let root = tempfile::tempdir()?;
        let (cwd, home) = (root.path().join("ws"), root.path().join("home"));
        let write = |path: PathBuf, text: &str| -> std::io::Result<()> {
            std::fs::create_dir_all(path.parent().unwrap_or(&path))?;
            std::fs::write(path, text)
        };
        write(
            home.join(".claude/skills/same/SKILL.md"),
            "---\ndescription: mine\n---\nmine\n",
        )?;
        write(
            cwd.join(".claude/skills/same/SKILL.md"),
            "---\ndescription: theirs\n---\n",
        )?;
        write(
            cwd.join(".claude/skills/hidden/SKILL.md"),
            "---\ndescription: h\ndisable-model-invocation: true\n---\n",
        )?;
        write(
            cwd.join(".claude/skills/broken/SKILL.md"),
            "---\n: : :\n---\n",
        )?;
        write(cwd.join(".claude/commands/zed.md"), "Zed.\n")?;
        write(home.join(".claude/commands/abc.md"), "Abc.\n")?;
        let all = CustomCommands::load(&Folders::of(&cwd, &home, true, true));
        assert_eq!(
            all.get("same").and_then(|c| c.description.as_deref()),
            Some("mine")
        );
        assert_eq!(all.warnings.len(), 1, "{:?}", all.warnings);
        assert_eq!(
            all.listing().as_deref(),
            Some(
                "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n- same: mine\n- abc: Abc.\n- zed: Zed.\n</system-reminder>\n"
            )
        );
        assert!(matches!(
            all.invocation("/hidden"),
            Invocation::Known { .. }
        ));
        let user_only = CustomCommands::load(&Folders::of(&cwd, &home, false, true));
        assert!(user_only.get("zed").is_none() && user_only.get("abc").is_some());
        Ok(())
    }
}
