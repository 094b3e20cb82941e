//! [`Sessions`]: what every session of one process shares — one sandbox
//! engine (and its cache of compiled components) and one connection per
//! transcript store — so a front end that opens many sessions (ACP, the
//! interactive screen's `/resume`) keeps no statics and no engine of its
//! own.

use super::builder::{EngineSlot, SessionBuilder, SessionError};
use super::{Session, SessionSpec};
use crate::sandbox::{SandboxConfig, SandboxEngine};
use crate::transcript::TranscriptStore;
use std::collections::HashMap;
use std::sync::Mutex;

/// The process's sessions: opened from specs, on one engine and one
/// connection per transcript store.
#[derive(Default)]
pub struct Sessions {
    engine: EngineSlot,
    /// By URL (`files`, `postgres://…`); one that has closed is opened
    /// again.
    stores: Mutex<HashMap<String, TranscriptStore>>,
}

impl Sessions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sessions on an engine of this configuration (tests: a shared
    /// component cache).
    pub fn with_sandbox(config: SandboxConfig) -> Self {
        Self {
            engine: EngineSlot::new(config),
            stores: Mutex::default(),
        }
    }

    /// The engine, made now if no session has made it yet.
    pub fn engine(&self) -> Result<SandboxEngine, SessionError> {
        Ok(self.engine.get()?)
    }

    /// The transcript store at `url` (`None`: files), one connection for
    /// the whole process.
    pub fn store(&self, url: Option<&str>) -> Result<TranscriptStore, SessionError> {
        let url = url.unwrap_or("files");
        let mut stores = self.stores.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(store) = stores.get(url).filter(|store| store.is_usable()) {
            return Ok(store.clone());
        }
        let store = TranscriptStore::from_url(url)?;
        stores.insert(url.to_string(), store.clone());
        Ok(store)
    }

    /// A builder for `spec` on what the process shares (for what a spec
    /// does not say: the process helper in tests).
    pub fn builder(&self, spec: SessionSpec) -> Result<SessionBuilder, SessionError> {
        let store = self.store(spec.history.store.as_deref())?;
        Ok(SessionBuilder::new(spec)
            .shared_engine(self.engine.clone())
            .transcript_store(store))
    }

    /// The session `spec` describes.
    pub async fn open(&self, spec: SessionSpec) -> Result<Session, SessionError> {
        self.builder(spec)?.build().await
    }
}
