//! The disk fills while the transcript is appended: the run says so once
//! and goes on, the file ends on the last line written whole, and a resume
//! (once there is room again) loads it without a torn line.
//!
//! The full disk is a 64 KiB tmpfs mounted over the config folder inside a
//! user and mount namespace of the test's own (`unshare -rm`), so no mount
//! outlives the test and root is not needed.

use super::support::{self, TestResult, lines};
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const SESSION: &str = "0b9f3c3e-8c1a-4d7e-9d51-6f1f8e2a7c40";

/// Mounts the small tmpfs over `$CONFIG`, fills all but 16 KiB of it,
/// runs carapace once, keeps a copy of the transcript, frees the space
/// and resumes. The runs' outputs are left in `$OUT`.
const SCRIPT: &str = r#"
set -u
mount -t tmpfs -o size=64k tmpfs "$CONFIG" || exit 90
head -c 49152 /dev/zero > "$CONFIG/filler" || exit 91
"$BIN" -p "read the log" --session-id "$SESSION" --output-format stream-json --verbose \
    > "$OUT/first.out" 2> "$OUT/first.err"
echo $? > "$OUT/first.status"
cp "$CONFIG"/projects/*/"$SESSION".jsonl "$OUT/after-first.jsonl" || { ls -laR "$CONFIG" >&2; cat "$OUT/first.err" >&2; exit 92; }
rm "$CONFIG/filler"
"$BIN" -p "again" --resume "$SESSION" --output-format json > "$OUT/second.out" 2> "$OUT/second.err"
echo $? > "$OUT/second.status"
"#;

fn read(out: &Path, name: &str) -> Result<String, std::io::Error> {
    std::fs::read_to_string(out.join(name))
}

#[test]
fn a_disk_that_fills_mid_append_is_said_once_and_leaves_whole_lines() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("ws");
    let config = dir.path().join("config");
    let out = dir.path().join("out");
    for folder in [&ws, &config, &out] {
        std::fs::create_dir_all(folder)?;
    }
    // 400 lines of 100 bytes: its result's line is far more than the
    // 16 KiB left, so the disk fills in the middle of that line.
    let log = ws.join("build.log");
    let text: String = (0..400)
        .map(|i| format!("{i:04} {}\n", "x".repeat(94)))
        .collect();
    std::fs::write(&log, text)?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_log",
            "Read",
            json!({"file_path": log}),
        )]),
        Reply::text("done"),
        Reply::text("resumed"),
    ])?;
    let carapace = support::against(&server, &ws);
    let mut command = Command::new("unshare");
    for (key, value) in carapace.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    let status = command
        .current_dir(&ws)
        .args(["-rm", "sh", "-c", SCRIPT])
        .env("BIN", carapace.get_program())
        .env("CONFIG", &config)
        .env("CARAPACE_CONFIG_DIR", &config)
        .env("OUT", &out)
        .env("SESSION", SESSION)
        .status()?;
    assert!(status.success(), "the namespace's script: {status}");

    // The first run went on to its answer, and said once that the rest of
    // the session was not saved.
    let first_err = read(&out, "first.err")?;
    assert_eq!(read(&out, "first.status")?.trim(), "0", "{first_err}");
    let printed = lines(&read(&out, "first.out")?)?;
    assert_eq!(
        printed.last().map(|l| l["result"].clone()),
        Some(json!("done"))
    );
    assert_eq!(
        first_err.matches("writing the transcript").count(),
        1,
        "{first_err}"
    );
    assert!(first_err.contains("No space left on device"), "{first_err}");

    // The file ends on a whole line: the header, the prompt, the call.
    let kept = read(&out, "after-first.jsonl")?;
    assert!(kept.ends_with('\n'), "a torn last line: {kept:?}");
    let kept: Vec<Value> = kept
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let types: Vec<&str> = kept.iter().filter_map(|l| l["type"].as_str()).collect();
    assert_eq!(types, ["header", "user", "assistant"]);
    assert_eq!(kept[2]["message"]["content"][0]["id"], "toolu_log");

    // Resumed with room again: no torn line to cut, the call whose result
    // was not saved marked interrupted, the rest as sent.
    let second_err = read(&out, "second.err")?;
    assert_eq!(read(&out, "second.status")?.trim(), "0", "{second_err}");
    assert!(!second_err.contains("cut off mid-write"), "{second_err}");
    assert!(second_err.contains("marked interrupted"), "{second_err}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let sent = requests[2].body["messages"]
        .as_array()
        .ok_or("no messages")?;
    let roles: Vec<&str> = sent.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "user"], "{sent:?}");
    assert_eq!(sent[2]["content"][0]["tool_use_id"], "toolu_log");
    assert_eq!(sent[2]["content"][0]["is_error"], true);
    assert_eq!(support::text_of(&sent[3]), "again");
    Ok(())
}
