//! What only Claude Code's settings say, and how carapace honours it:
//! `sandbox.filesystem`, the administrator's `allowManaged…Only` switches,
//! `disableAllHooks`, and a rule written in syntax carapace cannot read.
//! Whatever carapace cannot honour exactly, it honours on the safe side: a
//! guard is never dropped, a permission never widened.

use super::merge::Source;
use super::{MaskedSecret, MaskedSource, Settings, SettingsError};
use crate::policy::{Anchors, Rule, RuleKind, RuleSource, SourceKind};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// `sandbox.filesystem`: paths no command may read or write. Claude Code's
/// prefixes: `//` from the root, `~/` from the home directory, `/` from the
/// settings file's folder, anything else from the working directory.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FilesystemFile {
    #[serde(default)]
    deny_read: Vec<String>,
    #[serde(default)]
    deny_write: Vec<String>,
}

impl FilesystemFile {
    /// The read-denied paths as Read deny rules (which commands honour by
    /// hiding them), and the write-denied paths made absolute (commands
    /// find them read-only).
    pub(super) fn apply(
        &self,
        source: &Source,
        anchors: &Anchors,
        settings: &mut Settings,
    ) -> Result<(), SettingsError> {
        let folder = settings_folder(source, anchors);
        let rule_source = RuleSource {
            kind: source.kind,
            file: source.path.clone(),
        };
        for spec in &self.deny_read {
            let absolute = absolute(spec, &folder, anchors);
            let text = format!("Read(/{})", absolute.display());
            let rule =
                Rule::parse(&text, RuleKind::Deny, rule_source.clone(), anchors).map_err(|e| {
                    SettingsError::Rule {
                        path: source.shown().to_string(),
                        source: e,
                    }
                })?;
            settings.rules.push(rule);
        }
        settings.command_write_denied.extend(
            self.deny_write
                .iter()
                .map(|spec| absolute(spec, &folder, anchors)),
        );
        Ok(())
    }
}

/// `sandbox.credentials`, as Claude Code spells it: credential files and
/// variables kept from commands. Every file entry is withheld from every
/// tool; a file or variable in `mask` mode is given to commands as a
/// stand-in (a copy of the file with stand-ins in it) that the proxy swaps
/// for the real value on the way to its `injectHosts`. Read from the user's own places only: a
/// project could otherwise send a user's secret to a host of its choosing.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CredentialsFile {
    #[serde(default)]
    files: Vec<CredentialEntry>,
    #[serde(default)]
    env_vars: Vec<CredentialEntry>,
    /// A masked secret may be put into plain (unencrypted) HTTP too.
    #[serde(default)]
    allow_plaintext_inject: bool,
    /// What carapace does not read (`awsPairs`, `sigv4`): named in a
    /// warning.
    #[serde(flatten)]
    unread: std::collections::BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CredentialEntry {
    path: Option<String>,
    name: Option<String>,
    mode: Option<String>,
    /// Only group 1 of each match is masked.
    extract: Option<String>,
    /// Where a masked secret may be sent (else nowhere).
    #[serde(default)]
    inject_hosts: Vec<String>,
    /// What carapace does not read (`decode`, `maskClaims`,
    /// `onExtractNoMatch`, `maskDuplicates`): named in a warning; the
    /// secret is masked whole (or by `extract`) instead.
    #[serde(flatten)]
    unread: std::collections::BTreeMap<String, serde_json::Value>,
}

impl CredentialEntry {
    /// A warning naming the fields carapace does not read, if any.
    fn unread_warning(&self, shown: &str, label: &str) -> Option<String> {
        if self.unread.is_empty() {
            return None;
        }
        let fields: Vec<&str> = self.unread.keys().map(String::as_str).collect();
        Some(format!(
            "{shown}: sandbox.credentials `{label}`: {} not read by carapace; the secret is masked whole (or by extract) instead",
            fields.join(", ")
        ))
    }
}

impl CredentialsFile {
    pub(super) fn apply(&self, source: &Source, anchors: &Anchors, settings: &mut Settings) {
        if self.files.is_empty() && self.env_vars.is_empty() && self.unread.is_empty() {
            return;
        }
        let shown = source.shown();
        if !self.unread.is_empty() {
            let keys: Vec<&str> = self.unread.keys().map(String::as_str).collect();
            settings.warnings.push(format!(
                "{shown}: sandbox.credentials {} not read by carapace; ignored",
                keys.join(", ")
            ));
        }
        if source.is_project() {
            settings.warnings.push(format!(
                "{shown}: sandbox.credentials is honoured only in user or managed settings or --settings; ignored"
            ));
            return;
        }
        let folder = settings_folder(source, anchors);
        for entry in &self.files {
            let Some(path) = entry.path.as_deref().or(entry.name.as_deref()) else {
                settings.warnings.push(format!(
                    "{shown}: a sandbox.credentials.files entry names no path; ignored"
                ));
                continue;
            };
            let absolute = absolute(path, &folder, anchors);
            settings.warnings.extend(entry.unread_warning(shown, path));
            if entry.mode.as_deref() == Some("mask") {
                settings.masked.push(MaskedSecret {
                    source: MaskedSource::File(absolute.clone()),
                    extract: entry.extract.clone(),
                    inject_hosts: entry.inject_hosts.clone(),
                });
            }
            settings.credential_files.push(absolute);
        }
        for entry in self
            .env_vars
            .iter()
            .filter(|e| e.mode.as_deref() == Some("mask"))
        {
            let Some(name) = entry.name.as_deref() else {
                settings.warnings.push(format!(
                    "{shown}: a sandbox.credentials.envVars entry names no variable; ignored"
                ));
                continue;
            };
            settings.warnings.extend(entry.unread_warning(shown, name));
            settings.masked.push(MaskedSecret {
                source: MaskedSource::Variable(name.to_string()),
                extract: entry.extract.clone(),
                inject_hosts: entry.inject_hosts.clone(),
            });
        }
        settings.plaintext_inject |= self.allow_plaintext_inject;
    }
}

/// The folder of the settings file a source came from (the working
/// directory for settings given as text): where `/path` entries start.
fn settings_folder(source: &Source, anchors: &Anchors) -> PathBuf {
    source
        .path
        .as_ref()
        .and_then(|p| p.parent())
        .map_or_else(|| anchors.cwd.clone(), Path::to_path_buf)
}

/// A `sandbox.filesystem` path, absolute (a trailing `/**` or `/` names the
/// folder itself).
fn absolute(spec: &str, folder: &Path, anchors: &Anchors) -> PathBuf {
    let spec = spec.trim();
    let spec = spec
        .strip_suffix("/**")
        .or_else(|| spec.strip_suffix('/').filter(|s| !s.is_empty()))
        .unwrap_or(spec);
    if let Some(rest) = spec.strip_prefix("//") {
        PathBuf::from("/").join(rest)
    } else if let Some(rest) = spec.strip_prefix("~/") {
        anchors.home.join(rest)
    } else if spec == "~" {
        anchors.home.clone()
    } else if let Some(rest) = spec.strip_prefix('/') {
        folder.join(rest)
    } else {
        anchors.cwd.join(spec.strip_prefix("./").unwrap_or(spec))
    }
}

/// What the files say about hooks and rules as a whole, applied once every
/// file is merged.
#[derive(Debug, Default)]
pub(super) struct ManagedLimits {
    /// `allowManagedHooksOnly` in a managed file.
    hooks_managed_only: bool,
    /// `allowManagedPermissionRulesOnly` in a managed file.
    rules_managed_only: bool,
    /// `disableAllHooks` in a managed file: no hook at all.
    no_hooks: bool,
    /// `disableAllHooks` in a file the user controls (their own,
    /// `--settings`, a trusted project's): no hook but the managed ones.
    no_user_hooks: Option<String>,
}

impl ManagedLimits {
    pub(super) fn of(sources: &[Source], trusted: bool, warnings: &mut Vec<String>) -> Self {
        let mut limits = ManagedLimits::default();
        for source in sources {
            let file = &source.file;
            let managed = source.kind == SourceKind::Managed;
            let project = matches!(source.kind, SourceKind::Local | SourceKind::Project);
            if managed {
                limits.hooks_managed_only |= file.allow_managed_hooks_only;
                limits.rules_managed_only |= file.allow_managed_permission_rules_only;
            } else if file.allow_managed_hooks_only || file.allow_managed_permission_rules_only {
                warnings.push(format!(
                    "{}: allowManagedHooksOnly and allowManagedPermissionRulesOnly are honoured only in managed settings; ignored",
                    source.shown()
                ));
            }
            if file.disable_all_hooks == Some(true) {
                if managed {
                    limits.no_hooks = true;
                } else if project && !trusted {
                    warnings.push(format!(
                        "{}: disableAllHooks ignored: a project file in an untrusted workspace may not switch off your hooks",
                        source.shown()
                    ));
                } else if limits.no_user_hooks.is_none() {
                    limits.no_user_hooks = Some(source.shown().to_string());
                }
            }
        }
        limits
    }

    pub(super) fn apply(self, settings: &mut Settings) {
        let before = settings.hooks.len();
        if self.no_hooks {
            settings.hooks.clear();
        } else if self.hooks_managed_only || self.no_user_hooks.is_some() {
            settings
                .hooks
                .retain(|(_, source)| source.kind == SourceKind::Managed);
        }
        let dropped = before - settings.hooks.len();
        if dropped > 0 {
            let why = if self.no_hooks {
                "the managed settings disable all hooks".to_string()
            } else if self.hooks_managed_only {
                "the managed settings allow their own hooks only".to_string()
            } else {
                format!(
                    "{} disables all hooks",
                    self.no_user_hooks.unwrap_or_default()
                )
            };
            settings
                .warnings
                .push(format!("{dropped} hook setting(s) not loaded: {why}"));
        }
        if self.rules_managed_only {
            settings.managed_rules_only = true;
            let before = settings.rules.len();
            settings
                .rules
                .retain(|r| r.kind != RuleKind::Allow || r.source.kind == SourceKind::Managed);
            let dropped = before - settings.rules.len();
            if dropped > 0 {
                settings.warnings.push(format!(
                    "{dropped} allow rule(s) not applied: the managed settings allow their own permission rules only (deny and ask rules of every file still apply)"
                ));
            }
        }
    }
}
