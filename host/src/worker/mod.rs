//! `carapace worker JOB`: one job, fully described by a JSON file, run as
//! print mode runs a prompt — the unit an orchestrator schedules. Nothing
//! is ever asked (the mode is `dontAsk` unless the job says otherwise, and
//! no mode that asks a person is accepted); stdout carries the stream-json
//! lines, each with the session id; the result line also goes to the
//! job's `result` file, written whole or not at all; a probe address, when
//! given, answers `/healthz` (alive) and `/readyz` (the session is built).
//!
//! `--listen ADDR` is the same worker started before its job is known (a
//! warm pod of a sandbox pool): it is ready while it waits, takes one job
//! from `POST /job`, and keeps its result line at `GET /result` until it
//! is told to stop (`http.rs`).
//!
//! A front end, beside `acp`, `interactive` and `mcp_serve`: it imports no
//! other front end, and only `cli` imports it. The job becomes a
//! [`SessionSpec`] directly (no command line in between) and runs through
//! the conversation's print-mode run. It is an edge: what fails is a JSON
//! log line and the exit code. Imports: `conversation`, `output`,
//! `policy`, `session`, `files`.

mod http;

use crate::conversation::{PrintError, PrintOptions, RunEnd, RunReport, run_printed};
use crate::output::OutputFormat;
use crate::policy::PermissionMode;
use crate::session::{
    GivenSettings, HistorySetup, McpGiven, McpSetup, PermissionSpec, PromptChoice, Resume,
    RunSetup, SessionPaths, SessionSpec, Sessions, ToolSet,
};
use anyhow::Context;
use http::{Health, Shared};
use serde::Deserialize;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// Exit code of a job that was invalid: nothing ran.
const INVALID_JOB: u8 = 2;

/// What a job file holds (camelCase, as the SDK's options are spelled).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Job {
    prompt: String,
    /// The working copy the session runs in (absolute).
    workspace: Option<PathBuf>,
    model: Option<String>,
    #[serde(default)]
    fallback_model: Vec<String>,
    permission_mode: Option<String>,
    #[serde(default)]
    allowed_tools: Vec<String>,
    #[serde(default)]
    disallowed_tools: Vec<String>,
    tools: Option<Vec<String>>,
    max_turns: Option<u32>,
    max_budget_usd: Option<f64>,
    /// Settings as `--settings` takes them (an object).
    settings: Option<Value>,
    /// MCP servers, Claude Code's `mcpServers` shape; only these are used.
    mcp_servers: Option<Value>,
    session_id: Option<String>,
    /// With `sessionId`: resume that session when the store has it, start
    /// it under that id when not — so a job retried after its pod was lost
    /// goes on where the pod left off.
    #[serde(default)]
    continue_session: bool,
    /// A session to resume (from the transcripts this worker can reach).
    resume: Option<String>,
    /// Where transcripts are kept: `files`, or a shared `postgres://…`
    /// (so any worker can resume what another began).
    transcript_store: Option<String>,
    system_prompt: Option<String>,
    append_system_prompt: Option<String>,
    /// Where the result line goes besides stdout.
    result: Option<PathBuf>,
    /// `HOST:PORT` for the liveness and readiness probes.
    health: Option<SocketAddr>,
    #[serde(default)]
    include_hook_events: bool,
}

/// Modes in which a call could wait for a person who is not there.
const ASKING_MODES: [&str; 1] = ["default"];

impl Job {
    fn read(source: &str) -> anyhow::Result<Self> {
        let text = match source {
            "-" => {
                std::io::read_to_string(std::io::stdin()).context("reading the job from stdin")?
            }
            path => std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?,
        };
        Self::parse(&text)
    }

    /// A job from its JSON, checked: everything that can be known wrong
    /// before anything runs is refused here.
    fn parse(text: &str) -> anyhow::Result<Self> {
        let job: Job = serde_json::from_str(text).context("the job is not a valid job")?;
        if job.prompt.trim().is_empty() {
            anyhow::bail!("the job has an empty prompt");
        }
        if let Some(mode) = job.permission_mode.as_deref()
            && ASKING_MODES.contains(&mode)
        {
            anyhow::bail!(
                "permissionMode `{mode}` would ask a person; a worker never asks (dontAsk denies what no rule allows)"
            );
        }
        if let Some(workspace) = &job.workspace
            && !workspace.is_absolute()
        {
            anyhow::bail!("workspace must be an absolute path");
        }
        if job.continue_session && (job.session_id.is_none() || job.resume.is_some()) {
            anyhow::bail!("continueSession needs a sessionId, and no resume");
        }
        job.mode()?;
        if let Some(id) = &job.session_id {
            uuid::Uuid::parse_str(id).context("sessionId is not a UUID")?;
        }
        Ok(job)
    }

    /// Where transcripts are kept: the job's store, else the process's
    /// (`CARAPACE_TRANSCRIPT_STORE`, as for `--transcript-store`).
    fn store(&self) -> Option<String> {
        self.transcript_store
            .clone()
            .or_else(|| std::env::var("CARAPACE_TRANSCRIPT_STORE").ok())
    }

    /// The mode: the job's, else `dontAsk`.
    fn mode(&self) -> anyhow::Result<PermissionMode> {
        match self.permission_mode.as_deref() {
            None => Ok(PermissionMode::DontAsk),
            Some(name) => PermissionMode::parse(name)
                .with_context(|| format!("permissionMode `{name}` is not a permission mode")),
        }
    }

    /// The session the job describes, in `paths`; `resume` when the store
    /// has the job's session already.
    fn spec(&self, paths: SessionPaths, resume: Option<Resume>) -> anyhow::Result<SessionSpec> {
        let mut spec = SessionSpec::new(paths);
        spec.id = self.session_id.clone().filter(|_| resume.is_none());
        spec.settings.given = self.settings.clone().map(GivenSettings::Inline);
        spec.permissions = PermissionSpec {
            mode: Some(self.mode()?),
            allowed: self.allowed_tools.clone(),
            disallowed: self.disallowed_tools.clone(),
            ..PermissionSpec::default()
        };
        // Servers in the job are the only ones: no file's are used.
        spec.mcp = Some(match &self.mcp_servers {
            Some(servers) => McpSetup {
                given: vec![McpGiven::Inline {
                    config: json!({"mcpServers": servers}),
                    shown: "the job's mcpServers".into(),
                }],
                strict: true,
            },
            None => McpSetup::default(),
        });
        spec.history = HistorySetup {
            resume: resume.or_else(|| self.resume.clone().map(Resume::Id)),
            persist: true,
            store: self.store(),
            ..HistorySetup::default()
        };
        spec.run = Some(RunSetup {
            // As `--model`: else `ANTHROPIC_MODEL`, before the settings'.
            model: self
                .model
                .clone()
                .or_else(|| std::env::var("ANTHROPIC_MODEL").ok()),
            fallback_models: self.fallback_model.clone(),
            max_turns: self.max_turns,
            max_budget_usd: self.max_budget_usd,
            prompt: PromptChoice {
                replace: self.system_prompt.clone(),
                append: self.append_system_prompt.clone(),
            },
            ..RunSetup::default()
        });
        spec.tools.set = match self.tools.as_deref() {
            None => ToolSet::All,
            Some([only]) if only == "default" => ToolSet::All,
            Some(names) => ToolSet::Only(names.to_vec()),
        };
        spec.tools.agent_tool = true;
        spec.tools.web_search = true;
        // stream-json prints each result's `tool_use_result`.
        spec.tools.structured_results = true;
        Ok(spec)
    }

    /// How the run prints: stream-json lines, verbose, as the SDK reads
    /// them.
    fn options(&self) -> PrintOptions {
        PrintOptions {
            format: OutputFormat::StreamJson,
            verbose: true,
            hook_events: self.include_hook_events,
            partial_messages: false,
            replay_user_messages: false,
            slash_commands: true,
            setup: None,
            prompt: Some(self.prompt.clone()),
        }
    }
}

/// One JSON log line on stderr.
pub(super) fn log(level: &str, session_id: Option<&str>, message: &str) {
    eprintln!(
        "{}",
        json!({"level": level, "session_id": session_id, "message": message})
    );
}

/// Runs the job in `source`, or, with `listen`, the one job posted there;
/// with `check`, only says whether `source` is a valid job.
pub async fn run(
    source: Option<&str>,
    listen: Option<SocketAddr>,
    check: bool,
    sessions: &Sessions,
) -> anyhow::Result<ExitCode> {
    let shared = Arc::new(Mutex::new(Shared::new(listen.is_some())));
    let job = match (source, listen) {
        (Some(source), _) => match Job::read(source) {
            Ok(_) if check => {
                log("info", None, "the job is valid");
                return Ok(ExitCode::SUCCESS);
            }
            Ok(job) => job,
            Err(e) => return Ok(invalid(&e)),
        },
        (None, Some(addr)) => match http::wait_for_job(addr, shared.clone()).await? {
            Some(job) => job,
            // Stopped before any job came: nothing ran.
            None => return Ok(ExitCode::SUCCESS),
        },
        (None, None) => anyhow::bail!("a worker needs a job file, or --listen"),
    };
    let spec = match prepare(&job, sessions) {
        Ok(spec) => spec,
        Err(e) => return Ok(invalid(&e)),
    };
    if let (Some(addr), None) = (job.health, listen) {
        http::serve(addr, shared.clone(), None).await?;
    }
    let report = WorkerReport {
        shared: shared.clone(),
        result: job.result.clone(),
    };
    let code = match run_printed(sessions, spec, job.options(), Some(&report)).await {
        Ok(RunEnd::Success) => ExitCode::SUCCESS,
        Ok(RunEnd::Failure) => ExitCode::FAILURE,
        Err(e) => {
            log("error", None, &format!("{:#}", anyhow::Error::from(e)));
            ExitCode::FAILURE
        }
    };
    if let Ok(mut shared) = shared.lock() {
        shared.health = Health::Finished;
    }
    if listen.is_some() {
        // The result stays to be fetched until the pod is stopped.
        http::until_stopped().await;
    }
    Ok(code)
}

fn invalid(e: &anyhow::Error) -> ExitCode {
    log("error", None, &format!("{e:#}"));
    ExitCode::from(INVALID_JOB)
}

/// The job's session, in its workspace: a `continueSession` job whose
/// session the store has resumes it.
fn prepare(job: &Job, sessions: &Sessions) -> anyhow::Result<SessionSpec> {
    if let Some(workspace) = &job.workspace {
        std::env::set_current_dir(workspace)
            .with_context(|| format!("entering the workspace {}", workspace.display()))?;
    }
    let paths = SessionPaths::from_env().context("reading the working directory")?;
    let mut resume = None;
    if let (true, Some(id)) = (job.continue_session, &job.session_id) {
        let store = sessions.store(job.store().as_deref())?;
        if store.place(&paths.config_dir, &paths.cwd, id).exists()? {
            log("info", Some(id), "the session exists: resuming it");
            resume = Some(Resume::Id(id.clone()));
        }
    }
    job.spec(paths, resume)
}

/// What print mode tells a worker.
struct WorkerReport {
    shared: Arc<Mutex<Shared>>,
    result: Option<PathBuf>,
}

impl RunReport for WorkerReport {
    /// As a JSON log line, with the session's id.
    fn warning(&self, session_id: &str, warning: &str) {
        log("warn", Some(session_id), warning);
    }

    /// The session is built: ready.
    fn ready(&self, session_id: &str) {
        if let Ok(mut shared) = self.shared.lock() {
            shared.health = Health::Running {
                session_id: session_id.to_string(),
            };
        }
        log("info", Some(session_id), "the session is ready");
    }

    /// The run's result line, written to the job's `result` file whole:
    /// to a temporary file beside it, synced, then renamed over it; and
    /// kept for `GET /result`.
    fn finished(&self, line: &Value) -> Result<(), PrintError> {
        if let Ok(mut shared) = self.shared.lock() {
            shared.result = Some(line.clone());
        }
        let Some(path) = &self.result else {
            return Ok(());
        };
        write_whole(path, format!("{line}\n").as_bytes()).map_err(|source| PrintError::Result {
            path: path.display().to_string(),
            source,
        })
    }
}

/// The result, whole, at `path`: from a temp file the worker creates
/// exclusively beside it (a link planted there, or at `path`, is never
/// written through).
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let path = std::path::absolute(path)?;
    let folder = path.parent().unwrap_or(Path::new("/"));
    crate::files::replace_beneath(folder, &path, bytes, 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(text: &str) -> anyhow::Result<Job> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("job.json");
        std::fs::write(&path, text)?;
        Job::read(&path.display().to_string())
    }

    #[test]
    fn a_job_becomes_a_session_that_never_asks() -> anyhow::Result<()> {
        let job = job(
            r#"{"prompt": "go", "model": "m", "allowedTools": ["Read", "Bash(ls:*)"],
                "mcpServers": {"s": {"command": "x"}}, "maxTurns": 3}"#,
        )?;
        let paths = SessionPaths::from_env()?;
        let spec = job.spec(paths, None)?;
        assert!(spec.mcp.as_ref().is_some_and(|mcp| mcp.strict));
        let run = spec.run.as_ref().context("no run")?;
        assert_eq!(run.model.as_deref(), Some("m"));
        assert_eq!(run.max_turns, Some(3));
        assert_eq!(spec.permissions.mode, Some(PermissionMode::DontAsk));
        assert_eq!(spec.permissions.allowed, ["Read", "Bash(ls:*)"]);
        let options = job.options();
        assert!(options.verbose && options.format == OutputFormat::StreamJson);
        Ok(())
    }

    #[test]
    fn an_invalid_job_is_refused_with_why() {
        for (text, why) in [
            (r#"{"prompt": "go", "surprise": 1}"#, "unknown field"),
            (r#"{"prompt": "  "}"#, "empty prompt"),
            (
                r#"{"prompt": "go", "permissionMode": "default"}"#,
                "never asks",
            ),
            (r#"{"prompt": "go", "workspace": "rel/dir"}"#, "absolute"),
            (
                r#"{"prompt": "go", "continueSession": true}"#,
                "needs a sessionId",
            ),
            ("not json", "not a valid job"),
            (
                r#"{"prompt": "go", "permissionMode": "yolo"}"#,
                "not a permission mode",
            ),
            (r#"{"prompt": "go", "sessionId": "x/../y"}"#, "not a UUID"),
        ] {
            let error = job(text)
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default();
            assert!(error.contains(why), "{text}: {error}");
        }
    }
}
