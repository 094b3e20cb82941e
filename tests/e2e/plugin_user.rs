//! A user of `carapace plugin …` in the plugin tests: a configuration
//! directory and a workspace holding `notes.txt` (three lines) and
//! `secret.txt`.

#![allow(dead_code)] // each test binary uses a different part

use super::support::{self, Run};
use scripted_server::ScriptedServer;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A user: a configuration directory and a workspace with two files.
pub struct User {
    pub config: tempfile::TempDir,
    pub ws: tempfile::TempDir,
}

impl User {
    pub fn new() -> Result<Self, Box<dyn std::error::Error>> {
        let user = Self {
            config: tempfile::tempdir()?,
            ws: tempfile::tempdir()?,
        };
        std::fs::write(user.file("notes.txt"), "the cat\nthe hat\nthe end\n")?;
        std::fs::write(user.file("secret.txt"), "hunter2\n")?;
        Ok(user)
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.ws.path().join(name)
    }

    pub fn command(&self, args: &[&str]) -> std::process::Command {
        let mut command = support::carapace();
        command
            .current_dir(self.ws.path())
            .env("CARAPACE_CONFIG_DIR", self.config.path())
            .args(args);
        command
    }

    pub fn run(&self, args: &[&str]) -> Result<Run, Box<dyn std::error::Error>> {
        Run::from_output(self.command(args).output()?)
    }

    pub fn policy(&self, text: &str) -> Result<String, Box<dyn std::error::Error>> {
        let path = self.config.path().join("policy.yaml");
        std::fs::write(&path, text)?;
        Ok(path.display().to_string())
    }

    pub fn add(
        &self,
        component: &Path,
        policy: Option<&str>,
    ) -> Result<Run, Box<dyn std::error::Error>> {
        let component = component.display().to_string();
        let mut args = vec!["plugin", "add", component.as_str(), "--yes"];
        if let Some(policy) = policy {
            args.extend(["--policy", policy]);
        }
        self.run(&args)
    }

    /// A print-mode session against `server`, with `extra` flags.
    pub fn session(
        &self,
        server: &ScriptedServer,
        extra: &[&str],
    ) -> Result<Run, Box<dyn std::error::Error>> {
        let output = self
            .command(
                &[
                    &["-p", "go", "--output-format", "stream-json", "--verbose"],
                    extra,
                ]
                .concat(),
            )
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "test-key")
            .output()?;
        Run::from_output(output)
    }
}

impl User {
    pub fn installed(&self) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
        Ok(serde_json::from_str(
            &self.run(&["plugin", "list", "--json"])?.stdout,
        )?)
    }

    /// The installed component's SHA-256.
    pub fn installed_digest(&self, name: &str) -> Result<Value, Box<dyn std::error::Error>> {
        let inspected: Value =
            serde_json::from_str(&self.run(&["plugin", "inspect", name, "--json"])?.stdout)?;
        Ok(inspected["sha256"].clone())
    }
}
