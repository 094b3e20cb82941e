//! Claude Code's plugins and marketplaces: a marketplace is a folder or a
//! git repository whose `.claude-plugin/marketplace.json` lists plugins;
//! installing one copies it into carapace's cache, pinned to the digest of
//! its content, and enables it (`enabledPlugins` in the user's settings).
//! A session loads every enabled plugin as `--plugin-dir` loads a folder —
//! and, if its content no longer has the digest that was approved, holds
//! back what would run (its hooks and MCP servers) until the user approves
//! it again. Plugins Claude Code installed (`~/.claude/plugins`) are found
//! too, and held until approved in carapace once.
//!
//! Imports nothing of carapace's: a leaf.

mod digest;
mod registry;
mod source;

pub use digest::{DigestError, folder_digest};
pub use registry::Installed;
pub use source::Source;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum MarketplaceError {
    #[error("marketplace source `{source_text}`: {reason}")]
    Source { source_text: String, reason: String },
    #[error("{command} failed: {reason}")]
    Git { command: String, reason: String },
    #[error("{path}: {reason}")]
    State { path: String, reason: String },
    #[error("no marketplace named `{0}` (see `carapace plugin marketplace list`)")]
    UnknownMarketplace(String),
    #[error("marketplace `{marketplace}` lists no plugin `{plugin}`")]
    UnknownPlugin { marketplace: String, plugin: String },
    #[error("`{0}` is not PLUGIN@MARKETPLACE")]
    BadId(String),
    #[error("no plugin `{0}` is installed")]
    NotInstalled(String),
    #[error("plugin `{id}`: {reason}")]
    Plugin { id: String, reason: String },
    #[error(transparent)]
    Digest(#[from] DigestError),
}

/// carapace's marketplaces and installed plugins (under
/// `~/.carapace/claude-plugins/`), and Claude Code's, read.
pub struct Marketplaces {
    dir: PathBuf,
    /// Claude Code's `~/.claude/plugins`.
    claude_dir: PathBuf,
}

/// A marketplace as listed.
#[derive(Debug, Clone)]
pub struct Known {
    pub name: String,
    pub source: Source,
    /// Where its `.claude-plugin/marketplace.json` is.
    pub location: PathBuf,
    /// The commit a git marketplace is at.
    pub commit: Option<String>,
}

/// An enabled plugin, ready to load: its folder, and why what would run
/// is held back, if it is.
#[derive(Debug, Clone)]
pub struct Enabled {
    pub id: String,
    pub root: PathBuf,
    pub held: Option<String>,
}

impl Marketplaces {
    pub fn new(config_dir: &Path, home: &Path) -> Self {
        Self {
            dir: config_dir.join("claude-plugins"),
            claude_dir: home.join(".claude").join("plugins"),
        }
    }

    fn known_file(&self) -> PathBuf {
        self.dir.join("known_marketplaces.json")
    }

    fn installed_file(&self) -> PathBuf {
        self.dir.join("installed_plugins.json")
    }

    /// Adds the marketplace at `source`; its name (the manifest's).
    pub fn add(&self, source: Source) -> Result<Known, MarketplaceError> {
        let (location, commit) = match &source {
            Source::Directory(path) => (path.clone(), None),
            Source::Git { .. } | Source::Archive { .. } => {
                let staging = self
                    .dir
                    .join("marketplaces")
                    .join(format!(".adding-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&staging);
                std::fs::create_dir_all(self.dir.join("marketplaces")).map_err(|e| {
                    MarketplaceError::State {
                        path: self.dir.display().to_string(),
                        reason: e.to_string(),
                    }
                })?;
                let commit = match &source {
                    Source::Git { url, rev } => {
                        Some(source::clone_git(url, rev.as_deref(), &staging)?)
                    }
                    Source::Archive { path, sha256 } => {
                        source::unpack_archive(path, sha256, &staging)?;
                        None
                    }
                    Source::Directory(_) => None,
                };
                (staging, commit)
            }
        };
        let manifest = read_manifest(&location)?;
        let name = manifest_name(&manifest, &location)?;
        let location = match &source {
            Source::Directory(_) => location,
            Source::Git { .. } | Source::Archive { .. } => {
                let home = self.dir.join("marketplaces").join(&name);
                let _ = std::fs::remove_dir_all(&home);
                std::fs::rename(&location, &home).map_err(|e| MarketplaceError::State {
                    path: home.display().to_string(),
                    reason: e.to_string(),
                })?;
                home
            }
        };
        let mut known = registry::read_json(&self.known_file())?;
        known[&name] = json!({
            "source": source.to_json(),
            "installLocation": location,
            "lastUpdated": now(),
            "commit": commit,
        });
        registry::write_json(&self.known_file(), &known)?;
        Ok(Known {
            name,
            source,
            location,
            commit,
        })
    }

    pub fn list(&self) -> Result<Vec<Known>, MarketplaceError> {
        let known = registry::read_json(&self.known_file())?;
        Ok(known
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(name, entry)| {
                Some(Known {
                    name: name.clone(),
                    source: Source::from_json(&entry["source"])?,
                    location: PathBuf::from(entry["installLocation"].as_str()?),
                    commit: entry["commit"].as_str().map(str::to_string),
                })
            })
            .collect())
    }

    fn find(&self, name: &str) -> Result<Known, MarketplaceError> {
        self.list()?
            .into_iter()
            .find(|k| k.name == name)
            .ok_or_else(|| MarketplaceError::UnknownMarketplace(name.to_string()))
    }

    /// Fetches a git marketplace again (a pinned one stays at its pin); a
    /// folder is read where it is. Installed plugins do not change until
    /// installed again.
    pub fn update(&self, name: &str) -> Result<Known, MarketplaceError> {
        let mut known = self.find(name)?;
        if let Source::Git { rev, .. } = &known.source {
            known.commit = Some(source::refresh_git(&known.location, rev.as_deref())?);
            let mut state = registry::read_json(&self.known_file())?;
            state[name]["commit"] = json!(known.commit);
            state[name]["lastUpdated"] = json!(now());
            registry::write_json(&self.known_file(), &state)?;
        }
        read_manifest(&known.location)?;
        Ok(known)
    }

    /// Forgets a marketplace (and removes the clone carapace made of a git
    /// one; a folder is the user's and stays).
    pub fn remove(&self, name: &str) -> Result<(), MarketplaceError> {
        let known = self.find(name)?;
        let mut state = registry::read_json(&self.known_file())?;
        if let Some(map) = state.as_object_mut() {
            map.remove(name);
        }
        registry::write_json(&self.known_file(), &state)?;
        if !matches!(known.source, Source::Directory(_))
            && known.location.starts_with(self.dir.join("marketplaces"))
        {
            let _ = std::fs::remove_dir_all(&known.location);
        }
        Ok(())
    }

    /// Installs `id` (`plugin@marketplace`): copies the plugin into the
    /// cache and pins its content's digest.
    pub fn install(&self, id: &str) -> Result<Installed, MarketplaceError> {
        let (plugin, market) = split_id(id)?;
        let known = self.find(market)?;
        let manifest = read_manifest(&known.location)?;
        let entry = manifest["plugins"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == plugin)
            .ok_or_else(|| MarketplaceError::UnknownPlugin {
                marketplace: market.to_string(),
                plugin: plugin.to_string(),
            })?;
        let from = plugin_folder(&known.location, entry, id)?;
        let version = plugin_version(&from, entry);
        let dest = self
            .dir
            .join("cache")
            .join(market)
            .join(plugin)
            .join(&version);
        let fail = |reason: String| MarketplaceError::Plugin {
            id: id.to_string(),
            reason,
        };
        if dest.exists() {
            std::fs::remove_dir_all(&dest).map_err(|e| fail(e.to_string()))?;
        }
        copy_tree(&from, &dest).map_err(|e| fail(format!("cannot copy it: {e}")))?;
        let installed = Installed {
            id: id.to_string(),
            install_path: dest.clone(),
            version,
            approved: Some(folder_digest(&dest)?),
        };
        registry::record_install(&self.installed_file(), &installed, &now())?;
        Ok(installed)
    }

    /// Removes `id`'s copy and record.
    pub fn uninstall(&self, id: &str) -> Result<(), MarketplaceError> {
        let installed = self
            .installed()
            .into_iter()
            .find(|i| i.id == id)
            .ok_or_else(|| MarketplaceError::NotInstalled(id.to_string()))?;
        registry::forget_install(&self.installed_file(), id)?;
        if installed.install_path.starts_with(self.dir.join("cache")) {
            let _ = std::fs::remove_dir_all(&installed.install_path);
        }
        Ok(())
    }

    /// Approves `id`'s content as it is now (after it changed, or a plugin
    /// Claude Code installed, the first time); the digest approved.
    pub fn approve(&self, id: &str) -> Result<String, MarketplaceError> {
        let installed = self
            .find_installed(id)
            .ok_or_else(|| MarketplaceError::NotInstalled(id.to_string()))?;
        let digest = folder_digest(&installed.install_path)?;
        let mut approvals = registry::read_json(&self.dir.join("approvals.json"))?;
        approvals[id] = json!(digest);
        registry::write_json(&self.dir.join("approvals.json"), &approvals)?;
        Ok(digest)
    }

    /// Every installed plugin: carapace's, then those only Claude Code
    /// installed.
    pub fn installed(&self) -> Vec<Installed> {
        let approvals = registry::read_json(&self.dir.join("approvals.json"))
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        let mut all = registry::installed_in(&self.installed_file(), &approvals, true);
        let claude = self.claude_dir.join("installed_plugins.json");
        for theirs in registry::installed_in(&claude, &approvals, false) {
            if !all.iter().any(|i| i.id == theirs.id) {
                all.push(theirs);
            }
        }
        all
    }

    fn find_installed(&self, id: &str) -> Option<Installed> {
        self.installed().into_iter().find(|i| i.id == id)
    }

    /// The plugins `enabled` names (ids set to `true`), ready to load;
    /// warnings for those that are not installed.
    pub fn enabled<'a>(
        &self,
        enabled: impl IntoIterator<Item = &'a str>,
    ) -> (Vec<Enabled>, Vec<String>) {
        let installed = self.installed();
        let mut ready = Vec::new();
        let mut warnings = Vec::new();
        for id in enabled {
            let Some(found) = installed.iter().find(|i| i.id == id) else {
                warnings.push(format!(
                    "plugin `{id}` is enabled but not installed (`carapace plugin install {id}`); not loaded"
                ));
                continue;
            };
            let held = match (&found.approved, folder_digest(&found.install_path)) {
                (_, Err(e)) => Some(format!("its content cannot be checked ({e})")),
                (None, Ok(_)) => Some(format!(
                    "Claude Code installed it and carapace has not approved it yet (`carapace plugin approve {id}`)"
                )),
                (Some(approved), Ok(now)) if *approved != now => Some(format!(
                    "its content changed since it was approved (`carapace plugin approve {id}` after checking it)"
                )),
                _ => None,
            };
            ready.push(Enabled {
                id: id.to_string(),
                root: found.install_path.clone(),
                held,
            });
        }
        (ready, warnings)
    }
}

/// `plugin@marketplace`, split.
pub fn split_id(id: &str) -> Result<(&str, &str), MarketplaceError> {
    match id.split_once('@') {
        Some((plugin, market)) if !plugin.is_empty() && !market.is_empty() => Ok((plugin, market)),
        _ => Err(MarketplaceError::BadId(id.to_string())),
    }
}

fn read_manifest(location: &Path) -> Result<Value, MarketplaceError> {
    let path = location.join(".claude-plugin").join("marketplace.json");
    let text = std::fs::read_to_string(&path).map_err(|e| MarketplaceError::State {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    serde_json::from_str(&text).map_err(|e| MarketplaceError::State {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

fn manifest_name(manifest: &Value, location: &Path) -> Result<String, MarketplaceError> {
    let name = manifest["name"].as_str().unwrap_or_default();
    let usable = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if !usable || name.starts_with('.') {
        return Err(MarketplaceError::State {
            path: location.display().to_string(),
            reason: format!("the marketplace's name `{name}` is not a plain name"),
        });
    }
    Ok(name.to_string())
}

/// A plugin entry's folder inside the marketplace (`"source": "./…"`).
fn plugin_folder(location: &Path, entry: &Value, id: &str) -> Result<PathBuf, MarketplaceError> {
    let fail = |reason: String| MarketplaceError::Plugin {
        id: id.to_string(),
        reason,
    };
    let relative = entry["source"].as_str().ok_or_else(|| {
        fail("its source is not a folder of the marketplace; carapace installs those only".into())
    })?;
    let folder = std::fs::canonicalize(location.join(relative))
        .map_err(|e| fail(format!("its folder `{relative}`: {e}")))?;
    let root = std::fs::canonicalize(location).map_err(|e| fail(e.to_string()))?;
    if !folder.starts_with(&root) {
        return Err(fail(format!(
            "its folder `{relative}` is outside the marketplace"
        )));
    }
    Ok(folder)
}

fn plugin_version(folder: &Path, entry: &Value) -> String {
    let from_manifest = std::fs::read_to_string(folder.join(".claude-plugin/plugin.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["version"].as_str().map(str::to_string));
    let version = from_manifest
        .or_else(|| entry["version"].as_str().map(str::to_string))
        .unwrap_or_else(|| "unversioned".into());
    // A folder name: nothing that leaves the plugin's folder.
    version.replace(['/', '\\'], "_").replace("..", "_")
}

/// Copies `from` to `to`: folders, regular files and links (as links).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            if entry.file_name() == ".git" {
                continue;
            }
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{secs}")
}
