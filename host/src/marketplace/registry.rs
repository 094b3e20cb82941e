//! What is known and installed, in Claude Code's own files and shapes
//! (`known_marketplaces.json`; `installed_plugins.json`, version 2), kept
//! under carapace's folder — and Claude Code's, read to find the plugins
//! it installed.

use super::MarketplaceError;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// One installed plugin.
#[derive(Debug, Clone)]
pub struct Installed {
    pub id: String,
    pub install_path: PathBuf,
    pub version: String,
    /// The content digest approved (at install, or `plugin approve`);
    /// `None` for a plugin Claude Code installed that carapace has not
    /// been asked to approve yet.
    pub approved: Option<String>,
}

pub(super) fn read_json(path: &Path) -> Result<Value, MarketplaceError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| MarketplaceError::State {
            path: path.display().to_string(),
            reason: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => Err(MarketplaceError::State {
            path: path.display().to_string(),
            reason: e.to_string(),
        }),
    }
}

/// Writes `value` to `path` whole: to a temp file of carapace's own in the
/// same folder, then renamed over it (a reader never sees half a file, a
/// link planted at `path` is replaced, not written through).
pub(super) fn write_json(path: &Path, value: &Value) -> Result<(), MarketplaceError> {
    let fail = |reason: String| MarketplaceError::State {
        path: path.display().to_string(),
        reason,
    };
    let folder = path.parent().ok_or_else(|| fail("no folder".into()))?;
    std::fs::create_dir_all(folder).map_err(|e| fail(e.to_string()))?;
    let mut temp = tempfile::NamedTempFile::new_in(folder).map_err(|e| fail(e.to_string()))?;
    let text = serde_json::to_string_pretty(value).map_err(|e| fail(e.to_string()))?;
    std::io::Write::write_all(&mut temp, format!("{text}\n").as_bytes())
        .map_err(|e| fail(e.to_string()))?;
    temp.persist(path).map_err(|e| fail(e.to_string()))?;
    Ok(())
}

/// The installed plugins listed in `file` (either tool's), by id, each
/// approved as `approvals` last says — else, when the file is carapace's
/// own (`own`), as its install recorded; a digest in Claude Code's file is
/// never taken as carapace's approval.
pub(super) fn installed_in(
    file: &Path,
    approvals: &Map<String, Value>,
    own: bool,
) -> Vec<Installed> {
    let Ok(state) = read_json(file) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (id, entries) in state["plugins"].as_object().into_iter().flatten() {
        let Some(entry) = entries.as_array().and_then(|a| a.first()) else {
            continue;
        };
        let Some(path) = entry["installPath"].as_str() else {
            continue;
        };
        found.push(Installed {
            id: id.clone(),
            install_path: PathBuf::from(path),
            version: entry["version"].as_str().unwrap_or("unknown").to_string(),
            approved: approvals
                .get(id)
                .and_then(Value::as_str)
                .or_else(|| entry["digest"].as_str().filter(|_| own))
                .map(str::to_string),
        });
    }
    found
}

/// Records `installed` in `file` (replacing what was recorded for its id).
pub(super) fn record_install(
    file: &Path,
    installed: &Installed,
    now: &str,
) -> Result<(), MarketplaceError> {
    let mut state = read_json(file)?;
    state["version"] = json!(2);
    if !state["plugins"].is_object() {
        state["plugins"] = json!({});
    }
    state["plugins"][&installed.id] = json!([{
        "scope": "user",
        "installPath": installed.install_path,
        "version": installed.version,
        "installedAt": now,
        "lastUpdated": now,
        "digest": installed.approved,
    }]);
    write_json(file, &state)
}

/// Forgets `id` in `file`; whether it was there.
pub(super) fn forget_install(file: &Path, id: &str) -> Result<bool, MarketplaceError> {
    let mut state = read_json(file)?;
    let removed = state["plugins"]
        .as_object_mut()
        .is_some_and(|plugins| plugins.remove(id).is_some());
    if removed {
        write_json(file, &state)?;
    }
    Ok(removed)
}
