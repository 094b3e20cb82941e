//! What the model is told, as print mode builds it: the system prompt the
//! flags (or the TypeScript SDK's `initialize`) choose, and what the
//! session's context holds besides its messages (`get_context_usage`).

use crate::agent::QueryConfig;
use crate::session::{PromptChoice, Session};

/// What the session's context holds besides its messages, for the SDK's
/// `get_context_usage`.
pub fn context_parts(
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

/// `choice`, with what the TypeScript SDK's `initialize` set.
pub(super) fn with_start(
    mut choice: PromptChoice,
    options: &crate::control::start::StartOptions,
) -> PromptChoice {
    if let Some(replacement) = options.replacement() {
        choice.replace = Some(replacement);
    }
    if let Some(append) = &options.append_system_prompt {
        choice.append = Some(append.clone());
    }
    choice
}
