//! After a response with tool calls: the rest of the batch runs (results
//! delivered as they may be), then, in order, the checks that may end the
//! run — an abort, a deferred call, a hook's stop, the PostToolBatch hooks
//! — then queued input joins the results and the next turn starts (unless
//! it would pass `--max-turns`).

use super::events::{AgentEvent, CommandState};
use super::executor::ToolExecutor;
use super::history::{batch_calls, push_assistant};
use super::loop_hooks::BatchDecision;
use super::run::{Ending, Next, Run, Stop};
use super::run::{Response, TOOL_INTERRUPTED};
use super::state::{State, Terminal, Transition};
use super::structured_output::{Verdict, batch_outcome};
use super::tools::ToolCallResult;
use crate::model::{ContentBlock, Role};

const INTERRUPTED_TOOLS: &str = "[The user interrupted this request while tools were running]";

impl Run<'_, '_> {
    pub(super) async fn after_tools(&mut self, state: State, response: Response) -> Next {
        let Response {
            content,
            stop_reason,
            mut executor,
            mut delivered,
            ..
        } = response;
        self.totals.mark("query_tool_execution_start");
        let aborted = self.drain(&mut executor, &mut delivered).await;
        self.totals.mark("query_tool_execution_end");
        let ending = || Ending {
            stop_reason: stop_reason.clone(),
            ..Ending::default()
        };
        if !aborted {
            // A deferred call ends the run only when it is the whole batch:
            // deferring one of several would leave its siblings' results
            // without a call to pair with when it is answered.
            if let [only] = delivered.as_slice()
                && only.hooks.deferred
            {
                let mut state = state;
                push_assistant(&mut state.messages, content);
                return Next::Stop(Stop::new(state, Terminal::ToolDeferred).with_ending(ending()));
            }
            for result in delivered.iter().filter(|r| r.hooks.deferred) {
                self.sink.emit(AgentEvent::ToolResult(result.clone()));
            }
        }
        let hook_stop = delivered.iter().find_map(|r| r.hooks.stop.clone());
        let follow_ups: Vec<String> = delivered
            .iter()
            .filter_map(|r| r.follow_up.clone())
            .collect();
        let mut extra: Vec<ContentBlock> = follow_ups
            .iter()
            .chain(delivered.iter().flat_map(|r| r.hooks.context.iter()))
            .map(|text| ContentBlock::Text { text: text.clone() })
            .collect();
        let batch = batch_calls(&content, &delivered);
        let structured = batch_outcome(&content, &delivered);
        let mut state = state;
        let mut results_message = self.append_turn(&mut state.messages, content, delivered);
        if aborted {
            self.sink.emit(AgentEvent::SyntheticUser {
                text: INTERRUPTED_TOOLS.into(),
            });
            return Next::Stop(Stop::new(state, Terminal::AbortedTools).with_ending(ending()));
        }
        for text in follow_ups {
            self.sink.emit(AgentEvent::SyntheticUser { text });
        }
        let stopped = match hook_stop {
            Some(reason) => Some(reason),
            None => match self.deps.hooks.after_batch(batch).await {
                BatchDecision::Stop { reason } => Some(reason),
                BatchDecision::Continue { context } => {
                    extra.extend(context.into_iter().map(|text| ContentBlock::Text { text }));
                    None
                }
            },
        };
        let verdict = match stopped {
            None => {
                self.structured_verdict(&mut state, structured, &stop_reason)
                    .await
            }
            Some(_) => Verdict::GoOn,
        };
        if let Verdict::Feedback(text) = &verdict {
            extra.push(ContentBlock::Text { text: text.clone() });
            self.totals.user_messages += 1;
            self.sink
                .emit(AgentEvent::SyntheticUser { text: text.clone() });
        }
        results_message.append(&mut extra);
        if stopped.is_none() {
            let notices = self.deps.tools.notices().await;
            results_message.extend(notices.into_iter().map(|text| ContentBlock::Text { text }));
        }
        if stopped.is_none() && !matches!(verdict, Verdict::Stop(..)) {
            self.absorb_queued_input(&mut results_message);
        }
        if let Some(last) = state.messages.last_mut()
            && last.role == Role::User
        {
            last.content = results_message;
        }
        if let Some(reason) = stopped {
            tracing::debug!(%reason, "a hook stopped the run after the tool batch");
            return Next::Stop(Stop::new(state, Terminal::HookStopped).with_ending(ending()));
        }
        match verdict {
            Verdict::Stop(terminal, ending) => {
                Next::Stop(Stop::new(state, terminal).with_ending(ending))
            }
            Verdict::Feedback(_) => {
                let next = state.advance(Transition::StopHookBlocking);
                self.max_turns_reached(next, stop_reason)
            }
            Verdict::GoOn => self.max_turns_reached(state.next_turn(), stop_reason),
        }
    }

    /// Runs the batch to its end, delivering results as they may be; an
    /// abort stops what may be stopped. Returns whether it was aborted.
    async fn drain(
        &mut self,
        executor: &mut ToolExecutor,
        delivered: &mut Vec<ToolCallResult>,
    ) -> bool {
        let mut aborted = false;
        loop {
            let ready = executor.take_deliverable();
            self.emit_results(&ready);
            delivered.extend(ready);
            // A refusal that asks to stop the turn (the SDK's deny with
            // interrupt) acts as an interrupt once it is delivered.
            if !aborted
                && delivered
                    .iter()
                    .any(|r| r.denial.as_ref().is_some_and(|d| d.interrupts_turn))
            {
                aborted = true;
                executor.interrupt(TOOL_INTERRUPTED);
                continue;
            }
            if !executor.has_undelivered() {
                return aborted;
            }
            tokio::select! {
                () = executor.wait_for_completion() => {}
                () = self.deps.abort.cancelled(), if !aborted => {
                    aborted = true;
                    executor.interrupt(TOOL_INTERRUPTED);
                }
            }
        }
    }

    /// Input that arrived while the tools ran joins their results.
    fn absorb_queued_input(&mut self, results_message: &mut Vec<ContentBlock>) {
        let Some(queue) = self.deps.input else {
            return;
        };
        for input in queue.take_all() {
            self.sink.emit(AgentEvent::CommandLifecycle {
                uuid: input.uuid.clone(),
                state: CommandState::Started,
            });
            results_message.push(ContentBlock::Text {
                text: format!(
                    "While you were working, the user sent this message:\n{}\n\nFinish what you were doing, then respond to it.",
                    input.text
                ),
            });
            results_message.extend(
                input
                    .images
                    .into_iter()
                    .map(|source| ContentBlock::Image { source }),
            );
            self.totals.user_messages += 1;
            self.totals.consumed_inputs.push(input.uuid);
        }
    }
}
