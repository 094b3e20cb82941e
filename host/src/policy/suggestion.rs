//! What "don't ask again" offers for a call: the narrowest thing that
//! covers it, read by the policy from the call itself (a command through
//! the same Bash analysis the rules use), so that the screen, an ACP
//! client, the SDK's `can_use_tool` and PermissionRequest hooks are all
//! offered the same one — never a rule wider than what the user saw.

use super::bash::{Analysis, WordText, analyse};
use serde_json::{Value, json};

/// A call's "always allow".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suggestion {
    /// An allow rule, as settings write it (`Bash(cargo test:*)`).
    Rule(String),
    /// Edits accepted for the rest of the session (the edit tools).
    AcceptEdits,
    /// The allow rules a granted request (RequestPermissions) becomes.
    Grant(Vec<String>),
}

impl Suggestion {
    /// The suggestion for a call of `tool` with `input`: the edit mode for
    /// edits; for a command, its program (and subcommand) as a prefix when
    /// it is one plain command, else the command exactly as written; a
    /// fetch's domain; the tool otherwise.
    pub fn for_call(tool: &str, input: &Value) -> Self {
        let field = |name: &str| input.get(name).and_then(Value::as_str);
        match tool {
            "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => Self::AcceptEdits,
            "Bash" => match field("command") {
                Some(command) => Self::Rule(format!("Bash({})", command_rule(command))),
                None => Self::Rule("Bash".into()),
            },
            "WebFetch" => match field("url")
                .and_then(|u| reqwest::Url::parse(u).ok())
                .and_then(|url| url.host_str().map(str::to_string))
            {
                Some(host) => Self::Rule(format!("WebFetch(domain:{host})")),
                None => Self::Rule("WebFetch".into()),
            },
            _ => Self::Rule(tool.to_string()),
        }
    }

    /// A command's connection to `host`, which no rule names: the host's
    /// WebFetch domain rule (what the sandbox's network lists read).
    pub fn for_host(host: &str) -> Self {
        Self::Rule(format!("WebFetch(domain:{host})"))
    }

    /// The same, as the SDK and hooks are told it (Claude Code's
    /// `permission_suggestions`): a session rule, or the edit mode.
    pub fn to_updates(&self) -> Value {
        match self {
            Self::AcceptEdits => {
                json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}])
            }
            Self::Rule(rule) => Self::Grant(vec![rule.clone()]).to_updates(),
            Self::Grant(rules) => {
                let entries: Vec<Value> = rules.iter().map(|rule| rule_value(rule)).collect();
                json!([{"type": "addRules", "rules": entries, "behavior": "allow",
                        "destination": "session"}])
            }
        }
    }

    /// The rules it adds, as written (none: a mode change).
    pub fn rules(&self) -> Vec<String> {
        match self {
            Self::Rule(rule) => vec![rule.clone()],
            Self::Grant(rules) => rules.clone(),
            Self::AcceptEdits => Vec::new(),
        }
    }
}

/// One rule as the SDK's `addRules` names it.
fn rule_value(rule: &str) -> Value {
    match rule.split_once('(') {
        Some((tool, content)) => json!({
            "toolName": tool,
            "ruleContent": content.strip_suffix(')').unwrap_or(content),
        }),
        None => json!({"toolName": rule}),
    }
}

/// A command's rule specifier: its program, and its subcommand when the
/// second word is one (`git status`), as a prefix — when the line is one
/// plain command of literal words; anything else (a pipeline, a list, a
/// redirection, an expansion, a wrapper running another command) exactly
/// as written, so the rule covers that line only.
fn command_rule(command: &str) -> String {
    let command = command.trim();
    let special = ['|', '&', ';', '>', '<', '`', '$', '(', ')', '\n', '*', '?'];
    if command.contains(special) {
        return command.to_string();
    }
    let Analysis::Commands(commands) = analyse(command) else {
        return command.to_string();
    };
    let [only] = commands.as_slice() else {
        return command.to_string();
    };
    let words: Option<Vec<&str>> = only.words[only.name..]
        .iter()
        .map(|w| match w {
            WordText::Literal(text) => Some(text.as_str()),
            WordText::Dynamic => None,
        })
        .collect();
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
    };
    let prefix = match (only.name, only.runs.is_empty(), words.as_deref()) {
        (0, true, Some([first, second, ..]))
            if plain(first)
                && plain(second)
                && !second.starts_with('-')
                && !second.contains('/') =>
        {
            format!("{first} {second}")
        }
        (0, true, Some([first, ..])) if plain(first) => first.to_string(),
        _ => return command.to_string(),
    };
    format!("{prefix}:*")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(command: &str) -> Suggestion {
        Suggestion::for_call("Bash", &json!({ "command": command }))
    }

    #[test]
    fn a_plain_command_is_offered_as_its_prefix_anything_else_exactly() {
        assert_eq!(
            bash("cargo test --all"),
            Suggestion::Rule("Bash(cargo test:*)".into())
        );
        assert_eq!(bash("ls -la"), Suggestion::Rule("Bash(ls:*)".into()));
        assert_eq!(
            bash("'git' status"),
            Suggestion::Rule("Bash(git status:*)".into())
        );
        for exact in [
            "ls | wc -l",
            "echo hi > out.txt",
            "rm -rf $HOME",
            "A=1 make",
            "sudo rm -rf /tmp/x",
            "sh -c 'rm -rf /tmp/x'",
        ] {
            assert_eq!(
                bash(exact),
                Suggestion::Rule(format!("Bash({exact})")),
                "{exact}"
            );
        }
    }

    #[test]
    fn edits_fetches_and_other_tools() {
        let write = Suggestion::for_call("Write", &json!({"file_path": "/ws/a"}));
        assert_eq!(write, Suggestion::AcceptEdits);
        assert_eq!(
            write.to_updates(),
            json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}])
        );
        let fetch = Suggestion::for_call("WebFetch", &json!({"url": "https://docs.rs/x"}));
        assert_eq!(fetch, Suggestion::Rule("WebFetch(domain:docs.rs)".into()));
        assert_eq!(
            fetch.to_updates()[0]["rules"][0],
            json!({"toolName": "WebFetch", "ruleContent": "domain:docs.rs"})
        );
        let read = Suggestion::for_call("Read", &json!({}));
        assert_eq!(
            read.to_updates()[0]["rules"][0],
            json!({"toolName": "Read"})
        );
    }
}
