//! The first-party tools against real files, real processes and a loopback
//! HTTP server, each through the whole pipeline (schema, plan, policy,
//! grant, sandboxed call): schema errors, normal cases, and the sandbox
//! boundary of each.

use carapace::agent::{ToolCall, ToolCallResult, ToolRuntime};
use carapace::model::{ToolResultBlock, ToolResultContent};
use carapace::policy::{
    Anchors, Ceiling, HostPattern, PermissionMode, Policy, PolicyConfig, Rule, RuleKind, RuleSet,
    RuleSource, SourceKind,
};
use carapace::sandbox::{
    CallLimits, FileAccess, ProcessConfig, Sandbox, SandboxConfig, ShellStatus, ToolComponent,
};
use carapace::tools::{ToolPipeline, ToolRegistry};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

type TestResult = Result<(), Box<dyn std::error::Error>>;
type BoxError = Box<dyn std::error::Error>;

#[path = "atomic_writes.rs"]
mod atomic_writes;

/// A workspace, a directory outside it, and the tools wired as the CLI
/// wires them (one session: the read ledger is shared between calls).
struct Bench {
    _dirs: Vec<tempfile::TempDir>,
    sandbox: Sandbox,
    ws: PathBuf,
    outside: PathBuf,
    pipeline: Arc<ToolPipeline>,
}

fn bench(
    mode: PermissionMode,
    rules: &[(RuleKind, &str)],
) -> impl std::future::Future<Output = Result<Bench, BoxError>> {
    bench_reaching(mode, rules, Vec::new())
}

/// A bench whose policy lets HTTP reach the `internal` hosts (what the
/// user's `sandbox.allowInternalAddresses` would list).
fn bench_reaching(
    mode: PermissionMode,
    rules: &[(RuleKind, &str)],
    internal: Vec<HostPattern>,
) -> impl std::future::Future<Output = Result<Bench, BoxError>> {
    let rules: Vec<(RuleKind, String)> = rules.iter().map(|(k, r)| (*k, r.to_string())).collect();
    async move {
        let ws_dir = tempfile::tempdir()?;
        let out_dir = tempfile::tempdir()?;
        let ws = std::fs::canonicalize(ws_dir.path())?;
        let outside = std::fs::canonicalize(out_dir.path())?;
        let sandbox = Sandbox::new(SandboxConfig {
            guest_cwd: Some(ws.clone()),
            process: Some(ProcessConfig {
                helper: Some(PathBuf::from(env!("CARGO_BIN_EXE_carapace"))),
                write_roots: vec![ws.clone()],
                ..ProcessConfig::new(&ws)
            }),
            ..carapace_test_support::sandbox_config()
        })?;
        let mut registry = ToolRegistry::builtin(&sandbox).await?;
        let probe_wasm =
            std::fs::read(Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("escape_probe.wasm"))?;
        let probe = ToolComponent::load(&sandbox, "escape-probe", &probe_wasm).await?;
        registry.add(
            probe,
            Arc::new(
                Ceiling::none()
                    .with_files("/", FileAccess::Write)
                    .with_process(),
            ),
        )?;
        let shell_probe_wasm =
            std::fs::read(Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("shell_probe.wasm"))?;
        let shell_probe = ToolComponent::load(&sandbox, "shell-probe", &shell_probe_wasm).await?;
        registry.add(shell_probe, Arc::new(Ceiling::none().with_process()))?;
        let anchors = Anchors {
            cwd: ws.clone(),
            home: outside.clone(),
            project: ws.clone(),
        };
        let source = RuleSource {
            kind: SourceKind::CliFlag,
            file: None,
        };
        let rules = rules
            .iter()
            .map(|(k, r)| Rule::parse(r, *k, source.clone(), &anchors))
            .collect::<Result<Vec<_>, _>>()?;
        let policy = Policy::from_config(PolicyConfig {
            mode,
            bypass_allowed: false,
            rules: RuleSet::new(rules),
            cwd: ws.clone(),
            additional_dirs: vec![],
            home: outside.join("home"),
            config_dir: outside.join("home/.carapace"),
            internal_hosts: internal,
            credential_files: Vec::new(),
            masked_files: Vec::new(),
            auto_hard_deny: Vec::new(),
        });
        let spill = outside.join("spill");
        let pipeline = Arc::new(
            ToolPipeline::new(registry, policy, CallLimits::default())
                .with_result_spill(spill, 100_000)
                .with_structured_results(true),
        );
        Ok(Bench {
            _dirs: vec![ws_dir, out_dir],
            sandbox,
            ws,
            outside,
            pipeline,
        })
    }
}

impl Bench {
    async fn call(&self, tool: &str, input: Value) -> ToolCallResult {
        let call = ToolCall {
            id: format!("toolu_{tool}"),
            name: tool.into(),
            input,
            invalid_input: None,
        };
        self.pipeline.clone().call(call).await
    }

    fn p(&self, rel: &str) -> String {
        self.ws.join(rel).to_string_lossy().into_owned()
    }
}

/// `path` as Glob and Grep show it: relative to the working directory.
fn rel(b: &Bench, path: &impl AsRef<std::path::Path>) -> String {
    path.as_ref().strip_prefix(&b.ws).map_or_else(
        |_| path.as_ref().display().to_string(),
        |r| r.display().to_string(),
    )
}

fn text(result: &ToolCallResult) -> String {
    result.content.text()
}

fn ok_text(result: &ToolCallResult) -> String {
    assert!(!result.is_error, "unexpected error: {}", text(result));
    text(result)
}

#[path = "first_party/bash.rs"]
mod bash;
#[path = "first_party/races.rs"]
mod races;
#[path = "first_party/read.rs"]
mod read;
#[path = "first_party/result_budget.rs"]
mod result_budget;
#[path = "first_party/search.rs"]
mod search;
#[path = "first_party/web_fetch.rs"]
mod web_fetch;
#[path = "first_party/write_edit.rs"]
mod write_edit;
