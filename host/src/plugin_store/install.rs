//! `carapace plugin add`: fetch, validate, show, approve, pin, precompile,
//! record. Nothing is written until every check has passed and the user (or
//! `--yes`) has approved; a rejected plugin leaves the store as it was.

use super::manifest::{Manifest, ManifestError};
use super::store::{InstalledPlugin, PluginStore, RecordedTool, StoreError, digest};
use crate::policy::Ceiling;
use crate::sandbox::{CacheOutcome, Sandbox, SandboxError, ToolComponent};
use crate::tools::{RegistryError, ToolRegistry};
use futures::StreamExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use super::oci::MAX_COMPONENT_BYTES;

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("`{0}` is neither a file nor an http(s) URL")]
    Source(String),
    #[error("a plugin from a URL must be pinned: add `#sha256=<hex digest>` to {0}")]
    Unpinned(String),
    #[error("`{0}` is not a SHA-256 digest (64 hex digits)")]
    BadPin(String),
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("downloading {url}: {reason}")]
    Download { url: String, reason: String },
    #[error("the component is larger than {} MiB", MAX_COMPONENT_BYTES >> 20)]
    TooLarge,
    #[error("the digest does not match the pin: expected sha256 {expected}, got {actual}")]
    DigestMismatch { expected: String, actual: String },
    #[error(
        "no manifest: pass --manifest FILE, put {0} or carapace-plugin.toml next to the component, or embed one with `carapace plugin pack`"
    )]
    NoManifest(String),
    #[error("{path}: {source}")]
    Manifest {
        path: String,
        #[source]
        source: ManifestError,
    },
    #[error("this is not a tool plugin: {0}")]
    NotComponent(&'static str),
    #[error("this is not a usable tool plugin: {}", .0.describe())]
    Component(#[source] SandboxError),
    #[error(transparent)]
    Tools(RegistryError),
    #[error(
        "the manifest lists tools {listed:?}, but the component provides {provided:?}: they must be the same"
    )]
    ToolMismatch {
        listed: Vec<String>,
        provided: Vec<String>,
    },
    #[error("tool `{tool}` is already provided by {owner}; remove one of them first")]
    Clash { tool: String, owner: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "--policy sets the ceiling of a component without a carapace manifest; this one has a manifest, whose ceiling is the one that counts"
    )]
    PolicyWithManifest,
    #[error(transparent)]
    Oci(#[from] super::oci::OciError),
    #[error("{path}: {source}")]
    Policy {
        path: PathBuf,
        #[source]
        source: super::policy::PolicyError,
    },
}

/// Where a plugin comes from: a local file or a pinned URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    Path {
        path: PathBuf,
        pin: Option<String>,
    },
    Url {
        url: String,
        pin: String,
    },
    /// `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST` (kept without
    /// the scheme).
    Oci {
        reference: String,
    },
}

impl PluginSource {
    /// Parses `PATH`, `PATH#sha256=HEX` or `URL#sha256=HEX`.
    pub fn parse(text: &str) -> Result<Self, InstallError> {
        let (location, pin) = match text.rsplit_once("#sha256=") {
            Some((location, pin)) => {
                let pin = pin.to_ascii_lowercase();
                if pin.len() != 64 || !pin.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(InstallError::BadPin(pin));
                }
                (location, Some(pin))
            }
            None => (text, None),
        };
        if location.starts_with("http://") || location.starts_with("https://") {
            let pin = pin.ok_or_else(|| InstallError::Unpinned(text.to_string()))?;
            return Ok(Self::Url {
                url: location.to_string(),
                pin,
            });
        }
        if let Some(reference) = text.strip_prefix("oci://") {
            return Ok(Self::Oci {
                reference: reference.to_string(),
            });
        }
        if location.contains("://") {
            return Err(InstallError::Source(text.to_string()));
        }
        Ok(Self::Path {
            path: PathBuf::from(location),
            pin,
        })
    }

    fn pin(&self) -> Option<&str> {
        match self {
            PluginSource::Path { pin, .. } => pin.as_deref(),
            PluginSource::Url { pin, .. } => Some(pin),
            PluginSource::Oci { .. } => None,
        }
    }

    /// A plugin name made from where it comes from: the file's name
    /// without `.wasm`, lowercased, `[a-z0-9-]` only.
    fn stem(&self) -> String {
        let file = match self {
            PluginSource::Path { path, .. } => {
                path.file_stem().map(|s| s.to_string_lossy().into_owned())
            }
            PluginSource::Url { url, .. } => url
                .rsplit('/')
                .next()
                .map(|s| s.trim_end_matches(".wasm").to_string()),
            PluginSource::Oci { reference } => {
                let path = reference.split('@').next().unwrap_or(reference);
                let last = path.rsplit('/').next().unwrap_or(path);
                Some(last.split(':').next().unwrap_or(last).to_string())
            }
        };
        plugin_name(file.as_deref().unwrap_or("component"))
    }

    fn describe(&self) -> String {
        match self {
            PluginSource::Path { path, .. } => std::fs::canonicalize(path)
                .unwrap_or_else(|_| path.clone())
                .display()
                .to_string(),
            PluginSource::Url { url, .. } => url.clone(),
            PluginSource::Oci { reference } => format!("oci://{reference}"),
        }
    }
}

/// A validated plugin, not yet approved nor written anywhere.
#[derive(Debug)]
pub struct Candidate {
    pub record: InstalledPlugin,
    pub wasm: Vec<u8>,
    /// Where the manifest came from (a file, or "embedded").
    pub manifest_origin: String,
    pub compile_outcome: CacheOutcome,
    /// The version this one replaces, when the name is installed already.
    pub replaces: Option<InstalledPlugin>,
    /// A typed component's functions that are not offered, and why.
    pub skipped: Vec<String>,
}

impl Candidate {
    /// Whether installing needs a new approval: always for a new plugin or
    /// changed bytes; reinstalling the identical approved plugin does not.
    pub fn needs_approval(&self) -> bool {
        self.replaces.as_ref().is_none_or(|old| {
            old.digest != self.record.digest
                || old.manifest != self.record.manifest
                || old.oci.as_ref().map(|o| &o.manifest_digest)
                    != self.record.oci.as_ref().map(|o| &o.manifest_digest)
        })
    }

    /// What the user approves, one line each.
    pub fn summary(&self) -> Vec<String> {
        let r = &self.record;
        let m = &r.manifest;
        let mut lines = vec![
            format!("plugin    {} {}", m.plugin.name, m.plugin.version),
            format!("source    {}", r.source),
            format!("sha256    {}", r.digest),
            format!("contract  {}", contract_shown(&r.contract)),
            format!(
                "size      {} bytes, {} in {} ms",
                r.size,
                match self.compile_outcome {
                    CacheOutcome::Compiled => "compiled",
                    CacheOutcome::Hit => "loaded from the compile cache",
                },
                r.compile_ms
            ),
            format!("manifest  {}", self.manifest_origin),
        ];
        if let Some(oci) = &r.oci {
            lines.push(format!("pinned    {}", oci.pinned));
            lines.push(format!("layer     {}", oci.layer_digest));
            lines.push(match &oci.signer {
                Some(name) => format!("signed    by `{name}` (cosign, a key the settings trust)"),
                None => "signed    no (no signature by a key the settings trust)".to_string(),
            });
            if let Some(old) = self.replaces.as_ref().and_then(|o| o.oci.as_ref())
                && old.manifest_digest != oci.manifest_digest
            {
                lines.push(format!(
                    "moved     {} was {} when it was approved",
                    oci.reference, old.manifest_digest
                ));
            }
        }
        if !m.plugin.description.is_empty() {
            lines.push(format!("about     {}", m.plugin.description));
        }
        lines.push(format!(
            "tools     {}",
            r.tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        for skipped in &self.skipped {
            lines.push(format!("not a tool {skipped}"));
        }
        lines.push("it may be granted, at most:".into());
        lines.extend(m.describe_ceiling().into_iter().map(|l| format!("  - {l}")));
        let limits = &m.limits;
        lines.push(format!(
            "limits    {} per call, {} memory",
            limits
                .timeout_secs
                .map_or("host default time".to_string(), |t| format!("{t} s")),
            limits
                .memory_mib
                .map_or("host default".to_string(), |m| format!("{m} MiB")),
        ));
        if let Some(old) = &self.replaces {
            if old.digest == r.digest {
                lines.push(format!(
                    "replaces  the same component, installed {}",
                    old.installed_at
                ));
            } else {
                lines.push(format!(
                    "replaces  {} {} (sha256 {}): different bytes, so it needs approval again",
                    old.manifest.plugin.name, old.manifest.plugin.version, old.digest
                ));
            }
            if old.manifest.ceiling != m.ceiling {
                lines.push("          and its ceiling changed; it was:".into());
                lines.extend(
                    old.manifest
                        .describe_ceiling()
                        .into_iter()
                        .map(|l| format!("  - {l}")),
                );
                if old.digest == r.digest {
                    lines.push("          so it needs approval again".into());
                }
            }
        }
        lines
    }
}

/// Everything `prepare` needs to know about what is installed already.
pub struct InstallContext<'a> {
    pub sandbox: &'a Sandbox,
    pub store: &'a PluginStore,
    /// Other stores whose tools a new plugin must not clash with.
    pub others: &'a [PluginStore],
    /// The first-party tools' names.
    pub builtin_tools: &'a [String],
    pub http: &'a reqwest::Client,
}

/// What the user said about the plugin besides where it is.
#[derive(Debug, Default, Clone)]
pub struct InstallInputs {
    /// `--manifest`: a carapace manifest file.
    pub manifest: Option<PathBuf>,
    /// `--policy`: a Wassette `policy.yaml`, the ceiling of a typed
    /// component (one without a carapace manifest).
    pub policy: Option<PathBuf>,
    /// The ceiling to keep when neither `--policy` nor the artifact gives
    /// one (`plugin update` of a typed component).
    pub keep_ceiling: Option<super::manifest::CeilingSpec>,
    /// Whose signatures an OCI install is checked against.
    pub signatures: super::signature::SignaturePolicy,
}

/// Reads, checks and compiles a plugin; returns it for approval.
pub async fn prepare(
    cx: &InstallContext<'_>,
    source: &PluginSource,
    inputs: &InstallInputs,
) -> Result<Candidate, InstallError> {
    let Fetched { wasm, policy, oci } = fetch(cx.http, source, &inputs.signatures).await?;
    let actual = check_bytes(source, &wasm)?;
    // A manifest that is there but wrong fails before anything compiles;
    // one that is missing may be a typed component's, which only its
    // compiled type tells.
    let found = match find_manifest(source, inputs.manifest.as_deref(), &wasm) {
        Ok(_) if inputs.policy.is_some() => return Err(InstallError::PolicyWithManifest),
        found @ (Ok(_) | Err(InstallError::NoManifest(_))) => found,
        Err(e) => return Err(e),
    };
    let started = Instant::now();
    let shown_name = match &found {
        Ok((manifest, _)) => manifest.plugin.name.clone(),
        Err(_) => source.stem(),
    };
    let component = ToolComponent::load(cx.sandbox, &shown_name, &wasm)
        .await
        .map_err(InstallError::Component)?;
    let compile = started.elapsed();
    let (manifest, manifest_origin) = match found {
        Ok(found) => found,
        Err(_) if component.is_typed() => {
            typed_manifest(source, &component, typed_ceiling(inputs, policy)?)?
        }
        Err(no_manifest) => return Err(no_manifest),
    };
    let name = manifest.plugin.name.clone();

    check_tools(cx, &component, &manifest)?;
    let replaces = cx.store.get(&name).ok();
    let record = InstalledPlugin {
        contract: component.contract_version().to_string(),
        tools: component.tools().iter().map(RecordedTool::from).collect(),
        digest: actual,
        source: source.describe(),
        size: wasm.len() as u64,
        compile_ms: duration_ms(compile),
        installed_at: jiff::Timestamp::now().to_string(),
        manifest,
        oci,
    };
    Ok(Candidate {
        record,
        wasm,
        manifest_origin,
        compile_outcome: component.load_outcome(),
        replaces,
        skipped: component.skipped().to_vec(),
    })
}

/// The bytes are what the source pinned, and a component: their digest.
fn check_bytes(source: &PluginSource, wasm: &[u8]) -> Result<String, InstallError> {
    let actual = digest(wasm);
    if let Some(expected) = source.pin()
        && expected != actual
    {
        return Err(InstallError::DigestMismatch {
            expected: expected.to_string(),
            actual,
        });
    }
    if !wasmparser::Parser::is_component(wasm) {
        return Err(InstallError::NotComponent(
            if wasmparser::Parser::is_core_wasm(wasm) {
                "it is a core WebAssembly module, not a component: build for wasm32-wasip2, or wrap it with `wasm-tools component new`"
            } else {
                "it is not WebAssembly at all"
            },
        ));
    }
    Ok(actual)
}

/// The component's tools pass the registry's own checks (valid names, no
/// duplicates, valid schemas), are the ones the manifest lists, and
/// clash with no first-party tool nor any other installed plugin's.
fn check_tools(
    cx: &InstallContext<'_>,
    component: &ToolComponent,
    manifest: &super::manifest::Manifest,
) -> Result<(), InstallError> {
    let name = &manifest.plugin.name;
    let mut registry = ToolRegistry::default();
    registry
        .add(component.clone(), Arc::new(Ceiling::none()))
        .map_err(InstallError::Tools)?;
    let mut provided: Vec<String> = component.tools().iter().map(|t| t.name.clone()).collect();
    let mut listed = manifest.plugin.tools.clone();
    provided.sort();
    listed.sort();
    if provided != listed {
        return Err(InstallError::ToolMismatch { listed, provided });
    }
    // Every installed plugin, read once, with the scope it is in.
    let installed: Vec<(super::Scope, InstalledPlugin)> = std::iter::once(cx.store)
        .chain(cx.others)
        .flat_map(|store| {
            store
                .list()
                .into_iter()
                .flatten()
                .map(move |plugin| (store.scope(), plugin))
        })
        .collect();
    for tool in &provided {
        if cx.builtin_tools.contains(tool) {
            return Err(InstallError::Clash {
                tool: tool.clone(),
                owner: "carapace's first-party tools".into(),
            });
        }
        for (scope, plugin) in &installed {
            let replacing = *scope == cx.store.scope() && plugin.name() == *name;
            if !replacing && plugin.tools.iter().any(|t| &t.name == tool) {
                return Err(InstallError::Clash {
                    tool: tool.clone(),
                    owner: format!("plugin `{}` ({} scope)", plugin.name(), scope.as_str()),
                });
            }
        }
    }
    Ok(())
}

/// Writes an approved candidate into its store.
pub fn commit(store: &PluginStore, candidate: &Candidate) -> Result<(), InstallError> {
    store.put(&candidate.record, &candidate.wasm)?;
    Ok(())
}

/// How a recorded contract is shown: a version of `carapace:tool`, or a
/// typed component's own functions.
pub fn contract_shown(contract: &str) -> String {
    if contract == crate::sandbox::TYPED_CONTRACT {
        "none: the component's own typed functions (WIT exports)".into()
    } else {
        format!("carapace:tool@{contract}")
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What a source gave: the component and, from an OCI artifact, its
/// policy layer and pin.
struct Fetched {
    wasm: Vec<u8>,
    policy: Option<String>,
    oci: Option<super::store::OciPin>,
}

async fn fetch(
    http: &reqwest::Client,
    source: &PluginSource,
    signatures: &super::signature::SignaturePolicy,
) -> Result<Fetched, InstallError> {
    if let PluginSource::Oci { reference } = source {
        let pulled = super::oci::pull(reference, signatures).await?;
        return Ok(Fetched {
            wasm: pulled.wasm,
            policy: pulled.policy,
            oci: Some(super::store::OciPin {
                reference: reference.clone(),
                pinned: pulled.pinned,
                manifest_digest: pulled.manifest_digest,
                layer_digest: pulled.layer_digest,
                signer: pulled.signer,
            }),
        });
    }
    let wasm = fetch_bytes(http, source).await?;
    Ok(Fetched {
        wasm,
        policy: None,
        oci: None,
    })
}

async fn fetch_bytes(
    http: &reqwest::Client,
    source: &PluginSource,
) -> Result<Vec<u8>, InstallError> {
    match source {
        PluginSource::Oci { .. } => Err(InstallError::Source("an OCI reference".into())),
        PluginSource::Path { path, .. } => {
            let read = |source| InstallError::Read {
                path: path.clone(),
                source,
            };
            let meta = std::fs::metadata(path).map_err(read)?;
            if !meta.is_file() {
                return Err(InstallError::Source(path.display().to_string()));
            }
            if meta.len() > MAX_COMPONENT_BYTES {
                return Err(InstallError::TooLarge);
            }
            std::fs::read(path).map_err(read)
        }
        PluginSource::Url { url, .. } => {
            let failed = |reason: String| InstallError::Download {
                url: url.clone(),
                reason,
            };
            let response = http
                .get(url)
                .send()
                .await
                .map_err(|e| failed(e.to_string()))?;
            if !response.status().is_success() {
                return Err(failed(format!("HTTP {}", response.status())));
            }
            if response
                .content_length()
                .is_some_and(|n| n > MAX_COMPONENT_BYTES)
            {
                return Err(InstallError::TooLarge);
            }
            let mut body = Vec::new();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| failed(e.to_string()))?;
                if (body.len() + chunk.len()) as u64 > MAX_COMPONENT_BYTES {
                    return Err(InstallError::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        }
    }
}

/// A valid plugin name (`[a-z0-9-]`, 1-64, starting with a letter) made
/// from any text.
fn plugin_name(text: &str) -> String {
    let mut name: String = text
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .skip_while(|c| !c.is_ascii_lowercase())
        .collect();
    name.truncate(64);
    let name = name.trim_end_matches('-').to_string();
    if name.is_empty() {
        "component".into()
    } else {
        name
    }
}

/// The manifest of a typed component, which brings none: named after its
/// file, its tools the functions it exports, its ceiling the Wassette
/// policy given (none: it gets clocks and random only), its version the
/// exporting interface's where it has one.
fn typed_manifest(
    source: &PluginSource,
    component: &ToolComponent,
    (ceiling, origin): (super::manifest::CeilingSpec, String),
) -> Result<(Manifest, String), InstallError> {
    let manifest = Manifest {
        plugin: super::manifest::PluginInfo {
            name: source.stem(),
            version: component
                .typed_version()
                .unwrap_or("unversioned")
                .to_string(),
            description: String::new(),
            tools: component.tools().iter().map(|t| t.name.clone()).collect(),
        },
        ceiling,
        limits: Default::default(),
    };
    manifest
        .validate()
        .map_err(|source| InstallError::Manifest {
            path: "the manifest made for this typed component".into(),
            source,
        })?;
    Ok((manifest, format!("none (a typed component); {origin}")))
}

/// A typed component's ceiling: `--policy`, else the artifact's policy
/// layer, else what it had (an update), else nothing but clocks and
/// random; and where it came from.
fn typed_ceiling(
    inputs: &InstallInputs,
    artifact_policy: Option<String>,
) -> Result<(super::manifest::CeilingSpec, String), InstallError> {
    let parse = |text: &str, path: PathBuf| {
        super::policy::parse(text).map_err(|source| InstallError::Policy { path, source })
    };
    if let Some(path) = &inputs.policy {
        let text = std::fs::read_to_string(path).map_err(|source| InstallError::Read {
            path: path.clone(),
            source,
        })?;
        return Ok((
            parse(&text, path.clone())?,
            format!("ceiling from {}", path.display()),
        ));
    }
    if let Some(text) = artifact_policy {
        let ceiling = parse(&text, "the artifact's policy layer".into())?;
        return Ok((ceiling, "ceiling from the artifact's policy layer".into()));
    }
    if let Some(kept) = &inputs.keep_ceiling {
        return Ok((kept.clone(), "the ceiling approved before".into()));
    }
    Ok((
        Default::default(),
        "no policy: it gets clocks and random only".into(),
    ))
}

/// The manifest: `--manifest`, else embedded, else `NAME.toml` or
/// `carapace-plugin.toml` beside a local component.
fn find_manifest(
    source: &PluginSource,
    explicit: Option<&Path>,
    wasm: &[u8],
) -> Result<(Manifest, String), InstallError> {
    match (explicit, source) {
        (Some(path), _) => manifest_file(path),
        (None, PluginSource::Path { path, .. }) => find_local_manifest(path, wasm),
        (None, PluginSource::Url { .. } | PluginSource::Oci { .. }) => embedded(wasm)?
            .map(|m| (m, "embedded in the component".to_string()))
            .ok_or_else(|| InstallError::NoManifest("a manifest".into())),
    }
}

/// The manifest of a component on disk: embedded, else `NAME.toml`, else
/// `carapace-plugin.toml` in its directory.
pub fn find_local_manifest(
    component: &Path,
    wasm: &[u8],
) -> Result<(Manifest, String), InstallError> {
    if let Some(manifest) = embedded(wasm)? {
        return Ok((manifest, "embedded in the component".into()));
    }
    let dir = component.parent().unwrap_or(Path::new("."));
    let beside = [
        component.with_extension("toml"),
        dir.join("carapace-plugin.toml"),
    ];
    match beside.iter().find(|p| p.is_file()) {
        Some(path) => manifest_file(path),
        None => Err(InstallError::NoManifest(beside[0].display().to_string())),
    }
}

fn embedded(wasm: &[u8]) -> Result<Option<Manifest>, InstallError> {
    Manifest::embedded(wasm).map_err(|source| InstallError::Manifest {
        path: "its carapace-plugin section".into(),
        source,
    })
}

fn manifest_file(path: &Path) -> Result<(Manifest, String), InstallError> {
    let text = std::fs::read_to_string(path).map_err(|source| InstallError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let manifest = Manifest::parse(&text).map_err(|source| InstallError::Manifest {
        path: path.display().to_string(),
        source,
    })?;
    Ok((manifest, path.display().to_string()))
}

#[cfg(test)]
#[path = "install_tests.rs"]
mod tests;
