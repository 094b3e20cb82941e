//! The first-party tools against real files, real processes and a loopback
//! HTTP server, each through the whole pipeline (schema, plan, policy,
//! grant, sandboxed call): schema errors, normal cases, and the sandbox
//! boundary of each.

use carapace::agent::{ToolCall, ToolCallResult, ToolRuntime};
use carapace::model::{ToolResultBlock, ToolResultContent};
use carapace::policy::{
    Anchors, Ceiling, HostPattern, PermissionMode, Policy, PolicyConfig, Rule, RuleKind, RuleSet,
    RuleSource, SourceKind,
};
use carapace::sandbox::{
    CallLimits, FileAccess, ProcessConfig, Sandbox, SandboxConfig, ShellStatus, ToolComponent,
};
use carapace::tools::{ToolPipeline, ToolRegistry};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

type TestResult = Result<(), Box<dyn std::error::Error>>;
type BoxError = Box<dyn std::error::Error>;

#[path = "atomic_writes.rs"]
mod atomic_writes;

/// A workspace, a directory outside it, and the tools wired as the CLI
/// wires them (one session: the read ledger is shared between calls).
struct Bench {
    _dirs: Vec<tempfile::TempDir>,
    sandbox: Sandbox,
    ws: PathBuf,
    outside: PathBuf,
    pipeline: Arc<ToolPipeline>,
}

fn bench(
    mode: PermissionMode,
    rules: &[(RuleKind, &str)],
) -> impl std::future::Future<Output = Result<Bench, BoxError>> {
    bench_reaching(mode, rules, Vec::new())
}

/// A bench whose policy lets HTTP reach the `internal` hosts (what the
/// user's `sandbox.allowInternalAddresses` would list).
fn bench_reaching(
    mode: PermissionMode,
    rules: &[(RuleKind, &str)],
    internal: Vec<HostPattern>,
) -> impl std::future::Future<Output = Result<Bench, BoxError>> {
    let rules: Vec<(RuleKind, String)> = rules.iter().map(|(k, r)| (*k, r.to_string())).collect();
    async move {
        let ws_dir = tempfile::tempdir()?;
        let out_dir = tempfile::tempdir()?;
        let ws = std::fs::canonicalize(ws_dir.path())?;
        let outside = std::fs::canonicalize(out_dir.path())?;
        let sandbox = Sandbox::new(SandboxConfig {
            guest_cwd: Some(ws.clone()),
            process: Some(ProcessConfig {
                helper: Some(PathBuf::from(env!("CARGO_BIN_EXE_carapace"))),
                write_roots: vec![ws.clone()],
                ..ProcessConfig::new(&ws)
            }),
            ..carapace_test_support::sandbox_config()
        })?;
        let mut registry = ToolRegistry::builtin(&sandbox).await?;
        let probe_wasm =
            std::fs::read(Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("escape_probe.wasm"))?;
        let probe = ToolComponent::load(&sandbox, "escape-probe", &probe_wasm).await?;
        registry.add(
            probe,
            Arc::new(
                Ceiling::none()
                    .with_files("/", FileAccess::Write)
                    .with_process(),
            ),
        )?;
        let shell_probe_wasm =
            std::fs::read(Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("shell_probe.wasm"))?;
        let shell_probe = ToolComponent::load(&sandbox, "shell-probe", &shell_probe_wasm).await?;
        registry.add(shell_probe, Arc::new(Ceiling::none().with_process()))?;
        let anchors = Anchors {
            cwd: ws.clone(),
            home: outside.clone(),
            project: ws.clone(),
        };
        let source = RuleSource {
            kind: SourceKind::CliFlag,
            file: None,
        };
        let rules = rules
            .iter()
            .map(|(k, r)| Rule::parse(r, *k, source.clone(), &anchors))
            .collect::<Result<Vec<_>, _>>()?;
        let policy = Policy::from_config(PolicyConfig {
            mode,
            bypass_allowed: false,
            rules: RuleSet::new(rules),
            cwd: ws.clone(),
            additional_dirs: vec![],
            home: outside.join("home"),
            config_dir: outside.join("home/.carapace"),
            internal_hosts: internal,
        });
        let spill = outside.join("spill");
        let pipeline = Arc::new(
            ToolPipeline::new(registry, policy, CallLimits::default())
                .with_result_spill(spill, 100_000)
                .with_structured_results(true),
        );
        Ok(Bench {
            _dirs: vec![ws_dir, out_dir],
            sandbox,
            ws,
            outside,
            pipeline,
        })
    }
}

impl Bench {
    async fn call(&self, tool: &str, input: Value) -> ToolCallResult {
        let call = ToolCall {
            id: format!("toolu_{tool}"),
            name: tool.into(),
            input,
            invalid_input: None,
        };
        self.pipeline.clone().call(call).await
    }

    fn p(&self, rel: &str) -> String {
        self.ws.join(rel).to_string_lossy().into_owned()
    }
}

/// `path` as Glob and Grep show it: relative to the working directory.
fn rel(b: &Bench, path: &impl AsRef<std::path::Path>) -> String {
    path.as_ref().strip_prefix(&b.ws).map_or_else(
        |_| path.as_ref().display().to_string(),
        |r| r.display().to_string(),
    )
}

fn text(result: &ToolCallResult) -> String {
    result.content.text()
}

fn ok_text(result: &ToolCallResult) -> String {
    assert!(!result.is_error, "unexpected error: {}", text(result));
    text(result)
}

// ---- Read ------------------------------------------------------------------

#[tokio::test]
async fn read_pages_cuts_and_notes() -> TestResult {
    let b = bench(PermissionMode::Default, &[]).await?;
    let lines: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(b.ws.join("long.txt"), &lines)?;
    std::fs::write(
        b.ws.join("wide.txt"),
        format!("{}\nshort", "x".repeat(5000)),
    )?;
    std::fs::write(b.ws.join("empty.txt"), "")?;
    std::fs::write(b.ws.join("bin.dat"), [0u8, 1, 2, 3, 0, 9])?;
    std::fs::create_dir(b.ws.join("dir"))?;

    let first = ok_text(&b.call("Read", json!({"file_path": b.p("long.txt")})).await);
    assert!(first.starts_with("1\tline 1\n2\tline 2\n"));
    assert!(first.contains("2000\tline 2000"));
    assert!(!first.contains("2001\tline 2001"));
    assert!(
        first.contains("Call Read again with offset 2001"),
        "a note says where to continue"
    );
    let page = ok_text(
        &b.call(
            "Read",
            json!({"file_path": b.p("long.txt"), "offset": 2999, "limit": 5}),
        )
        .await,
    );
    assert_eq!(page, "2999\tline 2999\n3000\tline 3000\n3001\t");
    let wide = ok_text(&b.call("Read", json!({"file_path": b.p("wide.txt")})).await);
    assert!(wide.contains("[line truncated]") && wide.contains("2\tshort") && wide.len() < 2200);
    assert!(
        ok_text(&b.call("Read", json!({"file_path": b.p("empty.txt")})).await).contains("is empty")
    );
    let past = ok_text(
        &b.call("Read", json!({"file_path": b.p("wide.txt"), "offset": 50}))
            .await,
    );
    assert!(past.contains("fewer than the requested offset"));

    for (file, expected) in [
        ("bin.dat", "binary"),
        ("dir", "directory"),
        ("missing.txt", "does not exist"),
    ] {
        let result = b.call("Read", json!({"file_path": b.p(file)})).await;
        assert!(
            result.is_error && text(&result).contains(expected),
            "{file}: {}",
            text(&result)
        );
    }
    for bad in [
        json!({}),
        json!({"file_path": "relative.txt"}),
        json!({"file_path": b.p("long.txt"), "extra": 1}),
        json!({"file_path": b.p("long.txt"), "limit": 0}),
    ] {
        let result = b.call("Read", bad.clone()).await;
        assert!(
            result.is_error && text(&result).contains("InputValidationError")
                || text(&result).contains("absolute"),
            "{bad}: {}",
            text(&result)
        );
    }
    Ok(())
}

#[tokio::test]
async fn read_returns_images_as_image_blocks() -> TestResult {
    let b = bench(PermissionMode::Default, &[]).await?;
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    std::fs::write(b.ws.join("pixel.png"), png)?;
    let result = b.call("Read", json!({"file_path": b.p("pixel.png")})).await;
    assert!(!result.is_error);
    match &result.content {
        ToolResultContent::Blocks(blocks) => match &blocks[0] {
            ToolResultBlock::Image { source } => {
                assert_eq!(source.media_type, "image/png");
                assert_eq!(source.kind, "base64");
                assert!(!source.data.is_empty());
            }
            other => panic!("not an image: {other:?}"),
        },
        other => panic!("not blocks: {other:?}"),
    }
    Ok(())
}

// ---- Write and Edit ----------------------------------------------------------

#[tokio::test]
async fn write_creates_files_with_parents_and_touches_nothing_else() -> TestResult {
    let b = bench(PermissionMode::AcceptEdits, &[]).await?;
    std::fs::write(b.ws.join("sibling.txt"), "untouched")?;
    let created = ok_text(
        &b.call(
            "Write",
            json!({"file_path": b.p("deep/er/new.txt"), "content": "hello\n"}),
        )
        .await,
    );
    assert!(created.contains("created"));
    assert_eq!(
        std::fs::read_to_string(b.ws.join("deep/er/new.txt"))?,
        "hello\n"
    );
    // What Write created counts as read: it can be edited at once.
    ok_text(&b.call("Edit", json!({"file_path": b.p("deep/er/new.txt"), "old_string": "hello", "new_string": "bye"})).await);
    assert_eq!(
        std::fs::read_to_string(b.ws.join("deep/er/new.txt"))?,
        "bye\n"
    );
    assert_eq!(
        std::fs::read_to_string(b.ws.join("sibling.txt"))?,
        "untouched"
    );

    // Overwriting a file the model never read is refused; after a Read it works.
    std::fs::write(b.ws.join("existing.txt"), "old")?;
    let refused = b
        .call(
            "Write",
            json!({"file_path": b.p("existing.txt"), "content": "new"}),
        )
        .await;
    assert!(refused.is_error && text(&refused).contains("Read it first"));
    assert_eq!(std::fs::read_to_string(b.ws.join("existing.txt"))?, "old");
    ok_text(
        &b.call("Read", json!({"file_path": b.p("existing.txt")}))
            .await,
    );
    assert!(
        ok_text(
            &b.call(
                "Write",
                json!({"file_path": b.p("existing.txt"), "content": "new"})
            )
            .await
        )
        .contains("updated")
    );
    assert_eq!(std::fs::read_to_string(b.ws.join("existing.txt"))?, "new");

    let schema = b.call("Write", json!({"file_path": b.p("x.txt")})).await;
    assert!(
        schema.is_error && text(&schema).contains("content"),
        "{}",
        text(&schema)
    );
    // Default mode does not write without asking (print mode: denied).
    let default = bench(PermissionMode::Default, &[]).await?;
    let denied = default
        .call(
            "Write",
            json!({"file_path": default.p("a.txt"), "content": "x"}),
        )
        .await;
    assert!(denied.is_error && denied.denial.is_some());
    assert!(!default.ws.join("a.txt").exists());
    Ok(())
}

#[tokio::test]
async fn edit_replaces_exactly_and_needs_a_fresh_read() -> TestResult {
    let b = bench(PermissionMode::AcceptEdits, &[]).await?;
    let file = b.p("config.toml");
    std::fs::write(&file, "port = 8080\nhost = \"a\"\nport_alt = 8080\n")?;
    let unread = b
        .call(
            "Edit",
            json!({"file_path": file, "old_string": "host = \"a\"", "new_string": "host = \"b\""}),
        )
        .await;
    assert!(
        unread.is_error && text(&unread).contains("has not been read"),
        "{}",
        text(&unread)
    );

    ok_text(&b.call("Read", json!({"file_path": file})).await);
    let ambiguous = b
        .call(
            "Edit",
            json!({"file_path": file, "old_string": "8080", "new_string": "9090"}),
        )
        .await;
    assert!(
        ambiguous.is_error && text(&ambiguous).contains("appears 2 times"),
        "{}",
        text(&ambiguous)
    );
    let missing = b
        .call(
            "Edit",
            json!({"file_path": file, "old_string": "nope", "new_string": "x"}),
        )
        .await;
    assert!(missing.is_error && text(&missing).contains("not found"));
    let same = b
        .call(
            "Edit",
            json!({"file_path": file, "old_string": "port", "new_string": "port"}),
        )
        .await;
    assert!(same.is_error && text(&same).contains("same"));

    let edited = ok_text(
        &b.call(
            "Edit",
            json!({"file_path": file, "old_string": "host = \"a\"", "new_string": "host = \"b\""}),
        )
        .await,
    );
    assert!(
        edited.contains("2\thost = \"b\""),
        "a numbered snippet: {edited}"
    );
    let all = ok_text(&b.call("Edit", json!({"file_path": file, "old_string": "8080", "new_string": "9090", "replace_all": true})).await);
    assert!(all.contains("2 occurrences"));
    assert_eq!(
        std::fs::read_to_string(&file)?,
        "port = 9090\nhost = \"b\"\nport_alt = 9090\n"
    );

    // Changed on disk since the last read: stale, read again.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&file, "port = 1\n")?;
    let stale = b
        .call(
            "Edit",
            json!({"file_path": file, "old_string": "1", "new_string": "2"}),
        )
        .await;
    assert!(
        stale.is_error && text(&stale).contains("changed since"),
        "{}",
        text(&stale)
    );
    Ok(())
}

// ---- Glob and Grep -------------------------------------------------------------

#[tokio::test]
async fn glob_lists_oldest_first_relative_and_caps() -> TestResult {
    let b = bench(PermissionMode::Default, &[]).await?;
    std::fs::create_dir_all(b.ws.join("src/nested"))?;
    std::fs::write(b.ws.join("src/old.rs"), "")?;
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(b.ws.join("src/nested/new.rs"), "")?;
    std::fs::write(b.ws.join("src/readme.md"), "")?;
    // As Claude Code 2.1.197: relative to the working directory, the
    // oldest first.
    let found = ok_text(&b.call("Glob", json!({"pattern": "**/*.rs"})).await);
    assert_eq!(found, "src/old.rs\nsrc/nested/new.rs");
    std::fs::create_dir(b.ws.join("many"))?;
    for i in 0..130 {
        std::fs::write(b.ws.join(format!("many/f{i}.txt")), "")?;
    }
    let capped = ok_text(
        &b.call("Glob", json!({"pattern": "*.txt", "path": b.p("many")}))
            .await,
    );
    assert_eq!(capped.lines().count(), 101);
    assert!(capped.contains("Showing 100 of 130"));
    assert!(ok_text(&b.call("Glob", json!({"pattern": "*.zig"})).await).contains("No files found"));
    let bad = b
        .call("Glob", json!({"pattern": "a[", "path": b.p("src")}))
        .await;
    assert!(bad.is_error);
    // Outside the working directory: asks (denied in print mode).
    let outside = b
        .call(
            "Glob",
            json!({"pattern": "*", "path": b.outside.to_string_lossy()}),
        )
        .await;
    assert!(outside.is_error && outside.denial.is_some());
    Ok(())
}

#[tokio::test]
async fn grep_has_ripgreps_semantics() -> TestResult {
    let b = bench(PermissionMode::Default, &[]).await?;
    std::fs::create_dir_all(b.ws.join("src"))?;
    std::fs::write(
        b.ws.join("src/a.rs"),
        "fn main() {\n    let port = 8080;\n    println!(\"PORT\");\n}\n",
    )?;
    std::fs::write(b.ws.join("src/b.py"), "port = 1\n")?;
    std::fs::write(b.ws.join("ignored.log"), "port = 2\n")?;
    std::fs::write(b.ws.join(".gitignore"), "*.log\n")?;
    std::fs::write(b.ws.join(".hidden"), "port = 3\n")?;
    std::fs::write(b.ws.join("bin.dat"), b"port\0\x01")?;

    // Not a repository: ripgrep reads no .gitignore there.
    let unrepo = ok_text(&b.call("Grep", json!({"pattern": "port"})).await);
    assert!(unrepo.contains("ignored.log"), "{unrepo}");
    std::fs::create_dir(b.ws.join(".git"))?;
    std::fs::write(b.ws.join(".git/config"), "port = in git\n")?;
    // A repository: ignored files left out, hidden ones searched (Claude
    // Code's --hidden), binary files and .git skipped.
    let files = ok_text(&b.call("Grep", json!({"pattern": "port"})).await);
    assert!(files.starts_with("Found 3 files"), "{files}");
    assert!(files.contains("src/a.rs") && files.contains("src/b.py") && files.contains(".hidden"));
    assert!(
        !files.contains("ignored.log") && !files.contains("bin.dat") && !files.contains(".git/"),
        "{files}"
    );

    let content = ok_text(
        &b.call(
            "Grep",
            json!({"pattern": "port", "output_mode": "content", "glob": "*.rs", "-C": 1}),
        )
        .await,
    );
    let a = "src/a.rs";
    assert_eq!(
        content,
        format!("{a}-1-fn main() {{\n{a}:2:    let port = 8080;\n{a}-3-    println!(\"PORT\");")
    );
    let insensitive = ok_text(
        &b.call(
            "Grep",
            json!({"pattern": "port", "-i": true, "output_mode": "count", "type": "rust"}),
        )
        .await,
    );
    assert!(insensitive.starts_with(&format!("{a}:2")), "{insensitive}");
    let multiline = ok_text(&b.call("Grep", json!({"pattern": "main.*8080", "multiline": true, "output_mode": "content", "-n": false})).await);
    assert!(
        multiline.contains("fn main()") && multiline.contains("let port"),
        "{multiline}"
    );
    let limited = ok_text(
        &b.call("Grep", json!({"pattern": "port", "head_limit": 1}))
            .await,
    );
    assert_eq!(limited.lines().count(), 2);
    assert!(limited.starts_with("Found 1 file limit: 1\n"), "{limited}");
    let bad = b.call("Grep", json!({"pattern": "(unclosed"})).await;
    assert!(bad.is_error && text(&bad).contains("regular expression"));

    // The tree boundary: a link inside pointing out is not followed.
    std::fs::write(b.outside.join("secret.txt"), "port = SECRET")?;
    std::os::unix::fs::symlink(b.outside.join("secret.txt"), b.ws.join("src/link.txt"))?;
    let through_link = ok_text(
        &b.call(
            "Grep",
            json!({"pattern": "SECRET", "output_mode": "content"}),
        )
        .await,
    );
    assert!(!through_link.contains("SECRET"), "{through_link}");
    let outside = b
        .call(
            "Grep",
            json!({"pattern": "port", "path": b.outside.to_string_lossy()}),
        )
        .await;
    assert!(outside.is_error && outside.denial.is_some());
    Ok(())
}

// ---- Bash ------------------------------------------------------------------

#[tokio::test]
async fn bash_runs_real_commands_in_the_sandbox() -> TestResult {
    let b = bench(PermissionMode::BypassPermissions, &[]).await?;
    let out = ok_text(
        &b.call(
            "Bash",
            json!({"command": "echo hello && echo oops >&2", "description": "greet"}),
        )
        .await,
    );
    assert_eq!(out, "hello\noops");
    let failed = b.call("Bash", json!({"command": "exit 3"})).await;
    assert!(failed.is_error && text(&failed).contains("Exit code 3"));
    let slow = b
        .call("Bash", json!({"command": "sleep 10", "timeout": 300}))
        .await;
    assert!(
        slow.is_error && text(&slow).contains("timed out"),
        "{}",
        text(&slow)
    );
    let flood = ok_text(
        &b.call(
            "Bash",
            json!({"command": "head -c 100000 /dev/zero | tr '\\0' x"}),
        )
        .await,
    );
    assert!(flood.len() < 31_000 && flood.contains("more characters not shown"));
    // Fresh state: cd does not carry over, the environment is neutral.
    b.call("Bash", json!({"command": "cd /tmp && export FOO=bar"}))
        .await;
    assert_eq!(
        ok_text(
            &b.call("Bash", json!({"command": "pwd; echo \"[$FOO]\""}))
                .await
        ),
        format!("{}\n[]", b.ws.display())
    );
    let env = ok_text(
        &b.call(
            "Bash",
            json!({"command": "env | cut -d= -f1 | sort | tr '\\n' ' '"}),
        )
        .await,
    );
    assert!(
        !env.contains("ANTHROPIC") && !env.contains("CARGO"),
        "{env}"
    );

    // The boundary: no writes outside the workspace, no sockets.
    let target = b.outside.join("escaped.txt");
    let wrote = b
        .call(
            "Bash",
            json!({"command": format!("echo x > {}", target.display())}),
        )
        .await;
    assert!(wrote.is_error && !target.exists(), "{}", text(&wrote));
    ok_text(
        &b.call("Bash", json!({"command": "echo inside > inside.txt"}))
            .await,
    );
    assert!(b.ws.join("inside.txt").exists());
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    // bash, not the tool's /bin/sh: only bash opens /dev/tcp.
    let connect =
        format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected' 2>&1; echo tried");
    let socket = b.call("Bash", json!({"command": connect})).await;
    let said = text(&socket);
    assert!(said.contains("tried"), "the attempt ran: {said}");
    assert!(!said.contains("connected"), "{said}");
    assert!(listener.accept().is_err(), "nothing connected");
    // Control: the same line outside the sandbox connects.
    let outside = std::process::Command::new("sh")
        .args(["-c", &connect])
        .output()?;
    assert!(
        String::from_utf8_lossy(&outside.stdout).contains("connected"),
        "the control connects"
    );
    Ok(())
}

#[tokio::test]
async fn bash_obeys_the_rules_and_runs_only_the_granted_line() -> TestResult {
    let b = bench(
        PermissionMode::Default,
        &[
            (RuleKind::Allow, "Bash(echo:*)"),
            (RuleKind::Deny, "Bash(rm:*)"),
        ],
    )
    .await?;
    assert_eq!(
        ok_text(&b.call("Bash", json!({"command": "echo allowed"})).await),
        "allowed"
    );
    let hidden = b
        .call("Bash", json!({"command": "echo hi && rm -rf /tmp/nothing"}))
        .await;
    assert!(hidden.is_error && hidden.denial.is_some());
    let unlisted = b.call("Bash", json!({"command": "ls"})).await;
    assert!(unlisted.is_error && unlisted.denial.is_some());
    // A tool granted one command line cannot run another.
    let bypass = bench(PermissionMode::BypassPermissions, &[]).await?;
    let probe = bypass
        .call(
            "Probe",
            json!({"needs": [{"kind": "process", "target": "echo granted"}],
                   "attempts": [{"op": "run", "command": "echo granted"}, {"op": "run", "command": "echo smuggled"}]}),
        )
        .await;
    let report: Vec<Value> = serde_json::from_str(&ok_text(&probe))?;
    assert_eq!(report[0]["ok"], true, "{report:?}");
    assert_eq!(report[1]["ok"], false, "{report:?}");
    Ok(())
}

#[tokio::test]
async fn a_background_shell_starts_only_the_granted_line_and_ends_when_killed() -> TestResult {
    let b = bench(PermissionMode::BypassPermissions, &[]).await?;
    let smuggled_file = b.ws.join("smuggled.txt");
    let probe = b
        .call(
            "ShellProbe",
            json!({"granted": "sleep 30",
                   "smuggled": format!("touch {}", smuggled_file.display())}),
        )
        .await;
    let report: Value = serde_json::from_str(&ok_text(&probe))?;
    assert_eq!(report["granted"]["Ok"], "bash_1", "{report}");
    let refused = report["smuggled"]["Err"].as_str().unwrap_or_default();
    assert!(refused.contains("not granted"), "{report}");
    let shells = b.sandbox.shells().ok_or("no shells")?;
    assert_eq!(shells.list().len(), 1, "only the granted line started");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!smuggled_file.exists());
    assert_eq!(shells.read_status("bash_1")?, ShellStatus::Running);
    shells.kill_all().await;
    assert_eq!(shells.read_status("bash_1")?, ShellStatus::Killed);
    Ok(())
}

// ---- WebFetch ----------------------------------------------------------------

/// A loopback server: `/page` is HTML, `/moved` redirects to `/page`,
/// `/away` redirects to another host.
fn web_server() -> Result<u16, BoxError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let n = stream.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]).to_string();
            let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
            let response = match path.as_str() {
                "/page" => {
                    let body = "<html><body><h1>Carapace</h1><p>The <b>port</b> is 9090.</p></body></html>";
                    format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
                }
                "/moved" => "HTTP/1.1 301 Moved\r\nlocation: /page\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string(),
                _ => format!("HTTP/1.1 302 Found\r\nlocation: http://localhost:{port}/page\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"),
            };
            let _ = stream.write_all(response.as_bytes());
        }
    });
    Ok(port)
}

#[tokio::test]
async fn webfetch_returns_markdown_and_respects_the_grant_through_redirects() -> TestResult {
    let port = web_server()?;
    let local = || HostPattern::parse(&format!("127.0.0.1:{port}"));
    // Even in bypass mode, a URL the model chose does not reach this
    // machine unless the user's settings list the address.
    let unlisted = bench(PermissionMode::BypassPermissions, &[]).await?;
    let refused = unlisted
        .call(
            "WebFetch",
            json!({"url": format!("http://127.0.0.1:{port}/page"), "prompt": "x"}),
        )
        .await;
    assert!(
        refused.is_error && !text(&refused).contains("9090"),
        "{refused:?}"
    );
    let b = bench_reaching(PermissionMode::BypassPermissions, &[], vec![local()?]).await?;
    let page = ok_text(
        &b.call(
            "WebFetch",
            json!({"url": format!("http://127.0.0.1:{port}/page"), "prompt": "the port"}),
        )
        .await,
    );
    assert!(
        page.contains("# Carapace") && page.contains("**port**") && page.contains("9090"),
        "{page}"
    );
    let moved = ok_text(
        &b.call(
            "WebFetch",
            json!({"url": format!("http://127.0.0.1:{port}/moved"), "prompt": "x"}),
        )
        .await,
    );
    assert!(
        moved.contains("9090"),
        "a redirect on the same host is followed: {moved}"
    );
    let away = ok_text(
        &b.call(
            "WebFetch",
            json!({"url": format!("http://127.0.0.1:{port}/away"), "prompt": "x"}),
        )
        .await,
    );
    assert!(
        away.contains("different host") && !away.contains("9090"),
        "{away}"
    );

    // Default mode: a host not allowed by a rule is not reached.
    let default = bench(PermissionMode::Default, &[]).await?;
    let denied = default
        .call(
            "WebFetch",
            json!({"url": format!("http://127.0.0.1:{port}/page"), "prompt": "x"}),
        )
        .await;
    assert!(denied.is_error && denied.denial.is_some());
    let allowed = bench_reaching(
        PermissionMode::Default,
        &[(RuleKind::Allow, "WebFetch(domain:127.0.0.1)")],
        vec![local()?],
    )
    .await?;
    assert!(
        ok_text(
            &allowed
                .call(
                    "WebFetch",
                    json!({"url": format!("http://127.0.0.1:{port}/page"), "prompt": "x"})
                )
                .await
        )
        .contains("9090")
    );
    let bad = b
        .call(
            "WebFetch",
            json!({"url": "ftp://example.com/x", "prompt": "x"}),
        )
        .await;
    assert!(bad.is_error);
    Ok(())
}

// ---- result budget -------------------------------------------------------------

#[tokio::test]
async fn oversized_results_are_saved_and_previewed() -> TestResult {
    let b = bench(PermissionMode::BypassPermissions, &[]).await?;
    let big: String = (0..15_000).map(|i| format!("{i:05}\n")).collect();
    std::fs::write(b.ws.join("big.txt"), &big)?;
    let result = ok_text(
        &b.call("Read", json!({"file_path": b.p("big.txt"), "limit": 20000}))
            .await,
    );
    assert!(result.len() < 5_000, "a preview, not the whole result");
    let saved = result
        .split("saved at ")
        .nth(1)
        .and_then(|r| r.split(" — ").next())
        .ok_or("no path")?;
    assert!(std::fs::read_to_string(saved)?.contains("15000\t14999"));
    assert!(saved.starts_with(&b.outside.to_string_lossy().into_owned()));
    Ok(())
}

/// What each first-party tool says it did, for hooks and SDK clients, in
/// Claude Code's shapes (checked against Claude Code 2.1.332's PostToolUse
/// inputs for the same calls) — and nothing when nobody reads it.
#[tokio::test]
async fn first_party_tools_describe_their_results_in_claude_codes_shapes() -> TestResult {
    let unread = bench(PermissionMode::AcceptEdits, &[]).await?;
    let unread = Bench {
        pipeline: Arc::new(
            ToolPipeline::new(
                unread.pipeline.registry(),
                Policy::new(PermissionMode::AcceptEdits, &unread.ws),
                CallLimits::default(),
            )
            .with_structured_results(false),
        ),
        ..unread
    };
    std::fs::write(unread.p("a.txt"), "a\n")?;
    let plain = unread
        .call("Read", json!({"file_path": unread.p("a.txt")}))
        .await;
    assert_eq!((plain.is_error, plain.structured), (false, None));
    let b = bench(PermissionMode::AcceptEdits, &[]).await?;
    let notes = b.p("notes.txt");
    std::fs::write(&notes, "hello file\n")?;
    let read = b.call("Read", json!({"file_path": notes})).await;
    assert_eq!(
        read.structured,
        Some(
            json!({"type": "text", "file": {"filePath": notes, "content": "hello file\n",
                    "numLines": 2, "startLine": 1, "totalLines": 2}})
        )
    );
    // A window of a longer file still counts all of its lines.
    let long = b.p("long.txt");
    std::fs::write(&long, "1\n2\n3\n4\n5")?;
    let window = b
        .call("Read", json!({"file_path": long, "offset": 2, "limit": 2}))
        .await;
    assert_eq!(
        window.structured,
        Some(
            json!({"type": "text", "file": {"filePath": long, "content": "2\n3",
                    "numLines": 2, "startLine": 2, "totalLines": 5}})
        )
    );

    let new = b.p("new.txt");
    let created = b
        .call("Write", json!({"file_path": new, "content": "abc\n"}))
        .await;
    assert_eq!(
        created.structured,
        Some(
            json!({"type": "create", "filePath": new, "content": "abc\n",
                    "structuredPatch": [], "originalFile": null, "userModified": false})
        )
    );
    let edited = b
        .call(
            "Edit",
            json!({"file_path": new, "old_string": "abc", "new_string": "xyz"}),
        )
        .await;
    assert_eq!(
        edited.structured,
        Some(
            json!({"filePath": new, "oldString": "abc", "newString": "xyz",
                    "originalFile": "abc\n",
                    "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1,
                                         "newLines": 1, "lines": ["-abc", "+xyz"]}],
                    "userModified": false, "replaceAll": false})
        )
    );
    let updated = b
        .call(
            "Write",
            json!({"file_path": new, "content": "1\n2\n3\n4\nfive\n"}),
        )
        .await;
    assert_eq!(
        updated
            .structured
            .as_ref()
            .map(|s| (&s["type"], &s["structuredPatch"])),
        Some((
            &json!("update"),
            &json!([{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 5,
                     "lines": ["-xyz", "+1", "+2", "+3", "+4", "+five"]}])
        ))
    );

    let glob = b.call("Glob", json!({"pattern": "*.txt"})).await;
    let found = glob.structured.clone().unwrap_or_default();
    assert_eq!(found["numFiles"], 3, "{found}");
    assert_eq!(found["truncated"], false);
    assert!(found["durationMs"].is_u64());
    let grep = b.call("Grep", json!({"pattern": "hello"})).await;
    assert_eq!(
        grep.structured,
        Some(json!({"mode": "files_with_matches", "filenames": [rel(&b, &notes)], "numFiles": 1}))
    );
    Ok(())
}

/// Only first-party tools see the session's read ledger: a third-party
/// tool can neither learn what the model was shown nor forge a read so that
/// Edit changes a file the model never saw.
#[tokio::test]
async fn a_third_party_tool_neither_reads_nor_forges_the_read_ledger() -> TestResult {
    let b = bench(PermissionMode::AcceptEdits, &[]).await?;
    let seen = b.p("seen.txt");
    let unseen = b.p("unseen.txt");
    std::fs::write(&seen, "seen\n")?;
    std::fs::write(&unseen, "unseen\n")?;
    // The control: a first-party read is in the ledger, and Edit relies on it.
    ok_text(&b.call("Read", json!({"file_path": seen})).await);
    let edited = b
        .call(
            "Edit",
            json!({"file_path": seen, "old_string": "seen", "new_string": "SEEN"}),
        )
        .await;
    assert!(!edited.is_error, "{}", text(&edited));

    let meta = std::fs::metadata(&unseen)?;
    let modified_ns = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64;
    let probe = b
        .call(
            "Probe",
            json!({"needs": [], "attempts": [
                {"op": "last_read", "path": seen},
                {"op": "record_read", "path": unseen, "modified_ns": modified_ns, "size": meta.len()},
            ]}),
        )
        .await;
    let report: Vec<Value> = serde_json::from_str(&ok_text(&probe))?;
    assert_eq!(report[0]["ok"], false, "the ledger is not lent: {report:?}");
    let forged = b
        .call(
            "Edit",
            json!({"file_path": unseen, "old_string": "unseen", "new_string": "FORGED"}),
        )
        .await;
    assert!(
        forged.is_error && text(&forged).contains("has not been read"),
        "{}",
        text(&forged)
    );
    assert_eq!(std::fs::read_to_string(&unseen)?, "unseen\n");
    Ok(())
}

// ---- Races and hard links: the decision is bound to what is opened -------

/// Swaps `a` and `b` (a directory and a symlink) atomically, over and over,
/// until `stop`; returns how many swaps it made.
fn swapper(
    a: PathBuf,
    b: PathBuf,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
        let mut swaps = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            if renameat2(AT_FDCWD, &a, AT_FDCWD, &b, RenameFlags::RENAME_EXCHANGE).is_ok() {
                swaps += 1;
            }
        }
        swaps
    })
}

/// `ws/d` (a real directory) and `ws/swap` (a link to `target`, outside)
/// trade places for as long as `attempts` runs.
async fn while_swapping<F, Fut>(b: &Bench, target: &Path, attempts: F) -> Result<u64, BoxError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    std::os::unix::fs::symlink(target, b.ws.join("swap"))?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapping = swapper(b.ws.join("d"), b.ws.join("swap"), stop.clone());
    attempts().await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapping.join().map_err(|_| "the swapper panicked".into())
}

#[tokio::test]
async fn a_link_swapped_in_during_reads_reaches_nothing_denied() -> TestResult {
    for deny in [true, false] {
        let rules: &[(RuleKind, &str)] = if deny {
            &[(RuleKind::Deny, "Read(~/**)")]
        } else {
            &[]
        };
        let b = bench(PermissionMode::BypassPermissions, rules).await?;
        std::fs::create_dir(b.ws.join("d"))?;
        std::fs::write(b.ws.join("d/f"), "inside")?;
        let secret = b.outside.join("secret");
        std::fs::create_dir(&secret)?;
        std::fs::write(secret.join("f"), "SECRET")?;
        let (mut leaked, mut inside) = (0, 0);
        let swaps = while_swapping(&b, &secret, || async {
            for _ in 0..300 {
                let read = text(&b.call("Read", json!({"file_path": b.p("d/f")})).await);
                if read.contains("SECRET") {
                    leaked += 1;
                } else if read.contains("inside") {
                    inside += 1;
                }
            }
        })
        .await?;
        assert!(swaps > 100, "the race ran ({swaps} swaps)");
        if deny {
            assert_eq!(leaked, 0, "a swapped-in link reached the denied file");
            assert!(inside > 0, "reads between swaps still work");
        } else {
            assert!(
                leaked > 0,
                "control: the swap reaches the file when allowed"
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_link_swapped_in_during_writes_plants_nothing_denied() -> TestResult {
    for deny in [true, false] {
        let rules: &[(RuleKind, &str)] = if deny {
            &[(RuleKind::Deny, "Edit(~/**)")]
        } else {
            &[]
        };
        let b = bench(PermissionMode::BypassPermissions, rules).await?;
        std::fs::create_dir(b.ws.join("d"))?;
        let target = b.outside.join("target");
        std::fs::create_dir(&target)?;
        let mut written = 0;
        let swaps = while_swapping(&b, &target, || async {
            for i in 0..300 {
                let path = b.p(&format!("d/new-{i}.txt"));
                let result = b
                    .call("Write", json!({"file_path": path, "content": "PLANTED"}))
                    .await;
                if !result.is_error {
                    written += 1;
                }
            }
        })
        .await?;
        assert!(swaps > 100, "the race ran ({swaps} swaps)");
        let planted = std::fs::read_dir(&target)?.count();
        if deny {
            assert_eq!(planted, 0, "a write went through a swapped-in link");
            assert!(written > 0, "writes between swaps still work");
        } else {
            assert!(
                planted > 0,
                "control: the swap reaches outside when allowed"
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn hard_links_do_not_defeat_glob_deny_rules() -> TestResult {
    for deny in [true, false] {
        let rules: &[(RuleKind, &str)] = if deny {
            &[
                (RuleKind::Deny, "Read(~/secret/**)"),
                (RuleKind::Deny, "Edit(~/secret/**)"),
            ]
        } else {
            &[]
        };
        let b = bench(PermissionMode::BypassPermissions, rules).await?;
        let key = b.outside.join("secret/key");
        std::fs::create_dir_all(b.outside.join("secret"))?;
        std::fs::write(&key, "KEY-SECRET\n")?;
        // Another name for the key, inside the workspace.
        std::fs::hard_link(&key, b.ws.join("notes.txt"))?;
        let read = b.call("Read", json!({"file_path": b.p("notes.txt")})).await;
        let grep = b
            .call(
                "Grep",
                json!({"pattern": "KEY", "path": b.ws, "output_mode": "content"}),
            )
            .await;
        let write = b
            .call(
                "Write",
                json!({"file_path": b.p("notes.txt"), "content": "overwritten"}),
            )
            .await;
        let key_now = std::fs::read_to_string(&key)?;
        if deny {
            assert!(read.denial.is_some(), "{}", text(&read));
            assert!(!text(&grep).contains("KEY-SECRET"), "{}", text(&grep));
            assert!(write.denial.is_some(), "{}", text(&write));
            assert_eq!(key_now, "KEY-SECRET\n");
        } else {
            assert!(
                text(&read).contains("KEY-SECRET"),
                "control: {}",
                text(&read)
            );
            assert!(
                text(&grep).contains("KEY-SECRET"),
                "control: {}",
                text(&grep)
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_name_that_is_not_utf8_hides_no_sibling() -> TestResult {
    use std::os::unix::ffi::OsStrExt;
    let b = bench(PermissionMode::BypassPermissions, &[]).await?;
    std::fs::create_dir(b.ws.join("sub"))?;
    for name in ["a.txt", "c.txt", "sub/d.txt"] {
        std::fs::write(b.ws.join(name), "needle\n")?;
    }
    // WASI carries names as UTF-8: these cannot be named by a tool, and
    // must not take their siblings with them.
    std::fs::write(
        b.ws.join(std::ffi::OsStr::from_bytes(b"b\xff.txt")),
        "needle\n",
    )?;
    std::fs::write(
        b.ws.join("sub")
            .join(std::ffi::OsStr::from_bytes(b"e\xfe.txt")),
        "needle\n",
    )?;
    let globbed = ok_text(
        &b.call("Glob", json!({"pattern": "**/*.txt", "path": b.ws}))
            .await,
    );
    let grepped = ok_text(
        &b.call(
            "Grep",
            json!({"pattern": "needle", "path": b.ws, "output_mode": "files_with_matches"}),
        )
        .await,
    );
    for listing in [&globbed, &grepped] {
        for name in ["a.txt", "c.txt", "sub/d.txt"] {
            assert!(
                listing.lines().any(|l| l == name),
                "{name} missing:\n{listing}"
            );
        }
        assert!(
            listing.contains("2 file names that are not UTF-8 could not be listed"),
            "{listing}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn an_image_whose_bytes_are_not_one_never_reaches_the_model() -> TestResult {
    let b = bench(PermissionMode::BypassPermissions, &[]).await?;
    // Named like an image, holding something else.
    std::fs::write(b.ws.join("fake.png"), "<svg onload=alert(1)>")?;
    let result = b.call("Read", json!({"file_path": b.p("fake.png")})).await;
    let blocks = match &result.content {
        ToolResultContent::Blocks(blocks) => blocks.clone(),
        ToolResultContent::Text(text) => vec![ToolResultBlock::Text { text: text.clone() }],
    };
    assert!(
        !blocks
            .iter()
            .any(|b| matches!(b, ToolResultBlock::Image { .. })),
        "{blocks:?}"
    );
    assert!(text(&result).contains("<svg"), "{}", text(&result));
    // The control: a real PNG is an image block.
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    std::fs::write(b.ws.join("real.png"), png)?;
    let real = b.call("Read", json!({"file_path": b.p("real.png")})).await;
    assert!(
        matches!(&real.content, ToolResultContent::Blocks(blocks) if blocks.iter().any(|b| matches!(b, ToolResultBlock::Image { .. }))),
        "{:?}",
        real.content
    );
    Ok(())
}

/// What a session offers without compiling a first-party component (its
/// embedded `tool.json`) is what the component itself says it is.
#[tokio::test]
async fn embedded_definitions_are_what_each_component_says() -> TestResult {
    let sandbox = carapace_test_support::sandbox()?;
    for plugin in carapace::tools::BUILTIN_PLUGINS {
        let embedded = plugin.definitions()?;
        let component = ToolComponent::load(&sandbox, plugin.name, plugin.wasm).await?;
        let said = component.tools();
        assert_eq!(embedded.len(), said.len(), "{}", plugin.name);
        for (ours, theirs) in embedded.iter().zip(said) {
            assert_eq!(
                (&ours.name, &ours.description, &ours.annotations),
                (&theirs.name, &theirs.description, &theirs.annotations),
                "{}",
                plugin.name
            );
            let schema = |text: &str| serde_json::from_str::<Value>(text);
            assert_eq!(
                schema(&ours.input_schema)?,
                schema(&theirs.input_schema)?,
                "{}",
                plugin.name
            );
        }
    }
    Ok(())
}
