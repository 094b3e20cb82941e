//! Settings files. Checks: any text as the user's file loads or is a
//! clear error; as the project's file of an untrusted workspace it can
//! give nothing that only the user or the administrator may give (keys,
//! internal addresses, proxies, hooks, agents, allowed domains, carapace's
//! or the API's variables).

use carapace::settings::{Locations, Settings};
use std::path::Path;

pub fn run(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let root = dir.path();
    let locations = Locations {
        managed: root.join("managed.json"),
        claude_managed: root.join("claude-managed.json"),
        given: None,
        cwd: root.join("project"),
        home: root.join("home"),
        config_dir: root.join("home/.carapace"),
        sources: None,
    };
    if write(&locations.user(), text).is_ok() {
        let _ = Settings::load(&locations, false);
    }
    let _ = std::fs::remove_file(locations.user());
    // The project's file as carapace names it, then as Claude Code does
    // (read leniently: what carapace cannot parse is a warning there).
    for project in [locations.project(), locations.claude_project()] {
        if write(&project, text).is_ok() {
            untrusted_project_only_tightens(&locations);
        }
        let _ = std::fs::remove_file(project);
    }
}

fn untrusted_project_only_tightens(locations: &Locations) {
    let Ok(settings) = Settings::load(locations, false) else {
        return;
    };
    let forbidden = |name: &str| {
        ["ANTHROPIC_", "CARAPACE_", "CLAUDE_"]
            .iter()
            .any(|p| name.starts_with(p))
            || name == "HOME"
    };
    assert!(
        !settings.env.keys().any(|name| forbidden(name)),
        "an untrusted project set {:?}",
        settings.env
    );
    assert!(settings.signature_keys.is_empty(), "a project gave keys");
    assert!(
        settings.signature_identities.is_empty(),
        "a project gave identities"
    );
    assert!(
        settings.signature_trusted_root.is_none(),
        "a project gave a trust root"
    );
    assert!(
        settings.internal_addresses.is_empty(),
        "a project opened internal addresses"
    );
    assert!(
        settings.mcp_expandable.is_empty(),
        "a project made variables expandable"
    );
    assert!(
        settings.hooks.is_empty(),
        "an untrusted project's hooks loaded"
    );
    assert!(
        settings.agents.is_empty(),
        "an untrusted project's agents loaded"
    );
    assert!(
        settings.allowed_domains.is_empty(),
        "an untrusted project allowed domains"
    );
    assert!(
        settings.agent.is_none(),
        "an untrusted project chose the agent"
    );
    assert!(
        !settings
            .rules
            .iter()
            .any(|r| r.kind == carapace::policy::RuleKind::Allow),
        "an untrusted project's allow rules apply"
    );
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)
}
