//! The middleware world (`carapace:hook@0.2.0`): its binding, the host's
//! side of `next`, and one event handled in a fresh instance.
//!
//! `next` does not run the rest of the chain itself: it hands the request
//! to whoever drives this invocation (the chain, through a [`NextPort`])
//! and waits for the answer, with the hook's clock stopped — a hook's
//! deadline covers its own work, not the tool call its `next` runs.

use super::types::{EventKind, Offer, Spawn, ToolCallIn, ToolResultOut};
use crate::hooks::component::{HookError, METADATA_LIMITS};
use crate::sandbox::world::{CallCore, CallIo, EngineInner, World, link_file_streams, wasi_view};
use crate::sandbox::{CallClock, CallLimits, Grant, Sandbox, SandboxError};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use wasmtime::component::{HasSelf, Linker};

mod v0_2 {
    wasmtime::component::bindgen!({
        world: "middleware-hook",
        path: "../wit/hook/v0.2.0",
        imports: { default: async },
        exports: { default: async },
    });
}

use v0_2::carapace::hook::{next, types as wit};

/// What a hook asked of the rest of the chain, with where the answer goes.
/// A request the driver does not take (a second `next`, or another event's)
/// is dropped, and the hook is answered with a refusal.
pub(super) enum NextRequest {
    Tool(ToolCallIn, oneshot::Sender<ToolResultOut>),
    Offer(Vec<Offer>, oneshot::Sender<Vec<Offer>>),
    Spawn(Spawn, oneshot::Sender<Result<String, String>>),
    Pass(oneshot::Sender<()>),
}

/// Where one invocation's `next` sends its request.
pub(super) type NextPort = mpsc::UnboundedSender<NextRequest>;

/// One event, in host terms.
pub(super) enum EventIn {
    Tool(ToolCallIn),
    Offer(Vec<Offer>),
    Spawn(Spawn),
    SessionStart(String),
    SessionEnd(String),
}

/// What the hook answered, in host terms.
pub(super) enum EventOut {
    Tool(ToolResultOut),
    Offer(Vec<Offer>),
    Spawn(Result<String, String>),
    Told,
}

/// The context an event is handled in.
pub(in crate::hooks) struct HookContext {
    pub(in crate::hooks) session_id: String,
    pub(in crate::hooks) cwd: String,
    pub(in crate::hooks) permission_mode: String,
    pub(in crate::hooks) agent_type: Option<String>,
}

/// The middleware world's context: WASI from the hook's grant, and the
/// invocation's `next`.
pub(crate) struct MiddlewareState {
    core: CallCore,
    port: Option<NextPort>,
    clock: Arc<CallClock>,
}

wasi_view!(MiddlewareState);

impl World for MiddlewareState {
    fn link(linker: &mut Linker<Self>) -> Result<(), SandboxError> {
        link_file_streams(linker)?;
        next::add_to_linker::<MiddlewareState, HasSelf<MiddlewareState>>(linker, |state| state)
            .map_err(SandboxError::setup("linking carapace:hook/next"))
    }

    fn core(&mut self) -> &mut CallCore {
        &mut self.core
    }
}

impl MiddlewareState {
    /// Sends one request down the chain and waits for its answer, the
    /// clock stopped; `None`: `next` was already used, or the driver did
    /// not take the request.
    async fn ask<T>(
        &mut self,
        request: impl FnOnce(oneshot::Sender<T>) -> NextRequest,
    ) -> Option<T> {
        let port = self.port.take()?;
        let (answer, answered) = oneshot::channel();
        port.send(request(answer)).ok()?;
        let _paused = self.clock.pause();
        answered.await.ok()
    }
}

/// What a hook that used `next` wrongly is answered.
const NEXT_REFUSED: &str =
    "`next` may be called once per event, and only for the event being handled";

impl next::Host for MiddlewareState {
    async fn call_tool(&mut self, call: wit::ToolCall) -> wit::ToolResult {
        let call = call_from_wit(call);
        match self.ask(|answer| NextRequest::Tool(call, answer)).await {
            Some(result) => result_to_wit(&result),
            None => wit::ToolResult {
                content: Value::String(NEXT_REFUSED.into()).to_string(),
                is_error: true,
            },
        }
    }

    async fn offer_tools(&mut self, tools: Vec<wit::ToolOffer>) -> Vec<wit::ToolOffer> {
        let offered: Vec<Offer> = tools.iter().map(offer_from_wit).collect();
        match self.ask(|answer| NextRequest::Offer(offered, answer)).await {
            Some(answer) => answer.iter().map(offer_to_wit).collect(),
            None => tools,
        }
    }

    async fn spawn_subagent(&mut self, spawn: wit::SubagentSpawn) -> Result<String, String> {
        let spawn = spawn_from_wit(spawn);
        match self.ask(|answer| NextRequest::Spawn(spawn, answer)).await {
            Some(answer) => answer,
            None => Err(NEXT_REFUSED.into()),
        }
    }

    async fn pass(&mut self) {
        // A refused `pass` has nothing to answer.
        let _ = self.ask(NextRequest::Pass).await;
    }
}

impl wit::Host for MiddlewareState {}

/// A middleware component, compiled and linked, its events read once.
#[derive(Clone)]
pub(super) struct MiddlewareComponent {
    name: Arc<str>,
    path: Arc<std::path::Path>,
    engine: Arc<EngineInner>,
    pre: v0_2::MiddlewareHookPre<MiddlewareState>,
    events: Arc<[EventKind]>,
}

impl MiddlewareComponent {
    pub(super) async fn load(
        sandbox: &Sandbox,
        name: &str,
        path: &std::path::Path,
        wasm: &[u8],
    ) -> Result<Self, SandboxError> {
        let (instance_pre, _) = sandbox.link::<MiddlewareState>(wasm)?;
        let engine = sandbox.sandbox_engine().inner().clone();
        let pre = v0_2::MiddlewareHookPre::new(instance_pre).map_err(SandboxError::link(""))?;
        let asking = pre.clone();
        let (events, _) = engine
            .execute(
                name,
                &Grant::none(),
                &METADATA_LIMITS,
                CallIo::default(),
                |core| MiddlewareState {
                    core,
                    port: None,
                    clock: Arc::default(),
                },
                move |store| Box::pin(async move { asking.instantiate_async(store).await }),
                |bindings, store| {
                    Box::pin(
                        async move { bindings.carapace_hook_middleware().call_events(store).await },
                    )
                },
            )
            .await?;
        let mut kinds: Vec<EventKind> = events.into_iter().map(kind_from_wit).collect();
        kinds.sort();
        kinds.dedup();
        Ok(Self {
            name: name.into(),
            path: path.into(),
            engine,
            pre,
            events: Arc::from(kinds),
        })
    }

    /// The file it was loaded from.
    pub(super) fn path(&self) -> &std::path::Path {
        &self.path
    }

    pub(super) fn handles(&self, kind: EventKind) -> bool {
        self.events.contains(&kind)
    }

    /// Handles one event in a fresh instance holding `grant`; its `next`
    /// requests go to `port`.
    pub(super) async fn handle(
        &self,
        context: wit::Context,
        event: EventIn,
        grant: &Grant,
        limits: &CallLimits,
        port: NextPort,
    ) -> Result<EventOut, HookError> {
        let pre = self.pre.clone();
        let cwd = context.cwd.clone();
        let clock = Arc::new(CallClock::default());
        let io = CallIo {
            env: vec![("CLAUDE_PROJECT_DIR".into(), cwd.clone())],
            cwd: Some(cwd),
            clock: Some(clock.clone()),
            ..CallIo::default()
        };
        let (answer, _) = self
            .engine
            .execute(
                &self.name,
                grant,
                limits,
                io,
                |core| MiddlewareState {
                    core,
                    port: Some(port),
                    clock,
                },
                move |store| Box::pin(async move { pre.instantiate_async(store).await }),
                move |bindings, store| {
                    Box::pin(async move { dispatch(bindings, store, &context, event).await })
                },
            )
            .await?;
        Ok(answer)
    }
}

/// Calls the export for `event`.
async fn dispatch(
    bindings: &v0_2::MiddlewareHook,
    store: &mut wasmtime::Store<MiddlewareState>,
    context: &wit::Context,
    event: EventIn,
) -> wasmtime::Result<EventOut> {
    let exports = bindings.carapace_hook_middleware();
    Ok(match event {
        EventIn::Tool(call) => {
            let call = call_to_wit(&call);
            let result = exports.call_on_tool_call(store, context, &call).await?;
            EventOut::Tool(result_from_wit(result))
        }
        EventIn::Offer(tools) => {
            let tools: Vec<wit::ToolOffer> = tools.iter().map(offer_to_wit).collect();
            let answer = exports.call_on_tool_list(store, context, &tools).await?;
            EventOut::Offer(answer.iter().map(offer_from_wit).collect())
        }
        EventIn::Spawn(spawn) => {
            let spawn = spawn_to_wit(&spawn);
            EventOut::Spawn(
                exports
                    .call_on_subagent_spawn(store, context, &spawn)
                    .await?,
            )
        }
        EventIn::SessionStart(source) => {
            exports
                .call_on_session_start(store, context, &source)
                .await?;
            EventOut::Told
        }
        EventIn::SessionEnd(reason) => {
            exports.call_on_session_end(store, context, &reason).await?;
            EventOut::Told
        }
    })
}

/// The context of one hook's invocation.
pub(super) fn context(
    shared: &HookContext,
    tier: crate::hooks::tier::Tier,
    options: &Value,
) -> wit::Context {
    use crate::hooks::tier::Tier;
    wit::Context {
        session_id: shared.session_id.clone(),
        cwd: shared.cwd.clone(),
        permission_mode: shared.permission_mode.clone(),
        agent_type: shared.agent_type.clone(),
        tier: match tier {
            Tier::ManagedFirst => wit::Tier::ManagedFirst,
            Tier::User => wit::Tier::User,
            Tier::Project => wit::Tier::Project,
            Tier::ManagedLast => wit::Tier::ManagedLast,
        },
        options: options.to_string(),
    }
}

fn kind_from_wit(kind: wit::EventKind) -> EventKind {
    match kind {
        wit::EventKind::ToolCall => EventKind::ToolCall,
        wit::EventKind::ToolList => EventKind::ToolList,
        wit::EventKind::SubagentSpawn => EventKind::SubagentSpawn,
        wit::EventKind::SessionStart => EventKind::SessionStart,
        wit::EventKind::SessionEnd => EventKind::SessionEnd,
    }
}

fn call_to_wit(call: &ToolCallIn) -> wit::ToolCall {
    wit::ToolCall {
        tool_name: call.name.clone(),
        tool_input: call.input.to_string(),
        tool_use_id: call.id.clone(),
    }
}

/// A call as a hook passed it on: input that is not JSON stays text, to be
/// refused by the tool's validation like any malformed input.
fn call_from_wit(call: wit::ToolCall) -> ToolCallIn {
    ToolCallIn {
        input: serde_json::from_str(&call.tool_input).unwrap_or(Value::String(call.tool_input)),
        name: call.tool_name,
        id: call.tool_use_id,
    }
}

fn result_to_wit(result: &ToolResultOut) -> wit::ToolResult {
    wit::ToolResult {
        content: result.content.to_string(),
        is_error: result.is_error,
    }
}

/// A hook's result: content that is not JSON is taken as text.
fn result_from_wit(result: wit::ToolResult) -> ToolResultOut {
    ToolResultOut {
        content: serde_json::from_str(&result.content).unwrap_or(Value::String(result.content)),
        is_error: result.is_error,
    }
}

fn offer_to_wit(offer: &Offer) -> wit::ToolOffer {
    wit::ToolOffer {
        name: offer.name.clone(),
        description: offer.description.clone(),
        input_schema: offer.input_schema.to_string(),
    }
}

fn offer_from_wit(offer: &wit::ToolOffer) -> Offer {
    Offer {
        name: offer.name.clone(),
        description: offer.description.clone(),
        input_schema: serde_json::from_str(&offer.input_schema).unwrap_or(Value::Null),
    }
}

fn spawn_to_wit(spawn: &Spawn) -> wit::SubagentSpawn {
    wit::SubagentSpawn {
        agent_type: spawn.agent_type.clone(),
        description: spawn.description.clone(),
        prompt: spawn.prompt.clone(),
    }
}

fn spawn_from_wit(spawn: wit::SubagentSpawn) -> Spawn {
    Spawn {
        agent_type: spawn.agent_type,
        description: spawn.description,
        prompt: spawn.prompt,
    }
}
