//! A plugin's manifest: who it is, which tools it provides, and the most it
//! may ever be granted (its ceiling) and run with (its limits).
//!
//! The manifest is TOML, either in a file next to the component
//! (`NAME.toml` or `carapace-plugin.toml`) or embedded in the component as a
//! custom section named `carapace-plugin` (`carapace plugin pack`). The
//! contract version is not in the manifest: it is read from the component.

use crate::policy::{Ceiling, HostPattern};
use crate::sandbox::{CallLimits, FileAccess};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The name of the custom section that holds an embedded manifest.
pub const MANIFEST_SECTION: &str = "carapace-plugin";

/// The most a plugin may ask for: a call's wall-clock limit and memory cap.
const MAX_TIMEOUT_SECS: u64 = 600;
const MAX_MEMORY_MIB: u64 = 4096;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ManifestError {
    #[error("the manifest is not valid TOML for a carapace plugin: {0}")]
    Syntax(String),
    #[error("the manifest's {field} is invalid: {reason}")]
    Field { field: &'static str, reason: String },
    #[error("the component's embedded manifest is unreadable: {0}")]
    Embedded(String),
}

fn invalid(field: &'static str, reason: impl Into<String>) -> ManifestError {
    ManifestError::Field {
        field,
        reason: reason.into(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub plugin: PluginInfo,
    #[serde(default)]
    pub ceiling: CeilingSpec,
    #[serde(default)]
    pub limits: LimitsSpec,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginInfo {
    /// `[a-z0-9-]`, 1 to 64 characters, starting with a letter: the name
    /// the plugin is installed, listed and removed under.
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub description: String,
    /// The tools the component provides, by name; checked against what it
    /// really exports at install time.
    pub tools: Vec<String>,
}

/// The ceiling as written: paths may start with `{workspace}`, `{home}` or
/// `{tmp}`, resolved when a session loads the plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CeilingSpec {
    #[serde(default)]
    pub files: Vec<FileRoot>,
    /// Outgoing HTTP hosts: `example.com`, `example.com:8443`, `*.example.com`.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Environment variables the plugin may be given, by name.
    #[serde(default)]
    pub env: Vec<String>,
    /// Whether the plugin may run shell commands (through the host's OS
    /// sandbox, each command still decided by the Bash rules).
    #[serde(default)]
    pub process: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRoot {
    pub path: String,
    pub access: Access,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Read,
    Write,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Wall-clock limit of one call, in seconds (host default: 120).
    pub timeout_secs: Option<u64>,
    /// Memory cap of one call's instance, in MiB (host default: 256).
    pub memory_mib: Option<u64>,
}

/// What `{workspace}`, `{home}` and `{tmp}` stand for in one session.
#[derive(Debug, Clone)]
pub struct Placeholders {
    pub workspace: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
}

impl Placeholders {
    pub fn current(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/")),
            tmp: std::env::temp_dir(),
        }
    }
}

impl Manifest {
    /// Parses and checks a TOML manifest.
    pub fn parse(text: &str) -> Result<Self, ManifestError> {
        let manifest: Manifest =
            toml::from_str(text).map_err(|e| ManifestError::Syntax(e.to_string()))?;
        manifest.check()?;
        Ok(manifest)
    }

    /// The manifest embedded in `wasm`'s `carapace-plugin` custom section,
    /// if it has one (only the outermost component's sections count: a
    /// nested module cannot speak for the component).
    pub fn embedded(wasm: &[u8]) -> Result<Option<Self>, ManifestError> {
        match embedded_section(wasm).map_err(ManifestError::Embedded)? {
            None => Ok(None),
            Some(bytes) => {
                let text = std::str::from_utf8(&bytes)
                    .map_err(|e| ManifestError::Embedded(format!("not UTF-8: {e}")))?;
                Self::parse(text).map(Some)
            }
        }
    }

    pub fn to_toml(&self) -> String {
        // A manifest is plain data: serialising it cannot fail.
        toml::to_string(self).unwrap_or_default()
    }

    /// The checks a parsed manifest passes, for one made otherwise.
    pub fn validate(&self) -> Result<(), ManifestError> {
        self.check()
    }

    fn check(&self) -> Result<(), ManifestError> {
        let p = &self.plugin;
        if !valid_plugin_name(&p.name) {
            return Err(invalid(
                "plugin.name",
                format!(
                    "`{}`: use 1-64 of a-z 0-9 -, starting with a letter",
                    p.name
                ),
            ));
        }
        if p.version.trim().is_empty() || p.version.len() > 64 {
            return Err(invalid("plugin.version", "give 1-64 characters"));
        }
        if p.description.len() > 1024 {
            return Err(invalid("plugin.description", "longer than 1024 bytes"));
        }
        if p.tools.is_empty() {
            return Err(invalid(
                "plugin.tools",
                "a plugin provides at least one tool",
            ));
        }
        for (i, tool) in p.tools.iter().enumerate() {
            if p.tools[..i].contains(tool) {
                return Err(invalid("plugin.tools", format!("`{tool}` is listed twice")));
            }
        }
        for root in &self.ceiling.files {
            expand(&root.path, &Placeholders::current(Path::new("/")))
                .map_err(|reason| invalid("ceiling.files", reason))?;
        }
        for host in &self.ceiling.hosts {
            HostPattern::parse(host)
                .map_err(|e| invalid("ceiling.hosts", format!("`{host}`: {e}")))?;
        }
        for name in &self.ceiling.env {
            let ok = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                return Err(invalid(
                    "ceiling.env",
                    format!("`{name}` is not an environment variable name"),
                ));
            }
        }
        match self.limits.timeout_secs {
            Some(0) => return Err(invalid("limits.timeout_secs", "must be at least 1")),
            Some(t) if t > MAX_TIMEOUT_SECS => {
                return Err(invalid(
                    "limits.timeout_secs",
                    format!("{t} is more than the host allows ({MAX_TIMEOUT_SECS})"),
                ));
            }
            _ => {}
        }
        match self.limits.memory_mib {
            Some(m) if m < 16 => return Err(invalid("limits.memory_mib", "must be at least 16")),
            Some(m) if m > MAX_MEMORY_MIB => {
                return Err(invalid(
                    "limits.memory_mib",
                    format!("{m} is more than the host allows ({MAX_MEMORY_MIB})"),
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// The ceiling for one session, placeholders resolved.
    pub fn ceiling(&self, places: &Placeholders) -> Result<Ceiling, ManifestError> {
        let mut ceiling = Ceiling::none();
        for root in &self.ceiling.files {
            let path = expand(&root.path, places).map_err(|r| invalid("ceiling.files", r))?;
            if let Some(reason) = crate::sandbox::refused_process_info(Path::new(&path), false) {
                return Err(invalid("ceiling.files", reason));
            }
            let access = match root.access {
                Access::Read => FileAccess::Read,
                Access::Write => FileAccess::Write,
            };
            ceiling = ceiling.with_files(path, access);
        }
        for host in &self.ceiling.hosts {
            let pattern = HostPattern::parse(host)
                .map_err(|e| invalid("ceiling.hosts", format!("`{host}`: {e}")))?;
            ceiling = ceiling.with_host(pattern);
        }
        for name in &self.ceiling.env {
            ceiling = ceiling.with_env(name);
        }
        if self.ceiling.process {
            ceiling = ceiling.with_process();
        }
        Ok(ceiling)
    }

    /// The limits a call of this plugin runs under: the host's defaults,
    /// lowered or raised as the manifest says within the host's maximums.
    pub fn limits(&self, defaults: &CallLimits) -> CallLimits {
        CallLimits {
            deadline: self
                .limits
                .timeout_secs
                .map(Duration::from_secs)
                .unwrap_or(defaults.deadline),
            memory_bytes: self
                .limits
                .memory_mib
                .and_then(|m| usize::try_from(m << 20).ok())
                .unwrap_or(defaults.memory_bytes),
            output_bytes: defaults.output_bytes,
        }
    }

    /// The ceiling as the user approves it, one line per capability, with
    /// placeholders left as written.
    pub fn describe_ceiling(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .ceiling
            .files
            .iter()
            .map(|root| {
                let access = match root.access {
                    Access::Read => "read",
                    Access::Write => "read and write",
                };
                format!("files: {access} {}", root.path)
            })
            .collect();
        lines.extend(
            self.ceiling
                .hosts
                .iter()
                .map(|h| format!("network: HTTP to {h}")),
        );
        lines.extend(self.ceiling.env.iter().map(|e| format!("environment: {e}")));
        if self.ceiling.process {
            lines.push("processes: run shell commands (each decided by the Bash rules)".into());
        }
        if lines.is_empty() {
            lines.push("nothing: no files, no network, no environment, no processes".into());
        }
        lines
    }
}

pub fn valid_plugin_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Resolves a ceiling path: a placeholder at the start, then an absolute
/// path with no `..` (a ceiling must say plainly what it covers).
fn expand(path: &str, places: &Placeholders) -> Result<PathBuf, String> {
    let (base, rest) = if let Some(rest) = path.strip_prefix("{workspace}") {
        (Some(&places.workspace), rest)
    } else if let Some(rest) = path.strip_prefix("{home}") {
        (Some(&places.home), rest)
    } else if let Some(rest) = path.strip_prefix("{tmp}") {
        (Some(&places.tmp), rest)
    } else {
        (None, path)
    };
    if rest.contains('{') || rest.contains('}') {
        return Err(format!(
            "`{path}`: the only placeholders are {{workspace}}, {{home}} and {{tmp}}, at the start"
        ));
    }
    let full = match base {
        Some(base) => {
            let rest = rest.trim_start_matches('/');
            if rest.is_empty() {
                base.clone()
            } else {
                base.join(rest)
            }
        }
        None if Path::new(rest).is_absolute() => PathBuf::from(rest),
        None => {
            return Err(format!(
                "`{path}` must be absolute or start with {{workspace}}, {{home}} or {{tmp}}"
            ));
        }
    };
    if full
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!("`{path}` may not contain `..`"));
    }
    Ok(full)
}

/// The bytes of the outermost `carapace-plugin` custom section, if any.
fn embedded_section(wasm: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut depth = 0usize;
    let mut found = None;
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| e.to_string())? {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::CustomSection(section)
                if depth == 1 && section.name() == MANIFEST_SECTION =>
            {
                if found.is_some() {
                    return Err(format!("two `{MANIFEST_SECTION}` sections"));
                }
                found = Some(section.data().to_vec());
            }
            _ => {}
        }
    }
    Ok(found)
}

/// `wasm` with `manifest` embedded as its `carapace-plugin` section (any
/// earlier one removed first is the caller's business: embedding twice is
/// refused when read).
pub fn embed(wasm: &[u8], manifest: &Manifest) -> Result<Vec<u8>, ManifestError> {
    if embedded_section(wasm)
        .map_err(ManifestError::Embedded)?
        .is_some()
    {
        return Err(ManifestError::Embedded(
            "the component already embeds a manifest".into(),
        ));
    }
    let text = manifest.to_toml();
    let section = wasm_encoder::CustomSection {
        name: MANIFEST_SECTION.into(),
        data: text.as_bytes().into(),
    };
    let mut out = wasm.to_vec();
    // A custom section may follow any section, in a component as in a
    // module: appending one leaves the rest of the binary untouched.
    wasm_encoder::ComponentSection::append_to_component(&section, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[plugin]
name = "word-count"
version = "1.0.0"
tools = ["WordCount"]

[ceiling]
files = [{ path = "{workspace}", access = "read" }, { path = "/var/log/app", access = "write" }]
hosts = ["api.example.com"]
env = ["LANG"]

[limits]
timeout_secs = 5
memory_mib = 64
"#;

    #[test]
    fn a_manifest_resolves_to_a_ceiling_and_limits() -> Result<(), Box<dyn std::error::Error>> {
        let m = Manifest::parse(GOOD)?;
        let places = Placeholders {
            workspace: "/w".into(),
            home: "/h".into(),
            tmp: "/t".into(),
        };
        let ceiling = m.ceiling(&places)?;
        assert!(ceiling.allows_file(Path::new("/w/a"), FileAccess::Read));
        assert!(!ceiling.allows_file(Path::new("/w/a"), FileAccess::Write));
        assert!(ceiling.allows_file(Path::new("/var/log/app/x"), FileAccess::Write));
        assert!(!ceiling.allows_file(Path::new("/h/.ssh/id_rsa"), FileAccess::Read));
        assert!(ceiling.allows_env("LANG") && !ceiling.allows_env("HOME"));
        assert!(!ceiling.allows_process());
        let limits = m.limits(&CallLimits::default());
        assert_eq!(limits.deadline, Duration::from_secs(5));
        assert_eq!(limits.memory_bytes, 64 << 20);
        Ok(())
    }

    #[test]
    fn bad_manifests_say_which_field_is_wrong() {
        let cases = [
            (GOOD.replace("word-count", "Word Count"), "plugin.name"),
            (GOOD.replace("[\"WordCount\"]", "[]"), "plugin.tools"),
            (
                GOOD.replace("[\"WordCount\"]", "[\"A\", \"A\"]"),
                "plugin.tools",
            ),
            (GOOD.replace("{workspace}", "relative/dir"), "ceiling.files"),
            (
                GOOD.replace("{workspace}", "{workspace}/../.."),
                "ceiling.files",
            ),
            (GOOD.replace("{workspace}", "{cwd}"), "ceiling.files"),
            (
                GOOD.replace("api.example.com", "http://x/"),
                "ceiling.hosts",
            ),
            (GOOD.replace("LANG", "A B"), "ceiling.env"),
            (
                GOOD.replace("timeout_secs = 5", "timeout_secs = 0"),
                "limits.timeout_secs",
            ),
            (
                GOOD.replace("memory_mib = 64", "memory_mib = 99999"),
                "limits.memory_mib",
            ),
        ];
        for (text, field) in cases {
            match Manifest::parse(&text) {
                Err(ManifestError::Field { field: f, .. }) => assert_eq!(f, field, "{text}"),
                other => panic!("{field}: {other:?}"),
            }
        }
        assert!(matches!(
            Manifest::parse(&GOOD.replace("[limits]", "[limits]\nsurprise = 1")),
            Err(ManifestError::Syntax(_))
        ));
        assert!(matches!(
            Manifest::parse("not toml ["),
            Err(ManifestError::Syntax(_))
        ));
    }

    #[test]
    fn an_embedded_manifest_round_trips_and_only_once() -> Result<(), Box<dyn std::error::Error>> {
        // The smallest valid component: magic and the component version.
        let component = b"\0asm\x0d\x00\x01\x00".to_vec();
        assert_eq!(Manifest::embedded(&component)?, None);
        let m = Manifest::parse(GOOD)?;
        let packed = embed(&component, &m)?;
        assert_eq!(Manifest::embedded(&packed)?, Some(m.clone()));
        assert!(embed(&packed, &m).is_err());
        Ok(())
    }
}
