//! What the session tells the model besides the conversation: the memory
//! files and today's date, at the head of every request's first user
//! message, and the memory that joins beside a later Read.

use super::builder::{SessionBuilder, SessionError};
use crate::commands::{CustomCommands, Folders, PluginDir};
use crate::memory::{Memory, MemoryPlaces, MemorySources, NestedMemory, context_reminder};
use crate::policy::SourceKind;
use crate::settings::{ProjectItem, Settings};
use std::path::Path;
use std::sync::Arc;

/// The session's memory, loaded.
pub(super) struct SessionMemory {
    /// The files as read, before the session's Read deny rules.
    read: Memory,
    date: String,
    pub reminder: String,
    /// Each file read: where, whose, how many bytes.
    pub files: Vec<(std::path::PathBuf, crate::memory::MemoryKind, usize)>,
    pub nested: Arc<NestedMemory>,
    pub warnings: Vec<String>,
}

/// Which memory files load: none when `enabled` is false (`--bare`), else
/// those of the settings sources that load (all by default).
pub(super) fn memory_sources(enabled: bool, sources: Option<&[SourceKind]>) -> MemorySources {
    if !enabled {
        return MemorySources::NONE;
    }
    match sources {
        None => MemorySources::ALL,
        Some(kinds) => MemorySources {
            user: kinds.contains(&SourceKind::User),
            project: kinds.contains(&SourceKind::Project),
            local: kinds.contains(&SourceKind::Local),
        },
    }
}

pub(super) fn load(places: MemoryPlaces, sources: MemorySources, date: &str) -> SessionMemory {
    let memory = Memory::load(&places, sources);
    let nested = Arc::new(NestedMemory::new(
        &places.cwd,
        &places.home,
        sources,
        memory.paths(),
    ));
    let mut loaded = SessionMemory {
        read: memory,
        date: date.to_string(),
        reminder: String::new(),
        files: Vec::new(),
        nested,
        warnings: Vec::new(),
    };
    loaded.render();
    loaded
}

impl SessionMemory {
    /// Drops what `refusal` refuses (a Read deny rule covers it), and
    /// renders again what the model is shown.
    pub fn retain_readable(&mut self, refusal: impl Fn(&Path) -> Option<String>) {
        self.read.retain_readable(refusal);
        self.render();
    }

    fn render(&mut self) {
        self.reminder = context_reminder(&self.read, &self.date);
        self.files = self
            .read
            .files
            .iter()
            .map(|f| (f.path.clone(), f.kind, f.text.len()))
            .collect();
        self.warnings = self.read.warnings.clone();
    }
}

/// The administrator's folders memory is read from: Claude Code's and the
/// one holding carapace's managed settings.
fn managed_dirs(managed_settings: &Path) -> Vec<std::path::PathBuf> {
    let mut dirs = vec![std::path::PathBuf::from("/etc/claude-code")];
    if let Some(dir) = managed_settings.parent()
        && !dirs.iter().any(|d| d == dir)
    {
        dirs.push(dir.to_path_buf());
    }
    dirs
}

impl SessionBuilder {
    /// The `--plugin-dir` folders, each named; one that is not a plugin
    /// folder is an error.
    pub(super) fn opened_plugins(&self) -> Result<Vec<PluginDir>, SessionError> {
        self.spec
            .loads
            .plugin_dirs
            .iter()
            .map(|dir| crate::commands::PluginDir::open(dir).map_err(SessionError::Invalid))
            .collect()
    }

    /// `--plugin-dir`'s folders, then the Claude Code plugins the settings
    /// enable (installed by carapace or by Claude Code), each with what is
    /// held back of it when its content is not what was approved. None
    /// with `--bare`.
    pub(super) fn plugin_folders(
        &self,
        settings: &crate::settings::Settings,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<PluginDir>, SessionError> {
        let mut folders = self.opened_plugins()?;
        if !self.spec.loads.hooks {
            return Ok(folders);
        }
        let marketplaces = crate::marketplace::Marketplaces::new(
            &self.spec.paths.config_dir,
            &self.spec.paths.home,
        );
        let on = settings
            .enabled_plugins
            .iter()
            .filter(|(_, on)| **on)
            .map(|(id, _)| id.as_str());
        let (enabled, not_loaded) = marketplaces.enabled(on);
        warnings.extend(not_loaded);
        for plugin in enabled {
            match PluginDir::open(&plugin.root) {
                Ok(mut folder) => {
                    if let Some(why) = &plugin.held {
                        warnings.push(format!(
                            "plugin `{}`: its hooks and MCP servers do not run: {why}",
                            plugin.id
                        ));
                    }
                    folder.held = plugin.held;
                    folder.enabled_by = settings.enabled_plugin_sources.get(&plugin.id).copied();
                    folders.push(folder);
                }
                Err(e) => warnings.push(format!("plugin `{}` not loaded: {e}", plugin.id)),
            }
        }
        Ok(folders)
    }

    /// Starts reading the memory files, and the skills and commands of the
    /// settings sources that load, each on a thread of its own: both are
    /// mostly waiting on the filesystem.
    pub(super) fn read_context_files(
        &self,
        plugins: &[PluginDir],
        managed_settings: &Path,
    ) -> Result<ContextReading, SessionError> {
        let places = crate::memory::MemoryPlaces {
            cwd: self.spec.paths.cwd.clone(),
            home: self.spec.paths.home.clone(),
            config_dir: self.spec.paths.config_dir.clone(),
            managed: managed_dirs(managed_settings),
        };
        let (project, user) = self.project_and_user();
        let mut folders = Folders::of(&places.cwd, &places.home, project, user);
        folders.plugins = plugins.to_vec();
        let skills = self.spec.loads.skills;
        let sources = memory_sources(
            self.spec.loads.memory,
            self.spec.settings.sources.as_deref(),
        );
        let today = crate::agent::today();
        let skills =
            std::thread::Builder::new()
                .name("skills".into())
                .spawn(move || match skills {
                    true => CustomCommands::load(&folders),
                    false => CustomCommands::default(),
                });
        let memory = std::thread::Builder::new()
            .name("memory-files".into())
            .spawn(move || load(places, sources, &today))
            .map_err(|e| {
                SessionError::Invalid(format!("cannot start reading memory files: {e}"))
            })?;
        Ok(ContextReading { memory, skills })
    }

    /// The catalogue's warnings told; a project skill's `allowed-tools`
    /// apply only in a trusted workspace, and the user hears so when they
    /// would not.
    pub(super) fn admitted(
        loaded: CustomCommands,
        settings: &Settings,
        warnings: &mut Vec<String>,
    ) -> CustomCommands {
        warnings.extend(loaded.warnings.iter().cloned());
        for entry in loaded.granting_from_project() {
            settings.trust.admits(
                ProjectItem::SkillAllowedTools,
                &entry.path.display().to_string(),
                warnings,
            );
        }
        loaded
    }

    /// The style `outputStyle` names, from the folders of the settings
    /// sources that load; one that cannot be found is a warning.
    pub(super) fn output_style(
        &self,
        settings: &Settings,
        plugins: &[PluginDir],
        warnings: &mut Vec<String>,
    ) -> Option<crate::prompt::OutputStyle> {
        let name = settings.output_style.as_deref()?;
        let (project, user) = self.project_and_user();
        let (cwd, home) = (&self.spec.paths.cwd, &self.spec.paths.home);
        let mut folders = crate::prompt::style_folders(cwd, home, project, user);
        // A plugin's styles come last: the project's and yours win a name.
        folders.extend(plugins.iter().map(|p| p.root.join("output-styles")));
        crate::prompt::find_style(name, &folders)
            .map_err(|why| warnings.push(why))
            .ok()
            .flatten()
    }

    /// Whether the project's files and the user's load (`--setting-sources`).
    pub(super) fn project_and_user(&self) -> (bool, bool) {
        match self.spec.settings.sources.as_deref() {
            None => (true, true),
            Some(kinds) => (
                kinds.contains(&SourceKind::Project),
                kinds.contains(&SourceKind::User),
            ),
        }
    }
}

/// Memory files and skills being read while the session is assembled.
pub(super) struct ContextReading {
    memory: std::thread::JoinHandle<SessionMemory>,
    skills: std::io::Result<std::thread::JoinHandle<CustomCommands>>,
}

impl ContextReading {
    /// Both, once read. Skills that could not be read are a warning;
    /// memory that could not be is an error.
    pub(super) fn join(self) -> Result<(SessionMemory, CustomCommands), SessionError> {
        let memory = self
            .memory
            .join()
            .map_err(|_| SessionError::Invalid("reading the memory files failed".into()))?;
        let skills = match self.skills {
            Ok(reading) => reading.join().unwrap_or_else(|_| CustomCommands::failed()),
            Err(e) => CustomCommands::failed_with(e.to_string()),
        };
        Ok((memory, skills))
    }
}
