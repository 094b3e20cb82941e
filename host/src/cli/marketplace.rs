//! `carapace plugin marketplace …`, `install`, `uninstall`, `enable`,
//! `disable`, `approve`: Claude Code's plugins, by `plugin@marketplace`
//! (carapace's own WebAssembly plugins keep `add`, `update`, `remove`).

use crate::marketplace::{Marketplaces, Source, split_id};
use crate::session::SessionPaths;
use anyhow::Context;
use serde_json::{Value, json};
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum MarketplaceCommand {
    /// Add a marketplace: a folder, a git repository by path or URL
    /// (pinned to a commit with --rev), or an archive (.tar.gz, .tgz, .tar)
    /// with its --sha256.
    Add {
        source: String,
        /// The commit (or tag, or branch) a git marketplace is pinned to.
        #[arg(long)]
        rev: Option<String>,
        /// The SHA-256 an archive must have.
        #[arg(long)]
        sha256: Option<String>,
    },
    /// List the marketplaces added.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Fetch a git marketplace again (a pinned one stays at its pin).
    Update { name: String },
    /// Forget a marketplace.
    Remove { name: String },
}

pub fn marketplace(command: MarketplaceCommand, paths: &SessionPaths) -> anyhow::Result<ExitCode> {
    let markets = Marketplaces::new(&paths.config_dir, &paths.home);
    match command {
        MarketplaceCommand::Add {
            source,
            rev,
            sha256,
        } => {
            let known = markets.add(Source::parse(&source, rev, sha256)?)?;
            say!("added marketplace {} ({})", known.name, describe(&known));
        }
        MarketplaceCommand::List { json } => {
            let all = markets.list()?;
            if json {
                let listed: Vec<Value> = all
                    .iter()
                    .map(|k| json!({"name": k.name, "source": k.source.to_json(), "location": k.location, "commit": k.commit}))
                    .collect();
                say!("{}", serde_json::to_string_pretty(&listed)?);
            } else if all.is_empty() {
                say!("no marketplaces (add one with `carapace plugin marketplace add SOURCE`)");
            } else {
                for known in all {
                    say!("{}  {}", known.name, describe(&known));
                }
            }
        }
        MarketplaceCommand::Update { name } => {
            let known = markets.update(&name)?;
            say!("updated marketplace {} ({})", known.name, describe(&known));
        }
        MarketplaceCommand::Remove { name } => {
            markets.remove(&name)?;
            say!("removed marketplace {name}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn describe(known: &crate::marketplace::Known) -> String {
    match &known.commit {
        Some(commit) => format!("{} at {commit}", known.source.describe()),
        None => known.source.describe(),
    }
}

/// `install`: copies the plugin in, pins its content, enables it.
pub fn install(id: &str, paths: &SessionPaths) -> anyhow::Result<ExitCode> {
    split_id(id)?;
    let installed = Marketplaces::new(&paths.config_dir, &paths.home).install(id)?;
    set_enabled(paths, id, true)?;
    say!(
        "installed {id} {} ({}); enabled. Its content is pinned to {}: if it changes, its hooks and MCP servers wait for `carapace plugin approve {id}`",
        installed.version,
        installed.install_path.display(),
        installed.approved.as_deref().unwrap_or("nothing")
    );
    Ok(ExitCode::SUCCESS)
}

pub fn uninstall(id: &str, paths: &SessionPaths) -> anyhow::Result<ExitCode> {
    Marketplaces::new(&paths.config_dir, &paths.home).uninstall(id)?;
    set_enabled(paths, id, false)?;
    say!("uninstalled {id}");
    Ok(ExitCode::SUCCESS)
}

pub fn enable(id: &str, on: bool, paths: &SessionPaths) -> anyhow::Result<ExitCode> {
    split_id(id)?;
    set_enabled(paths, id, on)?;
    say!("{} {id}", if on { "enabled" } else { "disabled" });
    Ok(ExitCode::SUCCESS)
}

pub fn approve(id: &str, paths: &SessionPaths) -> anyhow::Result<ExitCode> {
    let digest = Marketplaces::new(&paths.config_dir, &paths.home).approve(id)?;
    say!("approved {id} as it is now ({digest})");
    Ok(ExitCode::SUCCESS)
}

/// Sets `enabledPlugins[id]` in the user's carapace settings, keeping
/// everything else in the file; written whole through a temp file beside
/// it, never through a link planted at its name.
fn set_enabled(paths: &SessionPaths, id: &str, on: bool) -> anyhow::Result<()> {
    let file = paths.config_dir.join("settings.json");
    let mut settings: Value = match std::fs::read_to_string(&file) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON; not changed", file.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    if !settings.is_object() {
        anyhow::bail!("{} is not a JSON object; not changed", file.display());
    }
    if !settings["enabledPlugins"].is_object() {
        settings["enabledPlugins"] = json!({});
    }
    settings["enabledPlugins"][id] = json!(on);
    std::fs::create_dir_all(&paths.config_dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(&paths.config_dir)?;
    std::io::Write::write_all(
        &mut temp,
        format!("{}\n", serde_json::to_string_pretty(&settings)?).as_bytes(),
    )?;
    temp.persist(&file)
        .with_context(|| format!("writing {}", file.display()))?;
    Ok(())
}
