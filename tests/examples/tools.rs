//! The WordCount plugin of `examples/tools/`, in each language, installed the
//! way a user installs it (`carapace plugin add`, from a path and from a
//! pinned URL) and called by the model through the loop. Then what must not
//! work: a call beyond the approved ceiling, a component changed after its
//! approval, malformed components and manifests, clashing names, an unknown
//! contract version. (A missing toolchain: see `build.rs`.)

#[path = "build.rs"]
mod builder;
#[path = "../e2e/support.rs"]
mod support;

use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{Run, TestResult, lines, text_of};

const NOTES: &str = "the cat and the hat\nThe end.\n";
/// What WordCount answers for NOTES with `top: 2`, in every language.
const REPORT: &str = "lines: 2\nwords: 7\nbytes: 29\ntop: the 3, and 1\n";

/// Builds the WordCount example in `language`: its component and manifest.
fn build(language: &str) -> Result<(PathBuf, PathBuf), builder::BoxError> {
    let wasm = builder::build("tools", language, &format!("word-count-{language}.wasm"))?;
    let manifest = wasm.with_extension("toml");
    Ok((wasm, manifest))
}

/// A user: a configuration directory and a workspace holding `notes.txt`.
struct User {
    config: tempfile::TempDir,
    ws: tempfile::TempDir,
}

impl User {
    fn new() -> Result<Self, builder::BoxError> {
        let user = Self {
            config: tempfile::tempdir()?,
            ws: tempfile::tempdir()?,
        };
        std::fs::write(user.notes(), NOTES)?;
        Ok(user)
    }

    fn notes(&self) -> PathBuf {
        self.ws.path().join("notes.txt")
    }

    fn ws(&self) -> &Path {
        self.ws.path()
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut command = support::carapace();
        command
            .current_dir(self.ws.path())
            .env("CARAPACE_CONFIG_DIR", self.config.path())
            .args(args);
        command
    }

    /// Runs a plugin or tool subcommand.
    fn run(&self, args: &[&str]) -> Result<Run, builder::BoxError> {
        Run::from_output(self.command(args).output()?)
    }

    /// Runs a session against `server`.
    fn session(&self, server: &ScriptedServer, args: &[&str]) -> Result<Run, builder::BoxError> {
        let output = self
            .command(
                &[
                    &[
                        "-p",
                        "count the words",
                        "--output-format",
                        "stream-json",
                        "--verbose",
                    ],
                    args,
                ]
                .concat(),
            )
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "test-key")
            .output()?;
        Run::from_output(output)
    }

    fn installed(&self) -> Result<Vec<Value>, builder::BoxError> {
        let run = self.run(&["plugin", "list", "--json"])?;
        assert_eq!(run.status, Some(0), "{}", run.stderr);
        Ok(serde_json::from_str::<Vec<Value>>(&run.stdout)?)
    }

    /// Nothing installed, and no trace of an attempt in the store.
    fn assert_nothing_installed(&self) -> TestResult {
        assert_eq!(self.installed()?, Vec::<Value>::new());
        let store = self.config.path().join("plugins");
        let leftovers: Vec<_> = match std::fs::read_dir(&store) {
            Ok(entries) => entries.filter_map(Result::ok).map(|e| e.path()).collect(),
            Err(_) => Vec::new(),
        };
        assert!(leftovers.is_empty(), "left in the store: {leftovers:?}");
        Ok(())
    }
}

fn add(user: &User, source: &str) -> Result<Run, builder::BoxError> {
    user.run(&["plugin", "add", source, "--yes"])
}

/// The tool_result the model got for `id` in the second request.
fn tool_result(server: &ScriptedServer, id: &str) -> Result<Value, builder::BoxError> {
    let requests = server.requests();
    let second = requests.get(1).ok_or("no second request")?;
    let messages = second.body["messages"].as_array().ok_or("no messages")?;
    let results = messages
        .last()
        .and_then(|m| m["content"].as_array())
        .ok_or("no tool results")?;
    Ok(results
        .iter()
        .find(|r| r["tool_use_id"] == id)
        .cloned()
        .ok_or(format!("no result for {id}"))?)
}

fn word_count_call(user: &User) -> Reply {
    Reply::tool_uses(vec![
        Block::tool_use(
            "toolu_wc",
            "WordCount",
            json!({"file_path": user.notes(), "top": 2}),
        ),
        // A first-party tool (contract 0.1.0) in the same batch as the
        // plugin (0.2.0): both contract versions side by side.
        Block::tool_use("toolu_read", "Read", json!({"file_path": user.notes()})),
    ])
}

/// Installs the example from its path, runs it through the loop, then
/// installs it packed from a pinned loopback URL for another user and calls
/// it with `carapace tool call`.
fn example(language: &str) -> TestResult {
    let (wasm, manifest) = build(language)?;
    let name = format!("word-count-{language}");

    // From a path, the manifest beside it.
    let user = User::new()?;
    let added = add(&user, &wasm.display().to_string())?;
    assert_eq!(added.status, Some(0), "{language}: {}", added.stderr);
    assert!(
        added.stdout.contains("files: read {workspace}"),
        "{}",
        added.stdout
    );
    let installed = user.installed()?;
    assert_eq!(installed.len(), 1);
    assert_eq!(installed[0]["name"], name.as_str());
    assert_eq!(installed[0]["status"], "ok");
    assert_eq!(installed[0]["contract"], "0.2.0");

    let server = ScriptedServer::start(vec![word_count_call(&user), Reply::text("7 words")])?;
    let run = user.session(&server, &[])?;
    assert_eq!(run.status, Some(0), "{language}: {}", run.stderr);
    let out = lines(&run.stdout)?;
    let init = &out[0];
    assert!(
        init["tools"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("WordCount")) && t.contains(&json!("Read")))
    );
    assert_eq!(init["plugins"][0]["name"], name.as_str());
    assert_eq!(init["plugins"][0]["status"], "loaded");
    // The model was offered the tool with the plugin's schema.
    let offered = server.requests()[0].body["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "WordCount").cloned())
        .ok_or("WordCount was not offered")?;
    assert_eq!(offered["input_schema"]["required"], json!(["file_path"]));
    let counted = tool_result(&server, "toolu_wc")?;
    assert_eq!(text_of(&counted), REPORT, "{language}: {counted}");
    assert_ne!(counted["is_error"], true);
    let read = tool_result(&server, "toolu_read")?;
    assert_eq!(text_of(&read), "1\tthe cat and the hat\n2\tThe end.\n3\t");

    // From a URL: one file with the manifest embedded, pinned by digest.
    let other = User::new()?;
    let packed = other.ws().join(format!("{name}.wasm"));
    let pack = other.run(&[
        "plugin",
        "pack",
        &wasm.display().to_string(),
        "--manifest",
        &manifest.display().to_string(),
        "-o",
        &packed.display().to_string(),
    ])?;
    assert_eq!(pack.status, Some(0), "{}", pack.stderr);
    let bytes = std::fs::read(&packed)?;
    let digest = sha256(&bytes);
    let files = ScriptedServer::start(Vec::new())?;
    let url = files.serve_file(&format!("{name}.wasm"), bytes);

    let unpinned = add(&other, &url)?;
    assert_eq!(unpinned.status, Some(1));
    assert!(
        unpinned.stderr.contains("must be pinned"),
        "{}",
        unpinned.stderr
    );
    let wrong = add(&other, &format!("{url}#sha256={}", "0".repeat(64)))?;
    assert_eq!(wrong.status, Some(1));
    assert!(
        wrong.stderr.contains("does not match the pin"),
        "{}",
        wrong.stderr
    );
    other.assert_nothing_installed()?;

    let added = add(&other, &format!("{url}#sha256={digest}"))?;
    assert_eq!(added.status, Some(0), "{language}: {}", added.stderr);
    assert!(
        added.stdout.contains("embedded in the component"),
        "{}",
        added.stdout
    );
    let call = other.run(&[
        "tool",
        "call",
        &name,
        "WordCount",
        "--input",
        &json!({"file_path": other.notes(), "top": 2}).to_string(),
    ])?;
    assert_eq!(
        call.status,
        Some(0),
        "{language}: {}{}",
        call.stdout,
        call.stderr
    );
    let report: Value = serde_json::from_str(&call.stdout)?;
    assert_eq!(
        report["requested"],
        json!([{"kind": "read_file", "target": other.notes()}])
    );
    assert_eq!(report["verdict"], "allow");
    assert_eq!(report["result"]["content"][0]["text"], REPORT);

    // Punctuation, case, tabs, CRLF, form feeds and ties: every language
    // splits, trims, folds and ranks the same way.
    let tricky = other.ws().join("tricky.txt");
    std::fs::write(&tricky, "Hello, hello!\tWORLD\r\nworld -- x\x0cx x\n")?;
    let call = other.run(&[
        "tool",
        "call",
        &name,
        "WordCount",
        "--input",
        &json!({"file_path": tricky, "top": 3}).to_string(),
    ])?;
    let report: Value = serde_json::from_str(&call.stdout)?;
    assert_eq!(
        report["result"]["content"][0]["text"],
        "lines: 2\nwords: 8\nbytes: 36\ntop: x 3, hello 2, world 2\n",
        "{language}"
    );
    Ok(())
}

fn sha256(bytes: &[u8]) -> String {
    carapace::plugin_store::store::digest(bytes)
}

#[test]
fn the_rust_example_installs_from_a_path_and_a_url_and_runs_in_the_loop() -> TestResult {
    example("rust")
}

#[test]
fn the_python_example_installs_from_a_path_and_a_url_and_runs_in_the_loop() -> TestResult {
    example("python")
}

#[test]
fn the_javascript_example_installs_from_a_path_and_a_url_and_runs_in_the_loop() -> TestResult {
    example("javascript")
}

#[test]
fn the_c_example_installs_from_a_path_and_a_url_and_runs_in_the_loop() -> TestResult {
    example("c")
}

/// The Rust example, which the other checks use.
fn rust_example() -> Result<(PathBuf, PathBuf), builder::BoxError> {
    build("rust")
}

#[test]
fn a_call_beyond_the_approved_ceiling_is_denied_even_when_permissions_are_bypassed() -> TestResult {
    let (wasm, _) = rust_example()?;
    let user = User::new()?;
    assert_eq!(add(&user, &wasm.display().to_string())?.status, Some(0));
    // The ceiling is the workspace: a file elsewhere is beyond it.
    let elsewhere = tempfile::tempdir()?;
    let secret = elsewhere.path().join("secret.txt");
    std::fs::write(&secret, "top secret words\n")?;
    let server = ScriptedServer::start(vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_wc",
            "WordCount",
            json!({"file_path": secret}),
        )]),
        Reply::text("denied"),
    ])?;
    let run = user.session(&server, &["--dangerously-skip-permissions"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let result = tool_result(&server, "toolu_wc")?;
    assert_eq!(result["is_error"], true);
    let text = text_of(&result);
    assert!(
        text.contains("outside the plugin's approved ceiling"),
        "{text}"
    );
    assert!(!text.contains("top secret"), "{text}");

    // `tool call` says the same, and runs nothing.
    let call = user.run(&[
        "tool",
        "call",
        "word-count-rust",
        "WordCount",
        "--input",
        &json!({"file_path": secret}).to_string(),
        "--yes",
    ])?;
    assert_eq!(call.status, Some(1));
    let report: Value = serde_json::from_str(&call.stdout)?;
    assert_eq!(report["verdict"], "deny");
    assert_eq!(report["basis"]["kind"], "ceiling");
    assert!(report.get("result").is_none());
    Ok(())
}

#[test]
fn a_component_changed_after_approval_is_refused_until_approved_again() -> TestResult {
    let (wasm, manifest) = rust_example()?;
    let user = User::new()?;
    assert_eq!(add(&user, &wasm.display().to_string())?.status, Some(0));
    let inspect = user.run(&["plugin", "inspect", "word-count-rust", "--json"])?;
    let record: Value = serde_json::from_str(&inspect.stdout)?;
    let stored = PathBuf::from(record["path"].as_str().ok_or("no path")?);

    // Someone rewrites the installed bytes.
    let mut bytes = std::fs::read(&stored)?;
    bytes.extend_from_slice(b"\0\x09\x05extra");
    std::fs::write(&stored, &bytes)?;
    assert!(
        user.installed()?[0]["status"]
            .as_str()
            .is_some_and(|s| s.contains("changed on disk"))
    );
    let server = ScriptedServer::start(vec![word_count_call(&user), Reply::text("refused")])?;
    let run = user.session(&server, &[])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let result = tool_result(&server, "toolu_wc")?;
    assert_eq!(result["is_error"], true);
    assert!(text_of(&result).contains("changed on disk since it was approved"));
    // The rest of the session is unaffected.
    assert_ne!(tool_result(&server, "toolu_read")?["is_error"], true);

    // A different build under the same name needs approval again: without
    // --yes (and no terminal to ask on) it is not installed.
    let user = User::new()?;
    let added = add(&user, &wasm.display().to_string())?;
    assert_eq!(added.status, Some(0), "{}", added.stderr);
    let approved = user.installed()?;
    let changed = user.ws().join("word-count-rust.wasm");
    let packed = user.run(&[
        "plugin",
        "pack",
        &wasm.display().to_string(),
        "--manifest",
        &manifest.display().to_string(),
        "-o",
        &changed.display().to_string(),
    ])?;
    assert_eq!(packed.status, Some(0), "{}", packed.stderr);
    let unapproved = user.run(&["plugin", "add", &changed.display().to_string()])?;
    assert_eq!(unapproved.status, Some(1));
    assert!(
        unapproved.stdout.contains("needs approval again"),
        "{}",
        unapproved.stdout
    );
    assert!(unapproved.stderr.contains("--yes"), "{}", unapproved.stderr);
    let still: Value = serde_json::from_str(
        &user
            .run(&["plugin", "inspect", "word-count-rust", "--json"])?
            .stdout,
    )?;
    assert_eq!(still["sha256"], record["sha256"]);
    assert_eq!(user.installed()?, approved);
    assert_eq!(add(&user, &changed.display().to_string())?.status, Some(0));
    assert_ne!(
        serde_json::from_str::<Value>(
            &user
                .run(&["plugin", "inspect", "word-count-rust", "--json"])?
                .stdout
        )?["sha256"],
        record["sha256"]
    );
    Ok(())
}

#[test]
fn malformed_components_and_manifests_are_rejected_with_nothing_installed() -> TestResult {
    let (wasm, manifest) = rust_example()?;
    let good_manifest = std::fs::read_to_string(&manifest)?;
    let guests = Path::new(env!("CARAPACE_TEST_GUESTS_DIR"));
    let cases: Vec<(&str, Vec<u8>, Option<String>, &str)> = vec![
        (
            "not wasm",
            b"#!/bin/sh\nrm -rf ~\n".to_vec(),
            Some(good_manifest.clone()),
            "it is not WebAssembly at all",
        ),
        (
            "a core module, not a component",
            b"\0asm\x01\0\0\0".to_vec(),
            Some(good_manifest.clone()),
            "a core WebAssembly module, not a component",
        ),
        (
            "a component that is not a tool plugin (a hook)",
            std::fs::read(guests.join("hook_probe.wasm"))?,
            Some(good_manifest.clone()),
            "does not export carapace:tool/tool-provider",
        ),
        (
            "a contract version this host does not know",
            std::fs::read(guests.join("future_tool.wasm"))?,
            Some(good_manifest.clone()),
            "carapace:tool@0.9.0, which this carapace does not support (it supports 0.1.0, 0.2.0, 0.3.0)",
        ),
        ("no manifest", std::fs::read(&wasm)?, None, "no manifest"),
        (
            "a manifest that is not TOML",
            std::fs::read(&wasm)?,
            Some("[plugin\nname=".into()),
            "not valid TOML",
        ),
        (
            "an invalid plugin name",
            std::fs::read(&wasm)?,
            Some(good_manifest.replace("word-count-rust", "../escape")),
            "plugin.name",
        ),
        (
            "a ceiling with `..`",
            std::fs::read(&wasm)?,
            Some(good_manifest.replace("{workspace}", "{workspace}/../..")),
            "may not contain `..`",
        ),
        (
            "tools the component does not provide",
            std::fs::read(&wasm)?,
            Some(good_manifest.replace("[\"WordCount\"]", "[\"WordCount\", \"Extra\"]")),
            "they must be the same",
        ),
    ];
    for (what, bytes, manifest, expected) in cases {
        let user = User::new()?;
        let component = user.ws().join("plugin.wasm");
        std::fs::write(&component, bytes)?;
        if let Some(manifest) = manifest {
            std::fs::write(user.ws().join("plugin.toml"), manifest)?;
        }
        let run = add(&user, &component.display().to_string())?;
        assert_eq!(run.status, Some(1), "{what}: {}", run.stdout);
        assert!(run.stderr.contains(expected), "{what}: {}", run.stderr);
        user.assert_nothing_installed()?;
    }
    Ok(())
}

#[test]
fn clashing_tool_names_are_refused_at_install_and_reported_at_load() -> TestResult {
    let (wasm, manifest) = rust_example()?;
    let user = User::new()?;
    assert_eq!(add(&user, &wasm.display().to_string())?.status, Some(0));
    // The same tool under another plugin name.
    let copy = user.ws().join("copy.wasm");
    std::fs::copy(&wasm, &copy)?;
    std::fs::write(
        user.ws().join("copy.toml"),
        std::fs::read_to_string(&manifest)?.replace("word-count-rust", "word-count-copy"),
    )?;
    let run = add(&user, &copy.display().to_string())?;
    assert_eq!(run.status, Some(1));
    assert!(
        run.stderr
            .contains("tool `WordCount` is already provided by plugin `word-count-rust`"),
        "{}",
        run.stderr
    );

    // A clash that arrives anyway (a project plugin installed while the
    // user plugin was elsewhere) is reported at load: the session runs, the
    // first plugin keeps the name, the second is skipped and listed failed.
    let project = user.ws().join(".carapace").join("plugins");
    let user_store = user.config.path().join("plugins").join("word-count-rust");
    copy_dir(&user_store, &project.join("word-count-rust"))?;
    let server = ScriptedServer::start(vec![word_count_call(&user), Reply::text("ok")])?;
    let run = user.session(&server, &["--trust-workspace"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    let init = &lines(&run.stdout)?[0];
    let plugins = init["plugins"].as_array().ok_or("no plugins")?;
    assert_eq!(plugins.len(), 2);
    assert_eq!(plugins[0]["status"], "loaded");
    assert_eq!(plugins[1]["status"], "failed");
    assert!(
        plugins[1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("provided by both")),
        "{plugins:?}"
    );
    assert!(run.stderr.contains("not loaded"), "{}", run.stderr);
    assert_eq!(text_of(&tool_result(&server, "toolu_wc")?), REPORT);
    Ok(())
}

#[test]
fn project_plugins_load_only_in_a_trusted_workspace() -> TestResult {
    let (wasm, _) = rust_example()?;
    let user = User::new()?;
    let added = user.run(&[
        "plugin",
        "add",
        &wasm.display().to_string(),
        "--scope",
        "project",
        "--yes",
    ])?;
    assert_eq!(added.status, Some(0), "{}", added.stderr);
    let server = ScriptedServer::start(vec![Reply::text("hi")])?;
    let untrusted = user.session(&server, &[])?;
    assert_eq!(untrusted.status, Some(0), "{}", untrusted.stderr);
    let init = &lines(&untrusted.stdout)?[0];
    assert!(
        !init["tools"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("WordCount")))
    );
    assert!(
        untrusted.stderr.contains("trusted workspace"),
        "{}",
        untrusted.stderr
    );

    let server = ScriptedServer::start(vec![Reply::text("hi")])?;
    let trusted = user.session(&server, &["--trust-workspace"])?;
    let init = &lines(&trusted.stdout)?[0];
    assert!(
        init["tools"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("WordCount")))
    );

    let removed = user.run(&["plugin", "remove", "word-count-rust"])?;
    assert_eq!(removed.status, Some(0), "{}", removed.stderr);
    user.assert_nothing_installed()?;
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        std::fs::copy(entry.path(), to.join(entry.file_name()))?;
    }
    Ok(())
}
