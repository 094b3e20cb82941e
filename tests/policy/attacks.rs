//! The attack suite: each test tries to get past the policy (or the sandbox
//! behind it) and fails if the attempt succeeds. Each test also runs the same
//! attempt against a deliberately weakened policy — no deny rule, a wider
//! ceiling or grant, bypass mode, an approval — and asserts that the attempt
//! then does succeed, so no test passes merely because everything is refused.

use carapace::agent::{ToolCall, ToolCallResult, ToolRuntime};
use carapace::policy::{
    Anchors, Ceiling, HostPattern, Outcome, PermissionMode, Policy, PolicyConfig, Rule, RuleKind,
    RuleSet, RuleSource, SourceKind,
};
use carapace::sandbox::{CallLimits, FileAccess, Sandbox, ToolComponent};
use carapace::settings::{Locations, Settings};
use carapace::tools::{Asker, ToolPipeline, ToolRegistry};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

type TestResult = Result<(), Box<dyn std::error::Error>>;
type BoxError = Box<dyn std::error::Error>;

// ---- the world under attack ----------------------------------------------

struct World {
    _dirs: Vec<tempfile::TempDir>,
    /// The working directory.
    ws: PathBuf,
    /// A directory outside it, holding a secret.
    outside: PathBuf,
    home: PathBuf,
    config_dir: PathBuf,
}

fn world() -> Result<World, BoxError> {
    // The workspace and the outside share a private parent (a control
    // grants it whole); the home is apart.
    let root_dir = tempfile::tempdir()?;
    let home_dir = tempfile::tempdir()?;
    let root = std::fs::canonicalize(root_dir.path())?;
    let (ws, outside) = (root.join("ws"), root.join("outside"));
    std::fs::create_dir(&ws)?;
    std::fs::create_dir(&outside)?;
    let home = std::fs::canonicalize(home_dir.path())?;
    std::fs::write(ws.join("a.txt"), "A_CONTENT")?;
    std::fs::write(ws.join("b.txt"), "B_CONTENT")?;
    std::fs::write(outside.join("secret.txt"), "OUTSIDE_SECRET")?;
    std::fs::create_dir_all(home.join(".ssh"))?;
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE_KEY")?;
    let config_dir = home.join(".carapace");
    std::fs::create_dir_all(&config_dir)?;
    std::fs::write(config_dir.join("settings.json"), "{}")?;
    Ok(World {
        _dirs: vec![root_dir, home_dir],
        ws,
        outside,
        home,
        config_dir,
    })
}

impl World {
    fn p(&self, rel: &str) -> String {
        self.ws.join(rel).to_string_lossy().into_owned()
    }

    fn policy(&self, mode: PermissionMode, rules: &[(RuleKind, &str)]) -> Result<Policy, BoxError> {
        self.policy_reaching(mode, rules, &[])
    }

    /// A policy whose HTTP grants may reach the `internal` hosts (the
    /// user's `sandbox.allowInternalAddresses`).
    fn policy_reaching(
        &self,
        mode: PermissionMode,
        rules: &[(RuleKind, &str)],
        internal: &[&str],
    ) -> Result<Policy, BoxError> {
        let anchors = Anchors {
            cwd: self.ws.clone(),
            home: self.home.clone(),
            project: self.ws.clone(),
        };
        let source = RuleSource {
            kind: SourceKind::User,
            file: Some(self.config_dir.join("settings.json")),
        };
        let rules = rules
            .iter()
            .map(|(kind, text)| Rule::parse(text, *kind, source.clone(), &anchors))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Policy::from_config(PolicyConfig {
            mode,
            bypass_allowed: false,
            rules: RuleSet::new(rules),
            cwd: self.ws.clone(),
            additional_dirs: vec![],
            home: self.home.clone(),
            config_dir: self.config_dir.clone(),
            internal_hosts: internal
                .iter()
                .map(|h| HostPattern::parse(h))
                .collect::<Result<_, _>>()?,
            credential_files: Vec::new(),
            masked_files: Vec::new(),
            auto_hard_deny: Vec::new(),
        }))
    }
}

// ---- running one call through the real pipeline ----------------------------

struct Loaded {
    sandbox: Sandbox,
    probe: ToolComponent,
}

static LOADED: tokio::sync::OnceCell<Loaded> = tokio::sync::OnceCell::const_new();

async fn loaded() -> Result<&'static Loaded, BoxError> {
    LOADED
        .get_or_try_init(|| async {
            let sandbox = carapace_test_support::sandbox()?;
            let wasm = std::fs::read(
                Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("escape_probe.wasm"),
            )?;
            let probe = ToolComponent::load(&sandbox, "escape-probe", &wasm).await?;
            Ok::<_, BoxError>(Loaded { sandbox, probe })
        })
        .await
}

struct Run {
    policy: Policy,
    ceiling: Ceiling,
    limits: CallLimits,
    approver: bool,
}

impl Run {
    fn new(policy: Policy) -> Self {
        Self {
            policy,
            ceiling: Ceiling::none().with_files("/", FileAccess::Write),
            limits: CallLimits::default(),
            approver: false,
        }
    }

    fn ceiling(mut self, ceiling: Ceiling) -> Self {
        self.ceiling = ceiling;
        self
    }

    fn limits(mut self, limits: CallLimits) -> Self {
        self.limits = limits;
        self
    }

    fn approved(mut self) -> Self {
        self.approver = true;
        self
    }

    async fn call(self, tool: &str, input: Value) -> Result<ToolCallResult, BoxError> {
        let loaded = loaded().await?;
        let mut registry = ToolRegistry::builtin(&loaded.sandbox).await?;
        registry.add(loaded.probe.clone(), Arc::new(self.ceiling))?;
        let pipeline = Arc::new(
            ToolPipeline::new(registry, self.policy, self.limits).with_asker(match self.approver {
                true => Asker::PromptTool("Approver".to_string()),
                false => Asker::Nobody,
            }),
        );
        let call = ToolCall {
            id: "toolu_attack".into(),
            name: tool.into(),
            input,
            invalid_input: None,
        };
        Ok(pipeline.call(call).await)
    }
}

fn probe(needs: Value, attempts: Value) -> Value {
    json!({"needs": needs, "attempts": attempts})
}

fn need(kind: &str, target: &str) -> Value {
    json!({"kind": kind, "target": target})
}

fn text(result: &ToolCallResult) -> String {
    result.content.text()
}

/// The Probe's report (empty when the call itself was refused).
fn report(result: &ToolCallResult) -> Vec<Value> {
    if result.is_error {
        return Vec::new();
    }
    serde_json::from_str(&text(result)).unwrap_or_default()
}

/// Whether attempt `i` of a Probe call worked.
fn worked(result: &ToolCallResult, i: usize) -> bool {
    report(result).get(i).is_some_and(|r| r["ok"] == true)
}

/// Whether attempt `i` was stopped the way a defence stops it: the call
/// refused by the policy (a denial, with its reason), or the probe ran and
/// reports that attempt failed. A call that failed any other way — a
/// crash, a timeout, an unusable input — is no defence holding: the
/// assertion must fail then, not pass.
fn held(result: &ToolCallResult, i: usize) -> bool {
    if result.is_error {
        return result.denial.is_some();
    }
    report(result).get(i).is_some_and(|r| r["ok"] == false)
}

fn refused(result: &ToolCallResult) -> bool {
    result.is_error && result.denial.is_some()
}

#[path = "attacks/asking.rs"]
mod asking;
#[path = "attacks/bash_analysis.rs"]
mod bash_analysis;
#[path = "attacks/ceiling.rs"]
mod ceiling;
#[path = "attacks/limits.rs"]
mod limits;
#[path = "attacks/network.rs"]
mod network;
#[path = "attacks/paths.rs"]
mod paths;
#[path = "attacks/protected.rs"]
mod protected;
#[path = "attacks/secrets.rs"]
mod secrets;
#[path = "attacks/settings.rs"]
mod settings;
