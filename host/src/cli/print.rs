//! Print mode: one prompt (or a stream of user messages on stdin) through
//! the loop, its lines on stdout.

use super::session_hooks::{SessionHooks, start_details};
use crate::agent::{
    AgentEvent, CommandState, CompactRequest, CompactTrigger, EventSink, InputQueue, QueryConfig,
    QueryDeps, QueryOutcome, QueuedInput, Terminal, compact, estimate_tokens, query,
};
use crate::control::{Controller, TurnSlot};
use crate::hooks::HookRuntime;
use crate::model::{ContentBlock, ImageSource, Message, Role, cost_usd};
use crate::output::{RunOutput, SharedPrinter};
use crate::session::StartSource;
use crate::transcript::Transcript;
use std::io::Write;
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
        let command = match invoked(self.session.commands, &text) {
            Invoked::Answer(answer) => return answer_locally(answer, messages, sink),
            Invoked::Plain => None,
            Invoked::Command(command, args) => Some((command, args)),
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
        let (texts, model) = match (command, self.session.commands) {
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
    let catalogue = commands.pipeline.catalogue().unwrap_or_default();
    match catalogue.invocation(prompt) {
        Invocation::Known { command, args } => Invoked::Command(Box::new(command.clone()), args),
        Invocation::Unknown(answer) => Invoked::Answer(answer),
        Invocation::NotACommand => Invoked::Plain,
    }
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

/// Parses one stream-json input line: `{"type": "user", "message": {"role":
/// "user", "content": TEXT | [BLOCKS]}, "uuid"?: ID}`. Other line types are
/// not user messages (`Ok(None)`).
pub fn parse_input_line(line: &str) -> Result<Option<QueuedInput>, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    user_line(&value)
}

/// A parsed input line as a user message (`Ok(None)` for other types).
fn user_line(value: &serde_json::Value) -> Result<Option<QueuedInput>, String> {
    if value.get("type").and_then(|t| t.as_str()) != Some("user") {
        return Ok(None);
    }
    let content = value
        .pointer("/message/content")
        .ok_or("a user line without message.content")?;
    let (text, images) = match content {
        serde_json::Value::String(text) => (text.clone(), Vec::new()),
        serde_json::Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
                .collect();
            let images = blocks
                .iter()
                .filter(|b| b["type"] == "image")
                .map(|b| input_image(&b["source"]))
                .collect::<Result<Vec<_>, _>>()?;
            (texts.join("\n"), images)
        }
        _ => return Err("message.content is neither a string nor a list of blocks".into()),
    };
    let uuid = value
        .get("uuid")
        .and_then(|u| u.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    Ok(Some(QueuedInput { uuid, text, images }))
}

/// An image block's source as the Messages API takes it inline: base64
/// data of a type it reads.
fn input_image(source: &serde_json::Value) -> Result<ImageSource, String> {
    if source["type"] != "base64" {
        return Err(format!(
            "an image's source must be base64 data (not {})",
            source["type"]
        ));
    }
    let media_type = source["media_type"].as_str().unwrap_or_default();
    ImageSource::base64(media_type, source["data"].as_str().unwrap_or_default())
        .map_err(|e| e.to_string())
}

/// Reads stream-json lines from `reader` until EOF: user messages into
/// `queue` (each reported as queued), control protocol lines to
/// `controller`; a bad line is reported on stderr and skipped.
pub async fn read_input_lines<R, W>(
    reader: R,
    queue: Arc<InputQueue>,
    mut sink: SharedPrinter<W>,
    controller: Option<Arc<Controller>>,
) where
    R: tokio::io::AsyncBufRead + Unpin,
    W: Write + Send,
{
    use tokio::io::AsyncBufReadExt;
    let mut lines = reader.lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) if line.trim().is_empty() => {}
            Ok(Some(line)) => match serde_json::from_str::<serde_json::Value>(&line)
                .map_err(|e| format!("not JSON: {e}"))
                .and_then(|value| {
                    if controller.as_ref().is_some_and(|c| c.take(&value)) {
                        Ok(None)
                    } else {
                        user_line(&value)
                    }
                }) {
                Ok(Some(input)) => {
                    if let Some(controller) = &controller {
                        controller.session.start.without_initialize();
                    }
                    sink.emit(AgentEvent::CommandLifecycle {
                        uuid: input.uuid.clone(),
                        state: CommandState::Queued,
                    });
                    queue.push(input);
                }
                Ok(None) => {
                    tracing::debug!("ignoring a stream-json input line that is not a user message")
                }
                Err(e) => eprintln!("carapace: skipping an input line: {e}"),
            },
            Ok(None) => break,
            Err(e) => {
                eprintln!("carapace: reading stdin failed: {e}");
                break;
            }
        }
    }
    if let Some(controller) = controller {
        controller.session.start.without_initialize();
        controller.channel.close();
    }
    queue.close();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_lines_in_claude_codes_shape() {
        let line = r#"{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u-1"}"#;
        assert_eq!(
            parse_input_line(line),
            Ok(Some(QueuedInput::text("u-1", "hi")))
        );
        let blocks = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#;
        assert_eq!(
            parse_input_line(blocks).ok().flatten().map(|i| i.text),
            Some("a\nb".to_string())
        );
        assert_eq!(parse_input_line(r#"{"type":"control_request"}"#), Ok(None));
        let image = r#"{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"what is this?"}]}}"#;
        let input = parse_input_line(image).ok().flatten();
        assert_eq!(
            input.as_ref().map(|i| i.text.as_str()),
            Some("what is this?")
        );
        assert_eq!(
            input.map(|i| i.images),
            Some(vec![ImageSource {
                kind: "base64".into(),
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            }])
        );
        for refused in [
            r#"{"type":"base64","media_type":"image/tiff","data":"iVBORw0KGgo="}"#,
            r#"{"type":"base64","media_type":"image/png","data":"not base64!"}"#,
            r#"{"type":"url","url":"https://example.com/a.png"}"#,
        ] {
            let line = format!(
                r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"image","source":{refused}}}]}}}}"#
            );
            assert!(parse_input_line(&line).is_err(), "{line}");
        }
        assert!(parse_input_line("{oops").is_err());
        assert!(parse_input_line(r#"{"type":"user","message":{}}"#).is_err());
    }
}
