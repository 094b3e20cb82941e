//! The session's model and the loop's configuration, built from what the
//! caller chose ([`RunSetup`]) and the session's settings: which model
//! (the flag, the main agent's, the settings', `ANTHROPIC_MODEL`, the
//! default), its client, and the limits, retries, context and thinking the
//! loop runs with. The system prompt is chosen here too, once the tools it
//! names are known.

use super::SessionError;
use crate::agent::{
    ContextConfig, DEFAULT_STRUCTURED_OUTPUT_ATTEMPTS, QueryConfig, StructuredOutputConfig,
};
use crate::model::resolve_model;
use crate::model::{AnthropicModel, Model, ReplayModel, RetryPolicy, price};
use crate::settings::Settings;
use crate::subagents::AgentDefinition;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The model when nothing names one, as Claude Code's.
pub use crate::model::DEFAULT_MODEL;
/// Consecutive Stop hook blocks allowed when `CARAPACE_STOP_HOOK_BLOCK_CAP`
/// does not say.
const DEFAULT_STOP_HOOK_BLOCK_CAP: u32 = 8;

/// What the caller chose for the session's model and loop (print mode's
/// flags, an SDK's options).
#[derive(Debug, Clone, Default)]
pub struct RunSetup {
    /// `--model`; else the main agent's, the settings', `ANTHROPIC_MODEL`,
    /// then [`DEFAULT_MODEL`].
    pub model: Option<String>,
    /// `--fallback-model`.
    pub fallback_models: Vec<String>,
    pub max_turns: Option<u32>,
    pub max_budget_usd: Option<f64>,
    /// `--betas`.
    pub betas: Vec<String>,
    pub effort: Option<crate::model::Effort>,
    pub task_budget: Option<u64>,
    /// How the model thinks, when the flags chose (`--thinking`,
    /// `--max-thinking-tokens`); else the environment's and the settings'.
    pub thinking: Option<crate::model::ThinkingChoice>,
    /// What replaces or extends carapace's system prompt.
    pub prompt: PromptChoice,
    /// `--exclude-dynamic-system-prompt-sections`: the environment goes in
    /// the first user message instead of the system prompt.
    pub environment_elsewhere: bool,
    /// `--agent`: the agent type the session runs as (else the `agent`
    /// setting).
    pub agent: Option<String>,
    /// The Agent SDK connects: an agent it defines in `initialize` may be
    /// the one named.
    pub sdk: bool,
}

/// What replaces or extends carapace's system prompt: the flags, then the
/// TypeScript SDK's `initialize`.
#[derive(Debug, Clone, Default)]
pub struct PromptChoice {
    pub replace: Option<String>,
    pub append: Option<String>,
}

/// The main agent the session runs as: found, or (with the SDK) a name
/// to look for once its `initialize` has defined its agents.
#[derive(Debug, Clone, Default)]
pub struct MainAgent {
    pub agent: Option<AgentDefinition>,
    pub deferred: Option<String>,
}

impl MainAgent {
    /// The agent type `--agent` (else the `agent` setting) names, among
    /// the session's definitions.
    pub(super) fn find(
        setup: &RunSetup,
        settings: &Settings,
        agents: &[AgentDefinition],
    ) -> Result<Self, SessionError> {
        let Some(name) = setup.agent.as_ref().or(settings.agent.as_ref()) else {
            return Ok(Self::default());
        };
        match agents.iter().find(|a| &a.name == name) {
            Some(agent) => Ok(Self {
                agent: Some(agent.clone()),
                deferred: None,
            }),
            None if setup.sdk => Ok(Self {
                agent: None,
                deferred: Some(name.clone()),
            }),
            None => {
                let known: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
                Err(SessionError::Invalid(format!(
                    "--agent: no agent type `{name}` is defined (known: {})",
                    known.join(", ")
                )))
            }
        }
    }

    /// The tools the loop offers when the agent names them (StructuredOutput
    /// stays: the session's answer needs it).
    pub fn tools(&self) -> Option<Vec<String>> {
        self.agent.as_ref()?.tools.as_deref().map(agent_tools)
    }
}

/// An agent's tools, and StructuredOutput (the session's answer needs it).
pub fn agent_tools(names: &[String]) -> Vec<String> {
    let mut wanted = names.to_vec();
    wanted.push(crate::agent::STRUCTURED_OUTPUT_TOOL.to_string());
    wanted
}

/// The session's model, as built.
pub(super) struct RunModel {
    pub model: Arc<dyn Model>,
    /// `system`/`init`'s `apiKeySource`.
    pub api_key_source: &'static str,
    pub config: QueryConfig,
}

/// Builds the model and the loop's configuration (its system prompt is
/// set once the tools are known).
pub(super) fn build_model(
    setup: &RunSetup,
    settings: &Settings,
    main: &MainAgent,
    structured: bool,
    user_context: Vec<String>,
) -> Result<RunModel, SessionError> {
    let env = |name: &str| settings_env(settings, name);
    let model_name = setup
        .model
        .clone()
        .or_else(|| {
            main.agent
                .as_ref()
                .and_then(|a| a.model.clone())
                .filter(|m| m != "inherit")
        })
        .or(settings.model.clone())
        .or_else(|| env("ANTHROPIC_MODEL"))
        .map_or_else(|| DEFAULT_MODEL.to_string(), |m| resolve_model(&m));
    check_budget(setup.max_budget_usd, &model_name)?;
    let (model, api_key_source): (Arc<dyn Model>, &'static str) =
        match model_name.strip_prefix("replay:") {
            Some(path) => (
                Arc::new(ReplayModel::from_file(&PathBuf::from(path))?),
                "none",
            ),
            None => {
                let source = if env("ANTHROPIC_API_KEY").is_some() {
                    "ANTHROPIC_API_KEY"
                } else {
                    "ANTHROPIC_AUTH_TOKEN"
                };
                let client = AnthropicModel::from_lookup(env)?.with_betas(setup.betas.clone());
                (Arc::new(client), source)
            }
        };
    let config = loop_config(setup, settings, model_name, structured, user_context)?;
    Ok(RunModel {
        model,
        api_key_source,
        config,
    })
}

fn check_budget(budget: Option<f64>, model: &str) -> Result<(), SessionError> {
    let Some(budget) = budget else { return Ok(()) };
    if !(budget.is_finite() && budget > 0.0) {
        return Err(SessionError::Invalid(
            "--max-budget-usd must be a positive number of dollars".into(),
        ));
    }
    if price(model).is_none() && !model.starts_with("replay:") {
        return Err(SessionError::Invalid(format!(
            "--max-budget-usd: no price is known for model `{model}`, so spending cannot be tracked"
        )));
    }
    Ok(())
}

/// The loop's configuration for `model`, from the setup, the settings and
/// carapace's variables.
fn loop_config(
    setup: &RunSetup,
    settings: &Settings,
    model: String,
    structured: bool,
    user_context: Vec<String>,
) -> Result<QueryConfig, SessionError> {
    let env = |name: &str| settings_env(settings, name);
    let max_tokens = env_number(
        &env,
        "CARAPACE_MAX_OUTPUT_TOKENS",
        crate::model::default_max_tokens(&model),
    )?;
    let autocompact_pct = match env("CARAPACE_AUTOCOMPACT_PCT_OVERRIDE") {
        Some(pct) => match pct.trim().parse::<u8>() {
            Ok(pct) if (1..=100).contains(&pct) => Some(pct),
            _ => {
                return Err(SessionError::Invalid(format!(
                    "CARAPACE_AUTOCOMPACT_PCT_OVERRIDE must be a percentage from 1 to 100, got `{pct}`"
                )));
            }
        },
        None => None,
    };
    let mut context = ContextConfig::for_model(&model, max_tokens, autocompact_pct);
    if env("CARAPACE_DISABLE_AUTO_COMPACT").is_some_and(|v| !v.is_empty() && v != "0") {
        context = context.without_autocompact();
    }
    let retry = RetryPolicy {
        max_retries: env_number(
            &env,
            "CARAPACE_MAX_RETRIES",
            RetryPolicy::default().max_retries,
        )?,
        base_delay: Duration::from_millis(env_number(
            &env,
            "CARAPACE_RETRY_BASE_DELAY_MS",
            500u64,
        )?),
        ..RetryPolicy::default()
    };
    let structured_output = match structured {
        // Claude Code's variable, so that scripts carry over.
        true => Some(StructuredOutputConfig {
            max_attempts: env_number(
                &env,
                "MAX_STRUCTURED_OUTPUT_RETRIES",
                DEFAULT_STRUCTURED_OUTPUT_ATTEMPTS,
            )?
            .max(1),
        }),
        false => None,
    };
    let thinking = crate::model::ThinkingChoice::from_knobs(
        setup.thinking,
        env("MAX_THINKING_TOKENS").as_deref(),
        settings.always_thinking,
    )
    .map_err(SessionError::Invalid)?;
    Ok(QueryConfig {
        model,
        fallback_models: setup
            .fallback_models
            .iter()
            .map(|m| resolve_model(m))
            .collect(),
        system_prompt: String::new(),
        max_tokens,
        max_turns: setup.max_turns,
        retry,
        stop_hook_block_cap: env_number(
            &env,
            "CARAPACE_STOP_HOOK_BLOCK_CAP",
            DEFAULT_STOP_HOOK_BLOCK_CAP,
        )?,
        max_budget_usd: setup.max_budget_usd,
        context,
        structured_output,
        // As Claude Code: `high` unless said, for the models that take it.
        effort: Some(setup.effort.unwrap_or(crate::model::Effort::High)),
        user_context,
        task_budget: setup.task_budget,
        thinking,
    })
}

/// carapace's system prompt (the main agent's before it), or the one
/// chosen instead, with the appended text after it.
pub fn system_prompt(
    choice: &PromptChoice,
    inputs: &crate::prompt::PromptInputs<'_>,
    agent: Option<&AgentDefinition>,
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

/// A variable for carapace itself: the settings' `env` over the process's
/// environment (never given to plugins).
pub(super) fn settings_env(settings: &Settings, name: &str) -> Option<String> {
    settings
        .env
        .get(name)
        .cloned()
        .or_else(|| std::env::var(name).ok())
}

fn env_number<T: std::str::FromStr>(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: T,
) -> Result<T, SessionError> {
    match env(name) {
        Some(value) => value
            .trim()
            .parse()
            .map_err(|_| SessionError::Invalid(format!("{name} must be a number, got `{value}`"))),
        None => Ok(default),
    }
}
