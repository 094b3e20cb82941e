//! A component with a write grant on a tree tries to plant what makes git,
//! an editor or carapace run its program later — under every spelling and
//! through every call that makes a name. Each is refused at the call (the
//! name never exists, not even while the call runs), with the weakened
//! control showing each would otherwise be made.

use super::{TestResult, attempt, ok, probe_in, workspace};
use carapace::sandbox::{CallLimits, FileAccess, Grant, SandboxConfig};
use serde_json::{Value, json};
use std::path::Path;

/// Sets up `project/` with what the attempts need; returns the attempts,
/// each with the path that must not come to exist.
fn attempts(project: &Path) -> Result<Vec<(Value, String)>, std::io::Error> {
    std::fs::create_dir_all(project)?;
    std::fs::create_dir_all(project.join("tasks"))?;
    std::fs::write(project.join("tasks/tasks.json"), "{}")?;
    std::fs::write(project.join("plain.txt"), "plain")?;
    std::fs::create_dir_all(project.join("bare"))?;
    std::fs::write(project.join("bare/HEAD"), "ref: refs/heads/main\n")?;
    std::fs::create_dir_all(project.join("other/hooks"))?;
    std::fs::create_dir_all(project.join(".cargo"))?;
    std::os::unix::fs::symlink(".mcp.json", project.join("innocent"))?;
    std::os::unix::fs::symlink(".", project.join("here"))?;
    let p = |rel: &str| project.join(rel).to_string_lossy().into_owned();
    Ok(vec![
        (
            json!({"op": "create", "path": p(".mcp.json")}),
            p(".mcp.json"),
        ),
        (
            json!({"op": "create", "path": p(".MCP.json")}),
            p(".MCP.json"),
        ),
        (
            json!({"op": "create", "path": p("here/.mcp.json")}),
            p(".mcp.json"),
        ),
        (
            json!({"op": "create", "path": p("innocent")}),
            p(".mcp.json"),
        ),
        (json!({"op": "mkdir", "path": p(".git")}), p(".git")),
        (
            json!({"op": "mkdir", "path": p("a/b/.vscode")}),
            p("a/b/.vscode"),
        ),
        (
            json!({"op": "create", "path": p(".cargo/config.toml")}),
            p(".cargo/config.toml"),
        ),
        (
            json!({"op": "create", "path": p("CLAUDE.md")}),
            p("CLAUDE.md"),
        ),
        (
            json!({"op": "symlink", "target": "x", "path": p(".envrc")}),
            p(".envrc"),
        ),
        (
            json!({"op": "link", "from": p("plain.txt"), "to": p(".claude")}),
            p(".claude"),
        ),
        (
            json!({"op": "rename", "from": p("plain.txt"), "to": p(".mcp.json")}),
            p(".mcp.json"),
        ),
        (
            json!({"op": "rename", "from": p("tasks"), "to": p(".vscode")}),
            p(".vscode"),
        ),
        (
            json!({"op": "create", "path": p("bare/config")}),
            p("bare/config"),
        ),
        (
            json!({"op": "mkdir", "path": p("bare/hooks")}),
            p("bare/hooks"),
        ),
        (
            json!({"op": "create", "path": p("other/HEAD")}),
            p("other/HEAD"),
        ),
    ])
}

/// What the probe reported for each attempt, then for two ordinary names.
struct Ran {
    tries: Vec<Value>,
    reports: Vec<Value>,
    project: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

async fn run(config: SandboxConfig) -> Result<Ran, Box<dyn std::error::Error>> {
    let (dir, root) = workspace()?;
    let project = root.join("ws/project");
    let tries = attempts(&project)?;
    let mut list: Vec<Value> = tries.iter().map(|(a, _)| a.clone()).collect();
    // The control inside the call: ordinary names beside them are made.
    list.push(json!({"op": "create", "path": project.join("mcp.json")}));
    list.push(json!({"op": "mkdir", "path": project.join("bare/objects")}));
    let probe = probe_in(config).await?;
    let grant = Grant::none().tree(&project, FileAccess::Write)?;
    let reports = attempt(&probe, &grant, &CallLimits::default(), Value::Array(list)).await?;
    Ok(Ran {
        tries: tries.into_iter().map(|(a, _)| a).collect(),
        reports,
        project,
        _dir: dir,
    })
}

#[tokio::test]
async fn a_guest_cannot_make_a_protected_name_under_any_spelling_or_call() -> TestResult {
    let Ran {
        tries,
        reports,
        project,
        _dir: _kept,
    } = run(SandboxConfig::default()).await?;
    for (i, what) in tries.iter().enumerate() {
        let report = &reports[i];
        assert!(!ok(report), "made: {what} → {report}");
        let detail = report["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("ermission denied") || detail.contains("Access"),
            "refused as a protected name, not some other failure: {what} → {report}"
        );
    }
    for protected in [
        ".mcp.json",
        ".MCP.json",
        ".git",
        "a/b/.vscode",
        ".cargo/config.toml",
        "CLAUDE.md",
        ".envrc",
        ".claude",
        ".vscode",
        "bare/config",
        "bare/hooks",
        "other/HEAD",
    ] {
        assert!(
            project.join(protected).symlink_metadata().is_err(),
            "{protected} exists"
        );
    }
    let n = tries.len();
    assert!(
        ok(&reports[n]) && ok(&reports[n + 1]),
        "ordinary names are made: {reports:?}"
    );
    assert!(project.join("plain.txt").exists() && project.join("tasks/tasks.json").exists());
    Ok(())
}

#[tokio::test]
async fn without_the_judgement_each_would_be_made() -> TestResult {
    let Ran {
        reports,
        project,
        _dir: _kept,
        ..
    } = run(SandboxConfig {
        weakened_creation: true,
        ..SandboxConfig::default()
    })
    .await?;
    // Each attempt that does not depend on an earlier one's effect works.
    let made = [
        ".MCP.json",
        ".git",
        "a/b/.vscode",
        ".cargo/config.toml",
        "CLAUDE.md",
        ".envrc",
        ".claude",
        ".vscode",
        "bare/config",
        "bare/hooks",
        "other/HEAD",
    ];
    for name in made {
        assert!(
            project.join(name).symlink_metadata().is_ok(),
            "the weakened sandbox lets {name} be made: {reports:?}"
        );
    }
    assert!(
        reports.iter().filter(|r| ok(r)).count() >= made.len(),
        "{reports:?}"
    );
    Ok(())
}
