//! What the model is told, as print mode builds it: the system prompt the
//! flags (or the TypeScript SDK's `initialize`) choose, and what the
//! session's context holds besides its messages (`get_context_usage`).

use super::Cli;
use crate::agent::QueryConfig;
use crate::session::Session;
use anyhow::Context;

/// What the session's context holds besides its messages, for the SDK's
/// `get_context_usage`.
pub(super) fn context_parts(
    session: &Session,
    config: &QueryConfig,
    tools: &dyn crate::agent::ToolRuntime,
) -> crate::control::usage::ContextParts {
    use crate::control::usage::{ContextParts, MemoryEntry};
    let memory_files: Vec<MemoryEntry> = session
        .memory_files
        .iter()
        .map(|(path, kind, bytes)| MemoryEntry {
            path: path.display().to_string(),
            kind: kind.name().to_string(),
            bytes: *bytes,
        })
        .collect();
    let listing = session
        .user_context
        .first()
        .filter(|_| session.skills_listed)
        .map(String::as_str)
        .unwrap_or_default();
    let listed = listing.lines().filter(|l| l.starts_with("- ")).count();
    let reminders: usize = session.user_context.iter().map(String::len).sum();
    let memory_bytes: usize = memory_files.iter().map(|m| m.bytes).sum();
    ContextParts {
        system_prompt: config.system_prompt.clone(),
        tools: tools
            .specs()
            .iter()
            .map(|spec| {
                let bytes = serde_json::to_string(spec).map_or(0, |s| s.len());
                (spec.name.clone(), bytes)
            })
            .collect(),
        skills: (listing.len(), listed),
        reminder_rest: reminders.saturating_sub(listing.len() + memory_bytes),
        memory_files,
        agents: session
            .agents
            .iter()
            .map(|a| (a.name.clone(), a.source.clone(), a.description.len()))
            .collect(),
        window: config.context.window,
        autocompact: config.context.autocompact,
        autocompact_at: config.context.autocompact_at,
    }
}

/// What replaces or extends carapace's system prompt: the flags, then the
/// TypeScript SDK's `initialize`.
#[derive(Debug, Clone, Default)]
pub(super) struct PromptChoice {
    replace: Option<String>,
    append: Option<String>,
}

impl PromptChoice {
    pub(super) fn from_flags(cli: &Cli) -> anyhow::Result<Self> {
        let replace = match (&cli.system_prompt, &cli.system_prompt_file) {
            (Some(text), _) => Some(text.clone()),
            (None, Some(path)) => Some(
                std::fs::read_to_string(path)
                    .with_context(|| format!("--system-prompt-file {}", path.display()))?,
            ),
            (None, None) => None,
        };
        Ok(Self {
            replace,
            append: cli.append_system_prompt.clone(),
        })
    }

    pub(super) fn with_start(mut self, options: &crate::control::start::StartOptions) -> Self {
        if let Some(replacement) = options.replacement() {
            self.replace = Some(replacement);
        }
        if let Some(append) = &options.append_system_prompt {
            self.append = Some(append.clone());
        }
        self
    }
}

/// carapace's system prompt (the main agent's before it), or the one
/// chosen instead, with the appended text after it.
pub(super) fn session_system_prompt(
    choice: &PromptChoice,
    inputs: &crate::prompt::PromptInputs<'_>,
    agent: Option<&crate::subagents::AgentDefinition>,
) -> String {
    let mut prompt = match (choice.replace.as_deref(), agent) {
        // The SDK's "none" (`[""]`) keeps the main agent's prompt, as in
        // Claude Code; any other text chosen replaces it.
        (Some(text), _) if !text.is_empty() => text.to_string(),
        // As a child's: the agent's prompt, then how tools run and where.
        (_, Some(agent)) => crate::prompt::child_prompt(&agent.prompt, inputs.environment),
        (Some(_), None) => String::new(),
        (None, None) => crate::prompt::system_prompt(inputs),
    };
    if let Some(extra) = choice.append.as_deref().filter(|e| !e.is_empty()) {
        if !prompt.is_empty() {
            prompt.push_str("\n\n");
        }
        prompt.push_str(extra);
    }
    prompt
}
