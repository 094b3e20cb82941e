//! Auto mode's place in the ask stage: the default question — what no
//! rule, protected path, secret or hook settled — goes to the classifier
//! before anyone is asked. Its decision is told on the session's output
//! (`system`/`auto_mode_decision`) and written to the audit log.

use super::ToolPipeline;
use crate::agent::{AgentEvent, ToolCall};
use crate::policy::{Basis, BasisKind, PermissionMode, Question};
use crate::tools::auto_mode::{AutoDecision, AutoQuestion};

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
        tracing::debug!(tool = %call.name, decision = decision.as_str(), reason = decision.reason(), "auto mode");
        if let Some(output) = &self.output {
            output.send(AgentEvent::AutoModeDecision {
                tool_use_id: call.id.clone(),
                tool_name: call.name.clone(),
                decision: decision.as_str(),
                reason: decision.reason().to_string(),
                model: judge.model_name(),
            });
        }
        Some(decision)
    }
}
