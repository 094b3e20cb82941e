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

/// Every Rust source file of the host.
fn host_source_files() -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut files = Vec::new();
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
                files.push(path);
            }
        }
    }
    Ok(files)
}

/// Every Rust source file of the host, concatenated.
fn host_sources() -> std::io::Result<String> {
    let mut text = String::new();
    for path in host_source_files()? {
        text.push_str(&std::fs::read_to_string(&path)?);
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
fn the_readme_names_every_init_field_and_system_line() -> TestResult {
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
    Ok(())
}

/// Names shaped like environment variables that carapace's code holds but
/// does not read from its environment: each with why it is no setting.
const NOT_READ: &[(&str, &str)] = &[
    ("HTTP_PROXY", "set for commands, to the egress proxy"),
    ("HTTPS_PROXY", "set for commands, to the egress proxy"),
    ("ALL_PROXY", "set for commands, to the egress proxy"),
    ("NO_PROXY", "set (empty) for commands"),
    ("CURL_CA_BUNDLE", "set for commands under tlsTerminate"),
    ("REQUESTS_CA_BUNDLE", "set for commands under tlsTerminate"),
    ("GIT_SSL_CAINFO", "set for commands under tlsTerminate"),
    ("NODE_EXTRA_CA_CERTS", "set for commands under tlsTerminate"),
    (
        "CLAUDE_CODE_OAUTH_TOKEN",
        "withheld from plugins; read only to be redacted",
    ),
    ("SHA2_256", "a digest's name in a signature"),
    (
        "CLAUDE_PLUGIN_ROOT",
        "set for a plugin's hooks and expanded in its MCP configuration",
    ),
    ("CLAUDE_PROJECT_DIR", "set for hooks, naming the project"),
    (
        "CLAUDE_ENV_FILE",
        "set for SessionStart hooks, naming the file they write",
    ),
    (
        "GIT_TERMINAL_PROMPT",
        "set (0) for the git commands carapace runs itself",
    ),
];

/// The host's code: its sources without comment lines and test modules
/// (`#[cfg(test)] mod …` and all after it in a file, as the host writes
/// them: last).
fn host_sources_without_tests() -> std::io::Result<String> {
    let mut text = String::new();
    for path in host_source_files()? {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path)?;
        // Code only: not comments (their examples), not tests.
        let code = source.split("#[cfg(test)]\nmod ").next().unwrap_or("");
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            // A quote as a character literal opens no string.
            text.push_str(&line.replace("'\"'", "''").replace("'\\\"'", "''"));
            text.push('\n');
        }
    }
    Ok(text)
}

/// Every string literal in `source` shaped as an environment variable
/// with an underscore (`MCP_TIMEOUT`): the names the code can read.
fn variable_names(source: &str) -> Vec<String> {
    let mut names: Vec<String> = source
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|w| w.contains('_') && !w.starts_with('_') && !w.ends_with('_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_uppercase()))
        .filter(|w| {
            w.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every variable the code names is in the README's Environment paragraph
/// and in `carapace --help`, or is one it only sets or withholds.
#[test]
fn the_readme_and_the_help_list_every_variable_carapace_reads() -> TestResult {
    let readme = readme()?;
    let environment = paragraph(&readme, "\nEnvironment:")?;
    let help = support::carapace().arg("--help").output()?;
    let help = String::from_utf8(help.stdout)?;
    let help = help
        .split("Environment:")
        .nth(1)
        .ok_or_else(|| format!("--help has no Environment: {help}"))?;
    let sources = host_sources_without_tests()?;
    let read: Vec<String> = variable_names(&sources)
        .into_iter()
        // Build-time variables (`env!`) are cargo's and the build script's.
        .filter(|v| !v.starts_with("CARGO_") && !v.starts_with("CARAPACE_DIGEST_"))
        .filter(|v| v != "OUT_DIR")
        .filter(|v| !NOT_READ.iter().any(|(n, _)| n == v))
        .collect();
    assert!(read.len() >= 20, "{read:?}");
    for variable in &read {
        assert!(
            environment.contains(&format!("`{variable}`")),
            "README's Environment lacks {variable}"
        );
        assert!(
            help.contains(variable.as_str()),
            "--help's Environment lacks {variable}"
        );
    }
    // And the check can fail: a name the code reads that the README did
    // not list would be found (this one is in the code).
    assert!(variable_names("std::env::var_os(\"MCP_TOOL_TIMEOUT\")") == ["MCP_TOOL_TIMEOUT"]);
    Ok(())
}

/// The folders the README's Layout block names: each line's first word
/// ending in `/`, and every `NAME/` inside the lines' descriptions.
fn layout_block(readme: &str) -> Result<&str, String> {
    readme
        .split("## Layout\n\n```\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .ok_or_else(|| "README has no Layout block".to_string())
}

/// The folders a layout must name: the repository's own top-level folders
/// (tracked ones: not `target/`, nor hidden ones) and every folder under
/// `host/src` but insta's `snapshots/`, as `NAME/`.
fn folders_to_name(root: &std::path::Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_dir() && !name.starts_with('.') && name != "target" {
            names.push(format!("{name}/"));
        }
    }
    let mut stack = vec![root.join("host/src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type()?.is_dir() && name != "snapshots" {
                names.push(format!("{name}/"));
                stack.push(entry.path());
            }
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}

#[test]
fn the_readme_layout_names_every_folder() -> TestResult {
    let readme = readme()?;
    let layout = layout_block(&readme)?;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let folders = folders_to_name(&root)?;
    assert!(folders.len() >= 40, "{folders:?}");
    for folder in &folders {
        // As a word of its own: `process/` is not named by `subprocess/`.
        let named = layout.match_indices(folder.as_str()).any(|(at, _)| {
            at == 0 || !layout[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
        });
        assert!(named, "README's Layout does not name {folder}");
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
    // A `#[serde(flatten)]` field holds the keys carapace does not read
    // (to name them in a warning): no key of its own.
    // A `rename = "…"` names the key as written (marked `=`).
    let mut fields = Vec::new();
    let mut flattened = false;
    let mut renamed = None;
    for line in body.lines().map(str::trim) {
        if line.starts_with('#') {
            flattened |= line.contains("serde(flatten)");
            let rename = line.split("rename = \"").nth(1);
            if let Some(key) = rename.and_then(|rest| rest.split('"').next()) {
                renamed = Some(key.to_string());
            }
            continue;
        }
        if line.starts_with("//") {
            continue;
        }
        if let Some((field, ty)) = line.split_once(':')
            && !std::mem::take(&mut flattened)
        {
            let ty = ty.trim().trim_end_matches(',').to_string();
            let field = match renamed.take() {
                Some(key) => format!("={key}"),
                None => field.trim().to_string(),
            };
            fields.push((field, ty));
        }
    }
    Ok(fields)
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
        let key = match field.strip_prefix('=') {
            Some(key) => format!("{prefix}{key}"),
            None => format!("{prefix}{}", camel(&field)),
        };
        if ty.ends_with("File") {
            // A type of another file of the folder: `claude::FilesystemFile`.
            let ty = ty.rsplit("::").next().unwrap_or(&ty);
            keys.extend(settings_keys(source, ty, &format!("{key}."))?);
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
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/src/settings");
    let mut source = String::new();
    for file in ["mod.rs", "claude.rs", "auto_mode.rs"] {
        source.push_str(&std::fs::read_to_string(format!("{folder}/{file}"))?);
    }
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
