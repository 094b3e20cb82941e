//! A component loaded (compiled, or read from the cache, and linked) the
//! first time one of its tools is called: first-party bytes embedded in
//! the binary, or an installed plugin's file checked against the digest
//! approved when it was installed.

use crate::sandbox::{Sandbox, SandboxError, ToolComponent, ToolDefinition};
use std::path::PathBuf;
use std::sync::Arc;

/// Where a component's bytes are.
pub(super) enum Source {
    /// Already loaded (a component loaded by hand).
    Loaded,
    /// Embedded in the binary, with the digest computed at build time.
    Embedded {
        sandbox: Sandbox,
        wasm: &'static [u8],
        digest: &'static str,
    },
    /// An installed plugin's file, which must still hash to the approved
    /// digest.
    Installed {
        sandbox: Sandbox,
        path: PathBuf,
        digest: String,
        contract: String,
        config: Vec<(String, String)>,
    },
}

/// A component loaded (compiled, or read from the cache, and linked) the
/// first time one of its tools is called, once for all callers.
pub(super) struct LazyComponent {
    pub(super) name: String,
    pub(super) tools: Vec<ToolDefinition>,
    pub(super) source: Source,
    pub(super) loaded: tokio::sync::OnceCell<Result<ToolComponent, String>>,
}

impl LazyComponent {
    pub(super) fn loaded(component: ToolComponent) -> Self {
        Self {
            name: component.name().to_string(),
            tools: component.tools().to_vec(),
            source: Source::Loaded,
            loaded: tokio::sync::OnceCell::new_with(Some(Ok(component))),
        }
    }

    pub(super) async fn component(self: &Arc<Self>) -> Result<ToolComponent, SandboxError> {
        let this = self.clone();
        let loaded = self
            .loaded
            .get_or_init(|| async move {
                // Reading, hashing and compiling are blocking work.
                tokio::task::spawn_blocking(move || this.load())
                    .await
                    .unwrap_or_else(|e| Err(format!("loading stopped: {e}")))
            })
            .await;
        loaded.clone().map_err(SandboxError::Unavailable)
    }

    fn load(&self) -> Result<ToolComponent, String> {
        match &self.source {
            Source::Loaded => Err(format!("plugin `{}` was not loaded", self.name)),
            Source::Embedded {
                sandbox,
                wasm,
                digest,
            } => ToolComponent::load_known(
                sandbox,
                &self.name,
                wasm,
                digest,
                None,
                self.tools.clone(),
            )
            .map_err(|e| format!("first-party plugin `{}`: {}", self.name, e.describe())),
            Source::Installed {
                sandbox,
                path,
                digest,
                contract,
                config,
            } => {
                let wasm = std::fs::read(path).map_err(|e| {
                    format!(
                        "plugin `{}` cannot be read ({}: {e}); reinstall it with `carapace plugin add`",
                        self.name,
                        path.display()
                    )
                })?;
                let actual = crate::sandbox::digest(&wasm);
                if actual != *digest {
                    return Err(format!(
                        "plugin `{}` changed on disk since it was approved ({}); it will not run until it is approved again with `carapace plugin add`",
                        self.name,
                        path.display()
                    ));
                }
                ToolComponent::load_known(
                    sandbox,
                    &self.name,
                    &wasm,
                    &actual,
                    Some(contract),
                    self.tools.clone(),
                )
                .map(|component| component.with_config(config))
                .map_err(|e| format!("plugin `{}`: {}", self.name, e.describe()))
            }
        }
    }
}
