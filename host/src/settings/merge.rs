//! Merging one settings file into what the files above it set: each
//! part in a function of its own. A file of higher precedence comes first
//! and wins; a project file (`.carapace/settings*.json`) may tighten, and
//! widens only in a trusted workspace.

use super::{
    Dialect, ProjectItem, Settings, SettingsError, SettingsFile, is_forbidden_project_env,
};
use crate::policy::{Anchors, HostPattern, PermissionMode, Rule, RuleKind, RuleSource, SourceKind};
use std::path::{Path, PathBuf};

/// One settings file, read, and where it came from.
pub(super) struct Source {
    pub kind: SourceKind,
    pub path: Option<PathBuf>,
    pub file: SettingsFile,
    dialect: Dialect,
    /// What reading it found to say (keys carapace does not read).
    notes: Vec<String>,
    /// The file's name in messages (`--settings` for inline JSON).
    shown: String,
}

impl Source {
    pub(super) fn new(
        kind: SourceKind,
        path: Option<PathBuf>,
        file: SettingsFile,
        dialect: Dialect,
        notes: Vec<String>,
    ) -> Self {
        let shown = path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "--settings".into());
        Self {
            kind,
            path,
            file,
            dialect,
            notes,
            shown,
        }
    }

    pub(super) fn shown(&self) -> &str {
        &self.shown
    }

    /// Where the file's rules come from, as a rule keeps it.
    pub(super) fn rule_source(&self) -> RuleSource {
        RuleSource {
            kind: self.kind,
            file: self.path.clone(),
        }
    }

    /// A project file (shared or local): it widens nothing unless the
    /// workspace is trusted.
    pub(super) fn is_project(&self) -> bool {
        matches!(self.kind, SourceKind::Local | SourceKind::Project)
    }

    /// What the file's rules resolve paths against: a project file's `/p`
    /// is relative to the project it is in.
    fn anchors(&self, locations: &super::Locations) -> Anchors {
        let project = match (self.kind, &self.path) {
            (SourceKind::Local | SourceKind::Project, Some(p)) => p
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or_else(|| locations.cwd.clone()),
            _ => locations.cwd.clone(),
        };
        Anchors {
            cwd: locations.cwd.clone(),
            home: locations.home.clone(),
            project,
        }
    }
}

impl Settings {
    /// Merges `source` below what the files before it set.
    pub(super) fn merge(
        &mut self,
        mut source: Source,
        locations: &super::Locations,
    ) -> Result<(), SettingsError> {
        if let Some(path) = &source.path {
            self.files.push(path.clone());
        }
        self.warnings.extend(source.notes.iter().cloned());
        self.merge_scalars(&source)?;
        self.merge_rules(&source, locations)?;
        self.merge_dirs(&source, locations);
        self.merge_env(&source);
        self.merge_signatures(&source);
        self.merge_definitions(&source);
        self.merge_sandbox(&source)?;
        let anchors = source.anchors(locations);
        let auto_mode = std::mem::take(&mut source.file.auto_mode);
        (self.auto_mode).merge(&auto_mode, &source, &anchors, &mut self.warnings);
        let credentials = std::mem::take(&mut source.file.sandbox.credentials);
        credentials.apply(&source, &anchors, self);
        let filesystem = std::mem::take(&mut source.file.sandbox.filesystem);
        filesystem.apply(&source, &anchors, self)
    }

    /// The model, the thinking, the style, the agent, the mode.
    fn merge_scalars(&mut self, source: &Source) -> Result<(), SettingsError> {
        let (file, shown, from_project) = (&source.file, &source.shown, source.is_project());
        if self.always_thinking.is_none() {
            self.always_thinking = file.always_thinking_enabled;
        }
        if self.code_mode.is_none()
            && let Some(given) = &file.code_mode
        {
            self.code_mode = super::CodeModeSetting::read(given, shown, &mut self.warnings);
        }
        if self.output_style.is_none() {
            self.output_style = file.output_style.clone();
        }
        if self.model.is_none() {
            self.model = file.model.clone();
        }
        if self.agent.is_none() && (!from_project || self.trust.is_trusted()) {
            self.agent = file.agent.clone();
        }
        if file.permissions.disable_bypass_permissions_mode.as_deref() == Some("disable") {
            self.bypass_disabled = true;
        }
        if self.default_mode.is_none()
            && let Some(mode) = &file.permissions.default_mode
        {
            let parsed = PermissionMode::parse(mode).ok_or_else(|| SettingsError::Invalid {
                path: shown.to_string(),
                reason: format!("unknown permissions.defaultMode `{mode}`"),
            })?;
            let wider = matches!(
                parsed,
                PermissionMode::AcceptEdits | PermissionMode::BypassPermissions
            );
            if from_project && parsed == PermissionMode::Auto {
                // As Claude Code: a repository cannot put the session in
                // auto mode, trusted or not.
                self.warnings.push(format!(
                    "{shown}: permissions.defaultMode `auto` is honoured only in user, managed or --settings sources; ignored"
                ));
            } else if !(from_project && wider)
                || self
                    .trust
                    .admits(ProjectItem::WiderMode, shown, &mut self.warnings)
            {
                self.default_mode = Some(parsed);
            }
        }
        Ok(())
    }

    /// Deny and ask rules only tighten; a project's allow rules widen, so
    /// they need a trusted workspace. Every rule is parsed, admitted or
    /// not: a broken file is an error whatever the trust.
    fn merge_rules(
        &mut self,
        source: &Source,
        locations: &super::Locations,
    ) -> Result<(), SettingsError> {
        let (file, shown, from_project) = (&source.file, &source.shown, source.is_project());
        let anchors = source.anchors(locations);
        let rule_source = RuleSource {
            kind: source.kind,
            file: source.path.clone(),
        };
        // A project's deny and ask rules only tighten; its allow rules
        // widen, so they need a trusted workspace.
        let allow_admitted = !from_project
            || file.permissions.allow.is_empty()
            || self
                .trust
                .admits(ProjectItem::AllowRules, shown, &mut self.warnings);
        for (kind_of, list) in [
            (RuleKind::Deny, &file.permissions.deny),
            (RuleKind::Ask, &file.permissions.ask),
            (RuleKind::Allow, &file.permissions.allow),
        ] {
            for text in list {
                // Parsed even when not admitted: a broken file is an
                // error whatever the trust (a Claude Code file's entry
                // carapace cannot read is a warning, on the safe side).
                let rule = match Rule::parse(text, kind_of, rule_source.clone(), &anchors) {
                    Ok(rule) => Some(rule),
                    Err(e) if source.dialect == Dialect::ClaudeCode => fallback_rule(
                        text,
                        kind_of,
                        &rule_source,
                        &anchors,
                        &e,
                        shown,
                        &mut self.warnings,
                    ),
                    Err(e) => {
                        return Err(SettingsError::Rule {
                            path: shown.clone(),
                            source: e,
                        });
                    }
                };
                if let Some(rule) = rule
                    && (kind_of != RuleKind::Allow || allow_admitted)
                {
                    self.rules.push(rule);
                }
            }
        }
        Ok(())
    }

    /// Additional directories (a project's need a trusted workspace).
    fn merge_dirs(&mut self, source: &Source, locations: &super::Locations) {
        let (file, shown, from_project) = (&source.file, &source.shown, source.is_project());
        let dirs_admitted = !from_project
            || file.permissions.additional_directories.is_empty()
            || self.trust.admits(
                ProjectItem::AdditionalDirectories,
                shown,
                &mut self.warnings,
            );
        for dir in file
            .permissions
            .additional_directories
            .iter()
            .filter(|_| dirs_admitted)
        {
            let dir = if dir.is_absolute() {
                dir.clone()
            } else {
                locations.cwd.join(dir)
            };
            if !from_project {
                self.user_dirs.push(dir.clone());
            }
            self.additional_dirs.push(dir);
        }
    }

    /// `pluginSignatures`: whose keys are trusted is the user's or the
    /// administrator's to say, never a project's.
    fn merge_signatures(&mut self, source: &Source) {
        let (file, shown) = (&source.file.plugin_signatures, &source.shown);
        if file.keys.is_empty()
            && file.identities.is_empty()
            && file.trusted_root.is_none()
            && !file.required
        {
            return;
        }
        if source.is_project() {
            self.warnings.push(format!(
                "{shown}: pluginSignatures is honoured only in user or managed settings; ignored"
            ));
            return;
        }
        self.signatures_required |= file.required;
        for (name, key) in &file.keys {
            if !self.signature_keys.iter().any(|(n, _)| n == name) {
                self.signature_keys.push((name.clone(), key.clone()));
            }
        }
        for (name, signer) in &file.identities {
            if !self.signature_identities.iter().any(|i| &i.name == name) {
                self.signature_identities.push(super::SignerIdentity {
                    name: name.clone(),
                    identity: signer.identity.clone(),
                    issuer: signer.issuer.clone(),
                });
            }
        }
        if let (None, Some(root)) = (&self.signature_trusted_root, &file.trusted_root) {
            let folder = source.path.as_ref().and_then(|p| p.parent());
            let root = match folder {
                Some(folder) => folder.join(root),
                None => PathBuf::from(root),
            };
            self.signature_trusted_root = Some(root.display().to_string());
        }
    }

    /// `env`: a project file's needs a trusted workspace, and may never set
    /// what redirects the API, the credentials or carapace's directories.
    fn merge_env(&mut self, source: &Source) {
        let (file, shown, from_project) = (&source.file, &source.shown, source.is_project());
        let env_admitted = !from_project
            || (file.env.is_empty() && file.plugin_config.is_empty())
            || self
                .trust
                .admits(ProjectItem::Env, shown, &mut self.warnings);
        for (name, value) in file.env.iter().filter(|_| env_admitted) {
            if from_project && is_forbidden_project_env(name) {
                self.warnings.push(format!(
                    "{shown}: a project file may not set {name} (it could redirect the API, the credentials or carapace's directories); ignored"
                ));
                continue;
            }
            self.env.entry(name.clone()).or_insert(value.clone());
        }
        if env_admitted {
            for (plugin, values) in &file.plugin_config {
                let merged = self.plugin_config.entry(plugin.clone()).or_default();
                for (key, value) in values {
                    merged.entry(key.clone()).or_insert(value.clone());
                }
            }
        }
    }

    /// Agents and hooks (a project's need a trusted workspace);
    /// `apiKeyHelper`, refused.
    fn merge_definitions(&mut self, source: &Source) {
        let (file, shown, from_project) = (&source.file, &source.shown, source.is_project());
        if file.api_key_helper.is_some() {
            self.warnings.push(format!(
                "{shown}: apiKeyHelper is not supported{}; ignored",
                if from_project {
                    " (and a project file may never set it)"
                } else {
                    ""
                }
            ));
        }
        if let Some(agents) = file.agents.clone()
            && (!from_project
                || self
                    .trust
                    .admits(ProjectItem::Agents, shown, &mut self.warnings))
        {
            self.agents.push((agents, shown.clone()));
        }
        if !file.enabled_plugins.is_empty()
            && (!from_project
                || self
                    .trust
                    .admits(ProjectItem::Plugins, shown, &mut self.warnings))
        {
            for (id, on) in &file.enabled_plugins {
                self.enabled_plugins.entry(id.clone()).or_insert(*on);
                self.enabled_plugin_sources
                    .entry(id.clone())
                    .or_insert(source.kind);
            }
        }
        let admitted = !from_project
            || (file.allowed_http_hook_urls.is_none() && file.http_hook_allowed_env_vars.is_none())
            || self
                .trust
                .admits(ProjectItem::Hooks, shown, &mut self.warnings);
        if admitted {
            let managed = source.kind == SourceKind::Managed;
            let (urls_fixed, env_fixed) = &mut self.http_hook_lists_managed;
            gather(
                &mut self.http_hook_urls,
                &file.allowed_http_hook_urls,
                managed,
                urls_fixed,
            );
            gather(
                &mut self.http_hook_env,
                &file.http_hook_allowed_env_vars,
                managed,
                env_fixed,
            );
        }
        if let Some(hooks) = file.hooks.clone() {
            let source = RuleSource {
                kind: source.kind,
                file: source.path.clone(),
            };
            if !from_project
                || self
                    .trust
                    .admits(ProjectItem::Hooks, shown, &mut self.warnings)
            {
                self.hooks.push((hooks, source));
            } else {
                self.held_hooks.push((hooks, source));
            }
        }
    }

    /// The OS sandbox: a project file may tighten it, never loosen it.
    fn merge_sandbox(&mut self, source: &Source) -> Result<(), SettingsError> {
        let (file, shown, from_project) = (&source.file, &source.shown, source.is_project());
        let kind = source.kind;
        // A project file may tighten the OS sandbox, never loosen it.
        if let Some(required) = file.sandbox.required {
            if from_project && !required {
                self.warnings.push(format!(
                    "{shown}: a project file may not make the OS sandbox optional; ignored"
                ));
            } else if self.sandbox_required.is_none() {
                self.sandbox_required = Some(required);
            }
        }
        if file.sandbox.enabled == Some(false) {
            self.warnings.push(format!(
                "{shown}: `sandbox.enabled: false` is not honoured: carapace runs every command in its OS sandbox"
            ));
        }
        if file.sandbox.allow_unsandboxed_commands == Some(true) {
            self.warnings.push(format!(
                "{shown}: `sandbox.allowUnsandboxedCommands` is not honoured: carapace never runs a command outside its OS sandbox"
            ));
        }
        self.merge_network(&file.sandbox.network, kind, shown);
        if let Some(mb) = file.sandbox.temp_dir_max_mb {
            self.sandbox_temp_max_mb = Some(self.sandbox_temp_max_mb.map_or(mb, |m| m.min(mb)));
        }
        if let Some(network) = file.sandbox.allow_network {
            if from_project && network {
                self.warnings.push(format!(
                    "{shown}: a project file may not give commands network access; ignored"
                ));
            } else if self.sandbox_network.is_none() {
                self.sandbox_network = Some(network);
            }
        }
        if !file.sandbox.allow_internal_addresses.is_empty() {
            if from_project {
                self.warnings.push(format!(
                    "{shown}: sandbox.allowInternalAddresses is honoured only in user or managed settings; ignored"
                ));
            } else {
                for text in &file.sandbox.allow_internal_addresses {
                    let pattern =
                        HostPattern::parse(text).map_err(|e| SettingsError::InternalAddress {
                            path: shown.clone(),
                            source: e,
                        })?;
                    if pattern.is_wildcard() {
                        return Err(SettingsError::Invalid {
                            path: shown.clone(),
                            reason: format!(
                                "sandbox.allowInternalAddresses lists exact hosts, not `{text}`"
                            ),
                        });
                    }
                    self.internal_addresses.push(pattern);
                }
            }
        }
        if !file.sandbox.mcp_expandable_variables.is_empty() {
            if from_project {
                self.warnings.push(format!(
                    "{shown}: sandbox.mcpExpandableVariables is honoured only in user or managed settings; ignored"
                ));
            } else {
                self.mcp_expandable
                    .extend(file.sandbox.mcp_expandable_variables.iter().cloned());
            }
        }
        if from_project && !file.trusted_workspaces.is_empty() {
            self.warnings.push(format!(
                "{shown}: trustedWorkspaces is honoured only in user or managed settings; ignored"
            ));
        }
        Ok(())
    }
}

/// Adds one file's list to a restriction list gathered across files
/// (highest first): the managed file's list, when it has one, is the
/// whole list (`fixed`); the others' join.
fn gather(
    all: &mut Option<Vec<String>>,
    file: &Option<Vec<String>>,
    managed: bool,
    fixed: &mut bool,
) {
    let Some(list) = file else {
        return;
    };
    if *fixed {
        return;
    }
    *fixed = managed;
    all.get_or_insert_with(Vec::new)
        .extend(list.iter().cloned());
}

/// A rule from a Claude Code file that carapace cannot parse: an allow
/// rule is dropped (nothing widens), a deny or ask rule covers its whole
/// tool (the guard holds, more broadly). `None` when not even the tool's
/// name can be read.
fn fallback_rule(
    text: &str,
    kind: RuleKind,
    source: &RuleSource,
    anchors: &Anchors,
    error: &crate::policy::RuleError,
    shown: &str,
    warnings: &mut Vec<String>,
) -> Option<Rule> {
    if kind == RuleKind::Allow {
        warnings.push(format!(
            "{shown}: cannot read the allow rule `{text}` ({error}); ignored"
        ));
        return None;
    }
    let tool = text.split('(').next().unwrap_or("").trim();
    match Rule::parse(tool, kind, source.clone(), anchors) {
        Ok(rule) => {
            warnings.push(format!(
                "{shown}: cannot read the {} rule `{text}` ({error}); it applies to all of {tool} instead",
                kind_name(kind)
            ));
            Some(rule)
        }
        Err(_) => {
            warnings.push(format!(
                "{shown}: cannot read the {} rule `{text}` ({error}), nor the tool it names; ignored",
                kind_name(kind)
            ));
            None
        }
    }
}

fn kind_name(kind: RuleKind) -> &'static str {
    match kind {
        RuleKind::Allow => "allow",
        RuleKind::Deny => "deny",
        RuleKind::Ask => "ask",
    }
}
