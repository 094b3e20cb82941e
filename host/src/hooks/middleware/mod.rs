//! Middleware hooks (`carapace:hook@0.2.0`): components registered for
//! engine events — a tool call, the tool list offered to the model, a
//! subagent's spawn, a session's start and end — seated in tiers, each
//! handed the event and a `next` that runs the rest of the chain.
//!
//! Settings name them under `hooks` → `Middleware` (see `config`); the
//! tier comes from where they are configured. Each event is a fresh
//! instance holding the hook's grant, prepared ahead (pooled memory, no
//! compile or link on the call path).

mod chain;
mod component;
mod types;

use super::tier::Tier;
use chain::{Flow, Ran, Seated, Terminal};
pub(super) use component::HookContext;
use component::{EventIn, EventOut, MiddlewareComponent, NextRequest};
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::oneshot;
pub use types::{EventKind, Offer, Spawn, ToolCallIn, ToolResultOut};

/// The session's middleware hooks, in chain order.
#[derive(Default)]
pub(super) struct Middleware {
    seated: Vec<Arc<Seated>>,
}

/// Loading a middleware hook.
pub(super) struct Seating {
    pub(super) label: String,
    pub(super) grant: crate::sandbox::Grant,
    pub(super) limits: crate::sandbox::CallLimits,
    pub(super) tier: Tier,
    pub(super) options: Value,
}

impl Middleware {
    /// Loads `wasm` (a component already loaded for another entry is
    /// reused from `loaded`) and seats it: after every hook of its tier
    /// and the tiers before.
    pub(super) async fn seat(
        &mut self,
        sandbox: &crate::sandbox::Sandbox,
        path: &std::path::Path,
        read: impl FnOnce() -> Result<Vec<u8>, String>,
        seating: Seating,
    ) -> Result<(), String> {
        let loaded = self
            .seated
            .iter()
            .find(|s| s.component.path() == path)
            .map(|s| s.component.clone());
        let component = match loaded {
            Some(component) => component,
            None => MiddlewareComponent::load(sandbox, &seating.label, path, &read()?)
                .await
                .map_err(|e| e.describe())?,
        };
        let at = self
            .seated
            .iter()
            .position(|s| s.tier > seating.tier)
            .unwrap_or(self.seated.len());
        self.seated.insert(
            at,
            Arc::new(Seated {
                component,
                grant: seating.grant,
                limits: seating.limits,
                tier: seating.tier,
                options: seating.options,
                label: seating.label,
            }),
        );
        Ok(())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.seated.is_empty()
    }

    pub(super) fn handles(&self, kind: EventKind) -> bool {
        self.seated.iter().any(|s| s.component.handles(kind))
    }

    /// The hooks registered for `kind`, in chain order.
    fn for_event(&self, kind: EventKind) -> Vec<Arc<Seated>> {
        self.seated
            .iter()
            .filter(|s| s.component.handles(kind))
            .cloned()
            .collect()
    }

    /// Each seated hook in a line, for `/hooks`.
    pub(super) fn describe(&self) -> Vec<String> {
        self.seated
            .iter()
            .map(|s| format!("middleware [{}] {}", s.tier.name(), s.label))
            .collect()
    }

    pub(super) async fn tool_call<'t>(
        &self,
        shared: &HookContext,
        call: ToolCallIn,
        run: impl FnOnce(ToolCallIn) -> BoxFuture<'t, ToolResultOut> + Send + 't,
    ) -> Ran<ToolResultOut> {
        let hooks = self.for_event(EventKind::ToolCall);
        chain::run::<ToolFlow>(&hooks, shared, call, Box::new(run)).await
    }

    pub(super) async fn tool_list(
        &self,
        shared: &HookContext,
        tools: Vec<Offer>,
    ) -> Ran<Vec<Offer>> {
        let hooks = self.for_event(EventKind::ToolList);
        let identity: Terminal<'_, OfferFlow> = Box::new(|tools| Box::pin(async move { tools }));
        chain::run::<OfferFlow>(&hooks, shared, tools, identity).await
    }

    pub(super) async fn spawn<'t>(
        &self,
        shared: &HookContext,
        spawn: Spawn,
        run: impl FnOnce(Spawn) -> BoxFuture<'t, Result<String, String>> + Send + 't,
    ) -> Ran<Result<String, String>> {
        let hooks = self.for_event(EventKind::SubagentSpawn);
        chain::run::<SpawnFlow>(&hooks, shared, spawn, Box::new(run)).await
    }

    /// Tells the hooks registered for `kind` (session start or end).
    pub(super) async fn tell(
        &self,
        shared: &HookContext,
        kind: EventKind,
        what: String,
    ) -> Vec<String> {
        let hooks = self.for_event(kind);
        let done: Terminal<'_, ToldFlow> = Box::new(|_| Box::pin(async {}));
        let told = (kind == EventKind::SessionEnd, what);
        chain::run::<ToldFlow>(&hooks, shared, told, done)
            .await
            .warnings
    }
}

/// A tool call: the answer must be what a tool could answer.
struct ToolFlow;

impl Flow for ToolFlow {
    type In = ToolCallIn;
    type Out = ToolResultOut;

    fn event(input: ToolCallIn) -> EventIn {
        EventIn::Tool(input)
    }

    fn answer(out: EventOut) -> Option<ToolResultOut> {
        match out {
            EventOut::Tool(result) => Some(result),
            _ => None,
        }
    }

    fn request(
        request: NextRequest,
        _: &ToolCallIn,
    ) -> Option<(ToolCallIn, oneshot::Sender<ToolResultOut>)> {
        match request {
            NextRequest::Tool(call, reply) => Some((call, reply)),
            _ => None,
        }
    }

    fn check(
        _: &ToolCallIn,
        returned: Option<&ToolResultOut>,
        answer: &ToolResultOut,
    ) -> Result<(), String> {
        if returned == Some(answer) {
            return Ok(());
        }
        serde_json::from_value::<crate::model::ToolResultContent>(answer.content.clone())
            .map(|_| ())
            .map_err(|_| {
                "its answer is not a tool's output (a string, or an array of text and image blocks)"
                    .into()
            })
    }

    fn undoes(decided: &ToolResultOut, answer: &ToolResultOut) -> bool {
        decided.is_error && answer != decided
    }

    fn refusal(hook: &str, why: &str, given: &ToolCallIn) -> ToolResultOut {
        ToolResultOut {
            content: Value::String(format!(
                "{} was refused: middleware hook {hook} failed ({why})",
                given.name
            )),
            is_error: true,
        }
    }
}

/// The tool list: a hook may drop, reorder and reword, never invent.
struct OfferFlow;

impl Flow for OfferFlow {
    type In = Vec<Offer>;
    type Out = Vec<Offer>;

    fn event(input: Vec<Offer>) -> EventIn {
        EventIn::Offer(input)
    }

    fn answer(out: EventOut) -> Option<Vec<Offer>> {
        match out {
            EventOut::Offer(tools) => Some(tools),
            _ => None,
        }
    }

    fn request(
        request: NextRequest,
        _: &Vec<Offer>,
    ) -> Option<(Vec<Offer>, oneshot::Sender<Vec<Offer>>)> {
        match request {
            NextRequest::Offer(tools, reply) => Some((tools, reply)),
            _ => None,
        }
    }

    fn check(
        given: &Vec<Offer>,
        _: Option<&Vec<Offer>>,
        answer: &Vec<Offer>,
    ) -> Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        for offer in answer {
            if !given.iter().any(|g| g.name == offer.name) {
                return Err(format!(
                    "it offered `{}`, a tool it was not given",
                    offer.name
                ));
            }
            if !seen.insert(offer.name.as_str()) {
                return Err(format!("it offered `{}` twice", offer.name));
            }
        }
        Ok(())
    }

    fn undoes(decided: &Vec<Offer>, answer: &Vec<Offer>) -> bool {
        answer
            .iter()
            .any(|offer| !decided.iter().any(|kept| kept.name == offer.name))
    }

    /// A failed hook on the tool list leaves nothing offered: it may have
    /// been what hides a tool.
    fn refusal(_: &str, _: &str, _: &Vec<Offer>) -> Vec<Offer> {
        Vec::new()
    }
}

/// A subagent's spawn: a refusal is an error the Agent tool reports.
struct SpawnFlow;

impl Flow for SpawnFlow {
    type In = Spawn;
    type Out = Result<String, String>;

    fn event(input: Spawn) -> EventIn {
        EventIn::Spawn(input)
    }

    fn answer(out: EventOut) -> Option<Result<String, String>> {
        match out {
            EventOut::Spawn(answer) => Some(answer),
            _ => None,
        }
    }

    fn request(
        request: NextRequest,
        _: &Spawn,
    ) -> Option<(Spawn, oneshot::Sender<Result<String, String>>)> {
        match request {
            NextRequest::Spawn(spawn, reply) => Some((spawn, reply)),
            _ => None,
        }
    }

    fn check(
        _: &Spawn,
        _: Option<&Result<String, String>>,
        _: &Result<String, String>,
    ) -> Result<(), String> {
        Ok(())
    }

    fn undoes(decided: &Result<String, String>, answer: &Result<String, String>) -> bool {
        decided.is_err() && answer != decided
    }

    fn refusal(hook: &str, why: &str, given: &Spawn) -> Result<String, String> {
        Err(format!(
            "the {} agent was not started: middleware hook {hook} failed ({why})",
            given.agent_type
        ))
    }
}

/// A session's start or end (`true`: end), told: nothing to answer.
struct ToldFlow;

impl Flow for ToldFlow {
    type In = (bool, String);
    type Out = ();

    fn event((end, what): (bool, String)) -> EventIn {
        match end {
            true => EventIn::SessionEnd(what),
            false => EventIn::SessionStart(what),
        }
    }

    fn answer(out: EventOut) -> Option<()> {
        matches!(out, EventOut::Told).then_some(())
    }

    /// What is passed on is what was told: `pass` carries nothing.
    fn request(
        request: NextRequest,
        given: &(bool, String),
    ) -> Option<((bool, String), oneshot::Sender<()>)> {
        match request {
            NextRequest::Pass(reply) => Some((given.clone(), reply)),
            _ => None,
        }
    }

    fn check(_: &(bool, String), _: Option<&()>, _: &()) -> Result<(), String> {
        Ok(())
    }

    fn undoes(_: &(), _: &()) -> bool {
        false
    }

    fn refusal(_: &str, _: &str, _: &(bool, String)) {}
}
