//! The policy step: the session's rules (settings, then flags), its
//! working directories, the permission mode, the process configuration
//! its commands run under and the egress proxy they reach the network
//! through.

use super::builder::{SessionBuilder, SessionError};
use super::identity::Identity;
use crate::policy::{
    Anchors, LiveReadDenials, Policy, PolicyConfig, Rule, RuleError, RuleKind, RuleSet, RuleSource,
    SHELL_START_UP, SourceKind, split_rules,
};
use crate::sandbox::{DeniedPaths, ProcessConfig};
use crate::settings::Settings;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the policy step made.
pub(super) struct SessionPolicy {
    pub policy: Policy,
    /// How the session's commands (and MCP servers) run.
    pub process: ProcessConfig,
    /// The proxy commands reach the network through, when any domain is
    /// allowed.
    pub egress: Option<Arc<crate::sandbox::egress::EgressProxy>>,
    /// What commands cannot see, recomputed when rules join.
    pub read_denials: Arc<LiveReadDenials>,
}

impl SessionBuilder {
    /// The rules, the working directories and the mode; the process
    /// configuration of the session's commands.
    pub(super) fn policy(
        &self,
        settings: &Settings,
        identity: &Identity,
        warnings: &mut Vec<String>,
    ) -> Result<SessionPolicy, SessionError> {
        let super::SessionPaths {
            cwd,
            home,
            config_dir,
        } = &self.spec.paths;
        if settings.bypass_disabled
            && identity.mode == crate::policy::PermissionMode::BypassPermissions
        {
            return Err(SessionError::Invalid(
                "bypassPermissions is disabled by the settings (permissions.disableBypassPermissionsMode)".into(),
            ));
        }
        let allowed: &[String] = if settings.managed_rules_only
            && !self.spec.permissions.allowed.is_empty()
        {
            warnings.push(
                "--allowedTools ignored: the managed settings allow their own permission rules only".into(),
            );
            &[]
        } else {
            &self.spec.permissions.allowed
        };
        let rules = session_rules(
            settings.rules.clone(),
            allowed,
            &self.spec.permissions.disallowed,
            cwd,
            home,
        )?;
        let (additional_dirs, write_roots) = self.session_dirs(settings, identity);
        let policy = Policy::from_config(PolicyConfig {
            mode: identity.mode,
            bypass_allowed: self.spec.permissions.bypass_allowed && !settings.bypass_disabled,
            rules: RuleSet::new(rules),
            cwd: cwd.clone(),
            additional_dirs,
            home: home.clone(),
            config_dir: config_dir.clone(),
            internal_hosts: settings.internal_addresses.clone(),
            credential_files: settings.credential_files.clone(),
            masked_files: settings
                .masked
                .iter()
                .filter_map(|m| match &m.source {
                    crate::settings::MaskedSource::File(path) => Some(path.clone()),
                    crate::settings::MaskedSource::Variable(_) => None,
                })
                .collect(),
            auto_hard_deny: settings.auto_mode.hard_deny_rules.clone(),
        });
        // Listed afresh for each command, from the rules as they are then.
        let read_denials = Arc::new(LiveReadDenials::new(
            policy.rules(),
            policy.withheld(),
            write_roots.clone(),
        ));
        let read_denied = Some(read_denials.clone() as Arc<dyn DeniedPaths>);
        // Through the SDK's `can_use_tool`, an unlisted host can be asked
        // about: the proxy then runs even with no domain allowed.
        let asks = self.spec.permissions.asker == crate::tools::Asker::Prompter { hosts: true }
            && !settings.managed_domains_only;
        // Whoever answers questions may also grant hosts (RequestPermissions):
        // the proxy runs whenever someone can.
        // So may auto mode's classifier, for a host no rule names.
        let grants = (self.spec.permissions.asker != crate::tools::Asker::Nobody
            || identity.mode == crate::policy::PermissionMode::Auto)
            && !settings.managed_domains_only;
        let egress = egress_proxy(settings, policy.rules(), asks || grants)?.map(Arc::new);
        let mut process = ProcessConfig {
            helper: self
                .helper
                .clone()
                .or_else(crate::sandbox::process::default_helper),
            protected: command_protected(home, config_dir, cwd)
                .into_iter()
                .chain(settings.command_write_denied.iter().cloned())
                .collect(),
            protected_names: crate::policy::command_protected_names(),
            write_roots,
            read_denied,
            allow_network: settings.sandbox_network.unwrap_or(false),
            allow_local_binding: settings.allow_local_binding.unwrap_or(false),
            require_os_sandbox: settings.sandbox_required.unwrap_or(true),
            temp_limit: settings
                .sandbox_temp_max_mb
                .map_or(crate::sandbox::process::DEFAULT_TEMP_LIMIT, |mb| mb << 20),
            egress: egress.as_ref().map(|p| p.socket().to_path_buf()),
            ..ProcessConfig::new(cwd)
        };
        use_without_holding(settings, warnings, &mut process, egress.as_deref())?;
        Ok(SessionPolicy {
            policy,
            process,
            egress,
            read_denials,
        })
    }

    /// The directories beside the working one that tools may read (the
    /// settings', `--add-dir`, and where oversized results are saved), and
    /// where commands may write: the working directory and the directories
    /// the user named (their settings, `--add-dir`) — never a directory only
    /// a project file names; each command gets its own temp dir.
    fn session_dirs(
        &self,
        settings: &Settings,
        identity: &Identity,
    ) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let cwd = &self.spec.paths.cwd;
        let mut additional_dirs = settings.additional_dirs.clone();
        additional_dirs.extend(self.spec.add_dirs.iter().map(|d| {
            if d.is_absolute() {
                d.clone()
            } else {
                cwd.join(d)
            }
        }));
        let flag_dirs = additional_dirs
            .iter()
            .skip(settings.additional_dirs.len())
            .cloned();
        let mut write_roots = vec![cwd.clone()];
        write_roots.extend(settings.user_dirs.iter().cloned());
        write_roots.extend(flag_dirs);
        // Tool results too large for the model's context are saved here,
        // where Read may page through them.
        additional_dirs.push(identity.dir.join("tool-results"));
        (additional_dirs, write_roots)
    }
}

/// The settings' rules and the command line's, deny rules first (a deny
/// anywhere beats an allow anywhere).
fn session_rules(
    mut rules: Vec<Rule>,
    allowed: &[String],
    disallowed: &[String],
    cwd: &Path,
    home: &Path,
) -> Result<Vec<Rule>, RuleError> {
    let anchors = Anchors {
        cwd: cwd.to_path_buf(),
        home: home.to_path_buf(),
        project: cwd.to_path_buf(),
    };
    let source = RuleSource {
        kind: SourceKind::CliFlag,
        file: None,
    };
    for (kind, list) in [(RuleKind::Deny, disallowed), (RuleKind::Allow, allowed)] {
        for text in list.iter().flat_map(|l| split_rules(l)) {
            rules.push(Rule::parse(&text, kind, source.clone(), &anchors)?);
        }
    }
    rules.sort_by_key(|r| match r.kind {
        RuleKind::Deny => 0,
        RuleKind::Ask => 1,
        RuleKind::Allow => 2,
    });
    Ok(rules)
}

/// Paths outside the workspace's own protected names that commands may not
/// write even when they lie under a write root: what runs in every new
/// shell, and carapace's own configuration.
fn command_protected(home: &Path, config_dir: &Path, cwd: &Path) -> Vec<PathBuf> {
    use crate::policy::{HOME_START_UP, hooks_paths};
    let mut paths: Vec<PathBuf> = SHELL_START_UP.iter().map(|name| home.join(name)).collect();
    paths.extend(HOME_START_UP.iter().map(|(name, _)| home.join(name)));
    // git's hooks folder wherever core.hooksPath puts it.
    paths.extend(hooks_paths(&cwd.join(".git"), home));
    paths.push(config_dir.to_path_buf());
    paths
}

/// carapace's egress proxy for this session's commands, when the settings
/// (or WebFetch domain rules) allow them some domains, or unlisted hosts
/// can be asked about (`asks`), and give them no network of their own.
fn egress_proxy(
    settings: &Settings,
    rules: &RuleSet,
    asks: bool,
) -> Result<Option<crate::sandbox::egress::EgressProxy>, SessionError> {
    use crate::sandbox::egress::{EgressProxy, EgressRules};
    let mut allowed = settings.allowed_domains.clone();
    allowed.extend(rules.web_fetch_domains(crate::policy::RuleKind::Allow));
    let mut denied = settings.denied_domains.clone();
    denied.extend(rules.web_fetch_domains(crate::policy::RuleKind::Deny));
    let ports = settings.proxy_ports;
    let own_proxy = ports.http.is_some() || ports.socks.is_some();
    if (allowed.is_empty() && !asks && !own_proxy) || settings.sandbox_network == Some(true) {
        return Ok(None);
    }
    let rules = EgressRules::new(&allowed, &denied)
        .map_err(|e| SessionError::Invalid(format!("sandbox.network: {e}")))?;
    let proxy = EgressProxy::start_private(Arc::new(rules))
        .map_err(|e| SessionError::Invalid(format!("cannot start the egress proxy: {e}")))?;
    proxy.set_upstream(ports);
    Ok(Some(proxy))
}

/// Masked secrets (`sandbox.credentials` in `mask` mode): commands hold a
/// stand-in each; the value never leaves carapace but through the proxy,
/// and never comes back unredacted. With `tlsTerminate` the proxy reads
/// HTTPS too.
fn use_without_holding(
    settings: &Settings,
    warnings: &mut Vec<String>,
    process: &mut ProcessConfig,
    egress: Option<&crate::sandbox::egress::EgressProxy>,
) -> Result<(), SessionError> {
    let stand_ins = super::masked::stand_ins(settings, warnings);
    for (name, value) in &stand_ins.variables {
        process.command_env.set(name.clone(), value.clone());
    }
    for mask in &stand_ins.masks {
        crate::secrets::remember(&mask.name, mask.value());
    }
    let Some(proxy) = egress else {
        for (path, _) in &stand_ins.files {
            warnings.push(format!(
                "sandbox.credentials.files `{}` is masked, but commands reach no host (sandbox.network.allowedDomains is empty); it stays withheld",
                path.display()
            ));
        }
        return Ok(());
    };
    let folder = proxy.folder().map(Path::to_path_buf);
    for (n, (path, text)) in stand_ins.files.iter().enumerate() {
        // The copy lives in the proxy's private folder, gone with it.
        let copy = folder.as_ref().map(|f| f.join(format!("masked-{n}")));
        match copy.map(|c| std::fs::write(&c, text).map(|()| c)) {
            Some(Ok(copy)) => process.covers.push((path.clone(), copy)),
            Some(Err(e)) => warnings.push(format!(
                "sandbox.credentials.files `{}`: its stand-in copy cannot be written ({e}); it stays withheld",
                path.display()
            )),
            None => {}
        }
    }
    let masks = crate::sandbox::egress::Masks::new(stand_ins.masks, settings.plaintext_inject);
    proxy.set_masks(Arc::new(masks));
    if settings.tls_terminate {
        terminate_tls(proxy, process)?;
    }
    Ok(())
}

/// TLS tunnels end at the proxy: a fresh authority for the session, and
/// commands told to trust it beside the authorities they trusted already
/// (a bundle of both for OpenSSL, curl, Python and git; the authority
/// alone for Node, which adds it to its own).
fn terminate_tls(
    proxy: &crate::sandbox::egress::EgressProxy,
    process: &mut ProcessConfig,
) -> Result<(), SessionError> {
    use crate::sandbox::egress::authority::SessionAuthority;
    let fail = |why: String| SessionError::Invalid(format!("sandbox.network.tlsTerminate: {why}"));
    let authority = Arc::new(SessionAuthority::new().map_err(|e| fail(e.to_string()))?);
    use crate::sandbox::egress::authority::{pem_bundle, roots_of, system_certificates};
    // Read once: what the proxy verifies servers by is what commands
    // trusted before, plus the session's authority.
    let system = system_certificates().map_err(fail)?;
    proxy
        .terminate_tls(authority.clone(), roots_of(&system))
        .map_err(fail)?;
    let folder = proxy
        .folder()
        .ok_or_else(|| fail("the proxy has no folder of its own".into()))?;
    let own = authority.certificate_pem();
    let (authority_file, bundle_file) = (folder.join("authority.pem"), folder.join("bundle.pem"));
    std::fs::write(&authority_file, &own).map_err(|e| fail(e.to_string()))?;
    std::fs::write(&bundle_file, format!("{}{own}", pem_bundle(&system)))
        .map_err(|e| fail(e.to_string()))?;
    let bundle = bundle_file.display().to_string();
    for name in [
        "SSL_CERT_FILE",
        "CURL_CA_BUNDLE",
        "REQUESTS_CA_BUNDLE",
        "GIT_SSL_CAINFO",
    ] {
        process.command_env.set(name.into(), bundle.clone());
    }
    process.command_env.set(
        "NODE_EXTRA_CA_CERTS".into(),
        authority_file.display().to_string(),
    );
    // A program that reads the system's store itself (not through those
    // variables) finds the bundle there too, inside the sandbox only.
    for store in SYSTEM_STORES {
        process
            .covers
            .push((PathBuf::from(store), bundle_file.clone()));
    }
    Ok(())
}

/// Where Linux distributions keep the bundle of trusted authorities
/// (Debian and Ubuntu, Fedora and RHEL, Alpine and Arch, openSUSE); those
/// that exist are covered.
const SYSTEM_STORES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
];

/// Where the administrator's (managed) settings are: `/etc/carapace/`, or
/// the file `CARAPACE_MANAGED_SETTINGS` names when only an administrator
/// could have put it there. Otherwise whoever starts carapace could replace
/// the administrator's settings with their own (or with any harmless-looking
/// file root happens to own); the variable is then ignored, with a warning.
pub fn managed_settings_path() -> (PathBuf, Option<String>) {
    let standard = PathBuf::from("/etc/carapace/managed-settings.json");
    let named = std::env::var_os("CARAPACE_MANAGED_SETTINGS").map(PathBuf::from);
    managed_override(named, standard)
}

/// The managed settings file, given what the variable names: honoured
/// only when no administrator's file is in the standard place (it is never
/// replaced), and the named file is a regular file, named without links,
/// owned by root and writable by no one else, in folders that only root
/// can change (owned by root, writable by no one else or sticky).
fn managed_override(named: Option<PathBuf>, standard: PathBuf) -> (PathBuf, Option<String>) {
    let Some(named) = named else {
        return (standard, None);
    };
    match administrators_file(&named, &standard) {
        Ok(()) => (named, None),
        Err(why) => (
            standard,
            Some(format!(
                "CARAPACE_MANAGED_SETTINGS names {}, {why}; ignored (the managed settings are the administrator's)",
                named.display()
            )),
        ),
    }
}

fn administrators_file(named: &Path, standard: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    if standard.exists() {
        return Err(format!(
            "but {} exists, and the administrator's own managed settings are never replaced",
            standard.display()
        ));
    }
    let real = std::fs::canonicalize(named).map_err(|e| format!("which cannot be read ({e})"))?;
    if real != named {
        return Err(format!(
            "which is reached through a link (it is {})",
            real.display()
        ));
    }
    let meta =
        std::fs::symlink_metadata(named).map_err(|e| format!("which cannot be read ({e})"))?;
    if !meta.is_file() {
        return Err("which is not a regular file".into());
    }
    if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        return Err("which is not owned by root or is writable by others".into());
    }
    for folder in named.ancestors().skip(1) {
        let meta = std::fs::metadata(folder)
            .map_err(|e| format!("whose folder {} cannot be read ({e})", folder.display()))?;
        let sticky = meta.mode() & 0o1000 != 0;
        if meta.uid() != 0 || (meta.mode() & 0o022 != 0 && !sticky) {
            return Err(format!(
                "whose folder {} someone other than root could change",
                folder.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Every way a file not the administrator's could replace the managed
    /// settings is refused, with why; the control — a root-owned file in
    /// root's folders with no standard file — is honoured (as root only:
    /// nobody else can make one).
    #[test]
    fn only_the_administrators_file_replaces_the_managed_settings() -> std::io::Result<()> {
        let root = tempfile::tempdir()?;
        let base = std::fs::canonicalize(root.path())?;
        let absent = base.join("no-standard.json");
        let good = base.join("managed.json");
        std::fs::write(&good, "{}")?;
        std::fs::set_permissions(&good, std::fs::Permissions::from_mode(0o644))?;
        let refused = |named: &Path, standard: &Path| {
            managed_override(Some(named.to_path_buf()), standard.to_path_buf())
        };
        // Another's (or anyone's) writable file.
        let writable = base.join("writable.json");
        std::fs::write(&writable, "{}")?;
        std::fs::set_permissions(&writable, std::fs::Permissions::from_mode(0o666))?;
        let (path, why) = refused(&writable, &absent);
        assert_eq!(path, absent);
        assert!(why.is_some_and(|w| w.contains("writable by others")));
        // A link to a root-owned file.
        let link = base.join("link.json");
        std::os::unix::fs::symlink(&good, &link)?;
        assert!(
            refused(&link, &absent)
                .1
                .is_some_and(|w| w.contains("through a link"))
        );
        // A file in a folder anyone may change.
        let open = base.join("open");
        std::fs::create_dir(&open)?;
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777))?;
        let inside = open.join("managed.json");
        std::fs::write(&inside, "{}")?;
        std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o644))?;
        assert!(
            refused(&inside, &absent)
                .1
                .is_some_and(|w| w.contains("could change"))
        );
        // The administrator's own file exists: never replaced.
        assert!(
            refused(&good, &good)
                .1
                .is_some_and(|w| w.contains("never replaced"))
        );
        if nix::unistd::geteuid().is_root() {
            assert_eq!(refused(&good, &absent), (good.clone(), None));
        } else {
            assert!(
                refused(&good, &absent)
                    .1
                    .is_some_and(|w| w.contains("owned by root"))
            );
        }
        Ok(())
    }
}
