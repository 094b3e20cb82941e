//! Loading a hook: its component (once per file) and the grant its
//! settings give it, never a protected location, the home directory or a
//! dotfile, never carapace's own variables.

use super::shell::{ShellHook, ShellSpec, is_carapace_variable};
use super::{CommandHook, Handler, HandlerKind, HookComponent, HookLoadError, HookSpec};
use crate::policy::{credential_within, protected_entries, protected_reason, resolve_symlinks};
use crate::sandbox::{FileAccess, Grant, Sandbox};
use std::path::Path;

/// What loading one spec came to.
pub(super) enum Loaded {
    /// The hook's grant, its label for messages, what runs it.
    Ready(Box<(Grant, String, Handler)>),
    /// The hook is fine but will not run for this event: why.
    NotForThisEvent(String),
}

/// Where a hook's grants are judged and its commands run.
pub(super) struct Places<'a> {
    pub home: &'a Path,
    pub config_dir: &'a Path,
    /// The project (a command hook's working directory).
    pub project: &'a Path,
}

/// A hook whose handler is a target — an agent, an MCP server's tool, a
/// prompt, a URL — ready as it is and holding no grant; `None` for any
/// other (or a target that is missing).
fn targeted(spec: &HookSpec) -> Option<Loaded> {
    let short = |text: &str| -> String { text.chars().take(80).collect() };
    let (label, handler) = match spec.kind {
        HandlerKind::Agent => {
            let target = spec.agent.as_ref()?;
            (short(&target.prompt), Handler::Agent(target.clone()))
        }
        HandlerKind::McpTool => {
            let target = spec.mcp_tool.as_ref()?;
            let label = format!("{}:{}", target.server, target.tool);
            (label, Handler::McpTool(target.clone()))
        }
        HandlerKind::Prompt => {
            let target = spec.prompt.as_ref()?;
            (short(&target.prompt), Handler::Prompt(target.clone()))
        }
        HandlerKind::Http => {
            let target = spec.http.as_ref()?;
            (short(&target.url), Handler::Http(target.clone()))
        }
        _ => return None,
    };
    Some(Loaded::Ready(Box::new((Grant::none(), label, handler))))
}

/// Loads one spec's component (once per file) and its grant.
pub(super) async fn load_one(
    sandbox: &Sandbox,
    spec: &HookSpec,
    typed: &mut Vec<(std::path::PathBuf, HookComponent)>,
    commands: &mut Vec<(std::path::PathBuf, CommandHook)>,
    places: &Places<'_>,
) -> Result<Loaded, HookLoadError> {
    if spec.kind == HandlerKind::Shell {
        return Ok(load_shell(sandbox, spec, places));
    }
    if let Some(loaded) = targeted(spec) {
        return Ok(loaded);
    }
    let path = spec.path.display().to_string();
    let grant = grant_for(spec, places.home, places.config_dir)?;
    let label = spec
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.clone());
    let read = || {
        std::fs::read(&spec.path).map_err(|e| HookLoadError::Read {
            path: path.clone(),
            reason: e.to_string(),
        })
    };
    let component_error = |source| HookLoadError::Component {
        path: path.clone(),
        source,
    };
    let handler = match spec.kind {
        HandlerKind::Component => {
            let component = match typed.iter().find(|(p, _)| *p == spec.path) {
                Some((_, c)) => c.clone(),
                None => {
                    let c = HookComponent::load(sandbox, &label, &read()?)
                        .await
                        .map_err(component_error)?;
                    typed.push((spec.path.clone(), c.clone()));
                    c
                }
            };
            if !component.events().contains(&spec.event) {
                return Ok(Loaded::NotForThisEvent(format!(
                    "hook {path} is configured for {} but does not handle it (it handles {}); it will not run for it",
                    spec.event.name(),
                    component
                        .events()
                        .iter()
                        .map(|e| e.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            Handler::Typed(component)
        }
        HandlerKind::Command => {
            let command = match commands.iter().find(|(p, _)| *p == spec.path) {
                Some((_, c)) => c.clone(),
                None => {
                    let c = CommandHook::load(sandbox, &label, &read()?)
                        .await
                        .map_err(component_error)?;
                    commands.push((spec.path.clone(), c.clone()));
                    c
                }
            };
            Handler::Command(command)
        }
        HandlerKind::Callback => {
            return Ok(Loaded::NotForThisEvent(format!(
                "hook {path}: SDK callbacks are registered by the SDK, not in settings"
            )));
        }
        HandlerKind::Shell => return Ok(load_shell(sandbox, spec, places)),
        HandlerKind::Middleware => {
            return Ok(Loaded::NotForThisEvent(format!(
                "hook {path}: middleware is seated, not run per event"
            )));
        }
        HandlerKind::Http | HandlerKind::Prompt | HandlerKind::McpTool | HandlerKind::Agent => {
            return Ok(Loaded::NotForThisEvent(format!(
                "hook {path}: an http or prompt hook without its target"
            )));
        }
    };
    Ok(Loaded::Ready(Box::new((grant, label, handler))))
}

/// A `command` hook. One that cannot run — a grant refused, a shell
/// carapace does not have, no processes in this session — still loads,
/// as a hook that says so each time it would run (a PreToolUse one
/// refuses the call): a guard is never silently missing.
fn load_shell(sandbox: &Sandbox, spec: &HookSpec, places: &Places<'_>) -> Loaded {
    use super::config::ShellLine;
    let line = spec
        .command
        .clone()
        .unwrap_or(ShellLine::Refused("it has no command line".into()));
    let label = match &line {
        ShellLine::Run(line) | ShellLine::Refused(line) => line.chars().take(80).collect(),
    };
    let hook = match (&line, grant_for(spec, places.home, places.config_dir)) {
        (ShellLine::Refused(why), _) => ShellHook::CannotRun(why.clone()),
        (ShellLine::Run(_), Err(e)) => ShellHook::CannotRun(e.to_string()),
        (ShellLine::Run(command), Ok(grant)) => {
            let shell = ShellSpec {
                command,
                own_folder: &spec.path,
                plugin_root: spec.plugin_root.as_deref(),
                sets_env: spec.event == super::HookEventKind::SessionStart,
            };
            let hook = ShellHook::new(&shell, &grant, sandbox.process_config(), places.project);
            return Loaded::Ready(Box::new((grant, label, Handler::Shell(hook))));
        }
    };
    Loaded::Ready(Box::new((Grant::none(), label, Handler::Shell(hook))))
}

/// The capabilities a hook's settings grant; protected locations are never
/// granted for writing (a hook must not be able to rewrite settings, hooks
/// or shell start-up files).
pub(super) fn grant_for(
    spec: &HookSpec,
    home: &Path,
    config_dir: &Path,
) -> Result<Grant, HookLoadError> {
    let base = spec
        .source
        .file
        .as_ref()
        .and_then(|f| f.parent())
        .map(Path::to_path_buf);
    let resolve = |p: &Path| match (&base, p.is_absolute()) {
        (_, true) | (None, false) => p.to_path_buf(),
        (Some(base), false) => base.join(p),
    };
    let bad = |grant: &Path, reason: String| HookLoadError::Grant {
        path: spec.path.display().to_string(),
        grant: grant.display().to_string(),
        reason,
    };
    let mut grant = Grant::none();
    for (paths, access) in [
        (&spec.grants.read, FileAccess::Read),
        (&spec.grants.write, FileAccess::Write),
    ] {
        for raw in paths {
            let path = resolve(raw);
            // Judged as written and where its links lead (before anything
            // is made for it).
            for candidate in [path.clone(), resolve_symlinks(&path)] {
                if let Some(reason) = refused_for_hooks(&candidate, home, config_dir) {
                    return Err(bad(raw, format!("{reason}; hooks are never granted it")));
                }
            }
            // Grants are resolved in the host: /proc/self is carapace.
            if let Some(reason) = crate::sandbox::refused_process_info(&path, true) {
                return Err(bad(raw, reason));
            }
            if access == FileAccess::Write {
                // An audit directory that does not exist yet is made.
                std::fs::create_dir_all(&path)
                    .map_err(|e| bad(raw, format!("cannot create it: {e}")))?;
            }
            let path = path.canonicalize().map_err(|e| bad(raw, e.to_string()))?;
            if let Some(reason) = refused_for_hooks(&path, home, config_dir) {
                return Err(bad(raw, format!("{reason}; hooks are never granted it")));
            }
            if let Some(reason) = credentials_refused(&path, home) {
                return Err(bad(raw, reason));
            }
            if access == FileAccess::Write && path.is_dir() {
                match protected_entries(&path, home, config_dir, HOOK_TREE_SCAN_LIMIT) {
                    Ok(found) if found.is_empty() => {}
                    Ok(found) => {
                        return Err(bad(
                            raw,
                            format!(
                                "the tree holds {}, which is protected; hooks are never granted writes there",
                                found[0].display()
                            ),
                        ));
                    }
                    Err(e) => {
                        return Err(bad(
                            raw,
                            format!("it cannot be checked for protected files ({e})"),
                        ));
                    }
                }
            }
            grant = if path.is_dir() {
                grant.tree(&path, access)
            } else if access == FileAccess::Read {
                grant.read_file(&path)
            } else {
                grant.write_file(&path)
            }
            .map_err(|e| bad(raw, e.to_string()))?;
        }
    }
    for name in &spec.grants.env {
        if is_carapace_variable(name) {
            return Err(HookLoadError::Grant {
                path: spec.path.display().to_string(),
                grant: name.clone(),
                reason: "carapace's own credentials and settings (ANTHROPIC_*, CARAPACE_*, CLAUDE_CODE_*) are never granted to hooks".into(),
            });
        }
        if let Ok(value) = std::env::var(name) {
            grant = grant.env_var(name, value);
        }
    }
    Ok(grant)
}

/// Why `path` may not be granted to a hook for the credentials at or in
/// it (or because it cannot be checked for them).
fn credentials_refused(path: &Path, home: &Path) -> Option<String> {
    match credential_within(path, home, HOOK_TREE_SCAN_LIMIT) {
        Ok(None) => None,
        Ok(Some(found)) => Some(format!(
            "{} holds credentials; hooks are never granted credential files",
            found.display()
        )),
        Err(e) => Some(format!("it cannot be checked for credential files ({e})")),
    }
}

/// Trees a hook's write grant may hold at most (to be checked for protected
/// entries).
const HOOK_TREE_SCAN_LIMIT: usize = 20_000;

/// Why `path` may never be granted to a hook, read or write: a protected
/// location, the home directory (or a directory holding it: its dotfiles
/// come with it), or one of the home directory's dotfiles.
fn refused_for_hooks(path: &Path, home: &Path, config_dir: &Path) -> Option<String> {
    if let Some(reason) = protected_reason(path, home, config_dir) {
        return Some(format!("protected ({reason})"));
    }
    if home.starts_with(path) {
        return Some(format!(
            "it holds your home directory {} and its dotfiles",
            home.display()
        ));
    }
    let first = path.strip_prefix(home).ok()?.components().next()?;
    first
        .as_os_str()
        .to_string_lossy()
        .starts_with('.')
        .then(|| "it is one of your home directory's dotfiles".to_string())
}
