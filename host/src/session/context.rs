//! What the session tells the model besides the conversation: the memory
//! files and today's date, at the head of every request's first user
//! message, and the memory that joins beside a later Read.

use crate::memory::{Memory, MemoryPlaces, MemorySources, NestedMemory, context_reminder};
use crate::policy::SourceKind;
use std::path::Path;
use std::sync::Arc;

/// The session's memory, loaded.
pub(super) struct SessionMemory {
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
    SessionMemory {
        reminder: context_reminder(&memory, date),
        files: memory
            .files
            .iter()
            .map(|f| (f.path.clone(), f.kind, f.text.len()))
            .collect(),
        nested,
        warnings: memory.warnings,
    }
}

/// The administrator's folders memory is read from: Claude Code's and the
/// one holding carapace's managed settings.
pub(super) fn managed_dirs(managed_settings: &Path) -> Vec<std::path::PathBuf> {
    let mut dirs = vec![std::path::PathBuf::from("/etc/claude-code")];
    if let Some(dir) = managed_settings.parent()
        && !dirs.iter().any(|d| d == dir)
    {
        dirs.push(dir.to_path_buf());
    }
    dirs
}
