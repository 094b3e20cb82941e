//! Memory files: the instructions a user and a project leave for the model
//! (`CLAUDE.md` and its kin), found where Claude Code finds them, in its
//! order, with its headers, and shown to the model as Claude Code shows
//! them — at the head of the session's first user message, and, for a
//! folder's own `CLAUDE.md` or a rule scoped to some paths, beside the
//! first Read of a file there.
//!
//! A memory file is text for the model, never a grant or a setting. One
//! that is too large, not UTF-8 or unreadable is skipped with a warning;
//! none is ever read whole into memory past [`MAX_FILE_BYTES`]. What the
//! files bring to the model is bounded as the Read tool's reads are: only
//! regular files (a FIFO is never waited on), never process information
//! (`/proc`, where carapace's own environment is), a project file's
//! imports only from its own folder or the working directory (a repository
//! cannot pull in `~/.ssh` or a neighbour's `.env`, by a path or through a
//! link), at most [`MAX_TOTAL_BYTES`] and [`MAX_FILES`] in all, within
//! [`DEADLINE`]; the session then drops what a Read deny rule covers
//! ([`Memory::retain_readable`]).
//!
//! Imports only `secrets` (no import pulls a credential file in): a leaf
//! every folder above may use.

mod attach;
mod imports;
mod rules;

pub use attach::NestedMemory;
pub(crate) use rules::split_front_matter;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The largest memory file read; a larger one is skipped with a warning.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// The most memory text a session starts with, all files together.
pub const MAX_TOTAL_BYTES: usize = 2 * 1024 * 1024;
/// The most memory files (imports included) a session starts with.
pub const MAX_FILES: usize = 500;
/// How long finding and reading them may take.
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// Which memory files load: those of the settings sources that load
/// (`--setting-sources`, the SDK's `setting_sources`); none with `--bare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemorySources {
    /// `~/.claude/CLAUDE.md`, `~/.carapace/CLAUDE.md`, `~/.claude/rules/`.
    pub user: bool,
    /// `CLAUDE.md`, `.claude/CLAUDE.md` and `.claude/rules/` in the working
    /// directory and its ancestors.
    pub project: bool,
    /// `CLAUDE.local.md` there.
    pub local: bool,
}

impl MemorySources {
    pub const ALL: Self = Self {
        user: true,
        project: true,
        local: true,
    };
    pub const NONE: Self = Self {
        user: false,
        project: false,
        local: false,
    };
}

/// Whose a memory file is: what its header tells the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    Managed,
    User,
    Project,
    Local,
}

impl MemoryKind {
    /// As the SDK's context usage names it.
    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::Managed => "Managed",
            MemoryKind::User => "User",
            MemoryKind::Project => "Project",
            MemoryKind::Local => "Local",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            MemoryKind::Managed => "organization-managed policy instructions",
            MemoryKind::User => "user's private global instructions for all projects",
            MemoryKind::Project => "project instructions, checked into the codebase",
            MemoryKind::Local => "user's private project instructions, not checked in",
        }
    }
}

/// One memory file, read.
#[derive(Debug, Clone)]
pub struct MemoryFile {
    pub path: PathBuf,
    pub kind: MemoryKind,
    pub text: String,
    /// The memory file that imported it (`None`: found in its place).
    pub imported_by: Option<PathBuf>,
}

/// Where the session is: what memory is looked for around.
#[derive(Debug, Clone)]
pub struct MemoryPlaces {
    pub cwd: PathBuf,
    pub home: PathBuf,
    /// carapace's own folder (`~/.carapace`).
    pub config_dir: PathBuf,
    /// The administrator's folders (`/etc/claude-code`, `/etc/carapace`).
    pub managed: Vec<PathBuf>,
}

/// The memory a session starts with.
#[derive(Debug, Default)]
pub struct Memory {
    pub files: Vec<MemoryFile>,
    pub warnings: Vec<String>,
}

impl Memory {
    /// Finds and reads the memory files of `places` that `sources` load, in
    /// Claude Code's order: managed, the user's, then from the outermost
    /// ancestor of the working directory down to it, in each folder
    /// `CLAUDE.md`, `.claude/CLAUDE.md`, `.claude/rules/*.md` (those without
    /// `paths:`) and `CLAUDE.local.md`; each file's imports right after it;
    /// each file once.
    pub fn load(places: &MemoryPlaces, sources: MemorySources) -> Self {
        let mut loader = Loader {
            cwd: std::fs::canonicalize(&places.cwd).unwrap_or_else(|_| places.cwd.clone()),
            credentials: crate::secrets::CredentialFiles::new(
                &std::fs::canonicalize(&places.home).unwrap_or_else(|_| places.home.clone()),
                Vec::new(),
            ),
            started: Some(std::time::Instant::now()),
            ..Loader::default()
        };
        for dir in &places.managed {
            loader.add(&dir.join("CLAUDE.md"), MemoryKind::Managed);
        }
        if sources.user {
            loader.add(&places.home.join(".claude/CLAUDE.md"), MemoryKind::User);
            loader.add(&places.config_dir.join("CLAUDE.md"), MemoryKind::User);
            loader.add_rules(&places.home.join(".claude/rules"), MemoryKind::User);
        }
        for dir in outermost_first(&places.cwd) {
            loader.add_folder(&dir, sources);
        }
        Memory {
            files: loader.files,
            warnings: loader.warnings,
        }
    }

    /// The `claudeMd` part of the context reminder, if any file loaded.
    pub fn claude_md(&self) -> Option<String> {
        if self.files.is_empty() {
            return None;
        }
        let mut text = String::from(
            "Codebase and user instructions are shown below. Be sure to adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written.",
        );
        for file in &self.files {
            text.push_str(&format!(
                "\n\nContents of {} ({}):\n\n{}",
                file.path.display(),
                file.kind.describe(),
                file.text.trim_end()
            ));
        }
        Some(text)
    }

    /// Drops the files `refusal` refuses (a Read deny rule covers them),
    /// and what they imported, each with a warning.
    pub fn retain_readable(&mut self, refusal: impl Fn(&Path) -> Option<String>) {
        let mut dropped: HashSet<PathBuf> = HashSet::new();
        let mut kept = Vec::with_capacity(self.files.len());
        // Importers come before what they import.
        for file in std::mem::take(&mut self.files) {
            let via_dropped = file
                .imported_by
                .as_ref()
                .is_some_and(|by| dropped.contains(by));
            let refused = if via_dropped {
                Some("the file importing it was not loaded".to_string())
            } else {
                refusal(&file.path)
            };
            match refused {
                Some(why) => {
                    self.warnings.push(format!(
                        "memory file {} skipped: {why}",
                        file.path.display()
                    ));
                    dropped.insert(file.path);
                }
                None => kept.push(file),
            }
        }
        self.files = kept;
    }

    /// The paths loaded, for [`NestedMemory`] (never attached again).
    pub fn paths(&self) -> HashSet<PathBuf> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }
}

/// The context block at the head of the session's first user message, as
/// Claude Code writes it: the memory files, then today's date.
pub fn context_reminder(memory: &Memory, date: &str) -> String {
    let mut parts = Vec::new();
    if let Some(claude_md) = memory.claude_md() {
        parts.push(format!("# claudeMd\n{claude_md}"));
    }
    parts.push(format!("# currentDate\nToday's date is {date}."));
    format!(
        "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n{}\n\n      IMPORTANT: this context may or may not be relevant to your tasks. You should not respond to this context unless it is highly relevant to your task.\n</system-reminder>\n\n",
        parts.join("\n")
    )
}

/// The working directory and its ancestors, outermost first, up to (not
/// including) the filesystem's root.
fn outermost_first(cwd: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .filter(|d| d.parent().is_some())
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// Collects files in order, each once.
#[derive(Default)]
struct Loader {
    files: Vec<MemoryFile>,
    warnings: Vec<String>,
    seen: HashSet<PathBuf>,
    /// The working directory, with links resolved.
    cwd: PathBuf,
    /// The credential files no import pulls in.
    credentials: crate::secrets::CredentialFiles,
    /// Bytes of text loaded so far.
    total: usize,
    started: Option<std::time::Instant>,
    /// Set once a bound was reached (said once).
    stopped: bool,
}

impl Loader {
    fn add_folder(&mut self, dir: &Path, sources: MemorySources) {
        if sources.project {
            self.add(&dir.join("CLAUDE.md"), MemoryKind::Project);
            self.add(&dir.join(".claude/CLAUDE.md"), MemoryKind::Project);
            self.add_rules(&dir.join(".claude/rules"), MemoryKind::Project);
        }
        if sources.local {
            self.add(&dir.join("CLAUDE.local.md"), MemoryKind::Local);
        }
    }

    /// The rules of a `rules` folder that apply everywhere (no `paths:`),
    /// in name order.
    fn add_rules(&mut self, dir: &Path, kind: MemoryKind) {
        for path in rules::rule_files(dir) {
            if let Ok(real) = std::fs::canonicalize(&path)
                && let Some(why) = self.import_refused(&path, &real, kind)
            {
                self.warnings
                    .push(format!("memory file {} skipped: {why}", path.display()));
                continue;
            }
            if let Some(text) = self.read(&path)
                && rules::scope(&text).is_none()
            {
                self.push(path, kind, rules::body(&text).to_string());
            }
        }
    }

    /// `path` and what it imports, if it exists and was not loaded yet —
    /// a project's file only if it is where it was found, not a link out
    /// of its folder (to `~/.ssh/id_rsa`, say).
    fn add(&mut self, path: &Path, kind: MemoryKind) {
        if let Ok(real) = std::fs::canonicalize(path)
            && let Some(why) = self.import_refused(path, &real, kind)
        {
            self.warnings
                .push(format!("memory file {} skipped: {why}", path.display()));
            return;
        }
        if let Some(text) = self.read(path) {
            self.push(path.to_path_buf(), kind, text);
        }
    }

    fn push(&mut self, path: PathBuf, kind: MemoryKind, text: String) {
        let Ok(real) = std::fs::canonicalize(&path) else {
            return;
        };
        if !self.seen.insert(real) || !self.room_for(&text) {
            return;
        }
        let imported = imports::imported_paths(&path, &text);
        self.files.push(MemoryFile {
            path: path.clone(),
            kind,
            text,
            imported_by: None,
        });
        self.add_imports(&path, imported, kind, 1);
    }

    fn add_imports(&mut self, by: &Path, paths: Vec<PathBuf>, kind: MemoryKind, depth: usize) {
        if depth > imports::MAX_DEPTH {
            return;
        }
        for path in paths {
            let Ok(real) = std::fs::canonicalize(&path) else {
                continue;
            };
            if let Some(why) = self.import_refused(by, &real, kind) {
                self.warnings.push(format!(
                    "memory file {} does not import {}: {why}",
                    by.display(),
                    path.display()
                ));
                continue;
            }
            let Some(text) = self.read(&path) else {
                continue;
            };
            if !self.seen.insert(real) || !self.room_for(&text) {
                continue;
            }
            let deeper = imports::imported_paths(&path, &text);
            self.files.push(MemoryFile {
                path: path.clone(),
                kind,
                text,
                imported_by: Some(by.to_path_buf()),
            });
            self.add_imports(&path, deeper, kind, depth + 1);
        }
    }

    /// Why `by` (of `kind`) may not import `real` (links resolved): a
    /// project's file imports only from its own folder or the working
    /// directory; the user's and the administrator's import what they name.
    fn import_refused(&self, by: &Path, real: &Path, kind: MemoryKind) -> Option<String> {
        // Whoever wrote the import: a credential file never joins the
        // model's context this way.
        if let Some(found) = self
            .credentials
            .by_path(real)
            .or_else(|| crate::secrets::key_file(real))
        {
            return Some(format!("it is withheld because it holds {}", found.holds));
        }
        if matches!(kind, MemoryKind::User | MemoryKind::Managed) {
            return None;
        }
        let folder = by.parent().unwrap_or(&self.cwd);
        (!inside(real, folder, &self.cwd)).then(|| {
            format!(
                "a project's memory reaches only its own folder or the working directory, and this is {}",
                real.display()
            )
        })
    }

    /// Whether `text` still fits the session's bounds (said once when not).
    fn room_for(&mut self, text: &str) -> bool {
        let late = self.started.is_some_and(|s| s.elapsed() > DEADLINE);
        let full = self.files.len() >= MAX_FILES || self.total + text.len() > MAX_TOTAL_BYTES;
        if late || full {
            if !self.stopped {
                self.stopped = true;
                self.warnings.push(format!(
                    "memory files: no more are loaded past {MAX_FILES} files, {} KiB or {} s in all",
                    MAX_TOTAL_BYTES / 1024,
                    DEADLINE.as_secs()
                ));
            }
            return false;
        }
        self.total += text.len();
        true
    }

    /// The file's text; `None` when it does not exist (silently) or cannot
    /// be used (with a warning).
    fn read(&mut self, path: &Path) -> Option<String> {
        match read_bounded(path) {
            Ok(text) => text,
            Err(why) => {
                self.warnings
                    .push(format!("memory file {} skipped: {why}", path.display()));
                None
            }
        }
    }
}

/// A regular file's text, at most [`MAX_FILE_BYTES`]; `Ok(None)` when there
/// is no such file.
pub(crate) fn read_bounded(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    if is_process_information(path) {
        return Err("process information is never read into the model's context".into());
    }
    // Not blocking: opening a FIFO for reading would wait for a writer.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if meta.is_dir() {
        return Ok(None);
    }
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("larger than {} KiB", MAX_FILE_BYTES / 1024));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "not UTF-8 text".to_string())
}

/// Whether `path`, links resolved, stays inside `folder` or `cwd`: a
/// project's memory file is what it says it is, not a link to a file of
/// the user's.
pub(crate) fn stays_within(path: &Path, folder: &Path, cwd: &Path) -> bool {
    match std::fs::canonicalize(path) {
        Ok(real) => inside(&real, folder, cwd),
        Err(_) => true, // nothing there: nothing read
    }
}

/// Whether `real` (links resolved) is inside `folder` or `cwd`, each with
/// its own links resolved.
fn inside(real: &Path, folder: &Path, cwd: &Path) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    real.starts_with(canonical(folder)) || real.starts_with(canonical(cwd))
}

/// A path that is, or leads to, process information: `/proc` (where
/// carapace's own environment, with its API key, is), `/sys`, `/dev`.
fn is_process_information(path: &Path) -> bool {
    let under = |p: &Path| {
        ["/proc", "/sys", "/dev"]
            .iter()
            .any(|root| p.starts_with(root))
    };
    under(path) || std::fs::canonicalize(path).is_ok_and(|real| under(&real))
}

#[cfg(test)]
mod tests;
