//! The stand-ins of a session's masked secrets (`sandbox.credentials`
//! entries in `mask` mode): for each variable or file, the secret values
//! in it (all of it, or what `extract` captures), each with a fresh
//! stand-in, and what commands get instead — the variable's value or the
//! file's text with the stand-ins in place of the values.

use crate::sandbox::egress::{EgressPattern, Mask};
use crate::settings::{MaskedSecret, MaskedSource, Settings};
use std::path::PathBuf;

/// A masked file larger than this is not read (it stays withheld).
const LARGEST_FILE: u64 = 1 << 20;

#[derive(Default)]
pub(super) struct StandIns {
    pub masks: Vec<Mask>,
    /// Variables commands get: (name, value with stand-ins).
    pub variables: Vec<(String, String)>,
    /// Files commands read: (where, the text they read there).
    pub files: Vec<(PathBuf, String)>,
}

/// Every masked secret of `settings` that can be read; what cannot (a
/// variable not set, a file missing or too large, an `extract` that does
/// not compile or matches nothing) is a warning, and commands do not get
/// it (a file stays withheld: they find it empty).
pub(super) fn stand_ins(settings: &Settings, warnings: &mut Vec<String>) -> StandIns {
    let mut out = StandIns::default();
    for secret in &settings.masked {
        let (label, text) = match read(secret) {
            Ok(read) => read,
            Err(why) => {
                warnings.push(why);
                continue;
            }
        };
        let values = match values_in(secret, &text) {
            Ok(values) => values,
            Err(why) => {
                warnings.push(format!("sandbox.credentials `{label}`: {why}"));
                continue;
            }
        };
        let hosts = hosts_of(secret, &label, warnings);
        let mut shown = text.clone();
        for value in values {
            let mask = Mask::new(&label, value.clone(), hosts.clone());
            shown = shown.replace(&value, &mask.sentinel);
            out.masks.push(mask);
        }
        match &secret.source {
            MaskedSource::Variable(name) => out.variables.push((name.clone(), shown)),
            MaskedSource::File(path) => out.files.push((path.clone(), shown)),
        }
    }
    out
}

/// The secret's label (its variable's name or its file's path) and text.
fn read(secret: &MaskedSecret) -> Result<(String, String), String> {
    match &secret.source {
        MaskedSource::Variable(name) => std::env::var(name).map(|v| (name.clone(), v)).map_err(|_| {
            format!(
                "sandbox.credentials.envVars `{name}` is masked but not set in carapace's environment; commands do not get it"
            )
        }),
        MaskedSource::File(path) => {
            let label = path.display().to_string();
            let refused = |why: String| {
                format!(
                    "sandbox.credentials.files `{label}` is masked but {why}; it stays withheld (commands find it empty)"
                )
            };
            let meta = std::fs::metadata(path).map_err(|e| refused(format!("cannot be read ({e})")))?;
            if !meta.is_file() {
                return Err(refused("is not a file (only a file can be masked)".into()));
            }
            if meta.len() > LARGEST_FILE {
                return Err(refused(format!("is over {LARGEST_FILE} bytes")));
            }
            let text = std::fs::read_to_string(path)
                .map_err(|e| refused(format!("cannot be read as text ({e})")))?;
            Ok((label, text))
        }
    }
}

/// The values to mask in `text`: what group 1 of each `extract` match
/// captures, or the whole of it (a file's final line break kept).
fn values_in(secret: &MaskedSecret, text: &str) -> Result<Vec<String>, String> {
    let Some(pattern) = &secret.extract else {
        let value = text.trim_end_matches(['\n', '\r']);
        if value.is_empty() {
            return Err("it is empty; nothing to mask".into());
        }
        return Ok(vec![value.to_string()]);
    };
    let regex = regex::Regex::new(pattern)
        .map_err(|e| format!("extract `{pattern}` is not a regular expression ({e}); ignored"))?;
    let mut values: Vec<String> = regex
        .captures_iter(text)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    // The longest first: a value inside another is replaced after it.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    if values.is_empty() {
        return Err(format!(
            "extract `{pattern}` captures nothing (it needs a group 1 that matches); commands do not get it"
        ));
    }
    Ok(values)
}

/// The hosts the secret may go to; one that is not a host is a warning.
fn hosts_of(secret: &MaskedSecret, label: &str, warnings: &mut Vec<String>) -> Vec<EgressPattern> {
    let mut patterns = Vec::new();
    for host in &secret.inject_hosts {
        match EgressPattern::parse(host) {
            Ok(pattern) => patterns.push(pattern),
            Err(e) => warnings.push(format!(
                "sandbox.credentials `{label}`: injectHosts `{host}` is not a host ({e}); it is not sent there"
            )),
        }
    }
    patterns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(extract: Option<&str>) -> MaskedSecret {
        MaskedSecret {
            source: MaskedSource::Variable("DATABASE_URL".into()),
            extract: extract.map(str::to_string),
            inject_hosts: vec!["db.example.com".into()],
        }
    }

    #[test]
    fn extract_masks_only_what_group_one_captures() {
        let url = "postgres://app:s3cret-pass@db.example.com/app";
        assert_eq!(
            values_in(&secret(Some(r"://[^:]+:([^@]+)@")), url),
            Ok(vec!["s3cret-pass".to_string()])
        );
        assert_eq!(
            values_in(&secret(None), "token-value\n"),
            Ok(vec!["token-value".to_string()])
        );
        assert!(values_in(&secret(Some("nomatch(x)")), url).is_err());
        assert!(values_in(&secret(Some("([")), url).is_err());
        assert!(values_in(&secret(None), "\n").is_err());
    }
}
