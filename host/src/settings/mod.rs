//! Settings: Claude Code's shape and precedence, from carapace's files and
//! Claude Code's own.
//!
//! managed (`/etc/carapace/managed-settings.json`, then Claude Code's
//! `/etc/claude-code/managed-settings.json`) > `--settings FILE|JSON` >
//! local (`.carapace/settings.local.json`, `.claude/settings.local.json`) >
//! project (`.carapace/settings.json`, `.claude/settings.json`) > user
//! (`~/.carapace/settings.json`, `~/.claude/settings.json`): at each level
//! carapace's own file comes first.
//! Scalars take the value of the highest source that sets them; lists merge
//! across all sources (and a deny anywhere beats an allow anywhere, by rule
//! order). Project and local files — written by whoever wrote the
//! repository — may not redirect the API endpoint, the credentials or
//! carapace's own directories, and what they bring that would run (hooks,
//! plugins, MCP servers) loads only in a trusted workspace.
//!
//! Imports: `policy`, `sandbox` — folders below it; nothing that imports it.

mod auto_mode;
mod claude;
mod keys;
mod merge;
mod trust;

pub use auto_mode::AutoModeSettings;
pub use trust::{ProjectItem, WorkspaceTrust};

use crate::policy::{HostPattern, PermissionMode, Rule, RuleSource, SourceKind};
use merge::Source;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read settings {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("settings {path} are not valid: {reason}")]
    Invalid { path: String, reason: String },
    #[error("settings {path}: {source}")]
    Rule {
        path: String,
        #[source]
        source: crate::policy::RuleError,
    },
    #[error("settings {path}: sandbox.allowInternalAddresses: {source}")]
    InternalAddress {
        path: String,
        #[source]
        source: crate::policy::HostPatternError,
    },
}

/// One settings file as written (keys carapace does not know are kept for
/// later layers and otherwise ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SettingsFile {
    model: Option<String>,
    /// Extended thinking on (the default) or off.
    always_thinking_enabled: Option<bool>,
    /// The Script tool is offered (code mode): `true`, or its limits; read
    /// leniently (a limit it does not know is named in a warning).
    code_mode: Option<serde_json::Value>,
    /// The output style's name.
    output_style: Option<String>,
    /// The agent type the main thread runs as (`--agent` overrides it).
    agent: Option<String>,
    #[serde(default)]
    permissions: PermissionsFile,
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Values a plugin reads through `wasi:config/store`, by plugin name.
    #[serde(default)]
    plugin_config: BTreeMap<String, BTreeMap<String, String>>,
    /// Whose signatures OCI installs are checked against.
    #[serde(default)]
    plugin_signatures: SignaturesFile,
    api_key_helper: Option<String>,
    hooks: Option<Value>,
    /// Claude Code's: no hook runs (a managed file's: not even managed
    /// ones).
    disable_all_hooks: Option<bool>,
    /// Claude Code's, managed only: only the managed file's hooks run.
    #[serde(default)]
    allow_managed_hooks_only: bool,
    /// Claude Code's: the URLs `http` hooks may reach (`*` a wildcard).
    allowed_http_hook_urls: Option<Vec<String>>,
    /// Claude Code's: the variables `http` hooks may put in headers.
    http_hook_allowed_env_vars: Option<Vec<String>>,
    /// Claude Code's, managed only: only the managed file's allow rules
    /// apply (deny and ask rules of every file still do).
    #[serde(default)]
    allow_managed_permission_rules_only: bool,
    /// Agent types, as `--agents` takes them.
    agents: Option<Value>,
    /// Claude Code's plugins by `plugin@marketplace`: on or off.
    #[serde(default)]
    enabled_plugins: BTreeMap<String, bool>,
    #[serde(default)]
    trusted_workspaces: Vec<PathBuf>,
    #[serde(default)]
    sandbox: SandboxFile,
    /// What the auto mode's classifier is told.
    #[serde(default)]
    auto_mode: auto_mode::AutoModeFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SandboxFile {
    /// Refuse to run commands when the OS sandbox is unavailable.
    required: Option<bool>,
    /// Claude Code's switch: carapace's commands are always sandboxed, so
    /// `false` is named in a warning and changes nothing.
    enabled: Option<bool>,
    /// Claude Code's escape hatch for commands; carapace has none, so only
    /// `false` is honoured (it is what carapace does anyway).
    allow_unsandboxed_commands: Option<bool>,
    /// Claude Code's `sandbox.filesystem`: paths no command may read or
    /// write.
    #[serde(default)]
    filesystem: claude::FilesystemFile,
    /// Give commands (Bash) network access.
    allow_network: Option<bool>,
    /// MiB a command may write into its private temp dir.
    temp_dir_max_mb: Option<u64>,
    /// What commands may reach through carapace's egress proxy.
    #[serde(default)]
    network: NetworkFile,
    /// Host patterns (`localhost:8080`, `10.0.0.5`) that WebFetch and other
    /// HTTP-granted tools may reach although they are internal addresses.
    #[serde(default)]
    allow_internal_addresses: Vec<String>,
    /// carapace's own variables (ANTHROPIC_*, CARAPACE_*) that MCP
    /// configurations may expand with `${NAME}`.
    #[serde(default)]
    mcp_expandable_variables: Vec<String>,
    /// Claude Code's `sandbox.credentials`.
    #[serde(default)]
    credentials: claude::CredentialsFile,
}

/// `pluginSignatures`: trusted cosign public keys by name (PEM text, or
/// the path of a PEM file), keyless signers by name (the certificate's
/// identity and its OIDC issuer), the Sigstore trust root those are
/// checked against, and whether every OCI install must carry a valid
/// signature by one of them.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SignaturesFile {
    #[serde(default)]
    required: bool,
    #[serde(default)]
    keys: BTreeMap<String, String>,
    #[serde(default)]
    identities: BTreeMap<String, IdentityFile>,
    trusted_root: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentityFile {
    identity: String,
    issuer: String,
}

/// A keyless signer the user trusts: its name in the settings, the
/// certificate's identity (an email or URI, exactly), the OIDC issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerIdentity {
    pub name: String,
    pub identity: String,
    pub issuer: String,
}

/// `sandbox.network`, as Claude Code's sandbox names it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NetworkFile {
    #[serde(default)]
    allowed_domains: Vec<String>,
    #[serde(default)]
    denied_domains: Vec<String>,
    /// Managed settings only: no other file may add allowed domains.
    #[serde(default)]
    allow_managed_domains_only: bool,
    /// Commands may listen on ports (inside their own network namespace).
    allow_local_binding: Option<bool>,
    /// The user's own HTTP proxy on loopback, in place of carapace's.
    http_proxy_port: Option<u16>,
    /// The user's own SOCKS5 proxy on loopback, in place of carapace's.
    socks_proxy_port: Option<u16>,
    /// TLS tunnels end at carapace's proxy (a per-session authority the
    /// sandbox trusts), so masked secrets reach HTTPS hosts.
    tls_terminate: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionsFile {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    default_mode: Option<String>,
    #[serde(default)]
    additional_directories: Vec<PathBuf>,
    /// Claude Code's: `"disable"` keeps bypassPermissions out of reach.
    disable_bypass_permissions_mode: Option<String>,
}

/// Where the settings files are.
#[derive(Debug, Clone)]
pub struct Locations {
    pub managed: PathBuf,
    /// Claude Code's managed settings ([`CLAUDE_MANAGED_SETTINGS`]).
    pub claude_managed: PathBuf,
    /// Settings given for one session (`--settings`, a job's).
    pub given: Option<GivenSettings>,
    pub cwd: PathBuf,
    pub home: PathBuf,
    pub config_dir: PathBuf,
    /// `--setting-sources`: which of the user's, the project's and the
    /// local settings files load (`None`: all). Managed settings and
    /// `--settings` always do.
    pub sources: Option<Vec<SourceKind>>,
}

impl Locations {
    pub fn local(&self) -> PathBuf {
        self.cwd.join(".carapace").join("settings.local.json")
    }

    pub fn project(&self) -> PathBuf {
        self.cwd.join(".carapace").join("settings.json")
    }

    pub fn user(&self) -> PathBuf {
        self.config_dir.join("settings.json")
    }

    /// Claude Code's files at the local, project and user levels.
    pub fn claude_local(&self) -> PathBuf {
        self.cwd.join(".claude").join("settings.local.json")
    }

    pub fn claude_project(&self) -> PathBuf {
        self.cwd.join(".claude").join("settings.json")
    }

    pub fn claude_user(&self) -> PathBuf {
        self.home.join(".claude").join("settings.json")
    }
}

/// Where Claude Code's administrators put its managed settings on Linux.
pub const CLAUDE_MANAGED_SETTINGS: &str = "/etc/claude-code/managed-settings.json";

/// Environment variables a project file may not set: they would redirect
/// the model traffic, leak or swap the credentials, or move carapace's own
/// directories.
fn is_forbidden_project_env(name: &str) -> bool {
    name.starts_with("ANTHROPIC_")
        || name.starts_with("CARAPACE_")
        || name.starts_with("CLAUDE_")
        || name == "HOME"
}

/// `codeMode`: `true`/`false`, or an object that turns it on with limits
/// of its own (each left out keeps its default).
#[derive(Debug, Clone, PartialEq)]
pub enum CodeModeSetting {
    On(bool),
    Limits(CodeModeLimits),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct CodeModeLimits {
    pub deadline_seconds: Option<u64>,
    pub max_calls: Option<u32>,
    pub memory_mb: Option<usize>,
    pub output_kb: Option<usize>,
}

impl CodeModeSetting {
    /// `codeMode` as a file wrote it; what it cannot use is said in
    /// `warnings` (code mode guards nothing: a bad limit keeps its default).
    fn read(value: &serde_json::Value, shown: &str, warnings: &mut Vec<String>) -> Option<Self> {
        let object = match value {
            serde_json::Value::Bool(on) => return Some(Self::On(*on)),
            serde_json::Value::Object(object) => object,
            _ => {
                warnings.push(format!(
                    "{shown}: `codeMode` is `true`, `false` or an object of limits; it was ignored"
                ));
                return None;
            }
        };
        let mut limits = CodeModeLimits::default();
        for (key, given) in object {
            let number = given.as_u64();
            let kept = match key.as_str() {
                "deadlineSeconds" => number.map(|n| limits.deadline_seconds = Some(n)),
                "maxCalls" => number
                    .and_then(|n| u32::try_from(n).ok())
                    .map(|n| limits.max_calls = Some(n)),
                "memoryMB" => number.map(|n| limits.memory_mb = usize::try_from(n).ok()),
                "outputKB" => number.map(|n| limits.output_kb = usize::try_from(n).ok()),
                _ => None,
            };
            if kept.is_none() {
                warnings.push(format!(
                    "{shown}: `codeMode.{key}` is not a limit carapace knows (deadlineSeconds, maxCalls, memoryMB, outputKB, each a whole number); its default is kept"
                ));
            }
        }
        Some(Self::Limits(limits))
    }
}

/// The merged settings of a session.
#[derive(Debug, Default)]
pub struct Settings {
    pub model: Option<String>,
    /// `alwaysThinkingEnabled` (the first file that says).
    pub always_thinking: Option<bool>,
    /// `codeMode` (the first file that says): the Script tool is offered,
    /// with these limits where the file gives them.
    pub code_mode: Option<CodeModeSetting>,
    /// `outputStyle` (the first file that says).
    pub output_style: Option<String>,
    /// The agent type the session runs as (a project's only when the
    /// workspace is trusted: it replaces the system prompt).
    pub agent: Option<String>,
    pub default_mode: Option<PermissionMode>,
    pub rules: Vec<Rule>,
    /// Further working directories for the policy
    /// (`permissions.additionalDirectories` of every admitted source).
    pub additional_dirs: Vec<PathBuf>,
    /// The additional directories the user's own settings (user, managed,
    /// `--settings`) name: only these may also widen where commands may
    /// write, never a project file's.
    pub user_dirs: Vec<PathBuf>,
    /// Environment for carapace itself (the model client), highest source
    /// first-wins; never given to plugins.
    pub env: BTreeMap<String, String>,
    /// `pluginConfig`: what each plugin reads through `wasi:config/store`,
    /// by plugin name, highest source first-wins per key (a project
    /// file's only in a trusted workspace, as for `env`).
    pub plugin_config: BTreeMap<String, BTreeMap<String, String>>,
    /// `pluginSignatures.keys` of the user's and managed settings: the
    /// cosign keys OCI installs are verified against, by name.
    pub signature_keys: Vec<(String, String)>,
    /// `pluginSignatures.identities` of those sources: keyless signers.
    pub signature_identities: Vec<SignerIdentity>,
    /// `pluginSignatures.trustedRoot`, the highest of those sources that
    /// sets it, made absolute against its settings file's folder.
    pub signature_trusted_root: Option<String>,
    /// `pluginSignatures.required` in any of those: an OCI install without
    /// a valid signature by one of the keys is refused.
    pub signatures_required: bool,
    /// Hook configurations, with the source each came from (project ones
    /// only when the workspace is trusted).
    pub hooks: Vec<(Value, RuleSource)>,
    /// `allowedHttpHookUrls`: the managed file's list when it has one,
    /// else every admitted file's together; `None` when no file sets it.
    pub http_hook_urls: Option<Vec<String>>,
    /// `httpHookAllowedEnvVars`, gathered the same way.
    pub http_hook_env: Option<Vec<String>>,
    /// Which of those two lists the managed file fixed.
    http_hook_lists_managed: (bool, bool),
    /// A project's hooks in an untrusted workspace: they do not run, but
    /// what their PreToolUse hooks would judge is refused until the
    /// workspace is trusted — a guard is never silently missing.
    pub held_hooks: Vec<(Value, RuleSource)>,
    /// Agent definitions (`agents`), with the file each came from (a
    /// project's only when the workspace is trusted), lowest layer first.
    pub agents: Vec<(Value, String)>,
    /// Claude Code plugins switched on or off (`enabledPlugins`), the
    /// highest source first-wins per plugin (a project's only in a
    /// trusted workspace).
    pub enabled_plugins: BTreeMap<String, bool>,
    /// Which settings said so for each plugin in `enabled_plugins`: a
    /// plugin's middleware hooks sit in that source's tier.
    pub enabled_plugin_sources: BTreeMap<String, SourceKind>,
    /// Whether executables brought by project files may load.
    pub trust: WorkspaceTrust,
    /// `sandbox.required`: refuse commands when the OS sandbox is missing.
    pub sandbox_required: Option<bool>,
    /// `sandbox.allowNetwork`: commands may use the network.
    pub sandbox_network: Option<bool>,
    /// `sandbox.tempDirMaxMb`: what a command may write into its private
    /// temp dir (the smallest any file says: a file may only lower it).
    pub sandbox_temp_max_mb: Option<u64>,
    /// `sandbox.network.allowedDomains` of every admitted file (a project's
    /// only in a trusted workspace; only the managed file's under
    /// `allowManagedDomainsOnly`).
    pub allowed_domains: Vec<String>,
    /// `sandbox.network.deniedDomains` of every file: a list anyone may
    /// only narrow.
    pub denied_domains: Vec<String>,
    /// `sandbox.network.allowManagedDomainsOnly` in the managed file: no
    /// other file adds allowed domains, and no unlisted host is asked about.
    pub managed_domains_only: bool,
    /// `sandbox.network.allowLocalBinding`: commands may listen on ports of
    /// their own network namespace (a project file may only say no in an
    /// untrusted workspace).
    pub allow_local_binding: Option<bool>,
    /// `sandbox.network.httpProxyPort` and `socksProxyPort` (user, managed
    /// or `--settings` only): the user's own proxies judge instead.
    pub proxy_ports: crate::sandbox::egress::Upstream,
    /// `sandbox.allowInternalAddresses` of the user's own settings: the
    /// only internal (loopback, private, link-local, this machine's)
    /// addresses a tool's outgoing HTTP may reach.
    pub internal_addresses: Vec<HostPattern>,
    /// `sandbox.mcpExpandableVariables` of the user's own settings.
    pub mcp_expandable: Vec<String>,
    /// `sandbox.credentials.files` of the user's own settings, absolute:
    /// withheld from every tool with the built-in credential files.
    pub credential_files: Vec<PathBuf>,
    /// `sandbox.credentials` entries in `mask` mode (the user's own
    /// settings): secrets commands use without holding them.
    pub masked: Vec<MaskedSecret>,
    /// `sandbox.credentials.allowPlaintextInject`.
    pub plaintext_inject: bool,
    /// `sandbox.network.tlsTerminate` (the user's own settings).
    pub tls_terminate: bool,
    /// `permissions.disableBypassPermissionsMode: "disable"` in any file:
    /// bypassPermissions may not be started in or switched to.
    pub bypass_disabled: bool,
    /// `allowManagedPermissionRulesOnly` in a managed file: allow rules
    /// from anywhere else (the command line's too) do not apply.
    pub managed_rules_only: bool,
    /// Paths commands may not write (Claude Code's
    /// `sandbox.filesystem.denyWrite`), absolute.
    pub command_write_denied: Vec<PathBuf>,
    /// `autoMode`: the auto mode's classifier's instructions and the
    /// rules it cannot override.
    pub auto_mode: AutoModeSettings,
    /// What was refused or ignored, to tell the user.
    pub warnings: Vec<String>,
    /// Every file that was read, highest precedence first.
    pub files: Vec<PathBuf>,
}

impl Settings {
    /// Reads every source, then merges them, highest precedence first.
    /// `trust_flag` is `--trust-workspace`.
    pub fn load(locations: &Locations, trust_flag: bool) -> Result<Self, SettingsError> {
        let sources = read_sources(locations)?;
        let mut settings = Settings {
            trust: WorkspaceTrust::determine(
                trust_flag,
                sources
                    .iter()
                    .filter(|s| matches!(s.kind, SourceKind::User | SourceKind::Managed))
                    .flat_map(|s| s.file.trusted_workspaces.iter().map(PathBuf::as_path)),
                &locations.cwd,
            ),
            ..Settings::default()
        };
        let trusted = settings.trust.is_trusted();
        let managed = claude::ManagedLimits::of(&sources, trusted, &mut settings.warnings);
        for source in sources {
            settings.merge(source, locations)?;
        }
        managed.apply(&mut settings);
        Ok(settings)
    }
}

/// Every settings file that loads, highest precedence first: managed,
/// `--settings`, local, project, user.
fn read_sources(locations: &Locations) -> Result<Vec<Source>, SettingsError> {
    let mut sources = Vec::new();
    for (path, dialect) in [
        (&locations.managed, Dialect::Carapace),
        (&locations.claude_managed, Dialect::ClaudeCode),
    ] {
        if let Some((file, notes)) = read_file(path)? {
            sources.push(Source::new(
                SourceKind::Managed,
                Some(path.clone()),
                file,
                dialect,
                notes,
            ));
        }
    }
    if let Some(given) = &locations.given {
        let (path, file, notes) = read_given(given)?;
        sources.push(Source::new(
            SourceKind::CliSettings,
            path,
            file,
            Dialect::Carapace,
            notes,
        ));
    }
    for (kind, path, dialect) in [
        (SourceKind::Local, locations.local(), Dialect::Carapace),
        (
            SourceKind::Local,
            locations.claude_local(),
            Dialect::ClaudeCode,
        ),
        (SourceKind::Project, locations.project(), Dialect::Carapace),
        (
            SourceKind::Project,
            locations.claude_project(),
            Dialect::ClaudeCode,
        ),
        (SourceKind::User, locations.user(), Dialect::Carapace),
        (
            SourceKind::User,
            locations.claude_user(),
            Dialect::ClaudeCode,
        ),
    ] {
        let wanted = locations
            .sources
            .as_ref()
            .is_none_or(|wanted| wanted.contains(&kind));
        if wanted && let Some((file, notes)) = read_file(&path)? {
            sources.push(Source::new(kind, Some(path), file, dialect, notes));
        }
    }
    Ok(sources)
}

/// Whose syntax a file is written in: carapace's own files are read
/// strictly (a rule carapace cannot parse is an error); Claude Code's are
/// shared with Claude Code, which may take what carapace does not, so such
/// an entry is a warning — and a deny or ask rule carapace cannot read
/// applies to its whole tool, never to nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Carapace,
    ClaudeCode,
}

impl Settings {
    /// `sandbox.network` of one file (files come highest precedence first):
    /// denied domains always add up; allowed ones only from a file that may
    /// widen what commands reach.
    fn merge_network(&mut self, network: &NetworkFile, kind: SourceKind, shown: &str) {
        self.denied_domains
            .extend(network.denied_domains.iter().cloned());
        if kind == SourceKind::Managed && network.allow_managed_domains_only {
            self.managed_domains_only = true;
        }
        let from_project = matches!(kind, SourceKind::Local | SourceKind::Project);
        if let Some(terminate) = network.tls_terminate {
            if from_project {
                self.warnings.push(format!(
                    "{shown}: sandbox.network.tlsTerminate is honoured only in user or managed settings or --settings; ignored"
                ));
            } else {
                self.tls_terminate = self.tls_terminate || terminate;
            }
        }
        for (port, slot, key) in [
            (
                network.http_proxy_port,
                &mut self.proxy_ports.http,
                "httpProxyPort",
            ),
            (
                network.socks_proxy_port,
                &mut self.proxy_ports.socks,
                "socksProxyPort",
            ),
        ] {
            match port {
                Some(_) if from_project => self.warnings.push(format!(
                    "{shown}: sandbox.network.{key} is honoured only in user, managed or --settings files; ignored"
                )),
                Some(port) if slot.is_none() => *slot = Some(port),
                _ => {}
            }
        }
        if let Some(bind) = network.allow_local_binding {
            if bind && from_project && !self.trust.is_trusted() {
                self.warnings.push(format!(
                    "{shown}: sandbox.network.allowLocalBinding ignored: a project file in an untrusted workspace may only narrow what commands do"
                ));
            } else if self.allow_local_binding.is_none() {
                self.allow_local_binding = Some(bind);
            }
        }
        if network.allowed_domains.is_empty() {
            return;
        }
        let refused = if self.managed_domains_only && kind != SourceKind::Managed {
            Some("the managed settings allow their own domains only (allowManagedDomainsOnly)")
        } else if from_project && !self.trust.is_trusted() {
            Some("a project file in an untrusted workspace may only narrow what commands reach")
        } else {
            None
        };
        match refused {
            Some(why) => self.warnings.push(format!(
                "{shown}: sandbox.network.allowedDomains ignored: {why}"
            )),
            None => self
                .allowed_domains
                .extend(network.allowed_domains.iter().cloned()),
        }
    }
}

/// A file as read, and a note for each key carapace does not read.
fn read_file(path: &Path) -> Result<Option<(SettingsFile, Vec<String>)>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(SettingsError::Read {
                path: path.display().to_string(),
                reason: e.to_string(),
            });
        }
    };
    parse(&text, &path.display().to_string()).map(Some)
}

/// Settings given for one session, above the files.
#[derive(Debug, Clone, PartialEq)]
pub enum GivenSettings {
    /// A settings file's content.
    Inline(serde_json::Value),
    /// A settings file.
    File(PathBuf),
}

type ReadGiven = (Option<PathBuf>, SettingsFile, Vec<String>);

fn read_given(given: &GivenSettings) -> Result<ReadGiven, SettingsError> {
    let path = match given {
        GivenSettings::Inline(value) => {
            let (file, notes) = parse(&value.to_string(), "--settings")?;
            return Ok((None, file, notes));
        }
        GivenSettings::File(path) => path,
    };
    match read_file(path)? {
        Some((file, notes)) => Ok((Some(path.clone()), file, notes)),
        None => Err(SettingsError::Read {
            path: path.display().to_string(),
            reason: "no such file".into(),
        }),
    }
}

fn parse(text: &str, shown: &str) -> Result<(SettingsFile, Vec<String>), SettingsError> {
    let invalid = |e: serde_json::Error| SettingsError::Invalid {
        path: shown.into(),
        reason: e.to_string(),
    };
    let (file, unread) = keys::read(text).map_err(invalid)?;
    let notes = unread
        .into_iter()
        .map(|(key, why)| match why {
            Some(why) => format!("{shown}: `{key}` is not honoured ({why}); ignored"),
            None => format!("{shown}: `{key}` is not used by carapace; ignored"),
        })
        .collect();
    Ok((file, notes))
}

/// A secret commands use without holding it (`sandbox.credentials` in
/// `mask` mode): they see a stand-in, and the egress proxy puts the value
/// in only on the way to `inject_hosts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskedSecret {
    pub source: MaskedSource,
    /// `extract`: a regular expression; only what its group 1 captures in
    /// each match is masked, so the rest stays readable (a connection
    /// string's password).
    pub extract: Option<String>,
    pub inject_hosts: Vec<String>,
}

/// Where a masked secret's value is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaskedSource {
    /// A variable of the user's environment.
    Variable(String),
    /// A file (absolute): commands read a copy with stand-ins in it.
    File(PathBuf),
}

#[cfg(test)]
mod tests;
