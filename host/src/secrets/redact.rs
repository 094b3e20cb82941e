//! The last line: a known secret value — carapace's own credentials, and
//! whatever else the session is told to keep — replaced wherever it would
//! reach the model or the disk (a tool's result, a hook's words, a
//! transcript line, a request's body), with a marker that names which
//! secret was there, so the run says that it did.

/// Values shorter than this are not looked for: a short value would match
/// ordinary text.
const MIN_SECRET_LEN: usize = 8;

/// carapace's own credentials, by the variable that holds each.
const CREDENTIAL_VARIABLES: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
];

/// The secret values of one session, each with its name.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<(String, String)>,
}

impl Redactor {
    /// carapace's own credentials, as its environment holds them.
    pub fn from_env() -> Self {
        let mut redactor = Self::default();
        for name in CREDENTIAL_VARIABLES {
            if let Ok(value) = std::env::var(name) {
                redactor.add(name, value);
            }
        }
        redactor
    }

    /// Looks for `value` too, named `name` in the marker.
    pub fn add(&mut self, name: &str, value: String) {
        let value = value.trim().to_string();
        if value.len() >= MIN_SECRET_LEN && !self.secrets.iter().any(|(_, v)| *v == value) {
            self.secrets.push((name.to_string(), value));
            // The longest first: a secret holding another is replaced whole.
            self.secrets
                .sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every secret replaced, and the names of those found
    /// (`None` when there were none: nothing is copied).
    pub fn redact(&self, text: &str) -> Option<(String, Vec<String>)> {
        let mut found = Vec::new();
        let mut out: Option<String> = None;
        for (name, value) in &self.secrets {
            let current = out.as_deref().unwrap_or(text);
            if memchr::memmem::find(current.as_bytes(), value.as_bytes()).is_some() {
                out = Some(current.replace(value.as_str(), &marker(name)));
                found.push(name.clone());
            }
        }
        out.map(|text| (text, found))
    }

    /// Replaces in place every string inside `value`; the names found.
    pub fn redact_json(&self, value: &mut serde_json::Value) -> Vec<String> {
        let mut found = Vec::new();
        if self.is_empty() {
            return found;
        }
        match value {
            serde_json::Value::String(text) => {
                if let Some((clean, names)) = self.redact(text) {
                    *text = clean;
                    found.extend(names);
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    found.extend(self.redact_json(item));
                }
            }
            serde_json::Value::Object(fields) => {
                for (_, item) in fields.iter_mut() {
                    found.extend(self.redact_json(item));
                }
            }
            _ => {}
        }
        found.sort();
        found.dedup();
        found
    }
}

/// carapace's own credentials (read once from its environment) and every
/// secret [`remember`]ed since, rebuilt only when one is remembered: it is
/// read for every stream line, tool result and transcript line.
static CURRENT: std::sync::LazyLock<std::sync::RwLock<std::sync::Arc<Redactor>>> =
    std::sync::LazyLock::new(|| std::sync::RwLock::new(std::sync::Arc::new(Redactor::from_env())));

/// What every transcript line, tool result, stream line and request body
/// is cleaned of: carapace's own credentials and every remembered secret.
pub fn own_credentials() -> std::sync::Arc<Redactor> {
    match CURRENT.read() {
        Ok(current) => current.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// From now on, `value` (named `name`) is cleaned from everything
/// [`own_credentials`] cleans: a masked secret a server might echo back.
pub fn remember(name: &str, value: &str) {
    let mut current = match CURRENT.write() {
        Ok(current) => current,
        Err(poisoned) => poisoned.into_inner(),
    };
    let mut next = Redactor::clone(&current);
    next.add(name, value.to_string());
    *current = std::sync::Arc::new(next);
}

/// What stands in for a secret named `name`.
pub fn marker(name: &str) -> String {
    format!("[REDACTED: {name}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_are_replaced_and_named() {
        let mut redactor = Redactor::default();
        redactor.add("KEY", "sk-ant-0123456789".into());
        redactor.add("SHORT", "abc".into());
        let (text, found) = redactor
            .redact("export KEY=sk-ant-0123456789; echo abc")
            .unwrap_or_default();
        assert_eq!(text, "export KEY=[REDACTED: KEY]; echo abc");
        assert_eq!(found, ["KEY"]);
        assert!(redactor.redact("nothing here").is_none());
        let mut value = serde_json::json!({"a": ["x sk-ant-0123456789 y"], "b": 1});
        assert_eq!(redactor.redact_json(&mut value), ["KEY"]);
        assert_eq!(value["a"][0], "x [REDACTED: KEY] y");
    }
}
