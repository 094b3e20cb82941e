//! `carapace acp`: the Agent Client Protocol on stdin/stdout, for editors
//! (Zed, JetBrains IDEs, Neovim and Emacs clients). One process serves
//! many sessions: each is built like a session of `carapace -p` (its own
//! policy, mode, history, transcript, hooks, MCP servers, background
//! commands) and they share the process's sandbox engine and compiled
//! components. A session's failure ends its turn only.
//!
//! The protocol itself is Zed's `agent-client-protocol` crate (v1): it
//! answers malformed JSON-RPC, unknown methods and requests no handler
//! takes with JSON-RPC errors.
//!
//! A front end, beside `interactive`, `worker` and `mcp_serve`: it imports
//! no other front end, and only `cli` imports it. Each `session/new` is a
//! [`SessionSpec`] — the command line's, with the client's directory and
//! servers — opened on the process's [`Sessions`]. It is an edge: what
//! fails is answered to the client as a protocol error. Imports:
//! `agent`, `control`, `conversation`, `policy`, `session`, `tools`,
//! `transcript` and the rooms they stand on.

mod asking;
mod content;
mod elicit;
mod live;
mod options;
mod updates;

use crate::session::{Asker, McpGiven, Resume, SessionSpec, Sessions};
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, CloseSessionResponse,
    Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, SessionCapabilities, SessionCloseCapabilities, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use anyhow::Context;
use live::{LiveSession, PromptError};
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use updates::TurnEnd;

/// How much one process takes on.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_sessions: usize,
    pub max_running: usize,
    pub permission_timeout: Duration,
}

/// What a session is budgeted in memory when the session limit is sized:
/// an idle one measures 0.17 MiB (BENCHMARKS.md); the rest is room for
/// its history, transcript buffers and a turn's streams.
const SESSION_BUDGET: u64 = 4 << 20;

/// The sessions this machine's memory holds at [`SESSION_BUDGET`] each:
/// the container's limit (cgroup v2 `memory.max`) where one is set, else
/// the machine's memory; between 16 and 10,000.
pub fn sessions_for_memory() -> usize {
    let limit = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    let total = limit.or_else(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    let sessions = total.map_or(16, |bytes| bytes / SESSION_BUDGET);
    usize::try_from(sessions)
        .unwrap_or(usize::MAX)
        .clamp(16, 10_000)
}

/// Turns at once across sessions: a turn mostly waits on the model, so
/// four per processor, at least 4.
pub fn turns_for_processors() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .saturating_mul(4)
        .max(4)
}

/// What a `session/new` or `session/load` asks for.
struct Opening {
    cwd: std::path::PathBuf,
    dirs: Vec<std::path::PathBuf>,
    mcp_servers: Vec<agent_client_protocol::v1::schema::McpServer>,
    /// The transcript to resume.
    resume: Option<String>,
}

/// What every session of the connection shares.
struct Server {
    /// What the session flags after `acp --` describe; each session adds
    /// its client's directories and servers.
    base: SessionSpec,
    limits: Limits,
    /// The engine and the transcript stores.
    opener: Sessions,
    sessions: Mutex<HashMap<String, Arc<LiveSession>>>,
    /// Turns running now, across sessions.
    running: Arc<Semaphore>,
    /// What the client said at `initialize` it can show of MCP servers'
    /// questions.
    elicitation: std::sync::OnceLock<elicit::ClientElicitation>,
}

/// Serves ACP on stdin/stdout: each `session/new` opens `base` in the
/// client's directory with its servers.
pub async fn serve(mut base: SessionSpec, limits: Limits) -> anyhow::Result<ExitCode> {
    // The client is asked, unless a prompt tool answers.
    if base.permissions.asker == Asker::Nobody {
        base.permissions.asker = Asker::Prompter { hosts: false };
    }
    // One name would be every session's.
    base.history.name = None;
    let opener = Sessions::new();
    opener.engine().context("starting the sandbox engine")?;
    let server = Arc::new(Server {
        running: Arc::new(Semaphore::new(limits.max_running.max(1))),
        base,
        limits,
        opener,
        sessions: Mutex::default(),
        elicitation: std::sync::OnceLock::new(),
    });
    let served = connect(server.clone()).await;
    // stdin closed (or the connection broke): every session ends cleanly,
    // its transcript synced.
    let sessions: Vec<_> = match server.sessions.lock() {
        Ok(mut sessions) => sessions.drain().map(|(_, s)| s).collect(),
        Err(_) => Vec::new(),
    };
    for session in sessions {
        session.close().await;
    }
    served.context("serving ACP on stdin/stdout")?;
    Ok(ExitCode::SUCCESS)
}

async fn connect(server: Arc<Server>) -> Result<(), Error> {
    let (new, load, prompt) = (server.clone(), server.clone(), server.clone());
    let (mode, option) = (server.clone(), server.clone());
    let (cancel, close) = (server.clone(), server.clone());
    let init = server;
    Agent
        .v1()
        .name("carapace")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                let modes = elicit::ClientElicitation::of(&request.client_capabilities);
                let _ = init.elicitation.set(modes);
                responder.respond(initialize(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let server = new.clone();
                let connection = cx.clone();
                cx.spawn(async move {
                    let opened = server.new_session(request, connection).await;
                    let live = opened.as_ref().ok().map(|(_, live)| live.clone());
                    responder.respond_with_result(opened.map(|(answer, _)| answer))?;
                    if let Some(live) = live {
                        live.announce_commands();
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let server = load.clone();
                let connection = cx.clone();
                cx.spawn(async move {
                    let opened = server.load_session(request, connection).await;
                    let live = opened.as_ref().ok().map(|(_, live)| live.clone());
                    responder.respond_with_result(opened.map(|(answer, _)| answer))?;
                    if let Some(live) = live {
                        live.announce_commands();
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let server = prompt.clone();
                // Taken here, in the order the client sent its messages.
                let cancels = server.live(&request.session_id.0).ok().map(|l| l.cancels());
                cx.spawn(async move {
                    responder.respond_with_result(server.prompt(request, cancels).await)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        _cx| { responder.respond_with_result(mode.set_mode(request)) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest,
                        responder: Responder<SetSessionConfigOptionResponse>,
                        _cx| {
                responder.respond_with_result(option.set_option(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest,
                        responder: Responder<CloseSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let server = close.clone();
                cx.spawn(async move { responder.respond_with_result(server.close(request).await) })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                cancel.cancel(&notification.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}

fn initialize(request: InitializeRequest) -> InitializeResponse {
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .session_capabilities(SessionCapabilities::new().close(SessionCloseCapabilities::new()))
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
        .mcp_capabilities(McpCapabilities::new().http(true));
    InitializeResponse::new(request.protocol_version)
        .agent_capabilities(capabilities)
        .agent_info(Implementation::new("carapace", env!("CARGO_PKG_VERSION")))
}

/// The client's request cannot be taken as it is (`-32602`).
fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params().data(serde_json::json!(message.into()))
}

/// carapace failed where the request was fine (`-32603`).
fn internal(message: impl Into<String>) -> Error {
    Error::internal_error().data(serde_json::json!(message.into()))
}

/// A session that failed to build, as the protocol names it: a transcript
/// `session/load` named that is not there is not found (`-32002`);
/// anything the request itself got wrong is invalid; the rest is
/// carapace's own failure.
fn not_started(error: crate::session::SessionError) -> Error {
    use crate::session::SessionError;
    use crate::transcript::TranscriptError;
    let message = format!("the session could not start: {error}");
    match &error {
        SessionError::Transcript(TranscriptError::NotFound { .. }) => not_found(message),
        SessionError::Transcript(TranscriptError::InUse(_))
        | SessionError::McpConfig(_)
        | SessionError::Invalid(_) => invalid(message),
        _ => internal(message),
    }
}

/// What the request names is not there (`-32002`).
fn not_found(message: impl Into<String>) -> Error {
    use agent_client_protocol::ErrorCode;
    Error::new(ErrorCode::RESOURCE_NOT_FOUND, "Resource not found")
        .data(serde_json::json!(message.into()))
}

/// `id` names no session of this connection.
fn no_session(id: &str) -> Error {
    not_found(format!("no session `{id}` on this connection"))
}

impl Server {
    fn live(&self, id: &str) -> Result<Arc<LiveSession>, Error> {
        self.sessions
            .lock()
            .ok()
            .and_then(|sessions| sessions.get(id).cloned())
            .ok_or_else(|| no_session(id))
    }

    async fn new_session(
        &self,
        request: NewSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<(NewSessionResponse, Arc<LiveSession>), Error> {
        let opening = Opening {
            cwd: request.cwd,
            dirs: request.additional_directories,
            mcp_servers: request.mcp_servers,
            resume: None,
        };
        let live = self.open(opening, connection).await?;
        let answer = NewSessionResponse::new(live.id.clone())
            .modes(options::modes(&live.session))
            .config_options(options::options(&live.session));
        Ok((answer, live))
    }

    /// `session/load`: the transcript resumed under its id, its history
    /// told as updates before the answer.
    async fn load_session(
        &self,
        request: LoadSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<(LoadSessionResponse, Arc<LiveSession>), Error> {
        let id = request.session_id.0.to_string();
        if self.live(&id).is_ok() {
            return Err(invalid(format!(
                "session `{id}` is already open on this connection"
            )));
        }
        let opening = Opening {
            cwd: request.cwd,
            dirs: request.additional_directories,
            mcp_servers: request.mcp_servers,
            resume: Some(id),
        };
        let live = self.open(opening, connection).await?;
        let answer = LoadSessionResponse::new()
            .modes(options::modes(&live.session))
            .config_options(options::options(&live.session));
        Ok((answer, live))
    }

    /// Builds a session on the shared engine and makes it live.
    async fn open(
        &self,
        opening: Opening,
        connection: ConnectionTo<Client>,
    ) -> Result<Arc<LiveSession>, Error> {
        let alive = self.sessions.lock().map(|s| s.len()).unwrap_or(usize::MAX);
        if alive >= self.limits.max_sessions {
            return Err(invalid(format!(
                "{alive} sessions are open, the most this process takes (--max-sessions); close one first"
            )));
        }
        if !opening.cwd.is_absolute() || opening.dirs.iter().any(|d| !d.is_absolute()) {
            return Err(invalid(
                "cwd and additionalDirectories must be absolute paths",
            ));
        }
        let mut spec = self.base.clone();
        spec.paths.cwd = opening.cwd;
        spec.add_dirs.extend(opening.dirs);
        let servers = content::mcp_config(&opening.mcp_servers).map_err(invalid)?;
        if let (Some(mcp), Some(config)) = (&mut spec.mcp, servers) {
            mcp.given.push(McpGiven::Inline {
                config,
                shown: "--mcp-config".into(),
            });
        }
        let replay = opening.resume.is_some();
        spec.history.resume = opening.resume.map(Resume::Id);
        let built = self.opener.open(spec).await.map_err(not_started)?;
        for warning in &built.warnings {
            tracing::warn!("session {}: {warning}", built.id);
        }
        let elicitation = self.elicitation.get().copied().unwrap_or_default();
        let live = LiveSession::start(built, connection, &self.limits, (replay, elicitation));
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(live.id.clone(), live.clone());
        }
        Ok(live)
    }

    async fn prompt(
        &self,
        request: PromptRequest,
        cancels: Option<tokio::sync::watch::Receiver<u64>>,
    ) -> Result<PromptResponse, Error> {
        let live = self.live(&request.session_id.0)?;
        let (text, images) = content::prompt(&request.prompt).map_err(invalid)?;
        let text = with_mentions(&live, text).await;
        // Told apart from the process's cap (the prompt itself re-checks).
        if live.is_busy() {
            return Err(invalid(PromptError::Busy.to_string()));
        }
        // Beyond the process's turns at once, the prompt waits for a slot
        // (the client sees it start then); a cancel meanwhile ends it.
        let slot = self.running.clone().acquire_owned();
        let permit = match cancels {
            Some(mut cancels) => tokio::select! {
                permit = slot => permit,
                _ = cancels.changed() => return Ok(PromptResponse::new(StopReason::Cancelled)),
            },
            None => slot.await,
        };
        let Ok(_permit) = permit else {
            return Err(internal("the turn slots are closed"));
        };
        match live.prompt(text, images).await {
            Ok(end) => stop_reason(end).map(PromptResponse::new),
            Err(PromptError::Busy) => Err(invalid(PromptError::Busy.to_string())),
            Err(PromptError::Ended) => Err(internal(PromptError::Ended.to_string())),
        }
    }

    fn set_mode(&self, request: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
        let live = self.live(&request.session_id.0)?;
        options::set_mode(&live.session, &request.mode_id.0).map_err(invalid)?;
        Ok(SetSessionModeResponse::new())
    }

    fn set_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let live = self.live(&request.session_id.0)?;
        options::set(&live.session, &request.config_id.0, &request.value).map_err(invalid)?;
        Ok(SetSessionConfigOptionResponse::new(options::options(
            &live.session,
        )))
    }

    /// `session/close`: its turn cancelled, then everything it holds let
    /// go (its slot under --max-sessions too).
    async fn close(&self, request: CloseSessionRequest) -> Result<CloseSessionResponse, Error> {
        let id = request.session_id.0.to_string();
        let live = self
            .sessions
            .lock()
            .ok()
            .and_then(|mut sessions| sessions.remove(&id))
            .ok_or_else(|| no_session(&id))?;
        live.close().await;
        Ok(CloseSessionResponse::new())
    }

    fn cancel(&self, id: &str) {
        match self.live(id) {
            Ok(live) => {
                live.cancel();
            }
            Err(_) => tracing::warn!("session/cancel for an unknown session `{id}`"),
        }
    }
}

/// Files the prompt mentions (`@path`, or a resource link) are read with
/// the Read tool's grant first, as on the interactive screen.
async fn with_mentions(live: &LiveSession, text: String) -> String {
    let cwd = &live.session.paths.cwd;
    let files = crate::conversation::mentions::mentioned(&text, cwd, &live.session.pipeline);
    if files.is_empty() {
        return text;
    }
    let read =
        crate::conversation::mentions::read_mentions(&live.session.pipeline, cwd, &files).await;
    format!("{read}\n{text}")
}

/// How a turn's end is told: a failure as a JSON-RPC error with its words.
fn stop_reason(end: TurnEnd) -> Result<StopReason, Error> {
    use crate::agent::Terminal;
    match end.terminal {
        Terminal::AbortedStreaming | Terminal::AbortedTools => Ok(StopReason::Cancelled),
        Terminal::MaxTurns | Terminal::BudgetExhausted => Ok(StopReason::MaxTurnRequests),
        _ => match end.error {
            Some(error) => Err(Error::internal_error().data(serde_json::json!(error))),
            None => Ok(StopReason::EndTurn),
        },
    }
}
