//! The README against the binary: what it says of the `system`/`init`
//! fields, the `system` line kinds and the environment variables must be
//! what carapace prints and reads (the flag table and the tool list are
//! checked in `print_parity`). Issue 29: a wrong README misleads every new
//! user.

use super::support;
use scripted_server::{Reply, ScriptedServer};
use support::{TestResult, lines};

fn readme() -> std::io::Result<String> {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
}

/// The paragraph of the README that starts with `start`.
fn paragraph<'a>(readme: &'a str, start: &str) -> Result<&'a str, String> {
    readme
        .split(start)
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .ok_or_else(|| format!("README has no paragraph starting `{start}`"))
}

/// Every Rust source file of the host, concatenated.
fn host_sources() -> std::io::Result<String> {
    let mut text = String::new();
    let mut stack = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                text.push_str(&std::fs::read_to_string(&path)?);
            }
        }
    }
    Ok(text)
}

/// The quoted words after `marker` in `text`: `"subtype": "init"` → init.
fn quoted_after(text: &str, marker: &str) -> Vec<String> {
    let mut found: Vec<String> = text
        .match_indices(marker)
        .filter_map(|(at, _)| {
            let rest = &text[at + marker.len()..];
            let end = rest.find('"')?;
            Some(rest[..end].to_string())
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

#[test]
fn the_readme_names_every_init_field_system_line_and_variable() -> TestResult {
    let readme = readme()?;
    let stream = paragraph(&readme, "stream-json prints Claude Code's lines:")?;
    // Every field of the init line the binary prints.
    let ws = tempfile::tempdir()?;
    let server = ScriptedServer::start(vec![Reply::text("ok")])?;
    let out = support::run(
        &server,
        ws.path(),
        &["-p", "hi", "--output-format", "stream-json", "--verbose"],
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let init = lines(&out.stdout)?
        .into_iter()
        .next()
        .ok_or("no init line")?;
    let fields = init.as_object().ok_or("init is not an object")?;
    for field in fields
        .keys()
        .filter(|k| !["type", "subtype"].contains(&k.as_str()))
    {
        assert!(
            stream.contains(&format!("`{field}`")),
            "README's init fields lack {field}"
        );
    }
    assert_eq!(init["slash_commands"], serde_json::json!(["compact"]));
    // Every `system` line kind the host can print: the subtypes of the
    // JSON lines it builds with `"type": "system"`.
    let sources = host_sources()?;
    let system_lines: Vec<String> = sources
        .split("\"type\": \"system\",")
        .skip(1)
        .flat_map(|after| quoted_after(&after[..after.len().min(200)], "\"subtype\": \""))
        .collect();
    assert!(system_lines.len() >= 10, "{system_lines:?}");
    for kind in &system_lines {
        assert!(
            stream.contains(&format!("`{kind}`")),
            "README's system lines lack {kind}"
        );
    }
    // Every variable carapace reads for itself.
    let environment = paragraph(&readme, "\nEnvironment:")?;
    let prefixes = ["\"CARAPACE_", "\"ANTHROPIC_", "\"MAX_"];
    let mut variables: Vec<String> = prefixes
        .iter()
        .flat_map(|p| {
            quoted_after(&sources, p)
                .into_iter()
                .map(move |v| format!("{}{v}", &p[1..]))
        })
        // Names only (not messages that start with one), and not the
        // build-time digest prefix, which no one sets.
        .filter(|v| {
            v.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .filter(|v| !v.ends_with('_'))
        .collect();
    variables.sort();
    assert!(variables.len() >= 12, "{variables:?}");
    for variable in variables {
        assert!(
            environment.contains(&format!("`{variable}`")),
            "README's Environment lacks {variable}"
        );
    }
    Ok(())
}
