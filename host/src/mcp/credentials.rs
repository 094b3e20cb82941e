//! MCP sign-ins, kept for carapace alone: `.mcp-credentials.json` in its
//! configuration folder, written whole with mode 0600, under a name the
//! secrets table withholds from every tool and command. A token leaves it
//! only as the `Authorization` header of its own server's bridge.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The store's file name (withheld by name: `secrets::files`).
pub const CREDENTIALS_FILE: &str = ".mcp-credentials.json";

/// One server's sign-in: the client carapace registered as, and its
/// tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignIn {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub token_endpoint: String,
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token ends, in seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The resource it was granted for (the server's URL).
    pub resource: String,
}

impl SignIn {
    /// Whether the access token is still good for a while (a minute's
    /// margin, so a call does not start with one about to end).
    pub fn fresh(&self, now: u64) -> bool {
        self.expires_at.is_none_or(|at| at > now + 60)
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    /// By the server's URL.
    servers: BTreeMap<String, SignIn>,
}

#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not carapace's sign-in store")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The sign-in store of one configuration folder.
#[derive(Debug, Clone)]
pub struct Credentials {
    path: PathBuf,
}

impl Credentials {
    pub fn in_folder(config_dir: &Path) -> Self {
        Self {
            path: config_dir.join(CREDENTIALS_FILE),
        }
    }

    fn load(&self) -> Result<Stored, CredentialsError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Stored::default()),
            Err(source) => {
                return Err(CredentialsError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        serde_json::from_str(&text).map_err(|source| CredentialsError::Unreadable {
            path: self.path.clone(),
            source,
        })
    }

    /// The sign-in for the server at `url`, if there is one.
    pub fn get(&self, url: &str) -> Result<Option<SignIn>, CredentialsError> {
        Ok(self.load()?.servers.remove(url))
    }

    /// Keeps `sign_in` for the server at `url` (replacing an older one).
    pub fn put(&self, url: &str, sign_in: SignIn) -> Result<(), CredentialsError> {
        let mut stored = self.load()?;
        stored.servers.insert(url.to_string(), sign_in);
        let write = |source| CredentialsError::Write {
            path: self.path.clone(),
            source,
        };
        let text =
            serde_json::to_vec_pretty(&stored).map_err(|e| write(std::io::Error::other(e)))?;
        if let Some(folder) = self.path.parent() {
            std::fs::create_dir_all(folder).map_err(write)?;
        }
        private_write(&self.path, &text).map_err(write)
    }
}

/// Writes `bytes` to `path` whole: a new file of mode 0600 beside it,
/// renamed over it, so no reader ever sees half of it or a wider mode.
fn private_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let folder = path.parent().unwrap_or(Path::new("."));
    let temporary = folder.join(format!(
        ".{}.{}",
        CREDENTIALS_FILE.trim_start_matches('.'),
        uuid::Uuid::new_v4().simple()
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if let Err(e) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn sign_in(token: &str) -> SignIn {
        SignIn {
            client_id: "c".into(),
            client_secret: None,
            token_endpoint: "http://127.0.0.1/token".into(),
            access_token: token.into(),
            refresh_token: Some("r".into()),
            expires_at: Some(1000),
            resource: "http://127.0.0.1/mcp".into(),
        }
    }

    #[test]
    fn a_sign_in_is_kept_private_and_per_server() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Credentials::in_folder(dir.path());
        assert_eq!(store.get("http://a/mcp")?, None);
        store.put("http://a/mcp", sign_in("one"))?;
        store.put("http://b/mcp", sign_in("two"))?;
        assert_eq!(
            store.get("http://a/mcp")?.map(|s| s.access_token),
            Some("one".into())
        );
        let mode = std::fs::metadata(dir.path().join(CREDENTIALS_FILE))?
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(sign_in("x").fresh(900) && !sign_in("x").fresh(950));
        Ok(())
    }
}
