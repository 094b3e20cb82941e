//! The tools a child loop (a subagent) may use: a subset of its parent's,
//! by name. A child never has more than its parent: each of its calls goes
//! through the parent's runtime (the same pipeline, policy, ceilings and
//! sandbox), and a call of a tool outside the subset is refused before
//! anything runs — the model may name a tool it was not offered.

use super::tools::{
    InterruptBehavior, Preparation, ReadyCall, ToolCall, ToolCallResult, ToolRuntime,
};
use crate::model::ToolSpec;
use futures::future::BoxFuture;
use std::sync::{Arc, RwLock};

/// Told of each call the child makes, before it is prepared.
pub type CallObserver = Arc<dyn Fn(&ToolCall) + Send + Sync>;

tokio::task_local! {
    /// The subset a running call was prepared through.
    static CALLER: Arc<dyn ToolRuntime>;
}

/// The tools of whoever made the running call, when that was a subset (a
/// subagent's tools): a call that makes calls of its own (a script) makes
/// them through these, never through more.
pub fn caller_tools() -> Option<Arc<dyn ToolRuntime>> {
    CALLER.try_with(Arc::clone).ok()
}

/// A call prepared through a subset: it runs knowing so.
struct Through {
    call: Box<dyn ReadyCall>,
    subset: Arc<dyn ToolRuntime>,
}

impl ReadyCall for Through {
    fn concurrency_safe(&self) -> bool {
        self.call.concurrency_safe()
    }

    fn interrupt(&self) -> InterruptBehavior {
        self.call.interrupt()
    }

    fn run(self: Box<Self>) -> BoxFuture<'static, ToolCallResult> {
        Box::pin(CALLER.scope(self.subset, self.call.run()))
    }
}

pub struct ToolSubset {
    parent: Arc<dyn ToolRuntime>,
    /// The names asked for (`None`: all of the parent's); read at each
    /// request, so tools the parent gains later (an MCP server connected
    /// after the start) join when named.
    wanted: RwLock<Option<Vec<String>>>,
    withheld: Vec<String>,
    observer: Option<CallObserver>,
}

impl ToolSubset {
    /// The parent's tools named in `wanted` (all of them when `None`),
    /// without those in `withheld` (a child does not start children).
    pub fn new(parent: Arc<dyn ToolRuntime>, wanted: Option<&[String]>, withheld: &[&str]) -> Self {
        Self {
            parent,
            wanted: RwLock::new(wanted.map(<[String]>::to_vec)),
            withheld: withheld.iter().map(|w| w.to_string()).collect(),
            observer: None,
        }
    }

    /// Tells `observer` of each call (the hooks learn which agent made it).
    pub fn observed(mut self, observer: CallObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// From now on, only the parent's tools named in `wanted` (the main
    /// agent the Agent SDK defined once connected).
    pub fn restrict(&self, wanted: Vec<String>) {
        if let Ok(mut held) = self.wanted.write() {
            *held = Some(wanted);
        }
    }

    /// Whether this subset is all of its parent's tools (the main loop's
    /// when no agent restricts it): it then passes everything through.
    fn is_whole(&self) -> bool {
        self.withheld.is_empty() && self.wanted.read().is_ok_and(|w| w.is_none())
    }

    fn offers(&self, name: &str) -> bool {
        let wanted = self
            .wanted
            .read()
            .map(|w| w.as_ref().is_none_or(|w| w.iter().any(|n| n == name)))
            .unwrap_or(false);
        wanted && !self.withheld.iter().any(|w| w == name)
    }

    /// The tools offered now, by name.
    pub fn names(&self) -> Vec<String> {
        self.specs().into_iter().map(|spec| spec.name).collect()
    }
}

impl ToolRuntime for ToolSubset {
    fn specs(&self) -> Vec<ToolSpec> {
        if self.is_whole() {
            return self.parent.specs();
        }
        let specs = self
            .parent
            .specs()
            .into_iter()
            .filter(|spec| self.offers(&spec.name))
            .collect();
        self.parent.respec(specs)
    }

    fn offer(&self) -> BoxFuture<'_, Vec<ToolSpec>> {
        Box::pin(async {
            let offered = self.parent.offer().await;
            if self.is_whole() {
                return offered;
            }
            let offered = offered
                .into_iter()
                .filter(|spec| self.offers(&spec.name))
                .collect();
            self.parent.respec(offered)
        })
    }

    fn respec(&self, specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
        self.parent.respec(specs)
    }

    fn prepare(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Preparation> {
        if let Some(observer) = &self.observer {
            observer(&call);
        }
        if self.is_whole() {
            return self.parent.clone().prepare(call);
        }
        // Named, and the parent's now: a tool the parent lacks is this
        // subset's to refuse, with the names it has.
        let offered = self.names();
        if !offered.contains(&call.name) {
            let result = ToolCallResult::error(
                &call.id,
                format!(
                    "{} is not one of this agent's tools (it has: {})",
                    call.name,
                    offered.join(", ")
                ),
            );
            return Box::pin(async move { Preparation::Failed(Box::new(result)) });
        }
        let prepared = self.parent.clone().prepare(call);
        let subset: Arc<dyn ToolRuntime> = self;
        Box::pin(async move {
            match prepared.await {
                Preparation::Ready(call) => Preparation::Ready(Box::new(Through { call, subset })),
                failed => failed,
            }
        })
    }

    fn refresh(&self) -> BoxFuture<'_, bool> {
        self.parent.refresh()
    }

    fn notices(&self) -> BoxFuture<'_, Vec<String>> {
        self.parent.notices()
    }

    fn note_user_prompt(&self, text: &str) {
        self.parent.note_user_prompt(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Two tools; every call it prepares fails with "ran".
    struct Parent;

    impl ToolRuntime for Parent {
        fn specs(&self) -> Vec<ToolSpec> {
            ["Read", "Bash", "Agent"]
                .into_iter()
                .map(|name| ToolSpec {
                    name: name.into(),
                    description: String::new(),
                    input_schema: json!({"type": "object"}),
                })
                .collect()
        }

        fn prepare(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Preparation> {
            Box::pin(async move {
                Preparation::Failed(Box::new(ToolCallResult::error(&call.id, "ran")))
            })
        }
    }

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: "toolu_1".into(),
            name: name.into(),
            input: json!({}),
            invalid_input: None,
        }
    }

    #[tokio::test]
    async fn a_child_has_at_most_its_parents_tools() {
        let wanted = vec!["Read".to_string(), "Write".to_string()];
        let subset = Arc::new(ToolSubset::new(Arc::new(Parent), Some(&wanted), &["Agent"]));
        // Write is not the parent's: the child does not get it either.
        assert_eq!(subset.names(), ["Read"]);
        assert_eq!(subset.specs().len(), 1);
        let text = |result: ToolCallResult| result.content.text();
        let refused = subset.clone().call(call("Bash")).await;
        assert!(text(refused).contains("not one of this agent's tools"));
        let ran = subset.clone().call(call("Read")).await;
        assert!(text(ran).contains("ran"));
        let all = ToolSubset::new(Arc::new(Parent), None, &["Agent"]);
        assert_eq!(all.names(), ["Read", "Bash"]);
        // Restricted later (the SDK's main agent): from then on only those.
        all.restrict(vec!["Bash".into(), "Agent".into()]);
        assert_eq!(all.names(), ["Bash"]);
    }
}
