//! The loop's own overhead, model time and tool time excluded.

use super::*;

/// A tool runtime that does nothing, instantly: what remains is the loop.
pub(super) struct InstantTools;

impl ToolRuntime for InstantTools {
    fn specs(&self) -> Vec<carapace::model::ToolSpec> {
        vec![carapace::model::ToolSpec {
            name: "Noop".into(),
            description: "does nothing".into(),
            input_schema: json!({"type": "object"}),
        }]
    }
    fn prepare(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Preparation> {
        Box::pin(async move { Preparation::Ready(Box::new(InstantCall(call))) })
    }
}

pub(super) struct InstantCall(ToolCall);

impl ReadyCall for InstantCall {
    fn concurrency_safe(&self) -> bool {
        true
    }
    fn interrupt(&self) -> InterruptBehavior {
        InterruptBehavior::Cancel
    }
    fn run(self: Box<Self>) -> BoxFuture<'static, ToolCallResult> {
        Box::pin(async move {
            ToolCallResult {
                tool_use_id: self.0.id,
                content: carapace::model::ToolResultContent::Text("ok".into()),
                is_error: false,
                structured: None,
                denial: None,
                hooks: Default::default(),
                follow_up: None,
            }
        })
    }
}

/// Records when a call starts running, delegating to an inner runtime.
pub(super) struct StartClock<R> {
    inner: Arc<R>,
    started: Arc<Mutex<Vec<Instant>>>,
}

pub(super) struct ClockedCall {
    inner: Box<dyn ReadyCall>,
    started: Arc<Mutex<Vec<Instant>>>,
}

impl ReadyCall for ClockedCall {
    fn concurrency_safe(&self) -> bool {
        self.inner.concurrency_safe()
    }
    fn interrupt(&self) -> InterruptBehavior {
        self.inner.interrupt()
    }
    fn run(self: Box<Self>) -> BoxFuture<'static, ToolCallResult> {
        if let Ok(mut started) = self.started.lock() {
            started.push(Instant::now());
        }
        self.inner.run()
    }
}

impl<R: ToolRuntime> ToolRuntime for StartClock<R> {
    fn specs(&self) -> Vec<carapace::model::ToolSpec> {
        self.inner.specs()
    }
    fn prepare(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Preparation> {
        Box::pin(async move {
            match self.inner.clone().prepare(call).await {
                Preparation::Ready(inner) => Preparation::Ready(Box::new(ClockedCall {
                    inner,
                    started: self.started.clone(),
                })),
                failed => failed,
            }
        })
    }
}

/// A model that streams one scripted tool call (then a final text), noting
/// when it hands out each `content_block_stop` of a tool_use.
pub(super) struct StopClock {
    tool: (String, serde_json::Value),
    turns: std::sync::atomic::AtomicUsize,
    stops: Arc<Mutex<Vec<Instant>>>,
}

impl Model for StopClock {
    fn stream<'a>(
        &'a self,
        _request: &'a MessagesRequest,
    ) -> BoxFuture<'a, Result<EventStream, ModelError>> {
        let n = self.turns.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let stops = self.stops.clone();
        let (name, input) = self.tool.clone();
        Box::pin(async move {
            let event =
                |v: serde_json::Value| StreamEvent::parse("", &v.to_string()).ok().flatten();
            let mut events: Vec<StreamEvent> = Vec::new();
            events.extend(event(json!({"type": "message_start", "message": {"id": format!("m{n}"), "model": "bench", "usage": {"input_tokens": 1}}})));
            let tool = n.is_multiple_of(2);
            if tool {
                events.extend(event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": format!("t{n}"), "name": name, "input": {}}})));
                events.extend(event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}})));
            } else {
                events.extend(event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
                events.extend(event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}})));
            }
            events.extend(event(json!({"type": "content_block_stop", "index": 0})));
            events.extend(event(json!({"type": "message_delta", "delta": {"stop_reason": if tool { "tool_use" } else { "end_turn" }}, "usage": {"output_tokens": 1}})));
            events.extend(event(json!({"type": "message_stop"})));
            let stream = futures::stream::iter(events.into_iter().map(move |e| {
                if tool
                    && matches!(e, StreamEvent::ContentBlockStop { .. })
                    && let Ok(mut stops) = stops.lock()
                {
                    stops.push(Instant::now());
                }
                Ok(e)
            }));
            let stream: EventStream = Box::pin(stream);
            Ok(stream)
        })
    }
}

pub(super) struct NullSink;
impl EventSink for NullSink {
    fn emit(&mut self, _event: carapace::agent::AgentEvent) {}
}

fn loop_config(max_turns: Option<u32>) -> QueryConfig {
    QueryConfig {
        model: "bench".into(),
        fallback_models: vec![],
        system_prompt: "bench".into(),
        max_tokens: 1000,
        max_turns,
        retry: carapace::model::RetryPolicy::default(),
        stop_hook_block_cap: 8,
        max_budget_usd: None,
        context: carapace::agent::ContextConfig::for_model("bench", 1000, None),
        structured_output: None,
        effort: None,
        user_context: Vec::new(),
        task_budget: None,
        thinking: carapace::model::ThinkingChoice::Off,
    }
}

pub(super) async fn loop_benches(cache: &Path, file: &Path) -> BenchResult {
    // Loop overhead: a replayed model and instant tools, so what is timed is
    // the loop itself (request building, assembly, executor, bookkeeping).
    const ITERATIONS: usize = 100;
    const RUNS: usize = 30;
    let mut per_iteration = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let script = json!({"responses": (0..ITERATIONS).map(|i| if i + 1 < ITERATIONS {
            json!({"content": [{"type": "tool_use", "name": "Noop", "input": {"i": i}}]})
        } else {
            json!({"content": [{"type": "text", "text": "done"}]})
        }).collect::<Vec<_>>()});
        let model = ReplayModel::from_json(&script.to_string())?;
        let deps = QueryDeps {
            model: &model,
            tools: Arc::new(InstantTools),
            hooks: &NoLoopHooks,
            history: &carapace::agent::NoHistoryLog,
            input: None,
            abort: CancellationToken::new(),
        };
        let started = Instant::now();
        let outcome = query(
            &deps,
            &loop_config(None),
            vec![Message::user_text("go")],
            &mut NullSink,
        )
        .await;
        let elapsed = started.elapsed();
        if outcome.num_turns as usize != ITERATIONS {
            return Err(format!("expected {ITERATIONS} turns, got {}", outcome.num_turns).into());
        }
        per_iteration.push(elapsed / ITERATIONS as u32);
    }
    report(
        "loop: overhead per iteration (replayed model, instant tool, 100-turn run)",
        &per_iteration,
        "mean over a run",
    );

    // content_block_stop → tool start, with instant tools and with the real
    // pipeline (schema + plan in the sandbox happen in between).
    for real in [false, true] {
        let stops = Arc::new(Mutex::new(Vec::new()));
        let starts = Arc::new(Mutex::new(Vec::new()));
        let (tools, tool): (Arc<dyn ToolRuntime>, (String, serde_json::Value)) = if real {
            let sandbox = Sandbox::new(SandboxConfig {
                cache_dir: cache.to_path_buf(),
                ..SandboxConfig::default()
            })?;
            let registry = ToolRegistry::builtin(&sandbox).await?;
            let pipeline = Arc::new(ToolPipeline::new(
                registry,
                Policy::new(PermissionMode::BypassPermissions, Path::new("/")),
                CallLimits::default(),
            ));
            (
                Arc::new(StartClock {
                    inner: pipeline,
                    started: starts.clone(),
                }),
                ("Read".into(), json!({"file_path": file})),
            )
        } else {
            (
                Arc::new(StartClock {
                    inner: Arc::new(InstantTools),
                    started: starts.clone(),
                }),
                ("Noop".into(), json!({})),
            )
        };
        let model = StopClock {
            tool,
            turns: Default::default(),
            stops: stops.clone(),
        };
        for _ in 0..500 {
            let deps = QueryDeps {
                model: &model,
                tools: tools.clone(),
                hooks: &NoLoopHooks,
                history: &carapace::agent::NoHistoryLog,
                input: None,
                abort: CancellationToken::new(),
            };
            query(
                &deps,
                &loop_config(Some(1)),
                vec![Message::user_text("go")],
                &mut NullSink,
            )
            .await;
        }
        let stops = stops.lock().map(|s| s.clone()).unwrap_or_default();
        let starts = starts.lock().map(|s| s.clone()).unwrap_or_default();
        let latencies: Vec<Duration> = stops
            .iter()
            .zip(starts.iter())
            .skip(20)
            .map(|(stop, start)| start.duration_since(*stop))
            .collect();
        let name = if real {
            "loop: content_block_stop → tool start (real pipeline: schema + plan in the sandbox)"
        } else {
            "loop: content_block_stop → tool start (instant tool)"
        };
        report(name, &latencies, "");
    }
    Ok(())
}
