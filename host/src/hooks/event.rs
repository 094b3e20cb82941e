//! The hooks' vocabulary: the events a hook is told about, in Claude
//! Code's names, what every event carries, and a typed hook's answer. Both
//! kinds of hook (typed components and Claude Code–protocol commands) and
//! the pipeline speak it; it imports nothing of carapace.

/// The events a hook can handle, in Claude Code's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum HookEventKind {
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PostToolBatch,
    Stop,
    SubagentStop,
    UserPromptSubmit,
    SessionStart,
    SessionEnd,
    PreCompact,
    Notification,
    SubagentStart,
    StopFailure,
    InstructionsLoaded,
    PostCompact,
    PermissionRequest,
    UserPromptExpansion,
    Setup,
    MessageDisplay,
    PreSkillShellCommand,
    PreModelSwitch,
    PostModelSwitch,
    Elicitation,
    ElicitationResult,
}

impl HookEventKind {
    pub const ALL: [HookEventKind; 24] = [
        HookEventKind::PreToolUse,
        HookEventKind::PostToolUse,
        HookEventKind::PostToolUseFailure,
        HookEventKind::PostToolBatch,
        HookEventKind::Stop,
        HookEventKind::SubagentStop,
        HookEventKind::UserPromptSubmit,
        HookEventKind::SessionStart,
        HookEventKind::SessionEnd,
        HookEventKind::PreCompact,
        HookEventKind::Notification,
        HookEventKind::SubagentStart,
        HookEventKind::StopFailure,
        HookEventKind::InstructionsLoaded,
        HookEventKind::PostCompact,
        HookEventKind::PermissionRequest,
        HookEventKind::UserPromptExpansion,
        HookEventKind::Setup,
        HookEventKind::MessageDisplay,
        HookEventKind::PreSkillShellCommand,
        HookEventKind::PreModelSwitch,
        HookEventKind::PostModelSwitch,
        HookEventKind::Elicitation,
        HookEventKind::ElicitationResult,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEventKind::PreToolUse => "PreToolUse",
            HookEventKind::PostToolUse => "PostToolUse",
            HookEventKind::PostToolUseFailure => "PostToolUseFailure",
            HookEventKind::PostToolBatch => "PostToolBatch",
            HookEventKind::Stop => "Stop",
            HookEventKind::SubagentStop => "SubagentStop",
            HookEventKind::UserPromptSubmit => "UserPromptSubmit",
            HookEventKind::SessionStart => "SessionStart",
            HookEventKind::SessionEnd => "SessionEnd",
            HookEventKind::PreCompact => "PreCompact",
            HookEventKind::Notification => "Notification",
            HookEventKind::SubagentStart => "SubagentStart",
            HookEventKind::StopFailure => "StopFailure",
            HookEventKind::InstructionsLoaded => "InstructionsLoaded",
            HookEventKind::PostCompact => "PostCompact",
            HookEventKind::PermissionRequest => "PermissionRequest",
            HookEventKind::UserPromptExpansion => "UserPromptExpansion",
            HookEventKind::Setup => "Setup",
            HookEventKind::MessageDisplay => "MessageDisplay",
            HookEventKind::PreSkillShellCommand => "PreSkillShellCommand",
            HookEventKind::PreModelSwitch => "PreModelSwitch",
            HookEventKind::PostModelSwitch => "PostModelSwitch",
            HookEventKind::Elicitation => "Elicitation",
            HookEventKind::ElicitationResult => "ElicitationResult",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// What every event carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCommon {
    pub session_id: String,
    pub transcript_path: String,
    pub cwd: String,
    pub permission_mode: String,
    /// The user prompt being answered (from its UserPromptSubmit on).
    pub prompt_id: Option<String>,
    /// The subagent the event comes from (`agent_id`, `agent_type`), when
    /// it is a child loop's.
    pub agent: Option<(String, String)>,
    /// The MCP server of the call the event is about (its name and where
    /// it was configured), when the tool is one of a server's.
    pub mcp_server: Option<(String, String)>,
}

/// A tool call, its input as JSON (text only at the edge that needs it:
/// a typed hook's WIT call).
#[derive(Debug, Clone, PartialEq)]
pub struct HookToolCall {
    pub tool_name: String,
    pub tool_input: serde_json::Value,
    pub tool_use_id: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum HookEvent {
    PreToolUse(HookToolCall),
    PostToolUse {
        call: HookToolCall,
        /// What the tool said it did (its structured result, else what the
        /// model sees).
        tool_response: serde_json::Value,
        /// How long the call ran.
        duration_ms: u64,
    },
    PostToolUseFailure {
        call: HookToolCall,
        error: String,
        duration_ms: u64,
    },
    PostToolBatch(Vec<(HookToolCall, serde_json::Value)>),
    Stop {
        stop_hook_active: bool,
        last_assistant_message: String,
    },
    SubagentStop {
        stop_hook_active: bool,
        last_assistant_message: String,
        /// The child's own transcript (empty when none is kept).
        agent_transcript_path: String,
    },
    /// A subagent starts (which one: the event's agent).
    SubagentStart,
    /// A turn ended because the model could not be reached.
    StopFailure {
        /// Claude Code's name for the failure (`server_error`, …).
        error: String,
        /// What the user was shown.
        last_assistant_message: String,
    },
    /// A compaction ended: what triggered it and the model's summary.
    PostCompact {
        trigger: String,
        compact_summary: String,
    },
    /// A memory file was read into the model's instructions.
    InstructionsLoaded {
        file_path: String,
        memory_type: String,
        load_reason: String,
    },
    UserPromptSubmit {
        prompt: String,
    },
    SessionStart {
        source: String,
        details: StartDetails,
    },
    SessionEnd {
        reason: String,
    },
    PreCompact {
        trigger: String,
        /// The user's `/compact` instructions.
        custom_instructions: Option<String>,
    },
    Notification {
        message: String,
    },
    /// A call would be asked about: a hook may answer in the user's place.
    PermissionRequest {
        call: HookToolCall,
        /// What "always allow" would add (Claude Code's
        /// `permission_suggestions`).
        suggestions: serde_json::Value,
    },
    /// `--init` (`init`) or `--maintenance` (`maintenance`), before the
    /// session starts.
    Setup {
        trigger: String,
    },
    /// A skill's or command's `` !`command` `` span, about to run.
    PreSkillShellCommand {
        call: HookToolCall,
        command_name: String,
        /// `projectSettings` or `userSettings`.
        command_source: String,
        /// `user` (`/name`) or `model` (the Skill tool).
        invoked_by: String,
    },
    /// The session's model is about to change (a hook may block it).
    PreModelSwitch(ModelSwitch),
    /// The session's model changed.
    PostModelSwitch(ModelSwitch),
    /// One text block of a response, as it is shown.
    MessageDisplay {
        turn_id: String,
        message_id: String,
        text: String,
    },
    /// An MCP server asks the user something: a hook may answer instead.
    Elicitation(ElicitationAsked),
    /// The answer to an MCP server's question, before it is sent: a hook
    /// may change it.
    ElicitationResult(ElicitationAnswered),
    /// A prompt that is a custom command, about to be expanded.
    UserPromptExpansion {
        /// `slash_command`.
        expansion_type: String,
        command_name: String,
        command_args: String,
        /// Where the command is defined (`projectSettings`, …).
        command_source: String,
        prompt: String,
    },
}

impl HookEvent {
    pub fn kind(&self) -> HookEventKind {
        match self {
            HookEvent::PreToolUse(_) => HookEventKind::PreToolUse,
            HookEvent::PostToolUse { .. } => HookEventKind::PostToolUse,
            HookEvent::PostToolUseFailure { .. } => HookEventKind::PostToolUseFailure,
            HookEvent::PostToolBatch(_) => HookEventKind::PostToolBatch,
            HookEvent::Stop { .. } => HookEventKind::Stop,
            HookEvent::SubagentStop { .. } => HookEventKind::SubagentStop,
            HookEvent::UserPromptSubmit { .. } => HookEventKind::UserPromptSubmit,
            HookEvent::SessionStart { .. } => HookEventKind::SessionStart,
            HookEvent::SessionEnd { .. } => HookEventKind::SessionEnd,
            HookEvent::PreCompact { .. } => HookEventKind::PreCompact,
            HookEvent::Notification { .. } => HookEventKind::Notification,
            HookEvent::SubagentStart => HookEventKind::SubagentStart,
            HookEvent::StopFailure { .. } => HookEventKind::StopFailure,
            HookEvent::InstructionsLoaded { .. } => HookEventKind::InstructionsLoaded,
            HookEvent::PostCompact { .. } => HookEventKind::PostCompact,
            HookEvent::PermissionRequest { .. } => HookEventKind::PermissionRequest,
            HookEvent::UserPromptExpansion { .. } => HookEventKind::UserPromptExpansion,
            HookEvent::Setup { .. } => HookEventKind::Setup,
            HookEvent::MessageDisplay { .. } => HookEventKind::MessageDisplay,
            HookEvent::PreSkillShellCommand { .. } => HookEventKind::PreSkillShellCommand,
            HookEvent::PreModelSwitch(_) => HookEventKind::PreModelSwitch,
            HookEvent::PostModelSwitch(_) => HookEventKind::PostModelSwitch,
            HookEvent::Elicitation(_) => HookEventKind::Elicitation,
            HookEvent::ElicitationResult(_) => HookEventKind::ElicitationResult,
        }
    }

    /// The call this event is about, if any.
    pub fn tool_call(&self) -> Option<&HookToolCall> {
        match self {
            HookEvent::PreToolUse(call)
            | HookEvent::PostToolUse { call, .. }
            | HookEvent::PostToolUseFailure { call, .. }
            | HookEvent::PermissionRequest { call, .. } => Some(call),
            _ => None,
        }
    }

    /// The call an event is about, if any.
    pub fn tool_use_id(&self) -> Option<&str> {
        match self {
            HookEvent::PreToolUse(call)
            | HookEvent::PostToolUse { call, .. }
            | HookEvent::PostToolUseFailure { call, .. }
            | HookEvent::PermissionRequest { call, .. } => Some(&call.tool_use_id),
            _ => None,
        }
    }

    pub fn tool_name(&self) -> Option<&str> {
        match self {
            HookEvent::PreToolUse(call)
            | HookEvent::PostToolUse { call, .. }
            | HookEvent::PostToolUseFailure { call, .. } => Some(&call.tool_name),
            _ => None,
        }
    }
}

/// An MCP server's question for the user, as hooks are told it.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationAsked {
    pub server: String,
    pub message: String,
    /// `form` or `url`.
    pub mode: String,
    pub url: Option<String>,
    pub elicitation_id: Option<String>,
    pub requested_schema: Option<serde_json::Value>,
}

/// The answer to it, before it goes to the server.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationAnswered {
    pub server: String,
    pub elicitation_id: Option<String>,
    pub mode: String,
    /// `accept`, `decline` or `cancel`.
    pub action: String,
    pub content: Option<serde_json::Value>,
}

/// What a SessionStart tells beyond its source, as Claude Code 2.1.332
/// does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StartDetails {
    /// The model, after a compaction.
    pub model: Option<String>,
    /// A resumed session's history: how old and how large.
    pub resumed: Option<ResumedHistory>,
}

/// A resumed history, as the SessionStart of a resume describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumedHistory {
    pub seconds_since_last_response: u64,
    /// The history's size, estimated.
    pub context_tokens: u64,
    /// What writing it to the prompt cache again would cost, in dollars
    /// (`None`: the model's price is unknown).
    pub estimated_cache_write_usd: Option<f64>,
}

/// A change of the session's model, as Claude Code 2.1.332 tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSwitch {
    pub from_model: String,
    pub to_model: String,
    /// What was asked for (an alias before it was resolved).
    pub requested_model: String,
    /// `sdk` (the SDK's `set_model`) or `command` (the screen's `/model`).
    pub source: String,
    /// The history's size, estimated.
    pub context_tokens: u64,
    /// Whether the last response came less than five minutes ago (the
    /// prompt cache's life).
    pub prompt_cache_warm: bool,
    /// Writing the history to the new model's cache, in dollars (`None`:
    /// its price is unknown).
    pub estimated_cache_write_usd: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPermission {
    Allow,
    Deny,
    Ask,
    Defer,
}

/// A typed hook's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookOutcome {
    pub decision: Option<HookPermission>,
    pub reason: Option<String>,
    pub block: bool,
    pub updated_input: Option<String>,
    pub additional_context: Option<String>,
    pub updated_tool_output: Option<String>,
    pub stop_reason: Option<String>,
    pub system_message: Option<String>,
}
