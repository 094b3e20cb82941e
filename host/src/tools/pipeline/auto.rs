//! Auto mode's place in the ask stage: the default question — what no
//! rule, protected path, secret or hook settled — goes to the classifier
//! before anyone is asked; so does a command's connection to a host no
//! rule names. Its decision is told on the session's output
//! (`system`/`auto_mode_decision`) and written to the audit log.

use super::ToolPipeline;
use crate::agent::{AgentEvent, ToolCall};
use crate::policy::{Basis, BasisKind, PermissionMode, Question};
use crate::sandbox::egress::{EgressAsker, HostAnswer};
use crate::tools::auto_mode::{AutoDecision, AutoJudge, AutoQuestion};
use futures::future::BoxFuture;
use std::sync::Arc;

impl ToolPipeline {
    /// The classifier's decision on `question`, in auto mode, for a
    /// default question; `None` where it is not asked.
    pub(super) async fn auto_decide(
        &self,
        call: &ToolCall,
        question: &Question,
        basis: &Basis,
    ) -> Option<AutoDecision> {
        let judge = self.auto.as_ref()?;
        // A request for a grant is the user's own to answer.
        let grant = call.name == crate::tools::request_permissions::REQUEST_PERMISSIONS_TOOL;
        if self.policy().mode() != PermissionMode::Auto || basis.kind != BasisKind::Default || grant
        {
            return None;
        }
        let grants = question.grants();
        let decision = judge
            .judge(&AutoQuestion {
                tool: &call.name,
                input: &call.input,
                question: &question.text,
                grants: &grants,
            })
            .await;
        self.teller()
            .tell((&call.id, &call.name), &decision, judge.model_name());
        Some(decision)
    }
}

/// In auto mode, a command's connection to a host no rule names goes to
/// the classifier first, as Claude Code's auto mode sends it: allowed for
/// the turn, refused, or left to whoever answers questions (refused when
/// nobody can). Outside auto mode the question goes straight there.
struct AutoHosts {
    judge: Arc<AutoJudge>,
    mode: crate::policy::ModeCell,
    inner: Option<Arc<dyn EgressAsker>>,
    teller: Teller,
}

/// Where a decision of the classifier is told: the session's output (a
/// `system`/`auto_mode_decision` line) and its transcript.
struct Teller {
    output: Option<crate::agent::EventRelay>,
    decisions: Arc<std::sync::OnceLock<std::sync::Weak<dyn crate::agent::DecisionLog>>>,
}

impl Teller {
    fn tell(&self, (id, tool): (&str, &str), decision: &AutoDecision, model: String) {
        tracing::debug!(%tool, decision = decision.as_str(), reason = decision.reason(), "auto mode");
        if let Some(log) = self.decisions.get().and_then(std::sync::Weak::upgrade) {
            log.decided(serde_json::json!({
                "type": "auto_mode_decision",
                "tool_use_id": id,
                "tool_name": tool,
                "decision": decision.as_str(),
                "reason": decision.reason(),
                "model": model,
            }));
        }
        if let Some(output) = &self.output {
            output.send(AgentEvent::AutoModeDecision {
                tool_use_id: id.to_string(),
                tool_name: tool.to_string(),
                decision: decision.as_str(),
                reason: decision.reason().to_string(),
                model,
            });
        }
    }
}

impl EgressAsker for AutoHosts {
    fn answers(&self) -> bool {
        self.mode.get() == PermissionMode::Auto || self.inner.as_ref().is_some_and(|i| i.answers())
    }

    fn allow_host<'a>(&'a self, host: &'a str) -> BoxFuture<'a, HostAnswer> {
        Box::pin(async move {
            if self.mode.get() != PermissionMode::Auto {
                return self.ask_inner(host).await;
            }
            let input = serde_json::json!({"host": host});
            let question = format!("A command wants to connect to {host}, which no rule names.");
            let grants = [format!("connect to {host}")];
            let decision = self
                .judge
                .judge(&AutoQuestion {
                    tool: crate::sandbox::egress::NETWORK_ACCESS,
                    input: &input,
                    question: &question,
                    grants: &grants,
                })
                .await;
            let id = format!("network_{}", uuid::Uuid::new_v4().simple());
            let name = crate::sandbox::egress::NETWORK_ACCESS;
            (self.teller).tell((&id, name), &decision, self.judge.model_name());
            match decision {
                AutoDecision::Allow(_) => HostAnswer::ForTurn,
                AutoDecision::Deny(_) => HostAnswer::Refused,
                AutoDecision::Ask(_) => self.ask_inner(host).await,
            }
        })
    }
}

impl AutoHosts {
    async fn ask_inner(&self, host: &str) -> HostAnswer {
        match &self.inner {
            Some(inner) => inner.allow_host(host).await,
            None => HostAnswer::Refused,
        }
    }
}

impl ToolPipeline {
    /// Who the command sandbox's proxy asks about a host no rule names:
    /// `front_end` (the screen, ACP, the SDK), behind auto mode's
    /// classifier when the session has one.
    pub fn host_asker(
        &self,
        front_end: Option<Arc<dyn EgressAsker>>,
    ) -> Option<Arc<dyn EgressAsker>> {
        let Some(judge) = self.auto.clone() else {
            return front_end;
        };
        Some(Arc::new(AutoHosts {
            judge,
            mode: self.policy().mode_cell().clone(),
            inner: front_end,
            teller: self.teller(),
        }))
    }

    fn teller(&self) -> Teller {
        Teller {
            output: self.output.clone(),
            decisions: self.decisions.clone(),
        }
    }
}
