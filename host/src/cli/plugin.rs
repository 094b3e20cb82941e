//! `carapace plugin …` and `carapace tool call`: installing third-party
//! tool plugins, and running one tool call by hand while writing one.

use crate::agent::ToolCall;
use crate::plugin_store::install;
use crate::plugin_store::signature::{SignaturePolicy, SignatureSettings, TrustedIdentity};
use crate::plugin_store::{
    Candidate, InstallContext, InstalledPlugin, Manifest, PluginSource, PluginStore, Scope,
};
use crate::policy::{Approval, Outcome, PermissionMode};
use crate::sandbox::{
    CallContext, CallError, ProcessConfig, Sandbox, SandboxConfig, ToolContent, ToolInvocation,
    ToolOutput,
};
use crate::session::{PermissionSpec, SessionPaths, SessionSpec, Sessions, ToolSet};
use crate::tools::ToolRegistry;
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Validate a tool plugin, show what it may be granted, and install it
    /// once approved.
    Add {
        /// A `.wasm` component: a path, or an http(s) URL pinned with
        /// `#sha256=<digest>`.
        source: String,
        /// The manifest, when it is neither embedded nor next to the
        /// component.
        #[arg(long)]
        manifest: Option<PathBuf>,
        /// A Wassette `policy.yaml`: the ceiling of a component that
        /// exports its own typed functions and brings no manifest.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// Install for this user, or for this project (loaded only in a
        /// trusted workspace).
        #[arg(long, value_enum, default_value = "user")]
        scope: Scope,
        /// Approve without asking (scripts).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Resolve an OCI-installed plugin's reference again; when it moved,
    /// show what changed and install it once approved.
    Update {
        name: String,
        #[arg(long, value_enum)]
        scope: Option<Scope>,
        /// Approve without asking (scripts).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// List installed plugins.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show an installed plugin: tools, schemas, ceiling, digest, contract.
    Inspect {
        name: String,
        #[arg(long, value_enum)]
        scope: Option<Scope>,
        #[arg(long)]
        json: bool,
    },
    /// Uninstall a plugin.
    Remove {
        name: String,
        #[arg(long, value_enum)]
        scope: Option<Scope>,
    },
    /// Compile the first-party components (the tools and the MCP bridge)
    /// into the component cache, so no first call compiles one — what a
    /// container image runs while it is built. `CARAPACE_CACHE_DIR` says
    /// where.
    Warm,
    /// Claude Code's plugin marketplaces: add, list, update, remove.
    Marketplace {
        #[command(subcommand)]
        action: super::marketplace::MarketplaceCommand,
    },
    /// Install a Claude Code plugin from a marketplace (`PLUGIN@MARKETPLACE`),
    /// pinned to its content, and enable it.
    Install { id: String },
    /// Uninstall a Claude Code plugin.
    Uninstall { id: String },
    /// Enable an installed Claude Code plugin.
    Enable { id: String },
    /// Disable a Claude Code plugin (it stays installed).
    Disable { id: String },
    /// Approve an installed Claude Code plugin's content as it is now: its
    /// hooks and MCP servers run again after it changed (or, installed by
    /// Claude Code, for the first time).
    Approve { id: String },
    /// Embed a manifest in a component, so it installs from one file.
    Pack {
        component: PathBuf,
        #[arg(long)]
        manifest: PathBuf,
        #[arg(long, short = 'o')]
        output: PathBuf,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum ToolCommand {
    /// Run one call of one tool in its sandbox and print what it asked for,
    /// what the policy granted, and the result.
    Call {
        /// An installed plugin's name, a first-party plugin's name (`read`),
        /// or a `.wasm` file with its manifest beside it.
        plugin: String,
        tool: String,
        /// The tool's input, a JSON object.
        #[arg(long, default_value = "{}")]
        input: String,
        /// Rules that allow, as in a session: `Read(//data/**)`,
        /// `WebFetch(domain:example.com)`.
        #[arg(long = "allowedTools", alias = "allowed-tools", num_args = 1..)]
        allowed_tools: Vec<String>,
        /// Rules that deny.
        #[arg(long = "disallowedTools", alias = "disallowed-tools", num_args = 1..)]
        disallowed_tools: Vec<String>,
        /// The permission mode (else the settings' default).
        #[arg(long, value_enum)]
        permission_mode: Option<PermissionMode>,
        /// Grant what the policy would ask about (never what it denies).
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

fn stores(paths: &SessionPaths) -> [PluginStore; 2] {
    [
        PluginStore::new(&paths.config_dir, Scope::User),
        PluginStore::new(&paths.cwd.join(".carapace"), Scope::Project),
    ]
}

/// Compiles every first-party component into the cache, saying which
/// were compiled now and which were there already.
fn warm(paths: &SessionPaths) -> anyhow::Result<ExitCode> {
    let sandbox = plain_sandbox(paths)?;
    let components = crate::tools::BUILTIN_PLUGINS
        .iter()
        .map(|p| (p.name, p.wasm))
        .chain([("mcp-bridge", crate::mcp::BRIDGE_WASM)]);
    for (name, wasm) in components {
        let (_, outcome) = sandbox
            .load_component(wasm)
            .with_context(|| format!("compiling {name}"))?;
        let how = match outcome {
            crate::sandbox::CacheOutcome::Hit => "cached already",
            crate::sandbox::CacheOutcome::Compiled => "compiled",
        };
        say!("{name:<12} {how}");
    }
    say!("cache: {}", sandbox.cache().dir().display());
    Ok(ExitCode::SUCCESS)
}

fn plain_sandbox(paths: &SessionPaths) -> anyhow::Result<Sandbox> {
    Ok(Sandbox::new(SandboxConfig {
        guest_cwd: Some(paths.cwd.clone()),
        process: Some(ProcessConfig::new(&paths.cwd)),
        ..SandboxConfig::default()
    })?)
}

pub async fn plugin(command: PluginCommand, paths: &SessionPaths) -> anyhow::Result<ExitCode> {
    match command {
        PluginCommand::Add {
            source,
            manifest,
            policy,
            scope,
            yes,
        } => {
            let inputs = install::InstallInputs {
                manifest,
                policy,
                keep_ceiling: None,
                signatures: signature_policy(paths)?,
            };
            add(paths, &source, &inputs, scope, yes).await
        }
        PluginCommand::Update { name, scope, yes } => update(paths, &name, scope, yes).await,
        PluginCommand::List { json } => {
            list(paths, json);
            Ok(ExitCode::SUCCESS)
        }
        PluginCommand::Warm => warm(paths),
        PluginCommand::Marketplace { action } => super::marketplace::marketplace(action, paths),
        PluginCommand::Install { id } => super::marketplace::install(&id, paths),
        PluginCommand::Uninstall { id } => super::marketplace::uninstall(&id, paths),
        PluginCommand::Enable { id } => super::marketplace::enable(&id, true, paths),
        PluginCommand::Disable { id } => super::marketplace::enable(&id, false, paths),
        PluginCommand::Approve { id } => super::marketplace::approve(&id, paths),
        PluginCommand::Inspect { name, scope, json } => {
            let (store, record) = find(paths, &name, scope)?;
            let status = status(&store, &record);
            if json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&inspect_json(&store, &record, &status))?
                );
            } else {
                print_inspect(&store, &record, &status);
            }
            Ok(ExitCode::SUCCESS)
        }
        PluginCommand::Remove { name, scope } => {
            let (store, _) = find(paths, &name, scope)?;
            let removed = store.remove(&name)?;
            say!(
                "removed {} {} ({} scope)",
                removed.name(),
                removed.manifest.plugin.version,
                store.scope().as_str()
            );
            Ok(ExitCode::SUCCESS)
        }
        PluginCommand::Pack {
            component,
            manifest,
            output,
        } => {
            let wasm = std::fs::read(&component)
                .with_context(|| format!("reading {}", component.display()))?;
            let text = std::fs::read_to_string(&manifest)
                .with_context(|| format!("reading {}", manifest.display()))?;
            let parsed =
                Manifest::parse(&text).with_context(|| format!("{}", manifest.display()))?;
            let packed = crate::plugin_store::manifest::embed(&wasm, &parsed)?;
            std::fs::write(&output, &packed)
                .with_context(|| format!("writing {}", output.display()))?;
            say!(
                "{} (sha256 {})",
                output.display(),
                crate::plugin_store::store::digest(&packed)
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn add(
    paths: &SessionPaths,
    source: &str,
    inputs: &install::InstallInputs,
    scope: Scope,
    yes: bool,
) -> anyhow::Result<ExitCode> {
    let source = PluginSource::parse(source)?;
    let sandbox = plain_sandbox(paths)?;
    let mut builtin = ToolRegistry::builtin(&sandbox).await?.names();
    builtin.extend(crate::tools::HOST_TOOLS.iter().map(|t| t.to_string()));
    let [user, project] = stores(paths);
    let (store, others) = match scope {
        Scope::User => (user, vec![project]),
        Scope::Project => (project, vec![user]),
    };
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(300))
        .build()
        .context("building the HTTP client")?;
    let cx = InstallContext {
        sandbox: &sandbox,
        store: &store,
        others: &others,
        builtin_tools: &builtin,
        http: &http,
    };
    let candidate = install::prepare(&cx, &source, inputs).await?;
    for line in candidate.summary() {
        say!("{line}");
    }
    if !candidate.needs_approval() {
        say!(
            "{} is already installed with these exact bytes and manifest; nothing to do",
            candidate.record.name()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if !yes && !approve(&candidate)? {
        bail!("not installed: the plugin was not approved");
    }
    install::commit(&store, &candidate)?;
    say!(
        "installed {} {} ({} scope, {})",
        candidate.record.name(),
        candidate.record.manifest.plugin.version,
        store.scope().as_str(),
        store.dir().join(candidate.record.name()).display()
    );
    Ok(ExitCode::SUCCESS)
}

async fn update(
    paths: &SessionPaths,
    name: &str,
    scope: Option<Scope>,
    yes: bool,
) -> anyhow::Result<ExitCode> {
    let (store, record) = find(paths, name, scope)?;
    let Some(oci) = &record.oci else {
        bail!(
            "`{name}` was installed from {}, not from an OCI registry: add it again to replace it",
            record.source
        );
    };
    let typed = record.contract == crate::sandbox::TYPED_CONTRACT;
    let inputs = install::InstallInputs {
        keep_ceiling: typed.then(|| record.manifest.ceiling.clone()),
        signatures: signature_policy(paths)?,
        ..Default::default()
    };
    add(
        paths,
        &format!("oci://{}", oci.reference),
        &inputs,
        store.scope(),
        yes,
    )
    .await
}

/// The keys OCI installs are verified against, and whether a signature is
/// required: the user's and the administrator's settings
/// (`pluginSignatures`).
fn signature_policy(paths: &SessionPaths) -> anyhow::Result<SignaturePolicy> {
    let locations = crate::settings::Locations {
        managed: crate::session::managed_settings_path().0,
        claude_managed: crate::settings::CLAUDE_MANAGED_SETTINGS.into(),
        given: None,
        cwd: paths.cwd.clone(),
        home: paths.home.clone(),
        config_dir: paths.config_dir.clone(),
        sources: None,
    };
    let settings = crate::settings::Settings::load(&locations, false)?;
    let identities = settings.signature_identities.into_iter();
    Ok(SignaturePolicy::from_settings(&SignatureSettings {
        keys: settings.signature_keys,
        identities: identities
            .map(|i| TrustedIdentity {
                name: i.name,
                identity: i.identity,
                issuer: i.issuer,
            })
            .collect(),
        trusted_root: settings.signature_trusted_root,
        required: settings.signatures_required,
    })?)
}

/// Asks on the terminal; anything but a terminal needs `--yes`.
fn approve(candidate: &Candidate) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!(
            "installing `{}` needs approval: review the above and re-run with --yes",
            candidate.record.name()
        );
    }
    print!("Install it with this ceiling? [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

fn find(
    paths: &SessionPaths,
    name: &str,
    scope: Option<Scope>,
) -> anyhow::Result<(PluginStore, InstalledPlugin)> {
    let candidates: Vec<PluginStore> = stores(paths)
        .into_iter()
        .filter(|s| scope.is_none_or(|scope| s.scope() == scope))
        .collect();
    let mut found = Vec::new();
    for store in candidates {
        if let Ok(record) = store.get(name) {
            found.push((store, record));
        }
    }
    match found.len() {
        0 => bail!("no plugin named `{name}` is installed (see `carapace plugin list`)"),
        1 => Ok(found.remove(0)),
        _ => bail!("`{name}` is installed at user and project scope: say which with --scope"),
    }
}

/// Whether the installed bytes are still the approved ones.
fn status(store: &PluginStore, record: &InstalledPlugin) -> String {
    let path = store.component_path(record);
    match std::fs::read(&path) {
        Ok(bytes) if crate::plugin_store::store::digest(&bytes) == record.digest => "ok".into(),
        Ok(_) => "changed on disk since it was approved: it will not run".into(),
        Err(e) => format!("unreadable ({e}): it will not run"),
    }
}

fn list(paths: &SessionPaths, json: bool) {
    let mut rows = Vec::new();
    for store in stores(paths) {
        for entry in store.list() {
            match entry {
                Ok(record) => {
                    let status = status(&store, &record);
                    rows.push(json!({
                        "name": record.name(),
                        "version": record.manifest.plugin.version,
                        "scope": store.scope().as_str(),
                        "contract": record.contract,
                        "tools": record.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
                        "status": status,
                    }));
                }
                Err(e) => rows.push(json!({
                    "scope": store.scope().as_str(),
                    "status": format!("unreadable: {e}"),
                })),
            }
        }
    }
    if json {
        say!("{}", Value::Array(rows));
        return;
    }
    if rows.is_empty() {
        say!("no plugins installed (add one with `carapace plugin add FILE.wasm`)");
        return;
    }
    for row in rows {
        let text = |k: &str| row[k].as_str().unwrap_or("?").to_string();
        let tools: Vec<&str> = row["tools"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        say!(
            "{:<24} {:<10} {:<8} tool@{:<6} {:<30} {}",
            text("name"),
            text("version"),
            text("scope"),
            text("contract"),
            tools.join(","),
            text("status")
        );
    }
}

fn inspect_json(store: &PluginStore, record: &InstalledPlugin, status: &str) -> Value {
    let m = &record.manifest;
    json!({
        "name": record.name(),
        "version": m.plugin.version,
        "description": m.plugin.description,
        "scope": store.scope().as_str(),
        "path": store.component_path(record),
        "source": record.source,
        "sha256": record.digest,
        "contract": install::contract_shown(&record.contract),
        "size": record.size,
        "compile_ms": record.compile_ms,
        "installed_at": record.installed_at,
        "status": status,
        "oci": record.oci,
        "ceiling": m.describe_ceiling(),
        "limits": {
            "timeout_secs": m.limits.timeout_secs,
            "memory_mib": m.limits.memory_mib,
        },
        "tools": record.tools.iter().map(|t| json!({
            "name": t.name,
            "description": t.description,
            "input_schema": serde_json::from_str::<Value>(&t.input_schema).unwrap_or(Value::Null),
            "annotations": t.annotations,
        })).collect::<Vec<_>>(),
    })
}

fn print_inspect(store: &PluginStore, record: &InstalledPlugin, status: &str) {
    let m = &record.manifest;
    say!("{} {}", record.name(), m.plugin.version);
    if !m.plugin.description.is_empty() {
        say!("  {}", m.plugin.description);
    }
    say!("scope      {}", store.scope().as_str());
    say!("path       {}", store.component_path(record).display());
    say!("source     {}", record.source);
    say!("sha256     {}", record.digest);
    say!("contract   {}", install::contract_shown(&record.contract));
    say!("size       {} bytes", record.size);
    say!("compiled   in {} ms at install", record.compile_ms);
    say!("installed  {}", record.installed_at);
    say!("status     {status}");
    if let Some(oci) = &record.oci {
        say!("pinned     {}", oci.pinned);
        say!("layer      {}", oci.layer_digest);
        say!(
            "signed     {}",
            oci.signer
                .as_deref()
                .map_or("no".to_string(), |name| format!("by `{name}`"))
        );
    }
    say!("ceiling");
    for line in m.describe_ceiling() {
        say!("  - {line}");
    }
    for tool in &record.tools {
        say!("tool {}", tool.name);
        say!("  {}", tool.description.replace('\n', "\n  "));
        let schema = serde_json::from_str::<Value>(&tool.input_schema)
            .and_then(|v| serde_json::to_string_pretty(&v))
            .unwrap_or_else(|_| tool.input_schema.clone());
        say!("  input schema: {}", schema.replace('\n', "\n  "));
    }
}

pub struct ToolCallRequest {
    pub plugin: String,
    pub tool: String,
    pub input: String,
    pub allowed_tools: Vec<String>,
    pub disallowed_tools: Vec<String>,
    pub permission_mode: Option<PermissionMode>,
    pub yes: bool,
}

impl From<ToolCommand> for ToolCallRequest {
    fn from(command: ToolCommand) -> Self {
        let ToolCommand::Call {
            plugin,
            tool,
            input,
            allowed_tools,
            disallowed_tools,
            permission_mode,
            yes,
        } = command;
        Self {
            plugin,
            tool,
            input,
            allowed_tools,
            disallowed_tools,
            permission_mode,
            yes,
        }
    }
}

/// `carapace tool call`: one call, through the same policy a session uses
/// (the settings' rules, mode and directories, and the flags').
pub async fn tool_call(request: ToolCallRequest, paths: SessionPaths) -> anyhow::Result<ExitCode> {
    let input: Value = serde_json::from_str(&request.input).context("--input is not JSON")?;
    if !input.is_object() {
        bail!("--input must be a JSON object");
    }
    let mut spec = SessionSpec::new(paths);
    spec.permissions = PermissionSpec {
        mode: request.permission_mode,
        allowed: request.allowed_tools.clone(),
        disallowed: request.disallowed_tools.clone(),
        ..PermissionSpec::default()
    };
    spec.tools.set = ToolSet::Plugin(request.plugin.clone());
    spec.loads.hooks = false;
    let session = Sessions::new().open(spec).await?;
    crate::conversation::print_warnings(&session);
    let registry = session.pipeline.registry();
    if registry.get(&request.tool).is_none() {
        bail!(
            "`{}` provides no tool `{}` (it provides: {})",
            request.plugin,
            request.tool,
            registry.names().join(", ")
        );
    }
    let mut report = json!({"plugin": request.plugin, "tool": request.tool, "input": input});
    // The stages a session's call goes through, up to the decision.
    let call = ToolCall {
        id: format!("toolu_local_{}", uuid::Uuid::new_v4().simple()),
        name: request.tool.clone(),
        input: input.clone(),
        invalid_input: None,
    };
    let approval = if request.yes {
        Approval::Given
    } else {
        Approval::None
    };
    let checked = match session.pipeline.check(&call, approval).await {
        Ok(checked) => checked,
        Err(result) => {
            report["error"] = json!(result_text(&result.content));
            say!("{}", serde_json::to_string_pretty(&report)?);
            return Ok(ExitCode::FAILURE);
        }
    };
    report["requested"] = json!(checked.plan.needs);
    report["concurrency_safe"] = json!(checked.plan.concurrency_safe);
    report["ceiling"] = json!(checked.tool.ceiling.describe());
    report["basis"] = json!(checked.verdict.basis);
    let grant = match checked.verdict.outcome {
        Outcome::Allow(grant) => grant,
        Outcome::Ask(question) => {
            report["verdict"] = json!("ask");
            report["message"] = json!(format!(
                "{} (approve with --yes, or allow it with --allowedTools)",
                question.text
            ));
            say!("{}", serde_json::to_string_pretty(&report)?);
            return Ok(ExitCode::FAILURE);
        }
        Outcome::Deny(message) => {
            report["verdict"] = json!("deny");
            report["message"] = json!(message);
            say!("{}", serde_json::to_string_pretty(&report)?);
            return Ok(ExitCode::FAILURE);
        }
    };
    report["verdict"] = json!("allow");
    report["granted"] = json!(grant.describe());
    let limits = checked.tool.limits.unwrap_or_default();
    let component = checked.tool.component().await?;
    let mut invocation = ToolInvocation::new(&request.tool, &input, &grant, &limits);
    invocation.context = CallContext {
        tool_use_id: call.id.clone(),
        session_id: session.id.clone(),
        wants_structured: true,
    };
    let ok = record_call(&mut report, component.call(&invocation).await);
    say!("{}", serde_json::to_string_pretty(&report)?);
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The call's outcome into `report`; whether it succeeded.
fn record_call(report: &mut Value, outcome: Result<crate::sandbox::Called, CallError>) -> bool {
    match outcome {
        Ok(called) => {
            report["instance_memory_bytes"] = json!(called.memory_bytes);
            report["result"] = output_json(&called.output);
            !called.output.is_error
        }
        Err(CallError::InvalidInput(message)) => {
            report["result"] = json!({"is_error": true, "invalid_input": message});
            false
        }
        Err(CallError::Failed(message)) => {
            report["result"] = json!({"is_error": true, "failed": message});
            false
        }
        Err(CallError::Sandbox(e)) => {
            report["result"] = json!({"is_error": true, "sandbox": e.describe()});
            false
        }
    }
}

/// A call's output as `tool call` reports it (an image by its size).
fn output_json(output: &ToolOutput) -> Value {
    let content: Vec<Value> = output
        .content
        .iter()
        .map(|c| match c {
            ToolContent::Text(text) => json!({"type": "text", "text": text}),
            ToolContent::Image { media_type, data } => {
                json!({"type": "image", "media_type": media_type, "bytes": data.len()})
            }
        })
        .collect();
    json!({"is_error": output.is_error, "content": content})
}

/// The text of a result the pipeline settled a call with.
fn result_text(content: &crate::model::ToolResultContent) -> String {
    match content {
        crate::model::ToolResultContent::Text(text) => text.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}
