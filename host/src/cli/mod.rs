//! The `carapace` command line: Claude Code's print-mode flags, so that one
//! command line works for both.
//!
//! This is the binary's edge: errors become a message on stderr and exit 1.

use crate::agent::{QueryConfig, ToolPipeline, query, system_prompt};
use crate::model::{AnthropicModel, Message, Model, ReplayModel};
use crate::output::{OutputFormat, Printer, RunInfo};
use crate::plugins::ToolRegistry;
use crate::policy::{PermissionMode, Policy};
use crate::sandbox::{CallLimits, Sandbox, SandboxConfig};
use anyhow::{Context, bail};
use clap::Parser;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
const DEFAULT_MAX_TOKENS: u32 = 32_000;

#[derive(Debug, Parser)]
#[command(
    name = "carapace",
    version,
    about = "An agent host whose tools run as sandboxed WebAssembly components",
    after_help = "With no API key, try the replay demo: carapace -p 'Read the notes' --model replay:examples/demo/replay.json"
)]
pub struct Cli {
    /// Print the response and exit (non-interactive; the only mode so far).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// The prompt. Read from stdin when absent and stdin is not a terminal.
    pub prompt: Option<String>,

    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub output_format: OutputFormat,

    /// Print every message, not only the result (required by stream-json).
    #[arg(long)]
    pub verbose: bool,

    /// The model: an Anthropic model name, or `replay:FILE` to play a script.
    #[arg(long, env = "ANTHROPIC_MODEL")]
    pub model: Option<String>,

    /// The tools offered to the model, comma- or space-separated; "" for none.
    #[arg(long, num_args = 1)]
    pub tools: Vec<String>,

    /// Maximum number of model iterations.
    #[arg(long)]
    pub max_turns: Option<u32>,

    /// Permission mode.
    #[arg(long, value_enum)]
    pub permission_mode: Option<PermissionMode>,

    /// Same as --permission-mode bypassPermissions.
    #[arg(long)]
    pub dangerously_skip_permissions: bool,

    /// Use this session id (a UUID) instead of a new one.
    #[arg(long)]
    pub session_id: Option<uuid::Uuid>,

    /// Settings as a JSON file or a JSON string.
    #[arg(long)]
    pub settings: Option<String>,

    /// Log what the host does to stderr.
    #[arg(long)]
    pub debug: bool,
}

/// Settings keys this build applies.
#[derive(Debug, Default, serde::Deserialize)]
struct Settings {
    model: Option<String>,
    #[serde(default)]
    permissions: PermissionSettings,
}

#[derive(Debug, Default, serde::Deserialize)]
struct PermissionSettings {
    #[serde(rename = "defaultMode")]
    default_mode: Option<String>,
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    if cli.output_format == OutputFormat::StreamJson && !cli.verbose {
        bail!("When using --print, --output-format=stream-json requires --verbose");
    }
    let prompt = match cli.prompt.clone() {
        Some(prompt) => prompt,
        None if !std::io::stdin().is_terminal() => {
            let mut prompt = String::new();
            std::io::stdin()
                .read_to_string(&mut prompt)
                .context("reading the prompt from stdin")?;
            prompt
        }
        None => bail!("no prompt: pass one as an argument (carapace -p \"...\") or on stdin"),
    };
    if prompt.trim().is_empty() {
        bail!("the prompt is empty");
    }

    let settings = match &cli.settings {
        Some(source) => load_settings(source)?,
        None => Settings::default(),
    };
    let mode = if cli.dangerously_skip_permissions {
        PermissionMode::BypassPermissions
    } else if let Some(mode) = cli.permission_mode {
        mode
    } else if let Some(mode) = &settings.permissions.default_mode {
        <PermissionMode as clap::ValueEnum>::from_str(mode, false)
            .map_err(|_| anyhow::anyhow!("settings: unknown permissions.defaultMode `{mode}`"))?
    } else {
        PermissionMode::Default
    };
    let model_name = cli
        .model
        .clone()
        .or(settings.model.clone())
        .unwrap_or_else(|| DEFAULT_MODEL.to_string());

    let cwd = std::env::current_dir().context("reading the working directory")?;
    let (model, api_key_source): (Box<dyn Model>, &str) = match model_name.strip_prefix("replay:") {
        Some(path) => (
            Box::new(ReplayModel::from_file(&PathBuf::from(path))?),
            "none",
        ),
        None => {
            let source = if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
                "ANTHROPIC_API_KEY"
            } else {
                "ANTHROPIC_AUTH_TOKEN"
            };
            (Box::new(AnthropicModel::from_env()?), source)
        }
    };

    let sandbox = Sandbox::new(SandboxConfig::default())?;
    let mut registry = ToolRegistry::builtin(&sandbox).await?;
    if !cli.tools.is_empty() {
        let names: Vec<String> = cli
            .tools
            .iter()
            .flat_map(|t| t.split([',', ' ']))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect();
        registry = registry.select(&names)?;
    }
    let tool_names = registry.names();
    let pipeline = Arc::new(ToolPipeline::new(
        registry,
        Policy::new(mode, &cwd),
        CallLimits::default(),
    ));

    let session_id = cli
        .session_id
        .unwrap_or_else(uuid::Uuid::new_v4)
        .to_string();
    let info = RunInfo {
        session_id,
        cwd: cwd.display().to_string(),
        model: model_name.clone(),
        tools: tool_names.clone(),
        permission_mode: mode.as_str().to_string(),
        api_key_source: api_key_source.to_string(),
        started,
    };
    let stdout = std::io::stdout();
    let mut printer = Printer::new(cli.output_format, cli.verbose, stdout, info);
    printer.start();

    let config = QueryConfig {
        model: model_name,
        system_prompt: system_prompt(&cwd, &tool_names),
        max_tokens: max_output_tokens()?,
        max_turns: cli.max_turns,
    };
    let outcome = query(
        model.as_ref(),
        pipeline,
        &config,
        vec![Message::user_text(prompt)],
        &mut printer,
    )
    .await;
    tracing::debug!(terminal = outcome.terminal.as_str(), transitions = ?outcome.transitions, "run ended");
    printer.finish(&outcome);
    Ok(if outcome.terminal.is_error() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn max_output_tokens() -> anyhow::Result<u32> {
    match std::env::var("CARAPACE_MAX_OUTPUT_TOKENS") {
        Ok(value) => value
            .parse()
            .with_context(|| format!("CARAPACE_MAX_OUTPUT_TOKENS must be a number, got `{value}`")),
        Err(_) => Ok(DEFAULT_MAX_TOKENS),
    }
}

fn load_settings(source: &str) -> anyhow::Result<Settings> {
    let text = if source.trim_start().starts_with('{') {
        source.to_string()
    } else {
        std::fs::read_to_string(source)
            .with_context(|| format!("reading settings file {source}"))?
    };
    serde_json::from_str(&text).with_context(|| format!("settings {source} are not valid JSON"))
}
