//! A rule read as a condition on one call — a hook's `if` (Claude Code's
//! permission-rule syntax: `Bash(git *)`, `Edit(*.py)`) — judged from the
//! call's own input, before anything is planned: whether the rule could
//! cover the call, as a deny or ask rule would catch it. When in doubt it
//! holds, so a guard hook runs rather than being skipped.

use super::{Rule, Specifier};
use serde_json::Value;
use std::path::Path;

impl Rule {
    /// Whether this rule could cover a call of `tool` with `input` (paths
    /// relative to `cwd`).
    pub fn may_cover_call(&self, tool: &str, input: &Value, cwd: &Path) -> bool {
        if !self.tool.matches(tool) {
            return false;
        }
        let text = |key: &str| input.get(key).and_then(Value::as_str);
        match &self.specifier {
            None | Some(Specifier::Opaque(_)) => true,
            Some(Specifier::Command(pattern)) => match text("command") {
                Some(line) => pattern.catches(&crate::policy::analyse(line)),
                None => true,
            },
            Some(Specifier::Paths(pattern)) => {
                match ["file_path", "notebook_path", "path"]
                    .into_iter()
                    .find_map(text)
                {
                    Some(path) => pattern.matches(&cwd.join(path), false),
                    // Glob and Grep search the working directory by default.
                    None => pattern.matches(cwd, true),
                }
            }
            Some(Specifier::Domain(domain)) => match text("url").and_then(host_of) {
                Some(host) => domain.matches(&host),
                None => true,
            },
            Some(Specifier::Name(name)) => {
                let called = text("skill").or(text("command")).unwrap_or_default();
                match name.strip_suffix('*') {
                    Some(prefix) => called.starts_with(prefix),
                    None => called == name,
                }
            }
        }
    }
}

/// The host of a URL, as the HTTP client reads it.
fn host_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()?
        .host_str()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Anchors, RuleKind, RuleSource, SourceKind};
    use serde_json::json;

    fn rule(text: &str) -> Rule {
        let anchors = Anchors {
            cwd: "/w".into(),
            home: "/h".into(),
            project: "/w".into(),
        };
        let source = RuleSource {
            kind: SourceKind::CliFlag,
            file: None,
        };
        match Rule::parse(text, RuleKind::Ask, source, &anchors) {
            Ok(rule) => rule,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    #[test]
    fn a_condition_holds_for_the_calls_its_rule_would_catch() {
        let cwd = Path::new("/w");
        let bash = |line: &str| json!({"command": line});
        let git = rule("Bash(git *)");
        assert!(git.may_cover_call("Bash", &bash("git push"), cwd));
        assert!(git.may_cover_call("Bash", &bash("echo hi && git push"), cwd));
        assert!(!git.may_cover_call("Bash", &bash("ls -la"), cwd));
        assert!(!git.may_cover_call("Read", &json!({"file_path": "git"}), cwd));
        let python = rule("Edit(*.py)");
        assert!(python.may_cover_call("Edit", &json!({"file_path": "/w/a/b.py"}), cwd));
        assert!(!python.may_cover_call("Edit", &json!({"file_path": "/w/a/b.rs"}), cwd));
        let web = rule("WebFetch(domain:example.com)");
        let fetch = |url: &str| json!({"url": url});
        assert!(web.may_cover_call("WebFetch", &fetch("https://user@EXAMPLE.com:8/x"), cwd));
        assert!(!web.may_cover_call("WebFetch", &fetch("https://example.org/"), cwd));
        assert!(rule("Write").may_cover_call("Write", &json!({}), cwd));
    }
}
