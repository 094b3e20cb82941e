//! A Wassette `policy.yaml`: the ceiling of a component published without
//! a carapace manifest. Read into the manifest's own ceiling, so it is
//! shown, approved, pinned and enforced like any other.
//!
//! ```yaml
//! version: "1.0"
//! permissions:
//!   storage:
//!     allow:
//!       - uri: "fs://workspace/**"      # the session's working directory
//!         access: ["read", "write"]
//!       - uri: "fs:///srv/data/**"      # an absolute path
//!         access: ["read"]
//!   network:
//!     allow:
//!       - host: "api.example.com"
//!   environment:
//!     allow:
//!       - key: "API_TOKEN"
//! ```
//!
//! `fs://` followed by `/` is an absolute path; anything else is under the
//! session's working directory (its first segment `workspace` naming that
//! directory itself). A trailing `/**` or `/*` means the tree. A
//! permission kind carapace does not know is refused by name, so nothing a
//! policy grants is silently dropped or silently widened.

use super::manifest::{Access, CeilingSpec, FileRoot};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("the policy is not a Wassette policy.yaml: {0}")]
    Syntax(String),
    #[error("the policy's {at} is not understood: {reason}")]
    Field { at: String, reason: String },
}

#[derive(Deserialize)]
struct PolicyFile {
    #[serde(default)]
    #[allow(dead_code)]
    version: Option<serde_norway::Value>,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    permissions: BTreeMap<String, Section>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    #[serde(default)]
    allow: Vec<BTreeMap<String, serde_norway::Value>>,
    /// Denials narrow nothing carapace grants (it grants only what is
    /// allowed), so they are accepted and need no translation.
    #[serde(default)]
    #[allow(dead_code)]
    deny: Vec<serde_norway::Value>,
}

/// The ceiling a Wassette policy describes.
pub fn parse(text: &str) -> Result<CeilingSpec, PolicyError> {
    let file: PolicyFile =
        serde_norway::from_str(text).map_err(|e| PolicyError::Syntax(e.to_string()))?;
    let mut ceiling = CeilingSpec::default();
    for (kind, section) in &file.permissions {
        for (i, entry) in section.allow.iter().enumerate() {
            let at = format!("permissions.{kind}.allow[{i}]");
            let field = |key: &str| {
                entry
                    .get(key)
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| PolicyError::Field {
                        at: at.clone(),
                        reason: format!("`{key}` is missing or not text"),
                    })
            };
            match kind.as_str() {
                "storage" => ceiling.files.push(storage(field("uri")?, entry, &at)?),
                "network" => ceiling.hosts.push(field("host")?.to_string()),
                "environment" => ceiling.env.push(field("key")?.to_string()),
                other => {
                    return Err(PolicyError::Field {
                        at: format!("permissions.{other}"),
                        reason: "carapace grants storage, network and environment only".into(),
                    });
                }
            }
        }
    }
    Ok(ceiling)
}

fn storage(
    uri: &str,
    entry: &BTreeMap<String, serde_norway::Value>,
    at: &str,
) -> Result<FileRoot, PolicyError> {
    let bad = |reason: String| PolicyError::Field {
        at: at.to_string(),
        reason,
    };
    let rest = uri
        .strip_prefix("fs://")
        .ok_or_else(|| bad(format!("`{uri}` is not an fs:// URI")))?;
    let rest = rest
        .strip_suffix("/**")
        .or_else(|| rest.strip_suffix("/*"))
        .unwrap_or(rest);
    let path = if rest.starts_with('/') {
        rest.to_string()
    } else {
        let under = rest.strip_prefix("workspace").unwrap_or(rest);
        let under = under.trim_start_matches('/');
        match under {
            "" => "{workspace}".to_string(),
            under => format!("{{workspace}}/{under}"),
        }
    };
    if path.split('/').any(|part| part == "..") {
        return Err(bad(format!("`{uri}` climbs out with `..`")));
    }
    let access: Vec<String> = match entry.get("access") {
        None => vec!["read".into()],
        Some(value) => serde_norway::from_value(value.clone())
            .map_err(|_| bad("`access` must be a list such as [\"read\", \"write\"]".into()))?,
    };
    if let Some(unknown) = access
        .iter()
        .find(|a| !matches!(a.as_str(), "read" | "write"))
    {
        return Err(bad(format!("access `{unknown}` is neither read nor write")));
    }
    Ok(FileRoot {
        path,
        access: if access.iter().any(|a| a == "write") {
            Access::Write
        } else {
            Access::Read
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wassette_policy_becomes_a_ceiling() -> Result<(), PolicyError> {
        let ceiling = parse(
            r#"
version: "1.0"
description: "files and one API"
permissions:
  storage:
    allow:
      - uri: "fs://workspace/**"
        access: ["read", "write"]
      - uri: "fs:///srv/data/**"
        access: ["read"]
      - uri: "fs://notes/*"
  network:
    allow:
      - host: "api.example.com"
  environment:
    allow:
      - key: "API_TOKEN"
"#,
        )?;
        let files: Vec<(&str, Access)> = ceiling
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.access))
            .collect();
        assert_eq!(
            files,
            [
                ("{workspace}", Access::Write),
                ("/srv/data", Access::Read),
                ("{workspace}/notes", Access::Read)
            ]
        );
        assert_eq!(ceiling.hosts, ["api.example.com"]);
        assert_eq!(ceiling.env, ["API_TOKEN"]);
        assert!(!ceiling.process);
        Ok(())
    }

    #[test]
    fn what_it_cannot_translate_is_refused_by_name() {
        let refused = |text: &str| parse(text).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            refused("permissions:\n  ipc:\n    allow:\n      - name: x\n")
                .contains("permissions.ipc")
        );
        assert!(
            refused("permissions:\n  storage:\n    allow:\n      - uri: \"http://x\"\n")
                .contains("not an fs:// URI")
        );
        assert!(
            refused("permissions:\n  storage:\n    allow:\n      - uri: \"fs://a/../../etc\"\n")
                .contains("..")
        );
        assert!(refused("permissions:\n  storage:\n    allow:\n      - uri: \"fs:///x\"\n        access: [\"exec\"]\n").contains("exec"));
        assert!(refused(": not yaml [").contains("not a Wassette policy"));
    }
}
