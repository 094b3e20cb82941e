//! The loop's use of the context pipeline ([`context`](super::context)):
//! before each request, microcompact then auto-compaction when the
//! threshold is crossed, then the blocking-limit check; after a
//! `prompt_too_long` answer, one reactive compaction and the same request
//! again. The rapid-refill breaker guards both.

use super::context::{CompactError, CompactRequest, compact, microcompact};
use super::events::AgentEvent;
use super::loop_hooks::CompactTrigger;
use super::run::{Next, Run, RunError, Stop};
use super::state::{State, Terminal, Transition};
use crate::model::{FailureKind, ModelError, cost_usd};

impl Run<'_, '_> {
    /// Microcompact, auto-compaction and the blocking limit, in that order.
    /// `Err` when the loop must stop before sending anything.
    pub(super) async fn prepare_context(&mut self, mut state: State) -> Result<State, Next> {
        let limits = self.config.context;
        let mut estimate = state.context.estimate(&state.messages);
        if estimate < limits.autocompact_at.min(limits.blocking_at) {
            return Ok(state);
        }
        let cleared = microcompact(&mut state.messages);
        if !cleared.cleared.is_empty() {
            tracing::debug!(
                results = cleared.cleared.len(),
                freed = cleared.freed_tokens,
                "microcompact"
            );
            self.deps.history.cleared(&cleared.cleared);
            state.context.measured_tokens = state
                .context
                .measured_tokens
                .saturating_sub(cleared.freed_tokens);
            estimate = state.context.estimate(&state.messages);
        }
        if estimate < limits.autocompact_at.min(limits.blocking_at) {
            return Ok(state);
        }
        let mut failure = None;
        if limits.autocompact && state.context.failures < super::context::AUTOCOMPACT_FAILURE_LIMIT
        {
            if state.context.refilling_too_fast(state.turn_count) {
                return Err(self.rapid_refill(state));
            }
            match self
                .compact_history(state, CompactTrigger::Auto, estimate)
                .await
            {
                Ok(compacted) => return Ok(compacted),
                Err((failed, CompactError::Aborted)) => {
                    return Err(self.aborted_streaming(failed, None));
                }
                Err((mut failed, error)) => {
                    failed.context.failures += 1;
                    self.sink.emit(AgentEvent::Warning {
                        message: format!("Auto-compaction failed: {error}"),
                    });
                    failure = Some(error);
                    state = failed;
                }
            }
        }
        if estimate >= limits.blocking_at {
            let detail = failure.map_or(String::new(), |e| format!(" Compaction failed: {e}."));
            let error = RunError {
                message: format!(
                    "Prompt is too long: the conversation is about {estimate} tokens, over the {} this model can take.{detail} Start a new session, or compact it with /compact.",
                    limits.blocking_at
                ),
                kind: "blocking_limit",
                status: None,
            };
            return Err(Next::Stop(
                Stop::new(state, Terminal::BlockingLimit).with_error(error),
            ));
        }
        Ok(state)
    }

    /// A request failed for good: `prompt_too_long` is withheld while one
    /// reactive compaction and a second try may still recover it.
    pub(super) async fn after_failure(&mut self, state: State, error: ModelError) -> Next {
        let too_long = error.kind() == FailureKind::PromptTooLong;
        if !too_long || state.has_attempted_reactive_compact {
            return Next::Stop(self.model_failed(state, &error).await);
        }
        if state.context.refilling_too_fast(state.turn_count) {
            return self.rapid_refill(state);
        }
        let estimate = state.context.estimate(&state.messages);
        match self
            .compact_history(state, CompactTrigger::Auto, estimate)
            .await
        {
            Ok(compacted) => Next::Continue(compacted.advance(Transition::ReactiveCompactRetry)),
            Err((failed, CompactError::Aborted)) => self.aborted_streaming(failed, None),
            Err((failed, compact_error)) => {
                let mut stop = self.model_failed(failed, &error).await;
                if let Some(run_error) = &mut stop.error {
                    run_error
                        .message
                        .push_str(&format!(" (compaction could not help: {compact_error})"));
                }
                Next::Stop(stop)
            }
        }
    }

    fn rapid_refill(&mut self, state: State) -> Next {
        let error = RunError {
            message: format!(
                "The context filled up again right after each of the last {} compactions, so carapace stopped instead of summarising again. The work in progress produces more than the context can hold: split it into smaller steps, or make tool output smaller.",
                state.context.rapid_refills + 1
            ),
            kind: "rapid_refill_breaker",
            status: None,
        };
        Next::Stop(Stop::new(state, Terminal::RapidRefillBreaker).with_error(error))
    }

    /// Replaces the history by a summary. On failure the state comes back
    /// unchanged.
    async fn compact_history(
        &mut self,
        state: State,
        trigger: CompactTrigger,
        pre_tokens: u64,
    ) -> Result<State, (State, CompactError)> {
        self.totals.mark("query_autocompact_start");
        let request = CompactRequest {
            model: self.deps.model,
            model_name: &self.model,
            system_prompt: &self.config.system_prompt,
            max_tokens: self.config.max_tokens,
            tools: &self.tool_specs,
            hooks: self.deps.hooks,
            trigger,
            instructions: None,
        };
        let compacted = tokio::select! {
            compacted = compact(request, &state.messages, pre_tokens) => compacted,
            () = self.deps.abort.cancelled() => Err(CompactError::Aborted),
        };
        self.totals.mark("query_autocompact_end");
        let compacted = match compacted {
            Ok(compacted) => compacted,
            Err(error) => return Err((state, error)),
        };
        self.totals.usage.add(&compacted.usage);
        self.totals.cost_usd += cost_usd(&self.model, &compacted.usage);
        self.deps
            .history
            .compacted(trigger, pre_tokens, &compacted.messages);
        self.sink.emit(AgentEvent::CompactBoundary {
            trigger,
            pre_tokens,
            post_tokens: compacted.post_tokens,
            duration: compacted.duration,
        });
        let tokens = compacted.post_tokens;
        let len = compacted.messages.len();
        let context = state.context.compacted(state.turn_count, tokens, len);
        Ok(State {
            messages: compacted.messages,
            context,
            ..state
        })
    }
}
