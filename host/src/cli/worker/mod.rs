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

mod http;

use super::{Cli, print_mode};
use anyhow::Context;
use clap::Parser;
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
        Cli::try_parse_from(job.flags()).context("the job's settings")?;
        Ok(job)
    }

    /// The session flags, as `carapace -p` takes them.
    fn flags(&self) -> Vec<String> {
        let mut flags: Vec<String> = [
            "carapace",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        .map(String::from)
        .into();
        let mut add = |flag: &str, value: Option<String>| {
            if let Some(value) = value {
                flags.extend([flag.to_string(), value]);
            }
        };
        add("--model", self.model.clone());
        add(
            "--permission-mode",
            Some(
                self.permission_mode
                    .clone()
                    .unwrap_or_else(|| "dontAsk".into()),
            ),
        );
        add("--max-turns", self.max_turns.map(|n| n.to_string()));
        add(
            "--max-budget-usd",
            self.max_budget_usd.map(|n| n.to_string()),
        );
        add("--settings", self.settings.as_ref().map(Value::to_string));
        add(
            "--mcp-config",
            self.mcp_servers
                .as_ref()
                .map(|servers| json!({"mcpServers": servers}).to_string()),
        );
        add("--session-id", self.session_id.clone());
        add("--resume", self.resume.clone());
        add("--transcript-store", self.transcript_store.clone());
        add("--system-prompt", self.system_prompt.clone());
        add("--append-system-prompt", self.append_system_prompt.clone());
        add("--tools", self.tools.as_ref().map(|t| t.join(",")));
        for (flag, list) in [
            ("--fallback-model", &self.fallback_model),
            ("--allowedTools", &self.allowed_tools),
            ("--disallowedTools", &self.disallowed_tools),
        ] {
            if !list.is_empty() {
                flags.extend([flag.to_string(), list.join(",")]);
            }
        }
        if self.mcp_servers.is_some() {
            flags.push("--strict-mcp-config".into());
        }
        if self.include_hook_events {
            flags.push("--include-hook-events".into());
        }
        flags
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
    let cli = match prepare(&job) {
        Ok(cli) => cli,
        Err(e) => return Ok(invalid(&e)),
    };
    if let (Some(addr), None) = (job.health, listen) {
        http::serve(addr, shared.clone(), None).await?;
    }
    let report = WorkerReport {
        shared: shared.clone(),
        result: job.result.clone(),
    };
    let code = match print_mode(cli, Some(&report)).await {
        Ok(code) => code,
        Err(e) => {
            log("error", None, &format!("{e:#}"));
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

fn prepare(job: &Job) -> anyhow::Result<Cli> {
    let mut cli = Cli::try_parse_from(job.flags()).context("the job's settings")?;
    cli.prompt = Some(job.prompt.clone());
    if let Some(workspace) = &job.workspace {
        std::env::set_current_dir(workspace)
            .with_context(|| format!("entering the workspace {}", workspace.display()))?;
    }
    if let (true, Some(id)) = (job.continue_session, &job.session_id) {
        let paths = super::paths()?;
        let store = super::transcript_store(&cli)?;
        if store.place(&paths.config_dir, &paths.cwd, id).exists()? {
            log("info", Some(id), "the session exists: resuming it");
            cli.resume = Some(id.clone());
            cli.session_id = None;
        }
    }
    Ok(cli)
}

/// What print mode tells a worker.
pub struct WorkerReport {
    shared: Arc<Mutex<Shared>>,
    result: Option<PathBuf>,
}

impl WorkerReport {
    /// The session is built: ready.
    pub(super) fn ready(&self, session_id: &str) {
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
    pub(super) fn finished(&self, line: &Value) -> anyhow::Result<()> {
        if let Ok(mut shared) = self.shared.lock() {
            shared.result = Some(line.clone());
        }
        let Some(path) = &self.result else {
            return Ok(());
        };
        write_whole(path, format!("{line}\n").as_bytes())
            .with_context(|| format!("writing the result to {}", path.display()))
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
    fn a_job_becomes_print_mode_flags_that_never_ask() -> anyhow::Result<()> {
        let job = job(
            r#"{"prompt": "go", "model": "m", "allowedTools": ["Read", "Bash(ls:*)"],
                "mcpServers": {"s": {"command": "x"}}, "maxTurns": 3}"#,
        )?;
        let cli = Cli::try_parse_from(job.flags())?;
        assert!(cli.print && cli.verbose && cli.strict_mcp_config);
        assert_eq!(cli.model.as_deref(), Some("m"));
        assert_eq!(cli.permission_mode.map(|m| m.as_str()), Some("dontAsk"));
        assert_eq!(cli.allowed_tools, ["Read,Bash(ls:*)"]);
        assert_eq!(cli.max_turns, Some(3));
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
        ] {
            let error = job(text)
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default();
            assert!(error.contains(why), "{text}: {error}");
        }
    }
}
