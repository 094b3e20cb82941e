//! The interactive screen under a pseudo-terminal: carapace's screen as a
//! terminal emulator sees it, and what the tests wait on.

use super::support::TestResult;
use carapace_test_support::pty::{PtyScreen, PtySpec};
use scripted_server::ScriptedServer;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

pub(super) const WAIT: Duration = Duration::from_secs(60);
/// The emulated terminal's rows (the program is told 40): what a real
/// terminal would have scrolled away stays on it.
pub(super) const ROWS: u16 = 1000;

/// carapace on a terminal of its own, against the scripted server.
pub(super) struct Screen(pub(super) PtyScreen);

impl std::ops::Deref for Screen {
    type Target = PtyScreen;
    fn deref(&self) -> &PtyScreen {
        &self.0
    }
}

impl Screen {
    pub(super) fn open(
        server: &ScriptedServer,
        cwd: &Path,
        args: &[&str],
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let cache = carapace_test_support::cache_root();
        let env = vec![
            ("HOME".into(), cache.join("home").display().to_string()),
            ("CARAPACE_CACHE_DIR".into(), cache.display().to_string()),
            (
                "CARAPACE_CONFIG_DIR".into(),
                cwd.join(".config-home").display().to_string(),
            ),
            ("ANTHROPIC_BASE_URL".into(), server.url()),
            ("ANTHROPIC_API_KEY".into(), "test-key".into()),
            ("TERM".into(), "xterm-256color".into()),
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
        ];
        let program = Path::new(env!("CARGO_BIN_EXE_carapace"));
        Ok(Self(PtyScreen::open(PtySpec {
            program,
            args,
            env,
            cwd,
            size: (40, 100),
            emulated_rows: ROWS,
        })?))
    }

    pub(super) fn all(&self) -> String {
        self.contents()
    }

    pub(super) fn wait_for(&self, text: &str) -> Result<(), String> {
        self.0.wait_for(text, WAIT)
    }

    /// Waits until the screen shows `text` at least `n` times.
    pub(super) fn wait_for_count(&self, text: &str, n: usize) -> Result<(), String> {
        let deadline = std::time::Instant::now() + WAIT;
        while self.contents().matches(text).count() < n {
            if std::time::Instant::now() > deadline {
                return Err(format!(
                    "the screen never showed {text:?} {n} times:\n{}",
                    self.contents()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Types a prompt and, once the prompt line shows it, sends it (keys
    /// that came in one burst with the Enter would be taken as a paste).
    pub(super) fn send(&self, text: &str) -> TestResult {
        self.keys(text)?;
        self.wait_for(&typed(text))?;
        self.keys("\r")
    }

    pub(super) fn wait_exit(&mut self) -> Result<portable_pty::ExitStatus, String> {
        self.0.wait_exit(WAIT)
    }

    /// Leaves with Ctrl-D on an empty prompt.
    pub(super) fn exit(&mut self) -> TestResult {
        self.keys("\x04")?;
        let status = self.wait_exit()?;
        assert!(status.success(), "{status:?}\n{}", self.contents());
        Ok(())
    }
}

/// Every transcript under `projects` a minute older: sessions listed by
/// time are ordered without waiting for the clock.
pub(super) fn age_transcripts(projects: &Path) -> std::io::Result<()> {
    let minute_ago = std::time::SystemTime::now() - Duration::from_secs(60);
    for project in std::fs::read_dir(projects)? {
        for file in std::fs::read_dir(project?.path())? {
            let path = file?.path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                let modified = std::fs::metadata(&path)?.modified()?;
                std::fs::File::options()
                    .write(true)
                    .open(&path)?
                    .set_modified(modified.min(minute_ago))?;
            }
        }
    }
    Ok(())
}

/// What the prompt line shows once `text` is typed (after whatever the
/// line held already): its last thirty characters at most, which stay on
/// one row.
pub(super) fn typed(text: &str) -> String {
    let last_line = text.lines().last().unwrap_or(text);
    let chars: Vec<char> = last_line.chars().collect();
    chars[chars.len().saturating_sub(30)..].iter().collect()
}

pub(super) fn workspace() -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("notes.txt"), "notes\n")?;
    Ok(dir)
}

/// The text of the last tool_result in a request.
pub(super) fn last_tool_result(request: &Value) -> String {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .collect::<Vec<_>>()
        .into_iter()
        .rfind(|b| b["type"] == "tool_result")
        .map(|b| b["content"].to_string())
        .unwrap_or_default()
}
