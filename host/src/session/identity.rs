//! The identity step: the session's id and mode, where its files go, and
//! the transcript it resumes — read (and refused if damaged) before
//! anything is written.

use super::builder::{SessionBuilder, SessionError};
use super::spec::Resume;
use crate::policy::PermissionMode;
use crate::settings::Settings;
use crate::transcript::{Loaded, TranscriptError, TranscriptPlace, TranscriptStore, is_session_id};
use std::path::PathBuf;

/// Who the session is: its id and mode, where its files go, the history
/// it resumes.
pub(super) struct Identity {
    pub id: String,
    pub mode: PermissionMode,
    /// `~/.carapace/sessions/<id>`: the audit log, spilled results.
    pub dir: PathBuf,
    /// Where its transcript is (or would be, without persistence).
    pub transcript: TranscriptPlace,
    pub resumed: Option<Loaded>,
}

impl SessionBuilder {
    /// The session's id and mode; a transcript to resume is read (and
    /// refused if damaged) before anything is written.
    pub(super) fn identity(
        &self,
        settings: &Settings,
        warnings: &mut Vec<String>,
    ) -> Result<Identity, SessionError> {
        let config_dir = &self.spec.paths.config_dir;
        let mode = self
            .spec
            .permissions
            .mode
            .or(settings.default_mode)
            .unwrap_or(PermissionMode::Default);
        if let Some(id) = self.spec.id.as_ref().filter(|id| !is_session_id(id)) {
            return Err(SessionError::Invalid(format!(
                "`{id}` is not a session id (letters, digits, - and _)"
            )));
        }
        // Folders an earlier version left readable by every account.
        if config_dir.is_dir()
            && let Err(e) = crate::files::ensure_private_dir(config_dir)
        {
            warnings.push(format!(
                "{} is readable by other accounts and cannot be made private: {e}",
                config_dir.display()
            ));
        }
        let store = self.store()?;
        let resumed = self.resumed(&store)?;
        let id = match (&resumed, self.spec.history.fork) {
            (Some(loaded), false) => {
                if self
                    .spec
                    .id
                    .as_ref()
                    .is_some_and(|id| *id != loaded.session_id)
                {
                    return Err(SessionError::Invalid(
                        "--session-id can only name a resumed session's new id with --fork-session"
                            .into(),
                    ));
                }
                loaded.session_id.clone()
            }
            _ => self
                .spec
                .id
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        };
        let transcript = store.place(config_dir, &self.spec.paths.cwd, &id);
        if self.spec.history.persist
            && (resumed.is_none() || self.spec.history.fork)
            && transcript.exists()?
        {
            return Err(TranscriptError::AlreadyExists(id).into());
        }
        Ok(Identity {
            dir: config_dir.join("sessions").join(&id),
            id,
            mode,
            transcript,
            resumed,
        })
    }

    /// The transcript `--resume` / `--continue` names, read.
    fn resumed(&self, store: &TranscriptStore) -> Result<Option<Loaded>, SessionError> {
        let Some(resume) = &self.spec.history.resume else {
            return Ok(None);
        };
        let (config_dir, cwd) = (&self.spec.paths.config_dir, &self.spec.paths.cwd);
        let id = match resume {
            // An id names a file in this workspace's folder, never a path.
            Resume::Id(id) if !is_session_id(id) => {
                return Err(SessionError::Invalid(format!(
                    "--resume: `{id}` is not a session id (letters, digits, - and _)"
                )));
            }
            Resume::Id(id) => id.clone(),
            Resume::Latest => store.latest(config_dir, cwd)?,
        };
        let place = store.place(config_dir, cwd, &id);
        if !place.exists()? {
            return Err(TranscriptError::NotFound {
                id,
                dir: place
                    .label()
                    .parent()
                    .map(PathBuf::from)
                    .unwrap_or_default(),
            }
            .into());
        }
        let loaded = place.load()?;
        tracing::debug!(mark = "transcript_loaded", "session timing");
        Ok(Some(loaded))
    }
}
