//! Where transcripts are kept: files under the config directory (the
//! default), or a PostgreSQL database that workers on many machines share
//! (`--transcript-store postgres://…`). Both keep the same lines, written
//! the same way — each before the loop acts on it, in order, whole or not
//! at all — and read back through the same parser, so a session resumed
//! from either carries the same history.

use super::postgres::PgStore;
use super::read::{Loaded, load, load_bytes};
use super::{TranscriptError, latest, project_dir, sessions, transcript_path};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// The transcript store of a session.
#[derive(Clone, Debug, Default)]
pub enum TranscriptStore {
    /// `<config>/projects/<workspace>/<id>.jsonl`.
    #[default]
    Files,
    Postgres(Arc<PgStore>),
}

/// Where one transcript is: a file, or a session's rows in the database.
#[derive(Clone, Debug)]
pub enum TranscriptPlace {
    File(PathBuf),
    Postgres {
        store: Arc<PgStore>,
        /// The workspace's project name (what `--continue` looks among).
        project: String,
        /// The rows' key: the session's id, or `PARENT/subagents/AGENT`
        /// for a subagent's.
        id: String,
    },
}

impl TranscriptStore {
    /// A store from `--transcript-store` / `CARAPACE_TRANSCRIPT_STORE`:
    /// `files`, or a `postgres://` URL (connected now, its table made).
    pub fn from_url(url: &str) -> Result<Self, TranscriptError> {
        match url {
            "" | "files" => Ok(Self::Files),
            url if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Self::Postgres(Arc::new(PgStore::connect(url)?)))
            }
            other => Err(TranscriptError::Store(format!(
                "`{other}` is not a transcript store (files, or postgres://USER@HOST/DB)"
            ))),
        }
    }

    /// Whether it can still be written to (a database's connection may
    /// have ended; files always can be tried).
    pub fn is_usable(&self) -> bool {
        match self {
            Self::Files => true,
            Self::Postgres(store) => !store.is_closed(),
        }
    }

    /// The place of session `id` of the workspace `cwd`.
    pub fn place(&self, config_dir: &Path, cwd: &Path, id: &str) -> TranscriptPlace {
        let projects = project_dir(config_dir, cwd);
        match self {
            Self::Files => TranscriptPlace::File(transcript_path(&projects, id)),
            Self::Postgres(store) => TranscriptPlace::Postgres {
                store: store.clone(),
                project: project_name(&projects),
                id: id.to_string(),
            },
        }
    }

    /// The workspace's most recently written session (`--continue`).
    pub fn latest(&self, config_dir: &Path, cwd: &Path) -> Result<String, TranscriptError> {
        let projects = project_dir(config_dir, cwd);
        match self {
            Self::Files => latest(&projects),
            Self::Postgres(store) => store
                .sessions(&project_name(&projects))?
                .into_iter()
                .next()
                .map(|(_, id)| id)
                .ok_or(TranscriptError::NoneToContinue(projects)),
        }
    }

    /// The workspace's sessions, newest first, with when each was last
    /// written (`--resume` without an id lists them).
    pub fn sessions(
        &self,
        config_dir: &Path,
        cwd: &Path,
    ) -> Result<Vec<(SystemTime, String)>, TranscriptError> {
        let projects = project_dir(config_dir, cwd);
        match self {
            Self::Files => Ok(sessions(&projects)),
            Self::Postgres(store) => store.sessions(&project_name(&projects)),
        }
    }
}

fn project_name(projects: &Path) -> String {
    projects
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl TranscriptPlace {
    /// How the place is named to the user and to hooks
    /// (`transcript_path`).
    pub fn label(&self) -> PathBuf {
        match self {
            Self::File(path) => path.clone(),
            Self::Postgres { store, id, .. } => {
                PathBuf::from(format!("{}#{id}", store.display_url()))
            }
        }
    }

    pub fn exists(&self) -> Result<bool, TranscriptError> {
        match self {
            Self::File(path) => Ok(path.exists()),
            Self::Postgres { store, project, id } => store.exists(project, id),
        }
    }

    /// Reads the transcript; `NotFound` when there is none.
    pub fn load(&self) -> Result<Loaded, TranscriptError> {
        match self {
            Self::File(path) => load(path),
            Self::Postgres { store, project, id } => {
                let bytes = store.read(project, id)?;
                let session = id.rsplit('/').next().unwrap_or(id);
                load_bytes(&self.label(), session, &bytes)
            }
        }
    }

    /// The first `max` bytes of the transcript (fewer when it is shorter;
    /// none when it cannot be read): enough to show how it began.
    pub fn head(&self, max: usize) -> Vec<u8> {
        use std::io::Read;
        let mut head = Vec::new();
        match self {
            Self::File(path) => {
                if let Ok(file) = File::open(path) {
                    let _ = file.take(max as u64).read_to_end(&mut head);
                }
            }
            Self::Postgres { store, project, id } => {
                head = store.read_head(project, id, max).unwrap_or_default();
                head.truncate(max);
            }
        }
        head
    }

    /// Where a subagent's transcript goes: beside this one (a file in the
    /// session's `subagents/` folder, or rows under the session's key, in
    /// a project of their own so `--continue` never finds them).
    pub fn child(&self, agent_id: &str) -> Self {
        match self {
            Self::File(path) => Self::File(
                path.with_extension("")
                    .join("subagents")
                    .join(format!("{agent_id}.jsonl")),
            ),
            Self::Postgres { store, project, id } => Self::Postgres {
                store: store.clone(),
                project: format!("{project}/{id}/subagents"),
                id: format!("{id}/subagents/{agent_id}"),
            },
        }
    }
}
