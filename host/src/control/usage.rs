//! `get_context_usage`: the context window by part — system prompt, tools
//! (carapace's and MCP servers'), memory files, skills, messages — in the
//! shape Claude Code 2.1.197 answers (`SDKControlGetContextUsageResponse`).
//! Sizes are estimates at four bytes a token, as the loop's own estimate
//! for compaction is; messages are counted after each turn.

use serde_json::{Value, json};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// One memory file as the session read it.
#[derive(Debug, Clone)]
pub struct MemoryEntry {
    pub path: String,
    /// `Managed`, `User`, `Project` or `Local`.
    pub kind: String,
    pub bytes: usize,
}

/// What the session is made of besides its messages, fixed once the
/// session started (the system prompt may still change at `initialize`).
#[derive(Debug, Clone, Default)]
pub struct ContextParts {
    pub system_prompt: String,
    /// `(name, definition bytes)` of each tool offered.
    pub tools: Vec<(String, usize)>,
    pub memory_files: Vec<MemoryEntry>,
    /// The skills listing's bytes, and how many it lists.
    pub skills: (usize, usize),
    /// The context reminder's bytes beyond the memory files (its wrapper,
    /// today's date).
    pub reminder_rest: usize,
    /// `(agent type, source, description bytes)`.
    pub agents: Vec<(String, String, usize)>,
    pub window: u64,
    pub autocompact: bool,
    pub autocompact_at: u64,
}

#[derive(Default)]
pub struct ContextMeter {
    parts: Mutex<ContextParts>,
    messages_tokens: AtomicU64,
    model: Mutex<String>,
    /// When the last turn ended (the prompt cache lives five minutes).
    last_turn: Mutex<Option<std::time::Instant>>,
}

fn tokens(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

impl ContextMeter {
    pub fn set_parts(&self, parts: ContextParts) {
        if let Ok(mut held) = self.parts.lock() {
            *held = parts;
        }
    }

    pub fn set_system_prompt(&self, prompt: &str) {
        if let Ok(mut held) = self.parts.lock() {
            held.system_prompt = prompt.to_string();
        }
    }

    /// After a turn: the history's estimate, and the model it ran on.
    pub fn set_messages(&self, tokens: u64, model: &str) {
        self.messages_tokens.store(tokens, Ordering::Relaxed);
        if let Ok(mut held) = self.model.lock() {
            *held = model.to_string();
        }
        if let Ok(mut last) = self.last_turn.lock() {
            *last = Some(std::time::Instant::now());
        }
    }

    /// The history's size, estimated, and whether the last turn ended
    /// less than five minutes ago.
    pub fn history(&self) -> (u64, bool) {
        let warm = self
            .last_turn
            .lock()
            .ok()
            .and_then(|last| *last)
            .is_some_and(|at| at.elapsed() < std::time::Duration::from_secs(300));
        (self.messages_tokens.load(Ordering::Relaxed), warm)
    }

    /// The answer to `get_context_usage`.
    pub fn answer(&self) -> Value {
        let parts = self.parts.lock().map(|p| p.clone()).unwrap_or_default();
        let is_mcp = |name: &str| name.starts_with("mcp__");
        let tool_tokens = |mcp: bool| {
            parts
                .tools
                .iter()
                .filter(|(n, _)| is_mcp(n) == mcp)
                .map(|(_, b)| tokens(*b))
                .sum::<u64>()
        };
        let memory = parts
            .memory_files
            .iter()
            .map(|m| tokens(m.bytes))
            .sum::<u64>();
        let messages = self.messages_tokens.load(Ordering::Relaxed) + tokens(parts.reminder_rest);
        let mut categories = vec![
            ("System prompt", tokens(parts.system_prompt.len()), "gray"),
            ("System tools", tool_tokens(false), "blue"),
            ("MCP tools", tool_tokens(true), "cyan"),
            ("Memory files", memory, "orange"),
            ("Skills", tokens(parts.skills.0), "yellow"),
            ("Messages", messages, "purple"),
        ];
        let used: u64 = categories.iter().map(|(_, t, _)| t).sum();
        categories.push(("Free space", parts.window.saturating_sub(used), "white"));
        let model = self.model.lock().map(|m| m.clone()).unwrap_or_default();
        json!({
            "categories": categories
                .iter()
                .map(|(name, tokens, color)| json!({"name": name, "tokens": tokens, "color": color}))
                .collect::<Vec<_>>(),
            "totalTokens": used,
            "maxTokens": parts.window,
            "rawMaxTokens": parts.window,
            "percentage": if parts.window == 0 { 0.0 } else { used as f64 * 100.0 / parts.window as f64 },
            "gridRows": [],
            "model": model,
            "memoryFiles": parts.memory_files.iter().map(|m| json!({
                "path": m.path, "type": m.kind, "tokens": tokens(m.bytes),
            })).collect::<Vec<_>>(),
            "mcpTools": parts.tools.iter().filter(|(n, _)| is_mcp(n)).map(|(name, bytes)| json!({
                "name": name,
                "serverName": name.strip_prefix("mcp__").and_then(|r| r.split("__").next()).unwrap_or_default(),
                "tokens": tokens(*bytes),
                "isLoaded": true,
            })).collect::<Vec<_>>(),
            "systemTools": parts.tools.iter().filter(|(n, _)| !is_mcp(n)).map(|(name, bytes)| json!({
                "name": name, "tokens": tokens(*bytes),
            })).collect::<Vec<_>>(),
            "agents": parts.agents.iter().map(|(name, source, bytes)| json!({
                "agentType": name, "source": source, "tokens": tokens(*bytes),
            })).collect::<Vec<_>>(),
            "skills": {
                "totalSkills": parts.skills.1,
                "includedSkills": parts.skills.1,
                "tokens": tokens(parts.skills.0),
                "skillFrontmatter": [],
            },
            "autoCompactThreshold": parts.autocompact_at,
            "isAutoCompactEnabled": parts.autocompact,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_add_up_to_the_total_and_the_window() {
        let meter = ContextMeter::default();
        meter.set_parts(ContextParts {
            system_prompt: "x".repeat(400),
            tools: vec![("Read".into(), 800), ("mcp__calc__add".into(), 40)],
            memory_files: vec![MemoryEntry {
                path: "/p/CLAUDE.md".into(),
                kind: "Project".into(),
                bytes: 120,
            }],
            skills: (80, 2),
            reminder_rest: 0,
            agents: Vec::new(),
            window: 200_000,
            autocompact: true,
            autocompact_at: 167_000,
        });
        meter.set_messages(1_000, "claude-sonnet-4-5");
        let answer = meter.answer();
        let by_name = |name: &str| {
            answer["categories"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["name"] == name))
                .map(|c| c["tokens"].clone())
        };
        assert_eq!(by_name("System prompt"), Some(json!(100)));
        assert_eq!(by_name("System tools"), Some(json!(200)));
        assert_eq!(by_name("MCP tools"), Some(json!(10)));
        assert_eq!(by_name("Memory files"), Some(json!(30)));
        assert_eq!(by_name("Skills"), Some(json!(20)));
        assert_eq!(by_name("Messages"), Some(json!(1_000)));
        assert_eq!(answer["totalTokens"], 1_360);
        assert_eq!(by_name("Free space"), Some(json!(200_000 - 1_360)));
        assert_eq!(answer["mcpTools"][0]["serverName"], "calc");
        assert_eq!(answer["model"], "claude-sonnet-4-5");
    }
}
