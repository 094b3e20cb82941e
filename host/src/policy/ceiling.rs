//! A plugin's ceiling: what it may ever be granted, approved when it was
//! installed. Every grant is bounded by it, whatever the mode or the rules.

use crate::sandbox::HostPattern;
use crate::sandbox::{Capability, FileAccess};
use std::path::{Path, PathBuf};

/// Environment variables no plugin is ever given, whatever it declares:
/// the model's credentials.
pub const SECRET_ENV: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
];

/// What a plugin may ever be granted, approved when it was installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ceiling {
    files: Vec<(PathBuf, FileAccess)>,
    hosts: Vec<HostPattern>,
    /// Any host (a first-party fetcher; the rules decide per call).
    any_host: bool,
    env: Vec<String>,
    process: bool,
}

impl Ceiling {
    pub fn none() -> Self {
        Self::default()
    }

    /// Files under `root`, up to `access` (write includes read).
    pub fn with_files(mut self, root: impl Into<PathBuf>, access: FileAccess) -> Self {
        self.files.push((root.into(), access));
        self
    }

    pub fn with_host(mut self, host: HostPattern) -> Self {
        self.hosts.push(host);
        self
    }

    /// Outgoing HTTP to any host, each call still decided by the rules.
    pub fn with_any_host(mut self) -> Self {
        self.any_host = true;
        self
    }

    pub fn with_env(mut self, name: impl Into<String>) -> Self {
        self.env.push(name.into());
        self
    }

    pub fn with_process(mut self) -> Self {
        self.process = true;
        self
    }

    pub fn allows_file(&self, path: &Path, access: FileAccess) -> bool {
        self.files
            .iter()
            .any(|(root, ceiling)| path.starts_with(root) && *ceiling >= access)
    }

    pub fn allows_host(&self, host: &HostPattern) -> bool {
        self.any_host || self.hosts.iter().any(|h| h.covers(host))
    }

    pub fn allows_env(&self, name: &str) -> bool {
        self.env.iter().any(|n| n == name)
    }

    pub fn allows_process(&self) -> bool {
        self.process
    }

    /// Everything the ceiling holds, as the needs of one call: what a
    /// component that declares no needs (a typed component) asks for, to
    /// be decided rule by rule like any call's. Process use and "any
    /// host" are not needs a call can hold without naming them.
    pub fn as_needs(&self) -> Vec<Capability> {
        let mut needs: Vec<Capability> = self
            .files
            .iter()
            .map(|(root, access)| {
                let root = root.display().to_string();
                match access {
                    FileAccess::Write => Capability::WriteTree(root),
                    FileAccess::Read => Capability::ReadTree(root),
                }
            })
            .collect();
        needs.extend(self.hosts.iter().map(|h| Capability::Http(h.to_string())));
        needs.extend(self.env.iter().cloned().map(Capability::Env));
        needs
    }

    /// A short description, for `plugin inspect` and denials.
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .files
            .iter()
            .map(|(root, access)| {
                format!(
                    "{} {}",
                    if *access == FileAccess::Write {
                        "write"
                    } else {
                        "read"
                    },
                    root.display()
                )
            })
            .collect();
        if self.any_host {
            out.push("http any host".into());
        }
        out.extend(self.hosts.iter().map(|h| format!("http {h}")));
        out.extend(self.env.iter().map(|e| format!("env {e}")));
        if self.process {
            out.push("process".into());
        }
        out
    }
}
