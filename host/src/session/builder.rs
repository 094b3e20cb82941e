//! [`SessionBuilder`]: a [`SessionSpec`] and the process's resources it is
//! built on (the engine, the transcript store), before anything is
//! assembled.

use super::spec::SessionSpec;
use crate::sandbox::{SandboxConfig, SandboxEngine};
use crate::settings::SettingsError;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::hooks::{HookConfigError, HookLoadError};
use crate::mcp::McpConfigError;
use crate::policy::RuleError;
use crate::sandbox::SandboxError;
use crate::tools::RegistryError;
use crate::transcript::TranscriptError;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Tools(#[from] RegistryError),
    #[error(transparent)]
    HookConfig(#[from] HookConfigError),
    #[error(transparent)]
    HookLoad(#[from] HookLoadError),
    #[error(transparent)]
    McpConfig(#[from] McpConfigError),
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    #[error("{0}")]
    Invalid(String),
}

/// The engine the sessions are built on: made by the first session that
/// needs one (its start-up pays for it, not the process's), then shared.
#[derive(Clone, Default)]
pub(super) struct EngineSlot {
    config: SandboxConfig,
    made: Arc<Mutex<Option<SandboxEngine>>>,
}

impl EngineSlot {
    pub(super) fn new(config: SandboxConfig) -> Self {
        Self {
            config,
            made: Arc::default(),
        }
    }

    pub(super) fn holding(engine: SandboxEngine) -> Self {
        Self {
            config: SandboxConfig::default(),
            made: Arc::new(Mutex::new(Some(engine))),
        }
    }

    pub(super) fn get(&self) -> Result<SandboxEngine, SandboxError> {
        // A poisoned slot still holds a usable engine (it is only ever
        // replaced whole).
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(engine) = made.as_ref() {
            return Ok(engine.clone());
        }
        let engine = SandboxEngine::new(&self.config)?;
        *made = Some(engine.clone());
        Ok(engine)
    }
}

/// A spec and what the process lends it; [`build`](Self::build)
/// assembles the session.
pub struct SessionBuilder {
    pub(super) spec: SessionSpec,
    /// The engine it is built on: the process's, or one of its own.
    pub(super) engine: EngineSlot,
    pub(super) helper: Option<PathBuf>,
    /// The process's store for the spec's `history.store`.
    pub(super) store: Option<crate::transcript::TranscriptStore>,
}

impl SessionBuilder {
    pub fn new(spec: SessionSpec) -> Self {
        Self {
            spec,
            engine: EngineSlot::default(),
            helper: None,
            store: None,
        }
    }

    /// The binary whose helper mode applies the OS sandbox to commands
    /// (default: this process's own; tests name `carapace`'s).
    pub fn process_helper(mut self, helper: PathBuf) -> Self {
        self.helper = Some(helper);
        self
    }

    /// The engine's configuration (tests: a shared component cache); the
    /// working directory and the process rules are the session's.
    pub fn sandbox_config(mut self, config: SandboxConfig) -> Self {
        self.engine = EngineSlot::new(config);
        self
    }

    /// The process's engine and component cache, shared with the other
    /// sessions built on it (else the session makes an engine of its own
    /// from [`sandbox_config`](Self::sandbox_config)).
    pub fn engine(mut self, engine: SandboxEngine) -> Self {
        self.engine = EngineSlot::holding(engine);
        self
    }

    /// The process's engine slot ([`Sessions`](super::Sessions)).
    pub(super) fn shared_engine(mut self, engine: EngineSlot) -> Self {
        self.engine = engine;
        self
    }

    /// The store the spec's transcripts go to, as the process keeps it
    /// open (else one is opened for this session).
    pub fn transcript_store(mut self, store: crate::transcript::TranscriptStore) -> Self {
        self.store = Some(store);
        self
    }

    /// The transcript store: the process's, else the spec's opened here.
    pub(super) fn store(&self) -> Result<crate::transcript::TranscriptStore, SessionError> {
        match &self.store {
            Some(store) => Ok(store.clone()),
            None => Ok(crate::transcript::TranscriptStore::from_url(
                self.spec.history.store.as_deref().unwrap_or("files"),
            )?),
        }
    }
}
