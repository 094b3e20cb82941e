//! RequestPermissions: the model asks, with a reason, for what the rest of
//! its task needs — directories to write in, hosts to reach, command
//! prefixes to run. The user grants all of it, part of it (an answer that
//! narrows the input) or none, for this turn or the session. What is
//! granted becomes allow rules (and, for hosts, the command sandbox's
//! proxy lets them through): every later call is still decided on its own,
//! so a granted directory helps only a call that names it.
//!
//! The call is applied by the pipeline (`pipeline/grants.rs`), which holds
//! the session's live permissions; this file reads and checks the request.

use crate::policy::CallApproval;
use crate::sandbox::egress::EgressPattern;
use crate::sandbox::{CallContext, ToolDefinition, ToolFailure, ToolOutput};
use crate::tools::NativeTool;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Component, Path, PathBuf};

pub const REQUEST_PERMISSIONS_TOOL: &str = "RequestPermissions";

const DESCRIPTION: &str = "Asks the user for permissions the rest of your task needs, before you need them, instead of having calls refused one by one.

- Name only what the task needs: `directories` to write in (absolute, or relative to the working directory), `domains` your commands or WebFetch must reach (e.g. `registry.npmjs.org`, `*.crates.io`), `commands` whose prefix you will run (e.g. `cargo test`, `npm install`).
- Give a `reason` the user can judge in one reading.
- The user may grant all, part or none of it, for this turn or the whole session; the result says exactly what was granted. Do not ask again for what was refused.
- A grant does not bypass deny rules, protected paths or withheld secrets.";

pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: REQUEST_PERMISSIONS_TOOL.into(),
        description: DESCRIPTION.into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "reason": {"type": "string", "description": "Why the task needs this"},
                "directories": {"type": "array", "items": {"type": "string"}, "description": "Directories to write in"},
                "domains": {"type": "array", "items": {"type": "string"}, "description": "Hosts to reach (`*.` for subdomains)"},
                "commands": {"type": "array", "items": {"type": "string"}, "description": "Command prefixes to run"},
                "scope": {"type": "string", "enum": ["turn", "session"], "description": "How long it is needed: until the user's next message (the default) or the whole session; the user decides"}
            },
            "required": ["reason"],
            "additionalProperties": false
        })
        .to_string(),
        annotations: Default::default(),
    }
}

/// Always the user's to answer.
pub fn approval() -> CallApproval {
    CallApproval::Asks
}

/// How long a grant lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantScope {
    /// Until the user's next prompt.
    Turn,
    /// For the rest of the session.
    Session,
}

/// A request, as the model (or the user's narrowed answer) wrote it.
#[derive(Debug, Clone, Deserialize)]
pub struct Requested {
    pub reason: String,
    #[serde(default)]
    pub directories: Vec<String>,
    #[serde(default)]
    pub domains: Vec<String>,
    #[serde(default)]
    pub commands: Vec<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// One thing granted: the rule it becomes, and how it is said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    pub rules: Vec<String>,
    pub said: String,
}

impl Requested {
    pub fn read(input: &Value) -> Result<Self, String> {
        let requested: Self = serde_json::from_value(input.clone())
            .map_err(|e| format!("the request cannot be read: {e}"))?;
        if requested.directories.is_empty()
            && requested.domains.is_empty()
            && requested.commands.is_empty()
        {
            return Err("the request names nothing: give directories, domains or commands".into());
        }
        for domain in &requested.domains {
            EgressPattern::parse(domain).map_err(|e| format!("`{domain}`: {e}"))?;
        }
        for directory in &requested.directories {
            absolute(Path::new("/"), directory)?;
        }
        if let Some(bad) = requested.commands.iter().find(|c| !plain_prefix(c)) {
            return Err(format!(
                "`{bad}` is not a command prefix (one line of words, no `*`, `;`, `|`, `&` or `$`)"
            ));
        }
        if requested
            .scope
            .as_deref()
            .is_some_and(|s| s != "turn" && s != "session")
        {
            return Err("scope is `turn` or `session`".into());
        }
        Ok(requested)
    }

    /// For the session when the request (or the answer) says so, else
    /// until the user's next prompt.
    pub fn scope(&self) -> GrantScope {
        match self.scope.as_deref() {
            Some("session") => GrantScope::Session,
            _ => GrantScope::Turn,
        }
    }

    /// The request with only the parts `kept` says (in [`Self::grants`]'
    /// order: directories, domains, commands), as an answer that narrows
    /// it; `session` when the user keeps it for the session.
    pub fn narrowed(&self, kept: &[bool], session: bool) -> Value {
        let mut flags = kept.iter().copied();
        let mut keep = |items: &[String]| -> Vec<String> {
            items
                .iter()
                .filter(|_| flags.next().unwrap_or(false))
                .cloned()
                .collect()
        };
        let (directories, domains, commands) = (
            keep(&self.directories),
            keep(&self.domains),
            keep(&self.commands),
        );
        let scope = match session {
            true => Some("session"),
            false => self.scope.as_deref(),
        };
        let mut input = json!({"reason": self.reason, "directories": directories,
            "domains": domains, "commands": commands});
        if let Some(scope) = scope {
            input["scope"] = json!(scope);
        }
        input
    }

    /// What each part becomes, directories made absolute against `cwd`.
    pub fn grants(&self, cwd: &Path) -> Result<Vec<Granted>, String> {
        let mut grants = Vec::new();
        for directory in &self.directories {
            let path = absolute(cwd, directory)?;
            let spelled = format!("/{}/**", path.display());
            grants.push(Granted {
                rules: vec![format!("Edit({spelled})"), format!("Read({spelled})")],
                said: format!("write in {}", path.display()),
            });
        }
        for domain in &self.domains {
            grants.push(Granted {
                rules: vec![format!("WebFetch(domain:{domain})")],
                said: format!("reach {domain}"),
            });
        }
        for command in &self.commands {
            let command = command.trim();
            grants.push(Granted {
                rules: vec![format!("Bash({command}:*)")],
                said: format!("run `{command} …`"),
            });
        }
        Ok(grants)
    }
}

/// `text` as an absolute directory without `..` (a grant names the place
/// the user read).
fn absolute(cwd: &Path, text: &str) -> Result<PathBuf, String> {
    let path = Path::new(text.trim());
    let joined = match path.is_absolute() {
        true => path.to_path_buf(),
        false => cwd.join(path),
    };
    if joined.components().any(|c| c == Component::ParentDir) || text.trim().is_empty() {
        return Err(format!("`{text}` must name a directory without `..`"));
    }
    Ok(joined)
}

fn plain_prefix(command: &str) -> bool {
    let command = command.trim();
    !command.is_empty()
        && !command.chars().any(|c| {
            matches!(
                c,
                '*' | ';' | '|' | '&' | '$' | '`' | '\n' | '(' | ')' | '<' | '>'
            )
        })
}

/// The registry's entry: checks requests; the pipeline applies them.
pub struct RequestPermissionsTool;

impl NativeTool for RequestPermissionsTool {
    fn concurrency_safe(&self) -> bool {
        false
    }

    fn grants_permissions(&self) -> bool {
        true
    }

    fn check(&self, input: &Value) -> Result<(), String> {
        Requested::read(input).map(|_| ())
    }

    fn presentation(&self) -> crate::tools::Presentation {
        crate::tools::Presentation {
            action: Some("widen what later calls may do"),
            subject: crate::tools::Subject::Field("reason"),
            ..crate::tools::Presentation::UNKNOWN
        }
    }

    fn call<'a>(
        &'a self,
        _context: &'a CallContext,
        _input: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        crate::tools::run_by_the_pipeline("RequestPermissions")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrowed_request_keeps_only_the_ticked_parts_in_order() -> Result<(), String> {
        let asked = Requested::read(&json!({"reason": "r", "directories": ["a", "b"],
            "domains": ["x.test"], "commands": ["make"]}))?;
        let narrowed = asked.narrowed(&[false, true, true, false], false);
        assert_eq!(
            narrowed,
            json!({"reason": "r", "directories": ["b"], "domains": ["x.test"], "commands": []})
        );
        let kept = Requested::read(&asked.narrowed(&[true, false, false, true], true))?;
        assert_eq!(
            (kept.directories.clone(), kept.commands.clone()),
            (vec!["a".to_string()], vec!["make".to_string()])
        );
        assert_eq!(kept.scope(), GrantScope::Session);
        Ok(())
    }

    #[test]
    fn a_request_becomes_rules_and_bad_ones_are_refused() {
        let input = json!({"reason": "build", "directories": ["out"], "domains": ["localhost"],
                           "commands": ["cargo test"], "scope": "turn"});
        let requested = Requested::read(&input);
        let Ok(requested) = requested else {
            panic!("{requested:?}");
        };
        assert_eq!(requested.scope(), GrantScope::Turn);
        let rules: Vec<String> = (requested.grants(Path::new("/ws")).unwrap_or_default())
            .into_iter()
            .flat_map(|g| g.rules)
            .collect();
        assert_eq!(
            rules,
            [
                "Edit(//ws/out/**)",
                "Read(//ws/out/**)",
                "WebFetch(domain:localhost)",
                "Bash(cargo test:*)"
            ]
        );
        for bad in [
            json!({"reason": "x"}),
            json!({"reason": "x", "commands": ["rm -rf / ; echo"]}),
            json!({"reason": "x", "domains": ["not a host"]}),
            json!({"reason": "x", "commands": ["ls"], "scope": "forever"}),
        ] {
            assert!(Requested::read(&bad).is_err(), "{bad}");
        }
        let up = Requested::read(&json!({"reason": "x", "directories": ["../up"]}));
        assert!(up.is_err());
    }
}
