//! The hooks print mode runs around the loop — SessionStart (and, after
//! it, InstructionsLoaded), UserPromptSubmit, SessionEnd — and what a
//! resumed session's SessionStart tells about its history.

use crate::agent::{AgentEvent, EventSink, QueryOutcome, Terminal, estimate_tokens};
use crate::hooks::{HookEvent, HookEventKind, HookRuntime};
use crate::model::Message;
use crate::session::StartSource;
use crate::transcript::Transcript;

/// What a resumed session's SessionStart tells about its history: how
/// long since its last response (its transcript's last write), its size,
/// and what writing it to the prompt cache again would cost (input at
/// 1.25 times its price, the cache's write rate).
pub(super) fn start_details(
    source: StartSource,
    transcript: Option<&Transcript>,
    history: &[Message],
    model: &str,
) -> crate::hooks::StartDetails {
    if source != StartSource::Resume {
        return crate::hooks::StartDetails::default();
    }
    let seconds_since_last_response = transcript
        .and_then(|t| std::fs::metadata(t.path()).ok())
        .and_then(|m| m.modified().ok())
        .and_then(|at| at.elapsed().ok())
        .map_or(0, |age| age.as_secs());
    let context_tokens = estimate_tokens(history);
    let estimated_cache_write_usd = crate::model::price(model).map(|price| {
        let dollars = context_tokens as f64 / 1e6 * price.input_per_mtok * 1.25;
        (dollars * 1e4).ceil() / 1e4
    });
    crate::hooks::StartDetails {
        model: None,
        resumed: Some(crate::hooks::ResumedHistory {
            seconds_since_last_response,
            context_tokens,
            estimated_cache_write_usd,
        }),
    }
}

/// The hooks print mode runs around the loop: SessionStart, UserPromptSubmit
/// and SessionEnd.
pub(super) struct SessionHooks<'a>(pub(super) Option<&'a HookRuntime>);

impl SessionHooks<'_> {
    fn handling(&self, kind: HookEventKind) -> Option<&HookRuntime> {
        self.0.filter(|h| h.handles(kind))
    }

    /// SessionStart's context for the first prompt, or why the session
    /// must not start (a failing hook that fails closed).
    pub(super) async fn start(
        &self,
        source: StartSource,
        details: crate::hooks::StartDetails,
    ) -> Result<Vec<String>, String> {
        if let Some(hooks) = self.0 {
            let start = crate::hooks::MiddlewareEvent::SessionStart;
            hooks.tell_middleware(start, source.as_str()).await;
        }
        let Some(hooks) = self.handling(HookEventKind::SessionStart) else {
            if let Some(hooks) = self.0 {
                hooks.instructions_loaded().await;
            }
            return Ok(Vec::new());
        };
        let answer = hooks
            .run(HookEvent::SessionStart {
                source: source.as_str().into(),
                details,
            })
            .await;
        if let Some(reason) = answer.stop {
            hooks.notify_stop(HookEventKind::SessionStart, &reason);
            return Err(reason);
        }
        hooks.instructions_loaded().await;
        Ok(reminders("SessionStart", answer.additional_context))
    }

    /// UserPromptSubmit: the prompt's extra context, or the outcome of a
    /// blocked prompt (nothing is sent to the model).
    pub(super) async fn prompt(
        &self,
        prompt: &str,
        sink: &mut dyn EventSink,
    ) -> Result<Vec<String>, QueryOutcome> {
        if let Some(hooks) = self.0 {
            hooks.begin_prompt();
        }
        let Some(hooks) = self.handling(HookEventKind::UserPromptSubmit) else {
            return Ok(Vec::new());
        };
        let answer = hooks
            .run(HookEvent::UserPromptSubmit {
                prompt: prompt.to_string(),
            })
            .await;
        if let Some(reason) = answer.block.or(answer.stop) {
            let told = format!("UserPromptSubmit hook blocked the prompt: {reason}");
            return Err(blocked(told, prompt, sink));
        }
        Ok(reminders("UserPromptSubmit", answer.additional_context))
    }

    /// Setup (`--init`, `--maintenance`): told, not asked — as in Claude
    /// Code 2.1.332, what the hooks answer does not reach the model.
    pub(super) async fn setup(&self, trigger: &str) {
        if let Some(hooks) = self.handling(HookEventKind::Setup) {
            hooks
                .run(HookEvent::Setup {
                    trigger: trigger.into(),
                })
                .await;
        }
    }

    /// `--init-only`: Setup, then SessionStart (`startup`), quietly, and
    /// no prompt.
    pub(super) async fn setup_only(&self, trigger: &str) {
        let Some(hooks) = self.0 else { return };
        self.setup(trigger).await;
        if hooks.handles(HookEventKind::SessionStart) {
            hooks
                .run(HookEvent::SessionStart {
                    source: "startup".into(),
                    details: Default::default(),
                })
                .await;
        }
    }

    /// UserPromptExpansion, before a command the prompt names starts: its
    /// extra context, or the outcome of a blocked expansion.
    pub(super) async fn expansion(
        &self,
        command: &crate::commands::CustomCommand,
        args: &str,
        prompt: &str,
        sink: &mut dyn EventSink,
    ) -> Result<Vec<String>, QueryOutcome> {
        let Some(hooks) = self.handling(HookEventKind::UserPromptExpansion) else {
            return Ok(Vec::new());
        };
        let answer = hooks
            .run(HookEvent::UserPromptExpansion {
                expansion_type: "slash_command".into(),
                command_name: command.name.clone(),
                command_args: args.to_string(),
                command_source: match command.origin {
                    crate::commands::Origin::Project => "projectSettings".into(),
                    crate::commands::Origin::User => "userSettings".into(),
                },
                prompt: prompt.to_string(),
            })
            .await;
        if let Some(reason) = answer.block.or(answer.stop) {
            let told = format!("UserPromptExpansion hook blocked the command: {reason}");
            return Err(blocked(told, prompt, sink));
        }
        Ok(reminders("UserPromptExpansion", answer.additional_context))
    }

    pub(super) async fn end(&self) {
        if let Some(hooks) = self.0 {
            let end = crate::hooks::MiddlewareEvent::SessionEnd;
            hooks.tell_middleware(end, "other").await;
        }
        if let Some(hooks) = self.handling(HookEventKind::SessionEnd) {
            hooks
                .run(HookEvent::SessionEnd {
                    reason: "other".into(),
                })
                .await;
        }
    }
}

/// A prompt a hook blocked: the user is told why (nothing goes to the
/// model), and the run ends without a turn.
fn blocked(told: String, prompt: &str, sink: &mut dyn EventSink) -> QueryOutcome {
    let content = format!("{told}\n\nThe prompt was: {prompt}");
    sink.emit(AgentEvent::Informational {
        content: content.clone(),
        level: "warning",
        prevent_continuation: true,
    });
    QueryOutcome::without_turn(Terminal::HookStopped, content, Vec::new())
}

fn reminders(event: &str, contexts: Vec<String>) -> Vec<String> {
    contexts
        .into_iter()
        .filter(|c| !c.trim().is_empty())
        .map(|c| format!("<system-reminder>\n{event} hook context: {c}\n</system-reminder>"))
        .collect()
}
