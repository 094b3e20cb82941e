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

/// The fields of `struct NAME { … }` in `source`, with their types.
fn struct_fields(source: &str, name: &str) -> Result<Vec<(String, String)>, String> {
    let body = source
        .split(&format!("struct {name} {{"))
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .ok_or_else(|| format!("no struct {name}"))?;
    Ok(body
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(field, ty)| {
            (
                field.trim().to_string(),
                ty.trim().trim_end_matches(',').to_string(),
            )
        })
        .collect())
}

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Every key a settings file may hold, as the settings module reads it
/// (`sandbox.network.allowedDomains`): the fields of the file's structs,
/// a field whose type is another of them giving that struct's keys under
/// its name.
fn settings_keys(source: &str, name: &str, prefix: &str) -> Result<Vec<String>, String> {
    let mut keys = Vec::new();
    for (field, ty) in struct_fields(source, name)? {
        let key = format!("{prefix}{}", camel(&field));
        if ty.ends_with("File") {
            keys.extend(settings_keys(source, &ty, &format!("{key}."))?);
        } else {
            keys.push(key);
        }
    }
    Ok(keys)
}

#[test]
fn the_readme_lists_every_settings_key_and_no_other() -> TestResult {
    let readme = readme()?;
    let listed = readme
        .split("Keys: ")
        .nth(1)
        .and_then(|rest| rest.split("A workspace is trusted").next())
        .ok_or("README has no settings key list")?;
    // `permissions.allow|ask|deny` is three keys.
    let in_readme: Vec<String> = listed
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|key| {
            let (stem, last) = key.rsplit_once('.').unwrap_or(("", key));
            last.split('|')
                .map(|leaf| {
                    if stem.is_empty() {
                        leaf.to_string()
                    } else {
                        format!("{stem}.{leaf}")
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/settings/mod.rs"))?;
    let keys = settings_keys(&source, "SettingsFile", "")?;
    assert!(keys.len() >= 15, "{keys:?}");
    for key in &keys {
        assert!(in_readme.contains(key), "README's settings keys lack {key}");
    }
    for key in &in_readme {
        assert!(
            keys.contains(key),
            "README lists {key}, which carapace does not read"
        );
    }
    Ok(())
}
