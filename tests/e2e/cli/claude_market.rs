//! Claude Code plugins from marketplaces: a local folder and a git
//! repository pinned to a commit, installed as `plugin@marketplace`, every
//! part loaded in the next session; a plugin whose content changed after
//! it was approved runs no hook or server until approved again; and one
//! Claude Code installed is found, held until approved once.

use super::*;
use std::path::{Path, PathBuf};

fn market() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/claude-plugins")
}

const ID: &str = "guard-kit@carapace-test-plugins";

struct Home {
    _dirs: [tempfile::TempDir; 2],
    home: PathBuf,
    ws: PathBuf,
}

impl Home {
    fn new() -> Result<Self, Box<dyn std::error::Error>> {
        let dirs = [tempfile::tempdir()?, tempfile::tempdir()?];
        let home = std::fs::canonicalize(dirs[0].path())?;
        let ws = std::fs::canonicalize(dirs[1].path())?;
        std::fs::create_dir(ws.join("keep"))?;
        Ok(Home {
            _dirs: dirs,
            home,
            ws,
        })
    }

    fn carapace(&self) -> std::process::Command {
        let mut command = support::carapace();
        command
            .current_dir(&self.ws)
            .env("HOME", &self.home)
            .env("CARAPACE_CONFIG_DIR", self.home.join(".carapace"));
        command
    }

    fn plugin(&self, args: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
        let out = self.carapace().arg("plugin").args(args).output()?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if !out.status.success() {
            return Err(format!("carapace plugin {args:?}: {text}").into());
        }
        Ok(text)
    }

    /// One session that tries `rm -rf keep`: what the model was told back.
    fn session(&self) -> Result<(String, String), Box<dyn std::error::Error>> {
        let server = ScriptedServer::start(vec![
            Reply::tool_uses(vec![Block::tool_use(
                "toolu_rm",
                "Bash",
                json!({"command": "rm -rf keep"}),
            )]),
            Reply::text("done"),
        ])?;
        let output = support::against(&server, &self.ws)
            .env("HOME", &self.home)
            .env("CARAPACE_CONFIG_DIR", self.home.join(".carapace"))
            .args(["-p", "hello", "--output-format", "stream-json", "--verbose"])
            .args(["--permission-mode", "bypassPermissions"])
            .output()?;
        let run = support::Run::from_output(output)?;
        assert_eq!(run.status, Some(0), "{}", run.stderr);
        let told = server
            .requests()
            .get(1)
            .map(|r| r.body["messages"].to_string())
            .unwrap_or_default();
        Ok((told, run.stderr))
    }
}

#[test]
fn a_plugin_installed_from_a_local_marketplace_works_and_a_change_is_held() -> TestResult {
    let h = Home::new()?;
    let added = h.plugin(&["marketplace", "add", &market().display().to_string()])?;
    assert!(added.contains("carapace-test-plugins"), "{added}");
    let installed = h.plugin(&["install", ID])?;
    assert!(installed.contains("pinned"), "{installed}");
    let (told, _) = h.session()?;
    assert!(told.contains("recursive deletes are blocked"), "{told}");
    assert!(h.ws.join("keep").is_dir());
    // The installed guard is edited (as a compromised update would): its
    // hooks are held, so the guarded call is refused, not let through.
    let cache = h
        .home
        .join(".carapace/claude-plugins/cache/carapace-test-plugins/guard-kit/0.1.0");
    std::fs::write(cache.join("hooks/guard.py"), "import sys\nsys.exit(0)\n")?;
    let (told, stderr) = h.session()?;
    assert!(
        stderr.contains("content changed since it was approved"),
        "{stderr}"
    );
    assert!(told.contains("held back"), "{told}");
    assert!(
        h.ws.join("keep").is_dir(),
        "the changed hook did not run: {told}"
    );
    // Approved as it is now: the edited hook runs (and lets the call by).
    h.plugin(&["approve", ID])?;
    let (told, _) = h.session()?;
    assert!(!told.contains("held back"), "{told}");
    assert!(
        !h.ws.join("keep").exists(),
        "the approved hook ran and allowed: {told}"
    );
    // Disabled: nothing of it loads.
    h.plugin(&["disable", ID])?;
    std::fs::create_dir(h.ws.join("keep"))?;
    let (told, _) = h.session()?;
    assert!(!told.contains("guard-kit"), "{told}");
    Ok(())
}

#[test]
fn a_plugin_installed_from_a_git_marketplace_pinned_to_a_commit_works() -> TestResult {
    let h = Home::new()?;
    let repo = h.home.join("market-repo");
    let copy = std::process::Command::new("cp")
        .args(["-r"])
        .arg(market())
        .arg(&repo)
        .status()?;
    assert!(copy.success());
    let git = |args: &[&str]| -> Result<String, Box<dyn std::error::Error>> {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(&repo)
            .output()?;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["commit", "-qm", "the marketplace"])?;
    let pinned = git(&["rev-parse", "HEAD"])?;
    // A later commit breaks the guard; the pin keeps the first.
    std::fs::write(
        repo.join("guard-kit/hooks/guard.py"),
        "import sys\nsys.exit(0)\n",
    )?;
    git(&["commit", "-qam", "later"])?;
    let added = h.plugin(&[
        "marketplace",
        "add",
        &repo.display().to_string(),
        "--rev",
        &pinned,
    ])?;
    assert!(added.contains(&pinned), "{added}");
    h.plugin(&["install", ID])?;
    let (told, _) = h.session()?;
    assert!(told.contains("recursive deletes are blocked"), "{told}");
    let listed = h.plugin(&["marketplace", "list"])?;
    assert!(listed.contains(&pinned), "{listed}");
    Ok(())
}

#[test]
fn a_plugin_claude_code_installed_is_found_and_held_until_approved() -> TestResult {
    let h = Home::new()?;
    let installed = h
        .home
        .join(".claude/plugins/cache/carapace-test-plugins/guard-kit/0.1.0");
    std::fs::create_dir_all(installed.parent().ok_or("no parent")?)?;
    let copy = std::process::Command::new("cp")
        .args(["-r"])
        .arg(market().join("guard-kit"))
        .arg(&installed)
        .status()?;
    assert!(copy.success());
    std::fs::write(
        h.home.join(".claude/plugins/installed_plugins.json"),
        json!({"version": 2, "plugins": {ID: [{"scope": "user", "installPath": installed, "version": "0.1.0"}]}})
            .to_string(),
    )?;
    std::fs::write(
        h.home.join(".claude/settings.json"),
        json!({"enabledPlugins": {ID: true}}).to_string(),
    )?;
    let (told, stderr) = h.session()?;
    assert!(stderr.contains("has not approved it yet"), "{stderr}");
    assert!(told.contains("held back"), "{told}");
    h.plugin(&["approve", ID])?;
    let (told, _) = h.session()?;
    assert!(told.contains("recursive deletes are blocked"), "{told}");
    Ok(())
}

#[test]
fn a_marketplace_archive_is_added_only_with_the_sha256_it_has() -> TestResult {
    use sha2::Digest;
    let h = Home::new()?;
    let archive = h.home.join("market.tar.gz");
    let packed = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(market())
        .arg(".")
        .status()?;
    assert!(packed.success());
    let digest = hex::encode(sha2::Sha256::digest(std::fs::read(&archive)?));
    let path = archive.display().to_string();
    let wrong = h.plugin(&["marketplace", "add", &path, "--sha256", &"0".repeat(64)]);
    let refused = wrong.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(refused.contains("not unpacked"), "{refused}");
    let unpinned = h.plugin(&["marketplace", "add", &path]);
    assert!(unpinned.is_err(), "an archive needs its sha256");
    h.plugin(&["marketplace", "add", &path, "--sha256", &digest])?;
    h.plugin(&["install", ID])?;
    let (told, _) = h.session()?;
    assert!(told.contains("recursive deletes are blocked"), "{told}");
    Ok(())
}
