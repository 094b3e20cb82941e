//! `set_model` when hooks listen: PreModelSwitch may refuse the switch
//! (the SDK gets an error saying so, `error_code: blocked_by_hook`, and
//! the model it still has); PostModelSwitch is told once it is made — as
//! Claude Code 2.1.332 answers it.

use super::ErrorAnswer;
use super::session::SessionControl;
use crate::hooks::{HookEventKind, ModelSwitch};
use futures::future::BoxFuture;
use serde_json::{Value, json};

impl SessionControl {
    /// The switch `request` asks for, run through the hooks; `None` when
    /// no hook listens (answered at once, as any request).
    pub(super) fn switch_model_later(
        &self,
        request: &Value,
    ) -> Option<BoxFuture<'static, Result<Value, ErrorAnswer>>> {
        let listening = [
            HookEventKind::PreModelSwitch,
            HookEventKind::PostModelSwitch,
        ]
        .into_iter()
        .any(|kind| self.hooks.handles(kind));
        if !listening {
            return None;
        }
        let (requested, to_model) = match &request["model"] {
            Value::Null => (self.default_model.clone(), self.default_model.clone()),
            Value::String(model) if !model.trim().is_empty() => {
                (model.clone(), crate::model::resolve_model(model))
            }
            other => {
                let refused = Err(format!("set_model: not a model name: {other}").into());
                return Some(Box::pin(std::future::ready(refused)));
            }
        };
        let from_model = self.model.lock().map(|m| m.clone()).unwrap_or_default();
        let (context_tokens, prompt_cache_warm) = self.usage.history();
        let switch = ModelSwitch {
            estimated_cache_write_usd: crate::model::price(&to_model).map(|price| {
                let dollars = context_tokens as f64 / 1e6 * price.input_per_mtok * 1.25;
                (dollars * 1e4).ceil() / 1e4
            }),
            from_model: from_model.clone(),
            to_model: to_model.clone(),
            requested_model: requested,
            source: "sdk".into(),
            context_tokens,
            prompt_cache_warm,
        };
        let (hooks, model) = (self.hooks.clone(), self.model.clone());
        Some(Box::pin(async move {
            if let Err(message) = hooks.model_switch(&switch).await {
                let mut fields = serde_json::Map::new();
                fields.insert("error_code".into(), json!("blocked_by_hook"));
                fields.insert("model".into(), json!(from_model));
                return Err(ErrorAnswer { message, fields });
            }
            if let Ok(mut current) = model.lock() {
                *current = to_model.clone();
            }
            hooks.model_switched(switch).await;
            Ok(json!({"model": to_model}))
        }))
    }
}
