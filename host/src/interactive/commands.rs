//! What the screen does itself: the slash commands that read or change
//! the session rather than ask the model (`/help`, `/status`, `/cost`,
//! `/model`, `/permissions`, `/mcp`, `/agents`, `/plugins`, `/exit`),
//! Shift+Tab's modes, and the prompts typed before, kept per project.
//! Every other `/name` goes to the turns, as in print mode: `/compact`,
//! the skills and custom commands, and an unknown name answered there.

use super::Ending;
use super::app::App;
use crate::policy::{ModeChangeBy, PermissionMode, RuleKind};
use crate::session::{Session, SessionPaths};
use crate::tui::cells::{Cell, NoticeLevel};
use std::io::Write;
use std::path::PathBuf;

pub enum Local {
    /// Answered here.
    Done,
    /// The session on the screen ends (`/exit`, `/clear`, `/resume`).
    End(Ending),
    /// For the turns.
    ForTheTurns,
}

pub const HELP: &str = "\
Type a message and press Enter; Shift+Enter (or \\ then Enter) starts a new line.
Esc interrupts the turn · Shift+Tab changes the mode · Up/Down walk earlier prompts
Ctrl-C clears the prompt (twice on an empty prompt exits) · Ctrl-D exits

/help         this
/status       the session: id, model, mode, working directory
/cost         what the session has spent
/model [NAME] the model, or change it for the next turns
/permissions  the rules deciding calls
/context      what the model's context holds
/hooks        the hooks that run, and on what
/bashes       background shells and their state
/mcp [login NAME]  MCP servers and their state, or sign in to one (OAuth)
/agents       the agent types the Agent tool offers
/plugins      installed plugins
/compact [INSTRUCTIONS]  summarise the conversation to free context
/clear        a new session (this one can be resumed)
/resume [ID]  go on with another session of this project
/exit         leave (the session can be resumed)";

/// `text` if it is a command the screen answers.
pub fn local(session: &Session, app: &mut App, text: &str) -> Local {
    let Some(command) = text.trim().strip_prefix('/') else {
        return Local::ForTheTurns;
    };
    let (name, argument) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    let argument = argument.trim();
    let answer = match name {
        "exit" | "quit" => return Local::End(Ending::Leave),
        "clear" => return Local::End(Ending::Clear),
        "resume" if argument.is_empty() => return Local::End(Ending::Pick),
        "resume" => return Local::End(Ending::Resume(argument.to_string())),
        "help" => HELP.to_string(),
        "status" => format!(
            "Session {}\nModel {}\nMode {}\nWorking directory {}",
            session.id,
            app.status.model,
            session.mode().as_str(),
            session.paths.cwd.display()
        ),
        "cost" => format!("This session has cost ${:.4} so far.", app.status.cost_usd),
        "model" => model(session, app, argument),
        "permissions" => permissions(session),
        "hooks" if !argument.is_empty() => switch_hook(session, argument),
        "context" => context(session, app),
        other => match listing(session, other) {
            Some(answer) => answer,
            None => return Local::ForTheTurns,
        },
    };
    app.say(Cell::User(text.to_string()));
    app.say(Cell::Notice(NoticeLevel::Info, answer));
    Local::Done
}

/// `/hooks enable N` or `/hooks disable N`: hook N on or off for this
/// session.
fn switch_hook(session: &Session, argument: &str) -> String {
    let mut words = argument.split_whitespace();
    let on = match words.next() {
        Some("enable" | "on") => true,
        Some("disable" | "off") => false,
        _ => return "Use /hooks to list the hooks, /hooks disable N or /hooks enable N to switch hook N for this session.".into(),
    };
    match words.next().and_then(|n| n.parse::<usize>().ok()) {
        Some(number) => session.hooks.switch(number, on).unwrap_or_else(|why| why),
        None => "Which hook? Give its number from /hooks.".into(),
    }
}

/// The commands that list a part of the session: hooks, shells, MCP
/// servers, agent types, plugins.
fn listing(session: &Session, name: &str) -> Option<String> {
    let field = |v: &serde_json::Value, key: &str| v[key].as_str().unwrap_or("?").to_string();
    Some(match name {
        "hooks" => listed("Hooks", session.hooks.describe().into_iter()),
        "bashes" => {
            let shells = session.sandbox.shells().into_iter().flat_map(|s| s.list());
            let line = |(id, command, status): (String, String, crate::sandbox::ShellStatus)| {
                format!("{id} — {} — {command}", status.as_str())
            };
            listed("Background shells", shells.map(line))
        }
        "mcp" => listed(
            "MCP servers",
            session.mcp_status().iter().map(|s| {
                let error = s["error"]
                    .as_str()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default();
                format!("{} — {}{error}", field(s, "name"), field(s, "status"))
            }),
        ),
        "agents" => listed(
            "Agent types",
            session
                .agents
                .iter()
                .map(|a| format!("{} — {}", a.name, a.description)),
        ),
        "plugins" => listed(
            "Plugins",
            session
                .plugins
                .iter()
                .map(|p| format!("{} — {}", field(p, "name"), field(p, "status"))),
        ),
        _ => return None,
    })
}

fn listed(title: &str, items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.map(|i| format!("  {i}")).collect();
    match items.is_empty() {
        true => format!("{title}: none"),
        false => format!("{title}:\n{}", items.join("\n")),
    }
}

fn model(session: &Session, app: &mut App, name: &str) -> String {
    let Some(run) = &session.run else {
        return "This session has no model.".into();
    };
    if name.is_empty() {
        return format!(
            "The model is {}. `/model NAME` changes it for the next turns.",
            app.status.model
        );
    }
    let id = crate::model::resolve_model(name);
    if let Ok(mut current) = run.model_name.lock() {
        *current = id.clone();
    }
    app.status.model = id.clone();
    let caveat = crate::model::caveat(name)
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    format!("The next turns use {id}.{caveat}")
}

/// The context's parts, in tokens (a byte count over four, as the
/// loop's own estimate counts).
fn context(session: &Session, app: &App) -> String {
    let Some(run) = &session.run else {
        return "This session has no model.".into();
    };
    let parts =
        crate::conversation::context_parts(session, &run.config, session.loop_tools.as_ref());
    let tokens = |bytes: usize| bytes.div_ceil(4);
    let tools: usize = parts.tools.iter().map(|(_, bytes)| bytes).sum();
    let mut lines = vec![
        format!(
            "System prompt   ~{} tokens",
            tokens(parts.system_prompt.len())
        ),
        format!(
            "Tools           ~{} tokens ({} tools)",
            tokens(tools),
            parts.tools.len()
        ),
    ];
    for memory in &parts.memory_files {
        lines.push(format!(
            "Memory          ~{} tokens  {} ({})",
            tokens(memory.bytes),
            memory.path,
            memory.kind
        ));
    }
    if parts.skills.1 > 0 {
        lines.push(format!(
            "Skills listing  ~{} tokens ({} skills)",
            tokens(parts.skills.0),
            parts.skills.1
        ));
    }
    lines.push(format!(
        "Last request    {} tokens of a {}-token window{}",
        app.status.context_tokens,
        parts.window,
        if parts.autocompact {
            format!("; compacted at {}", parts.autocompact_at)
        } else {
            String::new()
        }
    ));
    lines.join("\n")
}

/// The commands `/` offers: the screen's own, `/compact`, and the
/// session's custom commands and skills, each with what it does.
pub fn offered(session: &Session) -> Vec<(String, String)> {
    let mut offered: Vec<(String, String)> = HELP
        .lines()
        .filter_map(|line| line.strip_prefix('/'))
        .filter_map(|line| {
            let (name, rest) = line.split_once(' ')?;
            // After the name: an argument in brackets, then what it does.
            let rest = rest.trim_start();
            let description = match rest.strip_prefix('[') {
                Some(bracketed) => bracketed.split_once(']').map_or(rest, |(_, after)| after),
                None => rest,
            };
            Some((name.to_string(), description.trim().to_string()))
        })
        .collect();
    let prompts = session.pipeline.mcp_servers().prompt_commands();
    for command in session.commands.described(false) {
        let name = command["name"].as_str().unwrap_or_default().to_string();
        if !name.is_empty() && !offered.iter().any(|(n, _)| *n == name) {
            offered.push((
                name,
                command["description"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ));
        }
    }
    // An MCP server's prompts, after the session's own commands.
    offered.extend(prompts);
    offered
}

fn permissions(session: &Session) -> String {
    let policy = session.pipeline.policy();
    let mut lines = vec![format!("Mode: {}", policy.mode().as_str())];
    for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
        let rules: Vec<String> = policy
            .rules()
            .iter()
            .filter(|r| r.kind == kind)
            .map(|r| format!("  {} ({})", r.text, r.source.describe()))
            .collect();
        if !rules.is_empty() {
            lines.push(format!("{kind:?}:"));
            lines.extend(rules);
        }
    }
    if lines.len() == 1 {
        lines.push("No rules: every call the mode does not allow is asked.".into());
    }
    lines.join("\n")
}

/// Shift+Tab: default → acceptEdits → plan (→ bypassPermissions, when the
/// session may reach it) → auto → default, Claude Code's order.
pub fn cycle_mode(session: &Session, app: &mut App) {
    let cell = session.pipeline.policy().mode_cell().clone();
    let next = match cell.get() {
        PermissionMode::Default => PermissionMode::AcceptEdits,
        PermissionMode::AcceptEdits => PermissionMode::Plan,
        PermissionMode::Plan if cell.bypass_allowed() => PermissionMode::BypassPermissions,
        PermissionMode::Plan | PermissionMode::BypassPermissions => PermissionMode::Auto,
        _ => PermissionMode::Default,
    };
    match cell.change(next, ModeChangeBy::User) {
        Ok(()) => app.status.mode = Some(next),
        Err(refused) => app.say(Cell::Notice(NoticeLevel::Warning, refused.to_string())),
    }
}

/// The prompts typed in one project, oldest first, in
/// `prompt-history.txt` beside the project's transcripts (one JSON string
/// a line).
pub struct PromptHistory {
    path: PathBuf,
}

/// How many earlier prompts Up reaches.
const KEPT: usize = 200;

impl PromptHistory {
    pub fn for_project(paths: &SessionPaths) -> Self {
        let project = crate::transcript::project_dir(&paths.config_dir, &paths.cwd);
        Self {
            path: project.join("prompt-history.txt"),
        }
    }

    pub fn load(&self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return Vec::new();
        };
        let all: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        all[all.len().saturating_sub(KEPT)..].to_vec()
    }

    /// Remembers a prompt; a history that cannot be written is only a
    /// lost convenience, said in the log.
    pub fn append(&self, text: &str) {
        let line = serde_json::Value::String(text.to_string()).to_string();
        let written = crate::files::open_append(&self.path).and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = written {
            tracing::debug!(error = %e, path = %self.path.display(), "the prompt history was not written");
        }
    }
}
