//! The script world (`carapace:script`): the runner component, a fresh
//! instance per script, holding WASI with no grant (no directory, no
//! variable, no socket) and the `calls` interface — its only way to the
//! tools, each call passed to the session's pipeline by [`NestedCalls`].

use super::calls::{CallEnd, NestedCalls};
use super::limits::{ScriptLimits, ScriptOutput};
use crate::sandbox::world::{CallCore, CallIo, EngineInner, World, link_file_streams, wasi_view};
use crate::sandbox::{CallClock, CallLimits, Grant, Sandbox, SandboxError};
use std::sync::{Arc, Mutex};
use wasmtime::component::{HasSelf, Linker};

mod bindings {
    wasmtime::component::bindgen!({
        world: "script-runner",
        path: "../wit/script/v0.1.0",
        imports: { default: async },
        exports: { default: async },
    });
}

use bindings::carapace::script::calls;
use bindings::{ScriptRunner as Bindings, ScriptRunnerPre};

/// The runner, built from `plugins/script` and embedded in the binary.
pub const RUNNER_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/script.wasm"));

pub struct ScriptState {
    core: CallCore,
    calls: NestedCalls,
    output: Arc<Mutex<ScriptOutput>>,
    /// The script's own running time: it stands still while the script
    /// waits on its calls (they have deadlines of their own).
    clock: Arc<CallClock>,
}

wasi_view!(ScriptState);

impl World for ScriptState {
    fn link(linker: &mut Linker<Self>) -> Result<(), SandboxError> {
        link_file_streams(linker)?;
        calls::add_to_linker::<ScriptState, HasSelf<ScriptState>>(linker, |state| state)
            .map_err(SandboxError::setup("linking carapace:script/calls"))
    }

    fn core(&mut self) -> &mut CallCore {
        &mut self.core
    }
}

impl calls::Host for ScriptState {
    async fn start_call(&mut self, tool: String, input: String) -> Result<u32, String> {
        self.calls.start(&tool, &input).await
    }

    async fn wait_any(&mut self) -> Option<calls::CallEnd> {
        let clock = self.clock.clone();
        let _waiting = clock.pause();
        let end: CallEnd = self.calls.wait_any().await?;
        Some(calls::CallEnd {
            id: end.id,
            text: end.text,
            blocks: end.blocks,
            is_error: end.is_error,
            denied: end.denied,
        })
    }

    async fn log(&mut self, line: String) {
        if let Ok(mut output) = self.output.lock() {
            output.log(&line);
        }
    }
}

/// How a script ended.
pub enum ScriptEnd {
    /// It returned (the value as JSON text, none for `undefined`).
    Returned(Option<String>),
    /// It threw, or waited on what nothing would settle.
    Threw(String),
}

/// The runner component, compiled and linked once per sandbox.
#[derive(Clone)]
pub struct ScriptRunner {
    engine: Arc<EngineInner>,
    pre: ScriptRunnerPre<ScriptState>,
}

impl ScriptRunner {
    pub fn load(sandbox: &Sandbox) -> Result<Self, SandboxError> {
        let (instance_pre, _) = sandbox.link::<ScriptState>(RUNNER_WASM)?;
        let pre =
            ScriptRunnerPre::new(instance_pre).map_err(SandboxError::link("carapace:script"))?;
        Ok(Self {
            engine: sandbox.sandbox_engine().inner().clone(),
            pre,
        })
    }

    /// Runs `code` in a fresh instance with `tools` offered; its calls go
    /// to `calls`, its printed lines to `output`.
    pub async fn run(
        &self,
        code: String,
        tools: Vec<String>,
        calls: NestedCalls,
        (limits, output): (&ScriptLimits, Arc<Mutex<ScriptOutput>>),
    ) -> Result<ScriptEnd, SandboxError> {
        let pre = self.pre.clone();
        let clock = Arc::new(CallClock::default());
        let io = CallIo {
            clock: Some(clock.clone()),
            ..CallIo::default()
        };
        let call_limits = CallLimits {
            deadline: limits.deadline,
            memory_bytes: limits.memory_bytes,
            ..CallLimits::default()
        };
        let (end, _) = self
            .engine
            .execute(
                "script",
                &Grant::none(),
                &call_limits,
                io,
                move |core| ScriptState {
                    core,
                    calls,
                    output,
                    clock,
                },
                move |store| Box::pin(async move { pre.instantiate_async(store).await }),
                move |b: &Bindings, store| {
                    Box::pin(async move { b.call_run(store, &code, &tools).await })
                },
            )
            .await?;
        Ok(match end {
            Ok(value) => ScriptEnd::Returned(value),
            Err(thrown) => ScriptEnd::Threw(thrown),
        })
    }
}
