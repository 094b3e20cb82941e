//! Running one event through the seated hooks, in tier order, each handed
//! a `next` that runs the rest; and the two rules that make the tiers
//! hold: a hook that answers without calling `next` does not skip the
//! higher-ranked hooks after it (they see the event, its answer standing
//! for the engine's), and a hook cannot undo what a higher-ranked hook
//! decided — turn its refusal into something else, offer a tool it
//! withheld (the change is dropped and said in a warning).

use super::component::{EventIn, EventOut, HookContext, MiddlewareComponent, NextRequest, context};
use crate::hooks::tier::Tier;
use crate::sandbox::{CallLimits, Grant};
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// A loaded middleware hook in its seat.
pub(super) struct Seated {
    pub(super) component: MiddlewareComponent,
    pub(super) grant: Grant,
    pub(super) limits: CallLimits,
    pub(super) tier: Tier,
    pub(super) options: Value,
    /// The file name, for messages.
    pub(super) label: String,
}

/// One kind of event as it flows through the chain.
pub(super) trait Flow {
    type In: Clone + PartialEq + Send + Sync;
    type Out: Clone + PartialEq + Send + Sync;
    fn event(input: Self::In) -> EventIn;
    fn answer(out: EventOut) -> Option<Self::Out>;
    /// The request, when it is this event's (`given`: what the hook was
    /// given, for requests that carry nothing).
    fn request(
        request: NextRequest,
        given: &Self::In,
    ) -> Option<(Self::In, oneshot::Sender<Self::Out>)>;
    /// Whether a hook's answer can be taken, given what the hook was given
    /// and (when it called `next`) what came back.
    fn check(
        given: &Self::In,
        returned: Option<&Self::Out>,
        answer: &Self::Out,
    ) -> Result<(), String>;
    /// Whether `answer` undoes `decided`, what a higher-ranked hook set: a
    /// refusal is a decision, and stands as it is; a tool withheld stays
    /// withheld.
    fn undoes(decided: &Self::Out, answer: &Self::Out) -> bool;
    /// What stands for the answer of a hook that failed: a refusal.
    fn refusal(hook: &str, why: &str, given: &Self::In) -> Self::Out;
}

/// The rest of the chain's end: what the engine itself does.
pub(super) type Terminal<'a, F> =
    Box<dyn FnOnce(<F as Flow>::In) -> BoxFuture<'a, <F as Flow>::Out> + Send + 'a>;

/// An answer, with the highest rank of the hooks that set it (`None`: the
/// engine's, untouched).
pub(super) struct Answer<O> {
    pub(super) out: O,
    set_by: Option<u8>,
}

/// What running a chain came to: the answer, and what the tiers refused.
pub(in crate::hooks) struct Ran<O> {
    pub(in crate::hooks) out: O,
    pub(in crate::hooks) warnings: Vec<String>,
}

pub(super) async fn run<'t, F: Flow + 't>(
    hooks: &[Arc<Seated>],
    shared: &HookContext,
    input: F::In,
    terminal: Terminal<'t, F>,
) -> Ran<F::Out> {
    let mut warnings = Vec::new();
    let answer = step::<F>(hooks, shared, input, terminal, &mut warnings).await;
    Ran {
        out: answer.out,
        warnings,
    }
}

/// The first hook of `hooks`, with a `next` that runs the others.
fn step<'s, 't: 's, F: Flow + 't>(
    hooks: &'s [Arc<Seated>],
    shared: &'s HookContext,
    input: F::In,
    terminal: Terminal<'t, F>,
    warnings: &'s mut Vec<String>,
) -> BoxFuture<'s, Answer<F::Out>> {
    Box::pin(async move {
        let Some((hook, rest)) = hooks.split_first() else {
            let out = terminal(input).await;
            return Answer { out, set_by: None };
        };
        let rank = hook.tier.rank();
        let (port, mut requests) = mpsc::unbounded_channel();
        let invocation = hook.component.handle(
            context(shared, hook.tier, &hook.options),
            F::event(input.clone()),
            &hook.grant,
            &hook.limits,
            port,
        );
        tokio::pin!(invocation);
        let mut terminal = Some(terminal);
        let mut below: Option<Answer<F::Out>> = None;
        let handled = loop {
            tokio::select! {
                handled = &mut invocation => break handled,
                Some(request) = requests.recv() => {
                    // Dropping a request that is not taken refuses it.
                    let (Some((passed, reply)), Some(terminal)) = (F::request(request, &input), terminal.take()) else {
                        continue;
                    };
                    let answer = step::<F>(rest, shared, passed, terminal, warnings).await;
                    let _ = reply.send(answer.out.clone());
                    below = Some(answer);
                }
            }
        };
        let answered = handled
            .map_err(|e| e.to_string())
            .and_then(|out| F::answer(out).ok_or_else(|| "it answered another event".into()))
            .and_then(|out| F::check(&input, below.as_ref().map(|b| &b.out), &out).map(|()| out));
        let out = match answered {
            Ok(out) => out,
            Err(why) => {
                let out = F::refusal(&hook.label, &why, &input);
                return Answer {
                    out,
                    set_by: Some(rank),
                };
            }
        };
        match below {
            Some(below) if below.out == out => below,
            Some(below)
                if below.set_by.is_some_and(|by| by > rank) && F::undoes(&below.out, &out) =>
            {
                warnings.push(format!(
                    "middleware hook {} ({}) tried to undo what a higher tier decided; its change is dropped",
                    hook.label,
                    hook.tier.name()
                ));
                below
            }
            Some(below) => Answer {
                out,
                set_by: Some(below.set_by.map_or(rank, |by| by.max(rank))),
            },
            None => {
                // Answered without `next`: the higher-ranked hooks after it
                // still see the event, its answer standing for the engine's.
                let higher: Vec<Arc<Seated>> = rest
                    .iter()
                    .filter(|h| h.tier.rank() > rank)
                    .cloned()
                    .collect();
                if higher.is_empty() {
                    return Answer {
                        out,
                        set_by: Some(rank),
                    };
                }
                let stand_in: Terminal<'_, F> = Box::new(move |_| Box::pin(async move { out }));
                let answer = step::<F>(&higher, shared, input, stand_in, warnings).await;
                Answer {
                    out: answer.out,
                    set_by: Some(answer.set_by.map_or(rank, |by| by.max(rank))),
                }
            }
        }
    })
}
