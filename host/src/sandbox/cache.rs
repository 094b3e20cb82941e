//! The on-disk cache of compiled components.
//!
//! Compiling a component with cranelift costs ~100 ms (seconds in a debug
//! build); loading the compiled artefact costs well under a millisecond. A
//! compiled artefact is native code tied to the exact wasmtime version, engine
//! configuration and CPU, so it is keyed by the component's content hash *and*
//! the engine's compatibility hash, and only files this host wrote are ever
//! loaded: the directory is private (0700) and files appear by atomic rename.

use super::{SandboxError, ToolDefinition};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Where a component came from when it was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from a compiled artefact on disk.
    Hit,
    /// Compiled now (and stored, if the cache directory was writable).
    Compiled,
}

#[derive(Debug, Clone)]
pub struct ComponentCache {
    dir: PathBuf,
}

impl ComponentCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The default location: `$CARAPACE_CACHE_DIR`, else the user's cache
    /// directory (`~/.cache/carapace/components` on Linux).
    pub fn default_dir() -> PathBuf {
        if let Some(dir) = std::env::var_os("CARAPACE_CACHE_DIR") {
            return PathBuf::from(dir).join("components");
        }
        match directories::ProjectDirs::from("", "", "carapace") {
            Some(dirs) => dirs.cache_dir().join("components"),
            None => std::env::temp_dir()
                .join("carapace-cache")
                .join("components"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cache key of `wasm` under `engine`.
    pub fn key(engine: &Engine, wasm: &[u8]) -> String {
        Self::key_for_digest(engine, &digest(wasm))
    }

    /// The cache key of bytes whose SHA-256 is `digest` (lowercase hex).
    fn key_for_digest(engine: &Engine, digest: &str) -> String {
        // The compatibility hash is exposed only through `Hash`; a fixed-key
        // hasher is enough because the key only has to be stable for one
        // build of this host, and the content part is cryptographic.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        format!("{digest}-{:016x}", hasher.finish())
    }

    /// Loads `wasm` compiled for `engine`, compiling and storing it on a miss.
    /// A cache that cannot be written is not an error: the component is
    /// compiled in memory and the failure is logged.
    pub fn load(
        &self,
        engine: &Engine,
        wasm: &[u8],
    ) -> Result<(Component, CacheOutcome), SandboxError> {
        self.load_digested(engine, wasm, &digest(wasm))
    }

    /// [`load`](Self::load) for bytes whose SHA-256 (lowercase hex) the
    /// caller has just computed from these very bytes (an installed plugin,
    /// checked against its approved digest): the key is not hashed again.
    pub(crate) fn load_digested(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &str,
    ) -> Result<(Component, CacheOutcome), SandboxError> {
        let path = self
            .dir
            .join(format!("{}.cwasm", Self::key_for_digest(engine, digest)));
        if path.exists() {
            match deserialize(engine, &path) {
                Ok(component) => return Ok((component, CacheOutcome::Hit)),
                // Not this run's to read (a cache another user baked with
                // other modes): compiled in memory, the file left alone.
                Err(_) if std::fs::File::open(&path).is_err() => {
                    tracing::debug!(path = %path.display(), "compiled component not readable; compiling in memory");
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "discarding unusable compiled component");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        // One compilation per component, whatever the number of processes
        // and threads that want it at once: the others wait, then load it.
        let _lock = self.lock(&path);
        if path.exists()
            && let Ok(component) = deserialize(engine, &path)
        {
            return Ok((component, CacheOutcome::Hit));
        }
        let compiled = engine
            .precompile_component(wasm)
            .map_err(SandboxError::Compile)?;
        if let Err(e) = self.store(&path, &compiled) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "component cache is not writable; compiling in memory");
        }
        let component = deserialize_bytes(engine, &compiled)?;
        Ok((component, CacheOutcome::Compiled))
    }

    /// An exclusive lock on `<artefact>.lock`, held until dropped; `None`
    /// when the cache directory cannot hold one (compiling without it is
    /// still correct, only slower).
    fn lock(&self, artefact: &Path) -> Option<std::fs::File> {
        crate::files::create_dir_all(&self.dir).ok()?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(artefact.with_extension("lock"))
            .ok()?;
        file.lock().ok()?;
        Some(file)
    }

    /// The tool definitions stored for the component whose SHA-256 is
    /// `digest`, if an earlier run stored them (and they still parse).
    pub fn definitions(&self, digest: &str) -> Option<Vec<ToolDefinition>> {
        let text = std::fs::read(self.definitions_path(digest)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Stores what the component whose SHA-256 is `digest` said its tools
    /// are, so a later run can offer them without running it. Failing to
    /// store only costs that later run the load.
    pub fn store_definitions(&self, digest: &str, tools: &[ToolDefinition]) {
        let stored = serde_json::to_vec(tools)
            .map_err(std::io::Error::other)
            .and_then(|json| self.store(&self.definitions_path(digest), &json));
        if let Err(e) = stored {
            tracing::debug!(dir = %self.dir.display(), error = %e, "cannot store tool definitions");
        }
    }

    /// Definitions depend on the bytes only, not on the engine.
    fn definitions_path(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}.tools.json"))
    }

    fn store(&self, path: &Path, compiled: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        crate::files::create_dir_all(&self.dir)?;
        // Readable by all, as a cache baked into an image for other users
        // must be; what keeps it safe is who may write the folder.
        let mut tmp = tempfile::Builder::new()
            .permissions(std::fs::Permissions::from_mode(0o644))
            .tempfile_in(&self.dir)?;
        std::io::Write::write_all(&mut tmp, compiled)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// The SHA-256 of `bytes`, lowercase hex: how components are named in the
/// cache and pinned when installed.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &Path) -> Result<Component, SandboxError> {
    // SAFETY: `deserialize_file` trusts the file to be a compiled artefact of
    // this engine. Only this host writes into the private cache directory,
    // always by atomic rename of a complete file, under a name that includes
    // the engine's compatibility hash; wasmtime also checks the header and
    // rejects artefacts of another version or configuration.
    unsafe { Component::deserialize_file(engine, path) }.map_err(SandboxError::Cache)
}

#[allow(unsafe_code)]
fn deserialize_bytes(engine: &Engine, compiled: &[u8]) -> Result<Component, SandboxError> {
    // SAFETY: `compiled` was produced by `engine.precompile_component` a
    // moment ago in this process.
    unsafe { Component::deserialize(engine, compiled) }.map_err(SandboxError::Cache)
}
