//! The turns of a session, whichever front end feeds them: each prompt (or
//! queued user message) through the session's hooks, its slash commands
//! and compaction, then the loop; the run's output to the front end's
//! printer.

use super::session_hooks::{SessionHooks, start_details};
use crate::agent::{
    AgentEvent, CommandState, CompactRequest, CompactTrigger, EventSink, InputQueue, QueryConfig,
    QueryDeps, QueryOutcome, QueuedInput, Terminal, compact, estimate_tokens, query,
};
use crate::control::TurnSlot;
use crate::hooks::HookRuntime;
use crate::model::{ContentBlock, ImageSource, Message, Role, cost_usd};
use crate::output::RunOutput;
use crate::session::StartSource;
use crate::transcript::Transcript;
use std::sync::Arc;

/// Where the user's messages come from.
pub enum Prompts {
    /// One prompt (`-p PROMPT`, or stdin as text).
    One(String),
    /// Claude Code's stream-json user lines, read as they arrive; each
    /// message consumed at the start of a turn runs a turn, messages that
    /// arrive during a turn join it after its current tool batch.
    Stream(Arc<InputQueue>),
}

/// What print mode runs on besides the loop's own dependencies.
pub struct PrintSession<'a> {
    pub hooks: Option<&'a HookRuntime>,
    /// A resumed session's history.
    pub history: Vec<Message>,
    pub source: StartSource,
    /// Synced to disk after each turn.
    pub transcript: Option<&'a Transcript>,
    /// Where the SDK's `interrupt` finds the running turn.
    pub turn: Option<TurnSlot>,
    /// The model each turn uses (the SDK's `set_model` changes it).
    pub model: Option<Arc<std::sync::Mutex<String>>>,
    /// What else the SDK changed for the turns to come.
    pub overrides: Option<Arc<crate::control::turn::TurnOverrides>>,
    /// Told the history's size after each turn (`get_context_usage`).
    pub meter: Option<Arc<crate::control::usage::ContextMeter>>,
    /// Told each user message's turn as it starts (`rewind_files`).
    pub checkpoints: Option<Arc<crate::checkpoints::FileCheckpoints>>,
    /// Whether `/compact` is a command (not with --disable-slash-commands).
    pub slash_commands: bool,
    /// Skills and custom commands as `/name` (none with
    /// --disable-slash-commands).
    pub commands: Option<SlashCommands<'a>>,
    /// Where background agents' reports arrive (one-prompt mode: each
    /// runs a turn after the prompt's; the run ends when none is pending).
    pub notifications: Option<Arc<InputQueue>>,
    /// `--init`, `--init-only`, `--maintenance`: Setup hooks before the
    /// session starts.
    pub setup: Option<SetupRun>,
}

impl<'a> PrintSession<'a> {
    /// A started session's turns as every front end runs them: its hooks,
    /// history, transcript, model and kept files; `turn` where an
    /// interrupt finds the running one; `/name` commands when
    /// `slash_commands`. What only print mode and the SDK add (their
    /// overrides, the context meter, background reports, Setup hooks) is
    /// left out.
    pub fn of(
        session: &'a crate::session::Session,
        run: &crate::session::SessionRun,
        turn: TurnSlot,
        slash_commands: bool,
    ) -> Self {
        Self {
            hooks: Some(session.hooks.as_ref()),
            history: session.history.clone(),
            source: session.source,
            transcript: session.transcript.as_deref(),
            turn: Some(turn),
            model: Some(run.model_name.clone()),
            overrides: None,
            meter: None,
            checkpoints: session.checkpoints.clone(),
            slash_commands,
            commands: slash_commands.then_some(SlashCommands {
                pipeline: &session.pipeline,
            }),
            notifications: None,
            setup: None,
        }
    }
}

/// Setup hooks to run before the session starts, and whether to stop
/// there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetupRun {
    /// `init` or `maintenance`.
    pub trigger: &'static str,
    /// `--init-only`: Setup and SessionStart, then no prompt.
    pub then_exit: bool,
}

/// What `/name` starts (the pipeline's skills and commands as they are
/// now), and the pipeline that runs a skill's commands.
#[derive(Clone, Copy)]
pub struct SlashCommands<'a> {
    pub pipeline: &'a crate::tools::ToolPipeline,
}

/// Runs print mode to the end; returns the last turn's outcome (`None` when
/// a message stream brought no message).
pub async fn run_print<O: RunOutput>(
    deps: &QueryDeps<'_>,
    config: &QueryConfig,
    printer: O,
    prompts: Prompts,
    mut print_session: PrintSession<'_>,
) -> Option<QueryOutcome> {
    let hooks = SessionHooks(print_session.hooks);
    if let Some(setup) = print_session.setup {
        if setup.then_exit {
            hooks.setup_only(setup.trigger).await;
            return None;
        }
        printer.start();
        hooks.setup(setup.trigger).await;
    } else {
        printer.start();
    }
    let details = start_details(
        print_session.source,
        print_session.transcript,
        &print_session.history,
        &config.model,
    );
    let mut session_context = match hooks.start(print_session.source, details).await {
        Ok(context) => context,
        Err(reason) => {
            let outcome = QueryOutcome::without_turn(
                Terminal::HookStopped,
                format!("SessionStart hook stopped the session: {reason}"),
                Vec::new(),
            );
            printer.finish(&outcome);
            return Some(outcome);
        }
    };
    let history = std::mem::take(&mut print_session.history);
    let run = PrintRun {
        deps,
        config,
        printer: &printer,
        session: &print_session,
        hooks: &hooks,
    };
    let outcome = match prompts {
        Prompts::One(prompt) => Some(run.one(history, prompt, &mut session_context).await),
        Prompts::Stream(queue) => run.stream(history, &queue, &mut session_context).await,
    };
    // What the SDK asked for last is answered before the session ends.
    if let Some(overrides) = &print_session.overrides {
        overrides.settled().await;
    }
    hooks.end().await;
    outcome
}

/// One print-mode run: the loop's dependencies and configuration, the
/// printer, what the session brings.
struct PrintRun<'r, 'a, O: RunOutput> {
    deps: &'r QueryDeps<'a>,
    config: &'r QueryConfig,
    printer: &'r O,
    session: &'r PrintSession<'a>,
    hooks: &'r SessionHooks<'a>,
}

impl<O: RunOutput> PrintRun<'_, '_, O> {
    /// One prompt's turn, then background agents' reports, each a turn of
    /// its own, until none is pending (as a queued message would in
    /// Claude Code).
    async fn one(
        &self,
        history: Vec<Message>,
        prompt: String,
        session_context: &mut Vec<String>,
    ) -> QueryOutcome {
        let (deps, config) = (self.deps, self.config);
        let mut sink = self.printer.clone();
        let input = QueuedInput::text(String::new(), prompt);
        let outcome = self
            .turn(deps, config, history, input, session_context, &mut sink)
            .await;
        self.flush();
        self.printer.finish(&outcome);
        let mut last = outcome;
        if let Some(queue) = &self.session.notifications {
            queue.close();
            while !deps.abort.is_cancelled() {
                let Some(report) = queue.next().await else {
                    break;
                };
                let mut messages = last.messages.clone();
                messages.push(Message::user_text(report.text));
                let outcome = query(deps, config, messages, &mut sink).await;
                self.flush();
                self.printer.finish(&outcome);
                last = outcome;
            }
        }
        last
    }

    /// Claude Code's stream-json user lines, a turn each, as they arrive;
    /// whatever no turn consumed is reported, never silently lost.
    async fn stream(
        &self,
        mut history: Vec<Message>,
        queue: &InputQueue,
        session_context: &mut Vec<String>,
    ) -> Option<QueryOutcome> {
        let mut sink = self.printer.clone();
        let mut last = None;
        while let Some(input) = queue.next().await {
            let outcome = self
                .queued_turn(input, std::mem::take(&mut history), session_context)
                .await;
            history = outcome.messages.clone();
            if let Some(meter) = &self.session.meter {
                meter.set_messages(estimate_tokens(&history), &self.config.model);
            }
            let aborted = self.deps.abort.is_cancelled();
            last = Some(outcome);
            if aborted {
                break;
            }
        }
        for QueuedInput { uuid, .. } in queue.take_all() {
            sink.emit(AgentEvent::CommandLifecycle {
                uuid,
                state: CommandState::Discarded,
            });
        }
        last
    }

    /// One queued message's turn, with its own cancellation (the SDK's
    /// interrupt ends the turn, not the session), the current model and
    /// the lifecycle of what it consumed.
    async fn queued_turn(
        &self,
        input: QueuedInput,
        messages: Vec<Message>,
        session_context: &mut Vec<String>,
    ) -> QueryOutcome {
        let mut sink = self.printer.clone();
        sink.emit(AgentEvent::UserReplay {
            uuid: input.uuid.clone(),
            text: input.text.clone(),
        });
        sink.emit(AgentEvent::CommandLifecycle {
            uuid: input.uuid.clone(),
            state: CommandState::Started,
        });
        if let Some(checkpoints) = &self.session.checkpoints {
            checkpoints.begin_turn(&input.uuid);
        }
        // A model switch asked for before this message is made first.
        if let Some(overrides) = &self.session.overrides {
            overrides.settled().await;
        }
        let turn_token = self.deps.abort.child_token();
        if let Some(slot) = &self.session.turn {
            slot.begin(turn_token.clone());
        }
        let deps = &QueryDeps {
            model: self.deps.model,
            tools: self.deps.tools.clone(),
            hooks: self.deps.hooks,
            history: self.deps.history,
            input: self.deps.input,
            abort: turn_token,
        };
        let changed = turn_changes(
            self.config,
            self.session.model.as_ref(),
            self.session.overrides.as_deref(),
        );
        let config = changed.as_ref().unwrap_or(self.config);
        let uuid = input.uuid.clone();
        let outcome = self
            .turn(deps, config, messages, input, session_context, &mut sink)
            .await;
        self.flush();
        if let Some(slot) = &self.session.turn {
            slot.end();
        }
        // A turn that broke off (cancelled, or a hard failure) cancels what
        // it consumed; any controlled end completes it.
        let fate = match outcome.terminal {
            Terminal::AbortedStreaming | Terminal::AbortedTools | Terminal::ModelError => {
                CommandState::Cancelled
            }
            _ => CommandState::Completed,
        };
        for uuid in std::iter::once(uuid).chain(outcome.consumed_inputs.iter().cloned()) {
            sink.emit(AgentEvent::CommandLifecycle { uuid, state: fate });
        }
        self.printer.finish(&outcome);
        outcome
    }

    /// What one user prompt becomes: `/compact`, a command answered here,
    /// or the loop on the expanded prompt (its UserPromptSubmit hooks
    /// first), the prompt's images with it.
    async fn turn(
        &self,
        deps: &QueryDeps<'_>,
        config: &QueryConfig,
        mut messages: Vec<Message>,
        input: QueuedInput,
        session_context: &mut Vec<String>,
        sink: &mut O,
    ) -> QueryOutcome {
        let QueuedInput { text, images, .. } = input;
        if let Some(instructions) = compact_command(&text).filter(|_| self.session.slash_commands) {
            // A prompt of its own, as Claude Code's hooks are told.
            if let Some(hooks) = self.session.hooks {
                hooks.begin_prompt();
            }
            return compact_now(deps, config, messages, instructions, sink).await;
        }
        let (command, mcp_prompt) = match invoked(self.session.commands, &text) {
            Invoked::Answer(answer) => return answer_locally(answer, messages, sink),
            Invoked::Plain => (None, None),
            Invoked::Command(command, args) => (Some((command, args)), None),
            Invoked::McpPrompt(call) => (None, Some(call)),
        };
        // UserPromptSubmit first, then (a command) UserPromptExpansion, then
        // the command starts: Claude Code 2.1.332's order.
        let mut context = match self.hooks.prompt(&text, sink).await {
            Ok(context) => context,
            Err(mut outcome) => {
                outcome.messages = messages;
                return outcome;
            }
        };
        deps.tools.note_user_prompt(&text);
        let (texts, model) = match (command, self.session.commands) {
            (None, _) if let Some(call) = mcp_prompt => match call.expand().await {
                Ok(texts) => (texts, None),
                Err(why) => return answer_locally(why, messages, sink),
            },
            (Some((command, args)), Some(commands)) => {
                match self.hooks.expansion(&command, &args, &text, sink).await {
                    Ok(more) => context.extend(more),
                    Err(mut outcome) => {
                        outcome.messages = messages;
                        return outcome;
                    }
                }
                match commands.pipeline.start(&command, &args).await {
                    Ok(instructions) => (
                        vec![command.header(&args), instructions],
                        command.model.clone(),
                    ),
                    Err(why) => return answer_locally(why, messages, sink),
                }
            }
            _ => (vec![text], None),
        };
        let session_context = std::mem::take(session_context);
        messages.push(user_message(session_context, images, texts, context));
        let config = with_model(config, model);
        query(deps, &config, messages, sink).await
    }

    /// Makes the transcript durable at the end of a turn.
    fn flush(&self) {
        if let Some(transcript) = self.session.transcript {
            transcript.flush();
        }
    }
}

/// `/compact [instructions]`: the user asks for a compaction now.
fn compact_command(text: &str) -> Option<Option<&str>> {
    let rest = text.trim().strip_prefix("/compact")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let rest = rest.trim();
    Some((!rest.is_empty()).then_some(rest))
}

/// A manual compaction: the history is summarised and replaced; no turn
/// runs. Its result line says what happened.
async fn compact_now(
    deps: &QueryDeps<'_>,
    config: &QueryConfig,
    history: Vec<Message>,
    instructions: Option<&str>,
    sink: &mut dyn EventSink,
) -> QueryOutcome {
    let pre_tokens = estimate_tokens(&history);
    let request = CompactRequest {
        model: deps.model,
        model_name: &config.model,
        system_prompt: &config.system_prompt,
        max_tokens: config.max_tokens,
        tools: &deps.tools.specs(),
        hooks: deps.hooks,
        trigger: CompactTrigger::Manual,
        instructions,
    };
    let compacted = tokio::select! {
        compacted = compact(request, &history, pre_tokens) => compacted,
        () = deps.abort.cancelled() => Err(crate::agent::CompactError::Aborted),
    };
    match compacted {
        Ok(compacted) => {
            deps.history
                .compacted(CompactTrigger::Manual, pre_tokens, &compacted.messages);
            sink.emit(AgentEvent::CompactBoundary {
                trigger: CompactTrigger::Manual,
                pre_tokens,
                post_tokens: compacted.post_tokens,
                duration: compacted.duration,
            });
            // As Claude Code: no turn, and an empty result.
            let mut outcome =
                QueryOutcome::without_turn(Terminal::Completed, String::new(), compacted.messages);
            outcome.usage = compacted.usage;
            outcome.cost_usd = cost_usd(&config.model, &compacted.usage);
            outcome
        }
        // Cancelled: the run broke off.
        Err(crate::agent::CompactError::Aborted) => {
            QueryOutcome::without_turn(Terminal::AbortedStreaming, String::new(), history)
        }
        // As Claude Code ends a `/compact` that did not happen (checked
        // against 2.1.197 with a blocking PreCompact hook): the reason is
        // the result, and the run is not an error; the history is kept.
        Err(error) => {
            let message = error.to_string();
            sink.emit(AgentEvent::Warning {
                message: message.clone(),
            });
            QueryOutcome::without_turn(Terminal::Completed, message, history)
        }
    }
}

/// What a prompt becomes: sent (a custom command expanded into its texts)
/// or answered here (an unknown command).
enum Invoked {
    /// Not a command: the prompt goes as it is.
    Plain,
    /// A command or skill the user named, with its arguments.
    Command(Box<crate::commands::CustomCommand>, String),
    /// An MCP server's prompt the user named.
    McpPrompt(Box<super::mcp_prompts::PromptCall>),
    /// Answered here, without a request (an unknown command).
    Answer(String),
}

/// The turn's configuration with a command's model, if it names one.
fn with_model(config: &QueryConfig, model: Option<String>) -> std::borrow::Cow<'_, QueryConfig> {
    match model.map(|m| crate::model::resolve_model(&m)) {
        Some(model) if model != config.model => {
            let mut changed = config.clone();
            changed.model = model;
            std::borrow::Cow::Owned(changed)
        }
        _ => std::borrow::Cow::Borrowed(config),
    }
}

/// The configuration of the next turn, when the SDK changed something
/// since the session started (`set_model`, `set_max_thinking_tokens`,
/// `reload_skills`).
fn turn_changes(
    config: &QueryConfig,
    model: Option<&Arc<std::sync::Mutex<String>>>,
    overrides: Option<&crate::control::turn::TurnOverrides>,
) -> Option<QueryConfig> {
    let model = model
        .and_then(|m| m.lock().ok().map(|m| m.clone()))
        .filter(|name| *name != config.model);
    let thinking = overrides.and_then(|o| o.thinking());
    let context = overrides.and_then(|o| o.user_context());
    if model.is_none() && thinking.is_none() && context.is_none() {
        return None;
    }
    let mut changed = config.clone();
    if let Some(model) = model {
        changed.model = model;
    }
    if let Some(thinking) = thinking {
        changed.thinking = thinking;
    }
    if let Some(context) = context {
        changed.user_context = context;
    }
    Some(changed)
}

/// What the prompt names: a command or skill of the catalogue, one that
/// does not exist (answered here), or none.
fn invoked(commands: Option<SlashCommands<'_>>, prompt: &str) -> Invoked {
    use crate::commands::Invocation;
    let Some(commands) = commands else {
        return Invoked::Plain;
    };
    if let Some(call) = mcp_prompt(commands.pipeline, prompt) {
        return Invoked::McpPrompt(Box::new(call));
    }
    let catalogue = commands.pipeline.catalogue().unwrap_or_default();
    match catalogue.invocation(prompt) {
        Invocation::Known { command, args } => Invoked::Command(Box::new(command.clone()), args),
        Invocation::Unknown(answer) => Invoked::Answer(answer),
        Invocation::NotACommand => Invoked::Plain,
    }
}

/// The MCP prompt `/mcp__server__prompt args` names, if a server offers it.
fn mcp_prompt(
    pipeline: &crate::tools::ToolPipeline,
    prompt: &str,
) -> Option<super::mcp_prompts::PromptCall> {
    let rest = prompt.trim_start().strip_prefix('/')?;
    let (command, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let (server, found) = pipeline.mcp_servers().prompt(command)?;
    Some(super::mcp_prompts::PromptCall {
        server,
        prompt: found,
        command: command.to_string(),
        args: args.trim().to_string(),
    })
}

/// As Claude Code answers an unknown command: no request, one synthetic
/// assistant line, a successful result of no turn.
fn answer_locally(text: String, history: Vec<Message>, sink: &mut dyn EventSink) -> QueryOutcome {
    sink.emit(AgentEvent::LocalAnswer { text: text.clone() });
    QueryOutcome::without_turn(Terminal::Completed, text, history)
}

/// The user's message: hook context first, then the prompt's images and
/// texts.
fn user_message(
    session_context: Vec<String>,
    images: Vec<ImageSource>,
    prompt: Vec<String>,
    context: Vec<String>,
) -> Message {
    let text = |text| ContentBlock::Text { text };
    let blocks: Vec<ContentBlock> = session_context
        .into_iter()
        .chain(context)
        .map(text)
        .chain(
            images
                .into_iter()
                .map(|source| ContentBlock::Image { source }),
        )
        .chain(prompt.into_iter().map(text))
        .collect();
    Message {
        role: Role::User,
        content: blocks,
    }
}
