//! Agent definitions: the built-in general-purpose agent, Markdown files
//! with a front matter (`~/.carapace/agents/*.md`, and the project's
//! `.carapace/agents/*.md` in a trusted workspace) and `--agents JSON`, in
//! Claude Code's format:
//!
//! ```markdown
//! ---
//! name: reviewer
//! description: Reviews a change for bugs
//! tools: Read, Grep, Glob
//! model: claude-haiku-4-5
//! ---
//! You review code. …
//! ```
//!
//! A definition can only narrow: its tools are picked from the parent's.
//!
//! The front matter is read by hand: four flat `key: value` strings do not
//! warrant a YAML parser (and the maintained ones are heavy).

use serde_json::Value;
use std::path::Path;

pub const GENERAL_PURPOSE: &str = "general-purpose";

const GENERAL_PURPOSE_PROMPT: &str = "You are a subagent started by another agent in carapace to carry out one task. You have the same tools as the agent that started you (except starting agents of your own), under the same permissions. Work on the task until it is done, then answer with a concise report of what you found or did, with the details the other agent needs (paths, names, figures). That report is all it will see.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    /// The agent's system prompt (carapace's environment section follows).
    pub prompt: String,
    /// The tools it may use, among its parent's; `None`: all of them.
    pub tools: Option<Vec<String>>,
    /// A model instead of the parent's (`inherit` or none: the parent's).
    pub model: Option<String>,
    /// Where it was defined.
    pub source: String,
}

impl AgentDefinition {
    pub fn general_purpose() -> Self {
        Self {
            name: GENERAL_PURPOSE.into(),
            description: "A general agent for searches, investigations and multi-step tasks".into(),
            prompt: GENERAL_PURPOSE_PROMPT.into(),
            tools: None,
            model: None,
            source: "built in".into(),
        }
    }
}

/// Parses one Markdown definition.
pub fn parse_markdown(text: &str, source: &str) -> Result<AgentDefinition, String> {
    let text = text.trim_start_matches('\u{feff}');
    let rest = text
        .strip_prefix("---")
        .ok_or_else(|| format!("{source}: no front matter (a `---` block at the top)"))?;
    let (front, body) = rest
        .split_once("\n---")
        .ok_or_else(|| format!("{source}: the front matter is not closed by `---`"))?;
    let body = body.split_once('\n').map_or("", |(_, body)| body).trim();
    let mut fields = std::collections::BTreeMap::new();
    for line in front
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| format!("{source}: `{line}` is not `key: value`"))?;
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        fields.insert(key.trim().to_string(), value.to_string());
    }
    let field = |key: &str| fields.get(key).filter(|v| !v.is_empty()).cloned();
    let name = field("name").ok_or_else(|| format!("{source}: no `name`"))?;
    let tools = field("tools").map(|tools| {
        tools
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .map(|t| t.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
            .filter(|t| !t.is_empty())
            .collect()
    });
    definition(
        name,
        field("description"),
        body.to_string(),
        tools,
        field("model"),
        source,
    )
}

/// `--agents '{"name": {"description", "prompt", "tools"?, "model"?}}'`.
pub fn parse_json(value: &Value, source: &str) -> Result<Vec<AgentDefinition>, String> {
    let agents = value
        .as_object()
        .ok_or_else(|| format!("{source}: expected an object of agents by name"))?;
    agents
        .iter()
        .map(|(name, agent)| {
            let text = |key: &str| agent[key].as_str().map(str::to_string);
            let tools = match &agent["tools"] {
                Value::Null => None,
                Value::Array(tools) => Some(
                    tools
                        .iter()
                        .map(|t| {
                            t.as_str().map(str::to_string).ok_or_else(|| {
                                format!("{source}: agent `{name}`: a tool is not a name")
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                _ => return Err(format!("{source}: agent `{name}`: `tools` is not a list")),
            };
            definition(
                name.clone(),
                text("description"),
                text("prompt").unwrap_or_default(),
                tools,
                text("model"),
                source,
            )
        })
        .collect()
}

fn definition(
    name: String,
    description: Option<String>,
    prompt: String,
    tools: Option<Vec<String>>,
    model: Option<String>,
    source: &str,
) -> Result<AgentDefinition, String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "{source}: `{name}` is not an agent name (letters, digits, - and _)"
        ));
    }
    if prompt.trim().is_empty() {
        return Err(format!("{source}: agent `{name}` has no prompt"));
    }
    Ok(AgentDefinition {
        description: description
            .ok_or_else(|| format!("{source}: agent `{name}` has no `description`"))?,
        name,
        prompt,
        tools,
        model: model.filter(|m| m != "inherit"),
        source: source.to_string(),
    })
}

/// Every `*.md` definition in `dir` (sorted by file name); what cannot be
/// read or parsed is a warning, never a failure of the session.
pub fn load_dir(dir: &Path, warnings: &mut Vec<String>) -> Vec<AgentDefinition> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    let mut agents = Vec::new();
    for path in paths {
        let source = path.display().to_string();
        match std::fs::read_to_string(&path).map_err(|e| format!("{source}: {e}")) {
            Ok(text) => match parse_markdown(&text, &source) {
                Ok(agent) => agents.push(agent),
                Err(e) => warnings.push(format!("agent definition skipped: {e}")),
            },
            Err(e) => warnings.push(format!("agent definition skipped: {e}")),
        }
    }
    agents
}

/// The session's agents: the built-in one, then the user's, the project's
/// and the flag's; a later one of the same name replaces an earlier one.
pub fn merge(groups: Vec<Vec<AgentDefinition>>) -> Vec<AgentDefinition> {
    let mut agents = vec![AgentDefinition::general_purpose()];
    for agent in groups.into_iter().flatten() {
        match agents.iter_mut().find(|a| a.name == agent.name) {
            Some(existing) => *existing = agent,
            None => agents.push(agent),
        }
    }
    agents
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn markdown_definitions_in_claude_codes_format() -> Result<(), String> {
        let agent = parse_markdown(
            "---\nname: reviewer\ndescription: \"Reviews changes\"\ntools: Read, Grep\nmodel: inherit\n---\nYou review code.\n",
            "r.md",
        )?;
        assert_eq!(agent.name, "reviewer");
        assert_eq!(agent.description, "Reviews changes");
        assert_eq!(
            agent.tools,
            Some(vec!["Read".to_string(), "Grep".to_string()])
        );
        assert_eq!(agent.model, None);
        assert_eq!(agent.prompt, "You review code.");
        assert!(parse_markdown("no front matter", "x.md").is_err());
        assert!(
            parse_markdown("---\nname: x\n---\nbody", "x.md").is_err(),
            "no description"
        );
        assert!(parse_markdown("---\nname: ../x\ndescription: d\n---\nbody", "x.md").is_err());
        Ok(())
    }

    #[test]
    fn json_definitions_and_merging() -> Result<(), String> {
        let flag = parse_json(
            &json!({"general-purpose": {"description": "mine", "prompt": "p"},
                    "lister": {"description": "lists", "prompt": "list", "tools": ["Glob"]}}),
            "--agents",
        )?;
        let merged = merge(vec![flag]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].description, "mine");
        assert_eq!(merged[1].tools, Some(vec!["Glob".to_string()]));
        assert!(
            parse_json(
                &json!({"x": {"description": "d", "prompt": "p", "tools": "Read"}}),
                "f"
            )
            .is_err()
        );
        Ok(())
    }
}
