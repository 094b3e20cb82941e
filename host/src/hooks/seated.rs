//! The session's middleware hooks: seating them as they load (one that
//! cannot load stands as a guard refusing every call), and running the
//! engine's events through them.

use super::config::HandlerKind;
use super::load::{Places, grant_for};
use super::middleware::{
    EventKind, HookContext, Middleware, Offer, Seating, Spawn, ToolCallIn, ToolResultOut,
};
use super::{Handler, HookRuntime, HookSpec, LoadedHook, shell, unreadable_guard};
use crate::sandbox::{CallLimits, Sandbox};
use futures::future::BoxFuture;
use std::sync::Arc;

/// Memory one middleware invocation may hold (interpreted languages carry
/// their runtime).
const MIDDLEWARE_MEMORY_BYTES: usize = 256 << 20;

/// Seats `spec`'s component; when it cannot be, the warning and the guard
/// that stands for it — middleware may be what stands between the model
/// and a tool, so what cannot run refuses every call.
pub(super) async fn seat(
    middleware: &mut Middleware,
    sandbox: &Sandbox,
    spec: &HookSpec,
    places: &Places<'_>,
) -> Option<(String, Arc<LoadedHook>)> {
    let label = spec
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| spec.path.display().to_string());
    let seated = async {
        let entry = spec
            .middleware
            .clone()
            .ok_or_else(|| "it has no seat".to_string())?;
        let grant = grant_for(spec, places.home, places.config_dir).map_err(|e| e.to_string())?;
        let seating = Seating {
            label: label.clone(),
            grant,
            limits: CallLimits {
                deadline: spec.timeout,
                memory_bytes: MIDDLEWARE_MEMORY_BYTES,
                output_bytes: 1 << 20,
            },
            tier: entry.tier,
            options: entry.options,
        };
        let read = || std::fs::read(&spec.path).map_err(|e| format!("cannot read it: {e}"));
        middleware.seat(sandbox, &spec.path, read, seating).await
    };
    let why = seated.await.err()?;
    let reason = format!(
        "middleware hook {} ({}) cannot run: {why}",
        spec.path.display(),
        spec.source.describe()
    );
    let guard = unreadable_guard(reason.clone(), &spec.source);
    debug_assert_eq!(guard.kind, HandlerKind::Shell);
    let hook = LoadedHook {
        spec: guard,
        handler: Handler::Shell(shell::ShellHook::CannotRun(reason.clone())),
        grant: crate::sandbox::Grant::none(),
        label,
        spent: Default::default(),
        off: Default::default(),
    };
    Some((
        format!("{reason}; every tool call is refused until it is fixed"),
        Arc::new(hook),
    ))
}

impl HookRuntime {
    /// Whether a middleware hook is registered for `kind`.
    pub fn has_middleware(&self, kind: EventKind) -> bool {
        self.middleware.handles(kind)
    }

    /// The context middleware hooks are told, for the call `tool_use_id`
    /// when there is one (a child loop's calls name their agent).
    fn middleware_context(&self, tool_use_id: Option<&str>) -> HookContext {
        let agent_type = tool_use_id.and_then(|id| {
            self.agent_calls
                .lock()
                .ok()
                .and_then(|calls| calls.get(id).map(|(_, kind)| kind.clone()))
        });
        HookContext {
            session_id: self.common.session_id.clone(),
            cwd: self.common.cwd.clone(),
            permission_mode: match &self.mode {
                Some(mode) => mode.get().as_str().to_string(),
                None => self.common.permission_mode.clone(),
            },
            agent_type,
        }
    }

    fn middleware_warnings(&self, warnings: Vec<String>) {
        for warning in warnings {
            self.warn(warning);
        }
    }

    /// A tool call through the middleware: `run` is what the engine does
    /// with the call (as the hooks passed it on) when they let it through.
    pub async fn around_tool_call<'a>(
        &'a self,
        call: ToolCallIn,
        run: impl FnOnce(ToolCallIn) -> BoxFuture<'a, ToolResultOut> + Send + 'a,
    ) -> ToolResultOut {
        let shared = self.middleware_context(Some(&call.id));
        let ran = self.middleware.tool_call(&shared, call, run).await;
        self.middleware_warnings(ran.warnings);
        ran.out
    }

    /// The tools offered to the model, as the middleware leaves them.
    pub async fn offered_tools(&self, tools: Vec<Offer>) -> Vec<Offer> {
        let shared = self.middleware_context(None);
        let ran = self.middleware.tool_list(&shared, tools).await;
        self.middleware_warnings(ran.warnings);
        ran.out
    }

    /// A subagent's spawn through the middleware: `run` starts it (as the
    /// hooks passed it on) and returns its report.
    pub async fn around_spawn<'a>(
        &'a self,
        spawn: Spawn,
        run: impl FnOnce(Spawn) -> BoxFuture<'a, Result<String, String>> + Send + 'a,
    ) -> Result<String, String> {
        let shared = self.middleware_context(None);
        let ran = self.middleware.spawn(&shared, spawn, run).await;
        self.middleware_warnings(ran.warnings);
        ran.out
    }

    /// Tells the middleware a session started (`source`) or ended
    /// (`reason`).
    pub async fn tell_middleware(&self, kind: EventKind, what: &str) {
        if !matches!(kind, EventKind::SessionStart | EventKind::SessionEnd)
            || !self.middleware.handles(kind)
        {
            return;
        }
        let shared = self.middleware_context(None);
        let warnings = self.middleware.tell(&shared, kind, what.to_string()).await;
        self.middleware_warnings(warnings);
    }

    /// Each seated middleware hook in a line (`/hooks`).
    pub fn describe_middleware(&self) -> Vec<String> {
        self.middleware.describe()
    }
}
