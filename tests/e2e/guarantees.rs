//! The README's guarantees, attacked through the binary as a
//! prompt-injected model would (issue 20): each attempt must fail as
//! carapace runs it, and each has a control showing the same path works
//! for an attempt that is allowed — so the test sees the attempt ran.

use super::support;
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{TestResult, last_line, text_of};

/// `carapace -p go` in `ws`, stream-json, in permission mode `mode`, with
/// further arguments or variables added by the caller.
fn print_run(server: &ScriptedServer, ws: &std::path::Path, mode: &str) -> std::process::Command {
    let mut command = support::against(server, ws);
    command.args([
        "-p",
        "go",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        mode,
    ]);
    command
}

fn bypass_run(
    server: &ScriptedServer,
    ws: &std::path::Path,
) -> Result<support::Run, Box<dyn std::error::Error>> {
    support::Run::from_output(print_run(server, ws, "bypassPermissions").output()?)
}

/// One Bash line nested thousands deep in each construct used to overflow
/// the host's stack during the analysis — before anything was asked, with
/// no result line. Now each is an error result and the run ends cleanly;
/// the control, each construct a few levels deep, really runs.
#[test]
fn a_bash_line_nested_thousands_deep_is_an_error_result_not_a_crash() -> TestResult {
    let ws = tempfile::tempdir()?;
    let deep = |depth: usize| {
        vec![
            format!("{}echo{}", "$(".repeat(depth), ")".repeat(depth)),
            format!("echo {}x{}", "${x:-".repeat(depth), "}".repeat(depth)),
            format!("{}echo x;{}", "{ ".repeat(depth), " };".repeat(depth)),
        ]
    };
    for (depth, refused) in [(5000, true), (3, false)] {
        let calls: Vec<Block> = deep(depth)
            .into_iter()
            .enumerate()
            .map(|(i, line)| {
                let marker = format!("\necho ran-{i}");
                Block::tool_use(
                    format!("toolu_{i}"),
                    "Bash",
                    json!({"command": line + &marker}),
                )
            })
            .collect();
        let server = ScriptedServer::start(vec![Reply::tool_uses(calls), Reply::text("done")])?;
        let out = bypass_run(&server, ws.path())?;
        assert_eq!(out.status, Some(0), "depth {depth}: {}", out.stderr);
        let result = last_line(&out.stdout)?;
        assert_eq!(result["subtype"], "success");
        let results = support::second_request_results(&server)?;
        assert_eq!(results.len(), 3, "every call paired");
        for (i, block) in results.iter().enumerate() {
            let text = text_of(block);
            if refused {
                assert_eq!(block["is_error"], true, "{text}");
                assert!(text.contains("not run"), "{text}");
            } else {
                assert_ne!(block["is_error"], true, "{text}");
                assert!(
                    text.contains(&format!("ran-{i}")),
                    "the control ran: {text}"
                );
            }
        }
    }
    Ok(())
}

/// Grants are resolved in the host, where `/proc/self` is carapace: its
/// environment holds the API key. No tool may be granted process
/// information, however it is named, even in bypassPermissions mode; the
/// control reads an ordinary file outside the workspace the same way.
#[test]
fn no_tool_is_granted_process_information() -> TestResult {
    let ws = tempfile::tempdir()?;
    let outside = tempfile::tempdir()?;
    let ordinary = outside.path().join("env.txt");
    std::fs::write(&ordinary, "ANTHROPIC_API_KEY=not-the-key\n")?;
    let calls = vec![
        Block::tool_use(
            "toolu_0",
            "Grep",
            json!({"pattern": "test-key", "path": "/proc", "output_mode": "content"}),
        ),
        Block::tool_use(
            "toolu_1",
            "Read",
            json!({"file_path": "/proc/self/environ"}),
        ),
        Block::tool_use("toolu_2", "Read", json!({"file_path": "/dev/fd/0"})),
        Block::tool_use(
            "toolu_3",
            "Glob",
            json!({"pattern": "*/environ", "path": "/proc"}),
        ),
        Block::tool_use("toolu_4", "Read", json!({"file_path": ordinary})),
    ];
    let server = ScriptedServer::start(vec![Reply::tool_uses(calls), Reply::text("done")])?;
    let out = bypass_run(&server, ws.path())?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let results = support::second_request_results(&server)?;
    assert_eq!(results.len(), 5);
    for block in &results[..4] {
        let text = text_of(block);
        assert!(
            !text.contains("test-key"),
            "the key reached the model: {text}"
        );
        assert_eq!(block["is_error"], true, "{text}");
    }
    for block in [&results[0], &results[3]] {
        let text = text_of(block);
        assert!(text.contains("process information"), "{text}");
    }
    // Control: the same tool reads a file outside the workspace.
    let control = text_of(&results[4]);
    assert!(control.contains("not-the-key"), "{control}");
    Ok(())
}

/// Write, Edit and NotebookEdit protect what makes a program run later by
/// what it means, as commands do: git's control files at any depth and
/// under any name (`.git/commondir` points git at another configuration),
/// the folder `core.hooksPath` names, editors' folders, direnv's file, and
/// with `--add-dir ~` the home directory's start-up files. In acceptEdits
/// mode each is asked, so print mode refuses it; the control writes an
/// ordinary file in the same run.
#[test]
fn writing_tools_protect_what_makes_programs_run_by_meaning() -> TestResult {
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    let w = ws.path();
    for dir in [
        ".git",
        "lib/.git/hooks",
        "vendor/x/objects",
        "vendor/x/refs",
        "tools/hooks",
    ] {
        std::fs::create_dir_all(w.join(dir))?;
    }
    std::fs::write(w.join(".git/config"), "[core]\n\thooksPath = tools/hooks\n")?;
    std::fs::write(w.join("vendor/x/HEAD"), "ref: refs/heads/main\n")?;
    let targets = [
        w.join(".git/commondir"),
        w.join(".git/config.worktree"),
        w.join("lib/.git/hooks/post-checkout"),
        w.join("vendor/x/config"),
        w.join("tools/hooks/pre-commit"),
        w.join("sub/.vscode/tasks.json"),
        w.join(".idea/workspace.xml"),
        w.join("a/.envrc"),
        home.path().join(".gitconfig"),
        home.path().join(".ssh/config"),
        home.path().join(".local/bin/git"),
        home.path().join(".config/git/hooks/pre-push"),
    ];
    let ordinary = w.join("src/ok.txt");
    let mut calls: Vec<Block> = targets
        .iter()
        .enumerate()
        .map(|(i, path)| {
            Block::tool_use(
                format!("toolu_{i}"),
                "Write",
                json!({"file_path": path, "content": "pwned\n"}),
            )
        })
        .collect();
    calls.push(Block::tool_use(
        "toolu_ok",
        "Write",
        json!({"file_path": ordinary, "content": "fine\n"}),
    ));
    let server = ScriptedServer::start(vec![Reply::tool_uses(calls), Reply::text("done")])?;
    let home_dir = home.path().to_string_lossy().into_owned();
    let out = support::Run::from_output(
        print_run(&server, w, "acceptEdits")
            .env("HOME", home.path())
            .args(["--add-dir", &home_dir])
            .output()?,
    )?;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let results = support::second_request_results(&server)?;
    assert_eq!(results.len(), targets.len() + 1);
    for (path, block) in targets.iter().zip(&results) {
        assert_eq!(
            block["is_error"],
            true,
            "{}: {}",
            path.display(),
            text_of(block)
        );
        let written = std::fs::read_to_string(path).unwrap_or_default();
        assert!(!written.contains("pwned"), "{} was written", path.display());
    }
    // Control: the same tool, mode and run write an ordinary file.
    assert_eq!(std::fs::read_to_string(&ordinary)?, "fine\n");
    Ok(())
}

/// Network for commands, by domain, as a user configures it: with
/// `sandbox.network.allowedDomains` (here through `--settings`) a command
/// reaches the allowed name through carapace's proxy, and nothing else; a
/// project file in an untrusted workspace cannot widen the list (a
/// warning says so), and without any list commands have no network.
#[test]
fn commands_reach_the_domains_the_user_allows_and_nothing_else() -> TestResult {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 2048];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = std::io::Write::write_all(
                &mut stream,
                b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\npong",
            );
        }
    });
    let curl = |host: &str| {
        Block::tool_use(
            format!("toolu_{host}"),
            "Bash",
            json!({"command": format!("curl -s -m 5 http://{host}:{port}/ || echo failed")}),
        )
    };
    let run =
        |ws: &std::path::Path, extra: &[&str]| -> Result<Vec<Value>, Box<dyn std::error::Error>> {
            let server = ScriptedServer::start(vec![
                Reply::tool_uses(vec![curl("localhost"), curl("127.0.0.1")]),
                Reply::text("done"),
            ])?;
            let out = support::Run::from_output(
                print_run(&server, ws, "bypassPermissions")
                    .args(extra)
                    .output()?,
            )?;
            assert_eq!(out.status, Some(0), "{}", out.stderr);
            Ok(support::second_request_results(&server)?
                .iter()
                .map(|b| json!(text_of(b)))
                .collect())
        };
    let ws = tempfile::tempdir()?;
    let allowed = json!({"sandbox": {"network": {"allowedDomains": ["localhost"]}}}).to_string();
    let said = run(ws.path(), &["--settings", &allowed])?;
    assert!(
        said[0].as_str().is_some_and(|t| t.contains("pong")),
        "{said:?}"
    );
    assert!(
        said[1].as_str().is_some_and(|t| !t.contains("pong")),
        "{said:?}"
    );
    // The same list from an untrusted project: ignored, nothing reached.
    let project = tempfile::tempdir()?;
    std::fs::create_dir_all(project.path().join(".carapace"))?;
    std::fs::write(project.path().join(".carapace/settings.json"), &allowed)?;
    let said = run(project.path(), &[])?;
    assert!(
        said.iter()
            .all(|t| t.as_str().is_some_and(|t| !t.contains("pong"))),
        "{said:?}"
    );
    Ok(())
}
