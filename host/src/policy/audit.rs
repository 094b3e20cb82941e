//! The session's audit log: one JSON line per permission decision — the
//! tool, a digest of its input, what it asked for, what it was granted, and
//! the rule (with its source file), mode, default or ceiling that decided.
//! The log is written by the host only; a failure to write it is reported,
//! never fatal.

use super::Basis;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Debug, Clone, Serialize)]
pub struct AuditEntry {
    pub time: String,
    pub tool: String,
    pub tool_use_id: String,
    /// SHA-256 of the tool input's JSON text.
    pub input_sha256: String,
    pub requested: Vec<String>,
    pub granted: Vec<String>,
    /// `allow`, `deny`, `ask_approved` or `ask_refused`.
    pub decision: &'static str,
    pub basis: Basis,
}

impl AuditEntry {
    pub fn digest(input: &serde_json::Value) -> String {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(input.to_string().as_bytes()))
    }

    pub fn now() -> String {
        jiff::Timestamp::now().to_string()
    }
}

#[derive(Debug, Default)]
pub struct AuditLog {
    path: Option<PathBuf>,
    file: Mutex<Option<std::fs::File>>,
}

impl AuditLog {
    /// A log appending to `path` (created with its directories on first use).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self {
            path: Some(path.into()),
            file: Mutex::new(None),
        }
    }

    /// No log (embedders and tests that do not want one).
    pub fn disabled() -> Self {
        Self::default()
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn record(&self, entry: &AuditEntry) {
        let Some(path) = &self.path else { return };
        let Ok(line) = serde_json::to_string(entry) else {
            return;
        };
        let Ok(mut file) = self.file.lock() else {
            return;
        };
        if file.is_none() {
            let opened = crate::files::open_append(path);
            match opened {
                Ok(f) => *file = Some(f),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot open the audit log");
                    return;
                }
            }
        }
        if let Some(f) = file.as_mut()
            && let Err(e) = writeln!(f, "{line}")
        {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the audit log");
        }
    }
}
