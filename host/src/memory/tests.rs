//! Against Claude Code's recordings (`tests/claude-code/memory-files*.json`):
//! the same files laid out, the same text produced.

use super::*;
use serde_json::Value;

fn recording(name: &str) -> Result<Value, Box<dyn std::error::Error>> {
    let path = format!(
        "{}/../tests/claude-code/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

/// The recording's files laid out in a scratch folder (`ws`, `home`).
fn lay_out(recording: &Value) -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    for (path, body) in recording["files"].as_object().ok_or("no files")? {
        let full = scratch.path().join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(full, body.as_str().unwrap_or_default())?;
    }
    Ok(scratch)
}

fn places(scratch: &Path) -> MemoryPlaces {
    MemoryPlaces {
        cwd: scratch.join("ws"),
        home: scratch.join("home"),
        config_dir: scratch.join("home/.carapace"),
        managed: Vec::new(),
    }
}

/// The recording's first context block, with this scratch folder's paths
/// and `date` in it.
fn expected(recording: &Value, scratch: &Path, request: usize, date: &mut String) -> String {
    let text = recording["requests"][request]["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    if let Some(at) = text.find("Today's date is ") {
        *date = text[at + 16..at + 26].to_string();
    }
    text.replace("{ws}", &scratch.join("ws").display().to_string())
        .replace("{home}", &scratch.join("home").display().to_string())
        .replace("{scratch}", &scratch.display().to_string())
}

#[test]
fn the_first_message_carries_memory_as_claude_code_sends_it()
-> Result<(), Box<dyn std::error::Error>> {
    for (name, sources) in [
        ("memory-files", MemorySources::ALL),
        ("memory-files-bare", MemorySources::NONE),
        (
            "memory-files-user-only",
            MemorySources {
                user: true,
                project: false,
                local: false,
            },
        ),
    ] {
        let recording = recording(name)?;
        let scratch = lay_out(&recording)?;
        let root = std::fs::canonicalize(scratch.path())?;
        let memory = Memory::load(&places(&root), sources);
        let mut date = String::new();
        let want = expected(&recording, &root, 0, &mut date);
        assert_eq!(context_reminder(&memory, &date), want, "{name}");
        assert!(memory.warnings.is_empty(), "{name}: {:?}", memory.warnings);
    }
    Ok(())
}

#[test]
fn a_folders_memory_and_a_scoped_rule_join_beside_the_first_read()
-> Result<(), Box<dyn std::error::Error>> {
    let recording = recording("memory-files")?;
    let scratch = lay_out(&recording)?;
    let root = std::fs::canonicalize(scratch.path())?;
    let memory = Memory::load(&places(&root), MemorySources::ALL);
    let nested = NestedMemory::new(
        &root.join("ws"),
        &root.join("home"),
        MemorySources::ALL,
        memory.paths(),
    );
    let fill = |t: &str| t.replace("{ws}", &root.join("ws").display().to_string());
    for (request, file) in [(1, "ws/sub/file.txt"), (2, "ws/src/lib.rs")] {
        let result = recording["requests"][request]["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| {
                m["content"][0]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_default();
        let reminder = result
            .split_once("\n\n<system-reminder>")
            .map(|(_, r)| format!("<system-reminder>{r}"))
            .ok_or("no reminder recorded")?;
        assert_eq!(
            nested.for_read(&root.join(file)),
            vec![fill(&reminder)],
            "{file}"
        );
        // Once only.
        assert!(nested.for_read(&root.join(file)).is_empty());
    }
    // What loaded at the start is never attached again.
    assert!(nested.for_read(&root.join("ws/notes.md")).is_empty());
    Ok(())
}

#[test]
fn an_oversized_or_binary_memory_file_is_skipped_with_a_warning()
-> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let root = std::fs::canonicalize(scratch.path())?;
    std::fs::create_dir_all(root.join("ws"))?;
    std::fs::write(
        root.join("ws/CLAUDE.md"),
        vec![b'x'; (MAX_FILE_BYTES + 1) as usize],
    )?;
    std::fs::write(root.join("ws/CLAUDE.local.md"), [0xff, 0xfe, 0x00])?;
    let memory = Memory::load(&places(&root), MemorySources::ALL);
    assert!(memory.files.is_empty());
    assert_eq!(memory.warnings.len(), 2, "{:?}", memory.warnings);
    Ok(())
}

/// An import of a credential file — by name, by where it is (the user's
/// own memory importing `~/.aws`), by a private key inside — is refused
/// with a warning, whoever wrote it; the control, an ordinary file beside
/// them, is imported.
#[test]
fn no_import_pulls_in_a_credential_file() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let root = std::fs::canonicalize(scratch.path())?;
    std::fs::create_dir_all(root.join("ws"))?;
    std::fs::create_dir_all(root.join("home/.aws"))?;
    std::fs::create_dir_all(root.join("home/.claude"))?;
    std::fs::write(root.join("ws/.env"), "TOKEN=env-secret\n")?;
    std::fs::write(
        root.join("ws/notes.txt"),
        "-----BEGIN RSA PRIVATE KEY-----\nkey-secret\n",
    )?;
    std::fs::write(root.join("ws/style.md"), "Use tabs.\n")?;
    std::fs::write(root.join("home/.aws/credentials"), "aws-secret\n")?;
    std::fs::write(
        root.join("ws/CLAUDE.md"),
        "See @.env and @notes.txt and @style.md\n",
    )?;
    std::fs::write(
        root.join("home/.claude/CLAUDE.md"),
        format!("Mine: @{}\n", root.join("home/.aws/credentials").display()),
    )?;
    let memory = Memory::load(&places(&root), MemorySources::ALL);
    let text: String = memory.files.iter().map(|f| f.text.as_str()).collect();
    assert!(text.contains("Use tabs."), "the control: {text}");
    for secret in ["env-secret", "key-secret", "aws-secret"] {
        assert!(!text.contains(secret), "{secret} imported");
    }
    let withheld = memory
        .warnings
        .iter()
        .filter(|w| w.contains("withheld because it holds"))
        .count();
    assert_eq!(withheld, 3, "{:?}", memory.warnings);
    Ok(())
}
