//! The loop: request → stream → tools → results → request …, one `loop`
//! over an explicit [`State`], rebuilt whole at each continue site with the
//! [`Transition`] that explains it, and a [`Terminal`] at each exit.
//!
//! One iteration is three steps, each in its own module: the API attempts
//! of one request ([`attempt`](super::attempt): retries and fallbacks), then
//! either what follows a response with tool calls
//! ([`after_tools`](super::after_tools)) or what follows one without
//! ([`after_text`](super::after_text): the recoveries and the Stop hooks).
//! Each step answers with [`Next`]: go round again with a new state, or stop.

use super::events::{AgentEvent, EventSink};
use super::run::{Ending, Next, QueryConfig, QueryDeps, QueryOutcome, Response, Run, Stop};
use super::state::{State, Terminal};
use crate::model::{Message, cost_usd};
use tracing::Instrument;

/// Runs the loop from `messages` until a terminal.
pub async fn query(
    deps: &QueryDeps<'_>,
    config: &QueryConfig,
    messages: Vec<Message>,
    sink: &mut dyn EventSink,
) -> QueryOutcome {
    let chain_id = uuid::Uuid::new_v4();
    let span = tracing::debug_span!("query", %chain_id);
    Run::new(deps, config, sink)
        .run(messages)
        .instrument(span)
        .await
}

impl Run<'_, '_> {
    async fn run(mut self, messages: Vec<Message>) -> QueryOutcome {
        self.tool_specs = self.deps.tools.offer().await;
        let mut state = State::initial(messages);
        loop {
            match self.iteration(state).await {
                Next::Continue(next) => state = next,
                Next::Stop(stop) => return self.finish(stop),
            }
        }
    }

    /// One model iteration: the context pipeline, the request's attempts,
    /// then what follows the response.
    async fn iteration(&mut self, state: State) -> Next {
        if let Some(transition) = state.transition {
            self.totals.transitions.push(transition);
        }
        self.totals.depth = state.turn_count - 1;
        // Tool sets that changed during the last turn are offered from this
        // one on; unchanged, the specs stay the same object.
        if state.turn_count > 1 && self.deps.tools.refresh().await {
            self.tool_specs = self.deps.tools.offer().await;
        }
        self.totals.mark("query_setup_start");
        if self.deps.abort.is_cancelled() {
            return self.aborted_streaming(state, None);
        }
        let mut state = match self.prepare_context(state).await {
            Ok(state) => state,
            Err(next) => return next,
        };
        let response = match self.attempt(&state).await {
            super::attempt::Attempted::Response(response) => response,
            super::attempt::Attempted::Aborted(partial) => {
                return self.aborted_streaming(state, partial);
            }
            super::attempt::Attempted::Failed(error) => {
                return self.after_failure(state, error).await;
            }
        };
        state.context = state
            .context
            .measured(state.messages.len(), &response.usage);
        if !response.content.is_empty() {
            self.deps.history.response(&response.content);
        }
        let shown: Vec<String> = response
            .content
            .iter()
            .filter_map(|block| match block {
                crate::model::ContentBlock::Text { text, .. } if !text.is_empty() => {
                    Some(text.clone())
                }
                _ => None,
            })
            .collect();
        if !shown.is_empty() {
            self.deps.hooks.message_display(&self.turn_id, shown).await;
        }
        self.totals.usage.add(&response.usage);
        self.totals.cost_usd += cost_usd(&self.model, &response.usage);
        if let Some(budget) = self.config.max_budget_usd
            && self.totals.cost_usd >= budget
        {
            return self.over_budget(state, response, budget);
        }
        if response.executor.is_empty() {
            self.after_text(state, response).await
        } else {
            self.after_tools(state, response).await
        }
    }

    /// The run reached `--max-budget-usd`: the response's calls that have
    /// not finished are not waited for.
    fn over_budget(&mut self, mut state: State, response: Response, budget: f64) -> Next {
        const TOOL_NOT_RUN_BUDGET: &str =
            "This tool call was not run: the run reached its spending limit.";
        let Response {
            content,
            stop_reason,
            mut executor,
            mut delivered,
            ..
        } = response;
        let rest = executor.abandon(TOOL_NOT_RUN_BUDGET);
        self.emit_results(&rest);
        delivered.extend(rest);
        self.append_turn(&mut state.messages, content, delivered);
        let ending = Ending {
            stop_reason,
            errors: vec![format!("Reached maximum budget (${budget})")],
            ..Ending::default()
        };
        Next::Stop(Stop::new(state, Terminal::BudgetExhausted).with_ending(ending))
    }

    /// The max_turns stop when `next` would run a turn past the limit: the
    /// limit wins over every recovery that counts a turn.
    pub fn max_turns_reached(&self, next: State, stop_reason: Option<String>) -> Next {
        match self.config.max_turns {
            Some(max_turns) if next.turn_count > max_turns => {
                let ending = Ending {
                    stop_reason,
                    errors: vec![format!("Reached maximum number of turns ({max_turns})")],
                    turns: Some(next.turn_count),
                    ..Ending::default()
                };
                Next::Stop(Stop::new(next, Terminal::MaxTurns).with_ending(ending))
            }
            _ => Next::Continue(next),
        }
    }

    /// Builds the outcome of a terminal; a run error is shown first, as an
    /// assistant message (errors recovered from are never shown).
    fn finish(self, stop: Stop) -> QueryOutcome {
        let Stop {
            state,
            terminal,
            error,
            ending,
        } = stop;
        self.totals.mark("query_end");
        self.deps.history.sync(&state.messages);
        tracing::debug!(terminal = terminal.as_str(), "loop ended");
        if let Some(error) = &error {
            self.sink.emit(AgentEvent::Error {
                message: error.message.clone(),
                kind: error.kind,
            });
        }
        let result = match (&error, ending.result) {
            (Some(error), _) => error.message.clone(),
            (None, Some(text)) => text,
            (None, None) => String::new(),
        };
        let stop_reason = if error.is_some() {
            Some("stop_sequence".to_string())
        } else {
            ending.stop_reason
        };
        let totals = self.totals;
        QueryOutcome {
            terminal,
            num_turns: ending.turns.unwrap_or(totals.user_messages),
            result,
            structured_output: ending.structured_output.map(|v| *v),
            errors: ending.errors,
            error,
            stop_reason,
            usage: totals.usage,
            cost_usd: totals.cost_usd + self.deps.hooks.take_spent_usd(),
            permission_denials: totals.denials,
            transitions: totals.transitions,
            api_duration: totals.api_duration,
            messages: state.messages,
            consumed_inputs: totals.consumed_inputs,
        }
    }
}
