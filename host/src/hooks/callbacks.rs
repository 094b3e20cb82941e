//! The Agent SDK's hook callbacks (`initialize`'s `hooks`): handlers that
//! run in the SDK's process, reached over the control protocol, beside the
//! settings' hooks and folded with them.

use super::{
    DEFAULT_TIMEOUT, Handler, HandlerKind, HookCallbacks, HookEventKind, HookRuntime, HookSpec,
    LoadedHook, Matcher,
};
use crate::sandbox::Grant;
use serde_json::Value;
use std::sync::Arc;

impl HookRuntime {
    /// Registers the Agent SDK's hook callbacks (`initialize`'s `hooks`:
    /// event → [{matcher, hookCallbackIds, timeout?, onFailure?}]). They
    /// run beside the settings' hooks, folded with the same precedence.
    /// Returns how many were added.
    pub fn add_callbacks(
        &self,
        config: &Value,
        callbacks: Arc<dyn HookCallbacks>,
    ) -> Result<usize, String> {
        let Some(events) = config.as_object() else {
            return Ok(0);
        };
        let mut added = Vec::new();
        for (event, matchers) in events {
            let kind = HookEventKind::ALL
                .into_iter()
                .find(|k| k.name() == event)
                .ok_or_else(|| format!("hooks: carapace has no `{event}` event"))?;
            for group in matchers.as_array().into_iter().flatten() {
                let matcher = Matcher::parse(group["matcher"].as_str())
                    .map_err(|e| format!("hooks.{event}: {e}"))?;
                let timeout = group["timeout"]
                    .as_f64()
                    .filter(|t| t.is_finite() && *t > 0.0)
                    .map_or(DEFAULT_TIMEOUT, std::time::Duration::from_secs_f64);
                // The SDK's own reading: any value but "continue" blocks.
                let fail_closed = group
                    .get("onFailure")
                    .is_some_and(|v| v.as_str() != Some("continue"));
                for id in group["hookCallbackIds"].as_array().into_iter().flatten() {
                    let id = id
                        .as_str()
                        .ok_or_else(|| format!("hooks.{event}: a callback id is not a string"))?;
                    added.push(Arc::new(LoadedHook {
                        spec: HookSpec {
                            timeout,
                            fail_closed,
                            ..HookSpec::new(
                                kind,
                                matcher.clone(),
                                HandlerKind::Callback,
                                std::path::PathBuf::from(format!("sdk:{id}")),
                                &crate::policy::RuleSource {
                                    kind: crate::policy::SourceKind::CliFlag,
                                    file: None,
                                },
                            )
                        },
                        spent: Default::default(),
                        off: Default::default(),
                        handler: Handler::Callback {
                            id: id.to_string(),
                            callbacks: callbacks.clone(),
                        },
                        grant: Grant::none(),
                        label: format!("SDK callback {id}"),
                    }));
                }
            }
        }
        let count = added.len();
        if let Ok(mut hooks) = self.hooks.write() {
            hooks.extend(added);
        }
        Ok(count)
    }
}
