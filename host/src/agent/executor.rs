//! The streaming tool executor of one model response.
//!
//! A call is added when its `tool_use` block completes, while the model is
//! still streaming. The concurrency rule: a call starts when nothing runs, or
//! when it and everything running are concurrency-safe; the first queued call
//! that cannot start is a barrier nothing later passes. Results are delivered
//! in model order, except that a finished safe result may pass a safe call
//! still running; a running unsafe call stops delivery.
//!
//! A call that fails before running (unknown tool, invalid input) never
//! runs and waits for nothing: its error result is deliverable at once, as
//! Claude Code shows it right after the call's block.
//!
//! The executor never pairs a result with a response it did not come from:
//! a retry or a fallback drops the whole executor, which aborts its calls.

use super::tools::{
    InterruptBehavior, Preparation, ReadyCall, ToolCall, ToolCallResult, ToolRuntime,
};
use crate::model::InvalidToolInput;
use futures::FutureExt;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

enum Slot {
    Queued(Box<dyn ReadyCall>),
    Running(JoinHandle<()>),
    Completed(ToolCallResult),
    /// Failed before running: delivered at once, whatever runs before it.
    Failed(ToolCallResult),
    Delivered,
}

struct Entry {
    call: ToolCall,
    safe: bool,
    interrupt: InterruptBehavior,
    slot: Slot,
}

pub struct ToolExecutor {
    runtime: Arc<dyn ToolRuntime>,
    /// The query chain depth of the response, for the calls' spans.
    depth: u32,
    entries: Vec<Entry>,
    /// Where each call id's entry is.
    by_id: HashMap<String, usize>,
    /// The state the rule reads, kept as calls move so that each step costs
    /// the same however many calls the response has (a response may carry
    /// thousands): no step scans the entries.
    tally: Tally,
    done_tx: mpsc::UnboundedSender<(usize, ToolCallResult)>,
    done_rx: mpsc::UnboundedReceiver<(usize, ToolCallResult)>,
}

#[derive(Default)]
struct Tally {
    /// Calls without a delivered result.
    undelivered: usize,
    /// The first entry that may still be queued (every queued one is at or
    /// after it: calls start in model order).
    next_queued: usize,
    running_safe: usize,
    /// The unsafe call running, if one is (at most one runs, alone).
    running_unsafe: Option<usize>,
    /// Finished results waiting for delivery, by entry.
    completed: BTreeSet<usize>,
    /// Results of calls that failed before running, waiting for delivery.
    failed: BTreeSet<usize>,
}

impl Tally {
    fn stopped_running(&mut self, index: usize, safe: bool) {
        if safe {
            self.running_safe -= 1;
        } else if self.running_unsafe == Some(index) {
            self.running_unsafe = None;
        }
    }
}

impl ToolExecutor {
    pub fn new(runtime: Arc<dyn ToolRuntime>, depth: u32) -> Self {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        Self {
            runtime,
            depth,
            entries: Vec::new(),
            by_id: HashMap::new(),
            tally: Tally::default(),
            done_tx,
            done_rx,
        }
    }

    /// Prepares `call`, queues it and starts whatever the rule allows.
    pub async fn add(&mut self, call: ToolCall) {
        let preparation = self.runtime.clone().prepare(call.clone()).await;
        let index = self.entries.len();
        let (safe, interrupt, slot) = match preparation {
            Preparation::Ready(ready) => (
                ready.concurrency_safe(),
                ready.interrupt(),
                Slot::Queued(ready),
            ),
            Preparation::Failed(result) => {
                self.tally.failed.insert(index);
                (true, InterruptBehavior::Cancel, Slot::Failed(*result))
            }
        };
        self.by_id.entry(call.id.clone()).or_insert(index);
        self.tally.undelivered += 1;
        self.entries.push(Entry {
            call,
            safe,
            interrupt,
            slot,
        });
        self.start_ready();
    }

    /// The unparsable input of call `id`, if its input was not valid JSON.
    pub fn invalid_input(&self, id: &str) -> Option<&InvalidToolInput> {
        let index = *self.by_id.get(id)?;
        self.entries[index].call.invalid_input.as_ref()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True while some call has not been delivered.
    pub fn has_undelivered(&self) -> bool {
        self.tally.undelivered > 0
    }

    /// Waits for one running call to finish and records its result. Pending
    /// forever when nothing runs (use it inside `select!` with a guard).
    pub async fn wait_for_completion(&mut self) {
        if let Some((index, result)) = self.done_rx.recv().await {
            self.complete(index, result);
        }
    }

    /// Results deliverable now, in delivery order: in model order up to the
    /// first call that holds delivery back (a queued call, or a running
    /// unsafe one), plus every call that failed before running.
    pub fn take_deliverable(&mut self) -> Vec<ToolCallResult> {
        let held = self
            .first_queued()
            .min(self.tally.running_unsafe.unwrap_or(usize::MAX));
        let mut indices: Vec<usize> = std::mem::take(&mut self.tally.failed).into_iter().collect();
        let later = self.tally.completed.split_off(&held);
        indices.extend(std::mem::replace(&mut self.tally.completed, later));
        indices.sort_unstable();
        let mut out = Vec::with_capacity(indices.len());
        for index in indices {
            if let Slot::Completed(result) | Slot::Failed(result) =
                std::mem::replace(&mut self.entries[index].slot, Slot::Delivered)
            {
                self.tally.undelivered -= 1;
                out.push(result);
            }
        }
        out
    }

    /// Runs everything to completion, returning the results not yet
    /// delivered, in delivery order.
    pub async fn drain(&mut self) -> Vec<ToolCallResult> {
        let mut out = self.take_deliverable();
        while self.has_undelivered() {
            let Some((index, result)) = self.done_rx.recv().await else {
                break; // unreachable: `self` holds a sender
            };
            self.complete(index, result);
            out.extend(self.take_deliverable());
        }
        out
    }

    /// The user interrupted: calls that may be cancelled stop now and get a
    /// synthetic result, calls not started yet never start; calls that block
    /// interrupts run on (drain them to get their results).
    pub fn interrupt(&mut self, message: &str) {
        for index in 0..self.entries.len() {
            let entry = &mut self.entries[index];
            let stop = match &entry.slot {
                Slot::Queued(_) => true,
                Slot::Running(task) if entry.interrupt == InterruptBehavior::Cancel => {
                    task.abort();
                    self.tally.stopped_running(index, entry.safe);
                    true
                }
                Slot::Running(_) | Slot::Completed(_) | Slot::Failed(_) | Slot::Delivered => false,
            };
            if stop {
                entry.slot = Slot::Completed(ToolCallResult::error(&entry.call.id, message));
                self.tally.completed.insert(index);
            }
        }
        self.tally.next_queued = self.entries.len();
    }

    /// Stops everything: every call without a result gets a synthetic one.
    /// Returns the results not yet delivered, in model order.
    pub fn abandon(&mut self, message: &str) -> Vec<ToolCallResult> {
        let mut out = Vec::new();
        for entry in &mut self.entries {
            let result = match std::mem::replace(&mut entry.slot, Slot::Delivered) {
                Slot::Delivered => continue,
                Slot::Completed(result) | Slot::Failed(result) => result,
                Slot::Running(task) => {
                    task.abort();
                    ToolCallResult::error(&entry.call.id, message)
                }
                Slot::Queued(_) => ToolCallResult::error(&entry.call.id, message),
            };
            out.push(result);
        }
        self.tally = Tally {
            next_queued: self.entries.len(),
            ..Tally::default()
        };
        out
    }

    fn complete(&mut self, index: usize, result: ToolCallResult) {
        // A call already given a synthetic result (interrupted) keeps it.
        if let Some(entry) = self.entries.get_mut(index)
            && matches!(entry.slot, Slot::Running(_))
        {
            entry.slot = Slot::Completed(result);
            self.tally.stopped_running(index, entry.safe);
            self.tally.completed.insert(index);
        }
        self.start_ready();
    }

    /// The first queued entry (the entries' length when none is).
    fn first_queued(&mut self) -> usize {
        while let Some(entry) = self.entries.get(self.tally.next_queued)
            && !matches!(entry.slot, Slot::Queued(_))
        {
            self.tally.next_queued += 1;
        }
        self.tally.next_queued
    }

    fn start_ready(&mut self) {
        loop {
            let index = self.first_queued();
            let Some(entry) = self.entries.get(index) else {
                return;
            };
            let nothing_runs = self.tally.running_safe == 0 && self.tally.running_unsafe.is_none();
            let can_start = nothing_runs || (entry.safe && self.tally.running_unsafe.is_none());
            if !can_start {
                return; // the first call that cannot start is a barrier
            }
            if entry.safe {
                self.tally.running_safe += 1;
            } else {
                self.tally.running_unsafe = Some(index);
            }
            self.start(index);
        }
    }

    fn start(&mut self, index: usize) {
        let entry = &mut self.entries[index];
        let Slot::Queued(ready) = std::mem::replace(&mut entry.slot, Slot::Delivered) else {
            return;
        };
        let id = entry.call.id.clone();
        let done = self.done_tx.clone();
        let span =
            tracing::debug_span!("tool", depth = self.depth, id = %id, name = %entry.call.name);
        let task = tokio::spawn(tracing::Instrument::instrument(
            async move {
                let result = std::panic::AssertUnwindSafe(ready.run())
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| {
                        ToolCallResult::error(&id, "the tool crashed inside carapace")
                    });
                let _ = done.send((index, result));
            },
            span,
        ));
        entry.slot = Slot::Running(task);
    }
}

impl Drop for ToolExecutor {
    /// Dropping the executor (a retry, a fallback, an abort) stops every
    /// running call: no stale result can reach a later response.
    fn drop(&mut self) {
        for entry in &self.entries {
            if let Slot::Running(task) = &entry.slot {
                task.abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ToolResultContent, ToolSpec};
    use futures::future::BoxFuture;
    use std::sync::Mutex;
    use std::time::Duration;

    /// Tools named `safe*` are concurrency-safe, others are not; the input's
    /// `ms` is how long the call takes. Records start and end order.
    struct Timed {
        log: Mutex<Vec<String>>,
    }

    impl ToolRuntime for Timed {
        fn specs(&self) -> Vec<ToolSpec> {
            Vec::new()
        }
        fn prepare(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Preparation> {
            async move {
                if call.name == "unknown" {
                    return Preparation::Failed(Box::new(ToolCallResult::error(
                        &call.id,
                        "no such tool",
                    )));
                }
                Preparation::Ready(Box::new(TimedCall {
                    runtime: self,
                    call,
                }))
            }
            .boxed()
        }
    }

    struct TimedCall {
        runtime: Arc<Timed>,
        call: ToolCall,
    }

    impl ReadyCall for TimedCall {
        fn concurrency_safe(&self) -> bool {
            self.call.name.starts_with("safe")
        }
        fn interrupt(&self) -> InterruptBehavior {
            if self.call.name.contains("block") {
                InterruptBehavior::Block
            } else {
                InterruptBehavior::Cancel
            }
        }
        fn run(self: Box<Self>) -> BoxFuture<'static, ToolCallResult> {
            let TimedCall { runtime, call } = *self;
            async move {
                runtime
                    .log
                    .lock()
                    .map(|mut l| l.push(format!("start {}", call.id)))
                    .ok();
                let ms = call.input["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                runtime
                    .log
                    .lock()
                    .map(|mut l| l.push(format!("end {}", call.id)))
                    .ok();
                ToolCallResult {
                    tool_use_id: call.id.clone(),
                    content: ToolResultContent::Text(call.id),
                    is_error: false,
                    structured: None,
                    denial: None,
                    hooks: Default::default(),
                    follow_up: None,
                }
            }
            .boxed()
        }
    }

    fn call(id: &str, name: &str, ms: u64) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            input: serde_json::json!({"ms": ms}),
            invalid_input: None,
        }
    }

    fn ids(results: &[ToolCallResult]) -> Vec<&str> {
        results.iter().map(|r| r.tool_use_id.as_str()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn safe_calls_overlap_unsafe_is_a_barrier_results_paired_by_id() {
        let runtime = Arc::new(Timed {
            log: Mutex::new(vec![]),
        });
        let mut executor = ToolExecutor::new(runtime.clone(), 0);
        executor.add(call("a", "safe_read", 300)).await;
        executor.add(call("b", "safe_read", 100)).await;
        executor.add(call("c", "write", 50)).await;
        executor.add(call("d", "safe_read", 10)).await;
        let results = executor.drain().await;
        // b finished before a and may pass it (both safe); c waits for both;
        // d waits for c.
        assert_eq!(ids(&results), vec!["b", "a", "c", "d"]);
        for r in &results {
            assert_eq!(r.content, ToolResultContent::Text(r.tool_use_id.clone()));
        }
        let log = runtime.log.lock().map(|l| l.clone()).unwrap_or_default();
        assert_eq!(
            log,
            vec![
                "start a", "start b", "end b", "end a", "start c", "end c", "start d", "end d"
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_unsafe_call_holds_back_later_results() {
        let runtime = Arc::new(Timed {
            log: Mutex::new(vec![]),
        });
        let mut executor = ToolExecutor::new(runtime, 0);
        executor.add(call("w", "write", 100)).await;
        executor.add(call("r", "safe_read", 1)).await;
        assert!(executor.take_deliverable().is_empty());
        executor.wait_for_completion().await;
        assert_eq!(ids(&executor.take_deliverable()), vec!["w"]);
        assert_eq!(ids(&executor.drain().await), vec!["r"]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_interrupt_cancels_cancellable_calls_and_lets_blocking_ones_finish() {
        let runtime = Arc::new(Timed {
            log: Mutex::new(vec![]),
        });
        let mut executor = ToolExecutor::new(runtime.clone(), 0);
        executor.add(call("c", "safe_cancel", 10_000)).await;
        executor.add(call("b", "safe_block", 100)).await;
        executor.add(call("q", "write", 10)).await; // queued behind the safe pair
        tokio::time::sleep(Duration::from_millis(10)).await;
        executor.interrupt("interrupted");
        let results = executor.drain().await;
        // q's synthetic result may pass b, which is safe and still running.
        assert_eq!(ids(&results), vec!["c", "q", "b"]);
        assert!(results[0].is_error && results[1].is_error);
        assert_eq!(results[2].content, ToolResultContent::Text("b".into()));
        let log = runtime.log.lock().map(|l| l.clone()).unwrap_or_default();
        assert_eq!(
            log,
            vec!["start c", "start b", "end b"],
            "c cancelled, q never started"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn abandoning_gives_every_call_a_result() {
        let runtime = Arc::new(Timed {
            log: Mutex::new(vec![]),
        });
        let mut executor = ToolExecutor::new(runtime, 0);
        executor.add(call("a", "safe_read", 1)).await;
        executor.add(call("w", "write", 10_000)).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        executor.wait_for_completion().await;
        let results = executor.abandon("stopped");
        assert_eq!(ids(&results), vec!["a", "w"]);
        assert!(!results[0].is_error && results[1].is_error);
        assert!(!executor.has_undelivered());
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_executor_aborts_running_calls() {
        let runtime = Arc::new(Timed {
            log: Mutex::new(vec![]),
        });
        let mut executor = ToolExecutor::new(runtime.clone(), 0);
        executor.add(call("slow", "safe_read", 10_000)).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(executor);
        tokio::time::sleep(Duration::from_secs(20)).await;
        let log = runtime.log.lock().map(|l| l.clone()).unwrap_or_default();
        assert_eq!(log, vec!["start slow"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_fails_before_running_is_delivered_at_once() {
        let runtime = Arc::new(Timed {
            log: Mutex::new(vec![]),
        });
        let mut executor = ToolExecutor::new(runtime.clone(), 0);
        executor.add(call("w", "write", 100)).await;
        executor.add(call("x", "unknown", 0)).await;
        executor.add(call("r", "safe_read", 1)).await;
        // The unknown tool's error passes the running barrier; the read
        // waits behind it as before.
        assert_eq!(ids(&executor.take_deliverable()), vec!["x"]);
        assert_eq!(ids(&executor.drain().await), vec!["w", "r"]);
        let log = runtime.log.lock().map(|l| l.clone()).unwrap_or_default();
        assert_eq!(log, vec!["start w", "end w", "start r", "end r"]);
    }
}
