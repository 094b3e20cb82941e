//! Escape attempts against the sandbox. Each test runs the hostile
//! `escape-probe` component with a grant and fails if an attempt that must
//! be refused succeeds. Each also checks that what was granted does work, so
//! a sandbox that refuses everything cannot pass.

use carapace::sandbox::{
    CallLimits, FileAccess, Grant, Sandbox, SandboxConfig, SandboxError, ToolComponent,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[path = "search_escape.rs"]
mod search_escape;

#[path = "residue_escape.rs"]
mod residue_escape;

#[path = "creation_escape.rs"]
mod creation_escape;

async fn probe() -> Result<ToolComponent, Box<dyn std::error::Error>> {
    probe_in(SandboxConfig::default()).await
}

/// The probe in a sandbox made from `config` (a weakened one, for a
/// control).
async fn probe_in(config: SandboxConfig) -> Result<ToolComponent, Box<dyn std::error::Error>> {
    let config = SandboxConfig {
        cache_dir: carapace_test_support::component_cache(),
        ..config
    };
    let sandbox = Sandbox::new(config)?;
    let wasm =
        std::fs::read(Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("escape_probe.wasm"))?;
    Ok(ToolComponent::load(&sandbox, "escape-probe", &wasm).await?)
}

/// Runs the attempts under `grant`; returns one report per attempt.
async fn attempt(
    probe: &ToolComponent,
    grant: &Grant,
    limits: &CallLimits,
    attempts: Value,
) -> Result<Vec<Value>, SandboxError> {
    let count = attempts.as_array().map_or(0, Vec::len);
    let input = json!({"attempts": attempts});
    let invocation = carapace::sandbox::ToolInvocation::new("Probe", &input, grant, limits);
    match probe.call(&invocation).await {
        Ok(carapace::sandbox::Called { output, .. }) => {
            let text = match output.content.first() {
                Some(carapace::sandbox::ToolContent::Text(text)) => text.clone(),
                _ => String::new(),
            };
            // A report that cannot be read is a failed test, never an
            // empty list that every check passes over.
            let reports: Vec<Value> = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("the probe's report is not JSON ({e}): {text}"));
            assert_eq!(reports.len(), count, "one report per attempt: {text}");
            Ok(reports)
        }
        Err(carapace::sandbox::CallError::Sandbox(e)) => Err(e),
        Err(failure) => panic!("probe refused its input: {failure:?}"),
    }
}

fn ok(report: &Value) -> bool {
    report["ok"].as_bool().unwrap_or(false)
}

fn workspace() -> Result<(tempfile::TempDir, PathBuf), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = std::fs::canonicalize(dir.path())?;
    std::fs::create_dir(root.join("ws"))?;
    std::fs::create_dir(root.join("outside"))?;
    std::fs::write(root.join("ws/granted.txt"), "granted content")?;
    std::fs::write(root.join("ws/sibling.txt"), "sibling secret")?;
    std::fs::write(root.join("outside/secret.txt"), "outside secret")?;
    Ok((dir, root))
}

#[tokio::test]
async fn a_single_file_grant_does_not_expose_its_siblings_or_parents() -> TestResult {
    let probe = probe().await?;
    let (_dir, root) = workspace()?;
    let granted = root.join("ws/granted.txt");
    let grant = Grant::none().read_file(&granted)?;
    let s = |p: &str| root.join(p).to_string_lossy().into_owned();
    let reports = attempt(
        &probe,
        &grant,
        &CallLimits::default(),
        json!([
            {"op": "read", "path": s("ws/granted.txt")},
            {"op": "read", "path": s("ws/sibling.txt")},
            {"op": "read", "path": format!("{}/../outside/secret.txt", s("ws"))},
            {"op": "read", "path": s("outside/secret.txt")},
            {"op": "read", "path": "/etc/passwd"},
            {"op": "list", "path": s("ws")},
            {"op": "list", "path": "/"},
        ]),
    )
    .await?;
    assert_eq!(
        reports[0]["detail"], "granted content",
        "the granted file must be readable: {reports:?}"
    );
    for report in &reports[1..5] {
        assert!(!ok(report), "escape succeeded: {report}");
    }
    // Listing the granted file's directory shows that file and nothing else.
    assert_eq!(reports[5]["detail"], "granted.txt", "{}", reports[5]);
    // The host's root always holds `etc` and `usr`: a listing of `/` that
    // showed either would be the host's.
    let root_listing = reports[6]["detail"].as_str().unwrap_or("");
    assert!(
        !ok(&reports[6]) || !root_listing.split(',').any(|e| e == "etc" || e == "usr"),
        "{}",
        reports[6]
    );
    // Control: granted the folder instead of the file, the same reads of
    // the sibling and the listing succeed — the attempts are real.
    let folder = Grant::none().tree(root.join("ws"), FileAccess::Read)?;
    let reports = attempt(
        &probe,
        &folder,
        &CallLimits::default(),
        json!([{"op": "read", "path": s("ws/sibling.txt")}, {"op": "list", "path": s("ws")}]),
    )
    .await?;
    assert!(
        ok(&reports[0]),
        "the control reads the sibling: {}",
        reports[0]
    );
    let listed = reports[1]["detail"].as_str().unwrap_or("");
    assert!(listed.contains("sibling.txt"), "{}", reports[1]);
    Ok(())
}

#[tokio::test]
async fn a_read_grant_cannot_write_create_or_delete() -> TestResult {
    let probe = probe().await?;
    let (_dir, root) = workspace()?;
    let granted = root.join("ws/granted.txt");
    let s = |p: &str| root.join(p).to_string_lossy().into_owned();
    let file_grant = Grant::none().read_file(&granted)?;
    let reports = attempt(
        &probe,
        &file_grant,
        &CallLimits::default(),
        json!([
            {"op": "write", "path": s("ws/granted.txt")},
            {"op": "create", "path": s("ws/new.txt")},
            {"op": "remove", "path": s("ws/granted.txt")},
        ]),
    )
    .await?;
    for report in &reports {
        assert!(
            !ok(report),
            "write through a read grant succeeded: {report}"
        );
    }
    let tree_grant = Grant::none().tree(root.join("ws"), FileAccess::Read)?;
    let reports = attempt(
        &probe,
        &tree_grant,
        &CallLimits::default(),
        json!([
            {"op": "read", "path": s("ws/sibling.txt")},
            {"op": "write", "path": s("ws/sibling.txt")},
            {"op": "create", "path": s("ws/new.txt")},
        ]),
    )
    .await?;
    assert!(
        ok(&reports[0]),
        "a read tree grant must allow reading: {}",
        reports[0]
    );
    assert!(!ok(&reports[1]) && !ok(&reports[2]), "{reports:?}");
    assert_eq!(std::fs::read_to_string(&granted)?, "granted content");
    assert_eq!(
        std::fs::read_to_string(root.join("ws/sibling.txt"))?,
        "sibling secret"
    );
    assert!(!root.join("ws/new.txt").exists());
    // Control: the same write through a write grant on the file works, so
    // the read grant is what refused it.
    let write_grant = Grant::none().write_file(&granted)?;
    let reports = attempt(
        &probe,
        &write_grant,
        &CallLimits::default(),
        json!([{"op": "write", "path": s("ws/granted.txt")}]),
    )
    .await?;
    assert!(ok(&reports[0]), "the control writes: {}", reports[0]);
    assert_ne!(std::fs::read_to_string(&granted)?, "granted content");
    Ok(())
}

#[tokio::test]
async fn symlinks_inside_a_grant_do_not_lead_out_of_it() -> TestResult {
    let probe = probe().await?;
    let (_dir, root) = workspace()?;
    std::os::unix::fs::symlink(
        root.join("outside/secret.txt"),
        root.join("ws/absolute-link"),
    )?;
    std::os::unix::fs::symlink("../outside/secret.txt", root.join("ws/relative-link"))?;
    std::os::unix::fs::symlink("granted.txt", root.join("ws/inner-link"))?;
    let s = |p: &str| root.join(p).to_string_lossy().into_owned();
    let grant = Grant::none().tree(root.join("ws"), FileAccess::Read)?;
    let reports = attempt(
        &probe,
        &grant,
        &CallLimits::default(),
        json!([
            {"op": "read", "path": s("ws/inner-link")},
            {"op": "read", "path": s("ws/absolute-link")},
            {"op": "read", "path": s("ws/relative-link")},
        ]),
    )
    .await?;
    assert_eq!(
        reports[0]["detail"], "granted content",
        "a link inside the grant works: {}",
        reports[0]
    );
    assert!(!ok(&reports[1]), "absolute symlink escaped: {}", reports[1]);
    assert!(!ok(&reports[2]), "relative symlink escaped: {}", reports[2]);
    Ok(())
}

#[tokio::test]
async fn no_network_and_no_environment_unless_granted() -> TestResult {
    let probe = probe().await?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?.to_string();
    let reports = attempt(
        &probe,
        &Grant::none(),
        &CallLimits::default(),
        json!([
            {"op": "connect", "addr": addr},
            {"op": "env_all"},
            {"op": "env", "name": "PATH"},
            {"op": "env", "name": "ANTHROPIC_API_KEY"},
        ]),
    )
    .await?;
    assert!(
        !ok(&reports[0]),
        "connected without a network grant: {}",
        reports[0]
    );
    assert!(listener.accept().is_err(), "the listener saw a connection");
    assert!(
        !ok(&reports[1]),
        "the guest saw environment variables: {}",
        reports[1]
    );
    assert!(!ok(&reports[2]) && !ok(&reports[3]), "{reports:?}");

    let granted = Grant::none().env_var("GRANTED_VAR", "visible");
    let reports = attempt(
        &probe,
        &granted,
        &CallLimits::default(),
        json!([{"op": "env_all"}, {"op": "env", "name": "GRANTED_VAR"}]),
    )
    .await?;
    assert_eq!(
        reports[0]["detail"], "GRANTED_VAR",
        "only the granted variable: {}",
        reports[0]
    );
    assert_eq!(reports[1]["detail"], "visible");
    // Control: with guests' sockets let through (a weakened sandbox), the
    // same connect reaches the listener.
    let weak = probe_in(SandboxConfig {
        weakened_sockets: true,
        ..SandboxConfig::default()
    })
    .await?;
    // The listener answers the control's request (the probe reads a reply).
    let answered = std::thread::spawn(move || {
        use std::io::Write;
        for _ in 0..3000 {
            if let Ok((mut stream, _)) = listener.accept() {
                let _ = stream.write_all(b"pong");
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    });
    let reports = attempt(
        &weak,
        &Grant::none(),
        &CallLimits::default(),
        json!([{"op": "connect", "addr": addr}]),
    )
    .await?;
    assert!(ok(&reports[0]), "the control connects: {}", reports[0]);
    assert!(
        answered.join().unwrap_or(false),
        "the listener saw the control's connection"
    );
    Ok(())
}

#[tokio::test]
async fn a_spinning_guest_is_stopped_at_its_deadline_and_the_host_lives_on() -> TestResult {
    let probe = probe().await?;
    let limits = CallLimits {
        deadline: Duration::from_millis(300),
        ..CallLimits::default()
    };
    let spun = attempt(&probe, &Grant::none(), &limits, json!([{"op": "spin"}])).await;
    assert!(
        matches!(spun, Err(SandboxError::Timeout(d)) if d == limits.deadline),
        "{spun:?}"
    );
    let slept = attempt(
        &probe,
        &Grant::none(),
        &limits,
        json!([{"op": "sleep", "ms": 5000}]),
    )
    .await;
    assert!(matches!(slept, Err(SandboxError::Timeout(_))), "{slept:?}");
    let after = attempt(
        &probe,
        &Grant::none(),
        &CallLimits::default(),
        json!([{"op": "sleep", "ms": 1}]),
    )
    .await?;
    assert!(ok(&after[0]));
    Ok(())
}

#[tokio::test]
async fn memory_and_output_caps_hold_and_crashes_are_reported() -> TestResult {
    let probe = probe().await?;
    let limits = CallLimits {
        memory_bytes: 64 << 20,
        output_bytes: 1 << 20,
        ..CallLimits::default()
    };
    let big = attempt(
        &probe,
        &Grant::none(),
        &limits,
        json!([{"op": "alloc", "mib": 512}]),
    )
    .await;
    assert!(
        matches!(big, Err(SandboxError::MemoryLimit { limit_bytes }) if limit_bytes == 64 << 20),
        "{big:?}"
    );
    let small = attempt(
        &probe,
        &Grant::none(),
        &limits,
        json!([{"op": "alloc", "mib": 8}]),
    )
    .await?;
    assert!(
        ok(&small[0]),
        "an allocation under the cap works: {}",
        small[0]
    );

    let flood = attempt(
        &probe,
        &Grant::none(),
        &limits,
        json!([{"op": "output", "bytes": 2 << 20}]),
    )
    .await;
    assert!(
        matches!(flood, Err(SandboxError::OutputTooLarge { .. })),
        "{flood:?}"
    );

    let crash = attempt(&probe, &Grant::none(), &limits, json!([{"op": "panic"}])).await;
    match crash {
        Err(SandboxError::Trap { stderr, .. }) => {
            assert!(stderr.contains("panicked on purpose"), "{stderr}")
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    Ok(())
}

/// Each kind of component runs in its own world: a hook's instance links
/// WASI and nothing else, so a component importing the MCP transport or
/// the tool host interfaces cannot even be linked as a hook. (The control:
/// the same bytes link where they belong.)
#[tokio::test]
async fn a_hook_cannot_link_another_worlds_host_interfaces() -> TestResult {
    use carapace::hooks::{CommandHook, HookComponent};
    use carapace::mcp::bridge::{BRIDGE_WASM, McpBridge};
    let sandbox = carapace_test_support::sandbox()?;
    // The MCP bridge imports carapace:mcp/transport.
    assert!(McpBridge::load(&sandbox, BRIDGE_WASM).is_ok());
    for loaded in [
        CommandHook::load(&sandbox, "bridge-as-hook", BRIDGE_WASM)
            .await
            .err(),
        HookComponent::load(&sandbox, "bridge-as-hook", BRIDGE_WASM)
            .await
            .err(),
    ] {
        let message = loaded.ok_or("the bridge linked as a hook")?.describe();
        assert!(message.contains("carapace:mcp/transport"), "{message}");
    }
    // A tool imports carapace:tool/host.
    let tool =
        std::fs::read(Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("escape_probe.wasm"))?;
    assert!(ToolComponent::load(&sandbox, "probe", &tool).await.is_ok());
    let as_hook = CommandHook::load(&sandbox, "tool-as-hook", &tool)
        .await
        .err()
        .ok_or("a tool linked as a hook")?
        .describe();
    assert!(as_hook.contains("carapace:tool/"), "{as_hook}");
    Ok(())
}
