//! Escape attempts.

use super::*;

/// Runs one UserPromptSubmit with an inline script through a hook loaded
/// from `handler` settings; returns the attempts' report.
async fn attempts(
    ws: &Path,
    grants: Value,
    attempts: Value,
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    attempts_in(SandboxConfig::default(), ws, grants, attempts).await
}

/// [`attempts`] in a sandbox made from `config` (a weakened one, for a
/// control).
async fn attempts_in(
    config: SandboxConfig,
    ws: &Path,
    grants: Value,
    attempts: Value,
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: carapace_test_support::component_cache(),
        ..config
    })?;
    let handler = json!({"type": "wasm", "path": support::hook_probe(), "grants": grants});
    let runtime =
        support::load_hooks(&sandbox, &hook_on("UserPromptSubmit", "", handler), ws).await?;
    let script = json!({"UserPromptSubmit": {"attempts": attempts}});
    let answer = runtime
        .run(HookEvent::UserPromptSubmit {
            prompt: script.to_string(),
        })
        .await;
    if let Some(error) = answer.error {
        return Err(error.into());
    }
    let report = answer.additional_context.join("");
    Ok(serde_json::from_str(&report)?)
}

fn worked(report: &[Value]) -> Vec<bool> {
    report.iter().map(|r| r["ok"] == true).collect()
}

#[tokio::test]
async fn a_hook_reads_no_file_it_was_not_granted() -> TestResult {
    let (_dir, ws) = workspace()?;
    std::fs::write(ws.join("secret.txt"), "HOOK_ESCAPE_SECRET")?;
    std::fs::create_dir_all(ws.join("granted"))?;
    std::fs::write(ws.join("granted").join("ok.txt"), "fine")?;
    let secret = ws.join("secret.txt").display().to_string();
    let tries = json!([
        {"op": "read", "path": secret},
        {"op": "read", "path": "/etc/passwd"},
        {"op": "list", "path": "/"},
        {"op": "list", "path": ws.display().to_string()},
        {"op": "read", "path": format!("{}/granted/../secret.txt", ws.display())},
        {"op": "write", "path": secret},
    ]);
    let report = attempts(
        &ws,
        json!({"read": [ws.join("granted").display().to_string()]}),
        tries.clone(),
    )
    .await?;
    assert_eq!(worked(&report), vec![false; 6], "{report:?}");
    assert!(
        !Value::Array(report)
            .to_string()
            .contains("HOOK_ESCAPE_SECRET")
    );
    assert_eq!(std::fs::read_to_string(&secret)?, "HOOK_ESCAPE_SECRET");
    // Granted: the same reads work, so the refusals above were the sandbox's.
    let report = attempts(
        &ws,
        json!({"read": [ws.display().to_string()]}),
        json!([{"op": "read", "path": secret}]),
    )
    .await?;
    assert_eq!(report[0]["detail"], "HOOK_ESCAPE_SECRET");
    Ok(())
}

#[tokio::test]
async fn a_hook_opens_no_socket() -> TestResult {
    let (_dir, ws) = workspace()?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?.to_string();
    // A second listener reached by name: tests aim only at this machine.
    let named = std::net::TcpListener::bind("127.0.0.1:0")?;
    named.set_nonblocking(true)?;
    let by_name = format!("localhost:{}", named.local_addr()?.port());
    let report = attempts(
        &ws,
        json!({"read": [ws.display().to_string()], "write": [ws.join("w").display().to_string()], "env": ["PATH"]}),
        json!([{"op": "connect", "path": addr}, {"op": "connect", "path": by_name}]),
    )
    .await?;
    assert_eq!(report.len(), 2, "both attempts ran: {report:?}");
    assert_eq!(worked(&report), vec![false, false], "{report:?}");
    assert!(listener.accept().is_err(), "nothing reached the listener");
    assert!(
        named.accept().is_err(),
        "nothing reached the named listener"
    );
    // Control: with guests' sockets let through (a weakened sandbox), the
    // same connect reaches the listener, which answers.
    let answered = std::thread::spawn(move || {
        use std::io::Write;
        for _ in 0..3000 {
            if let Ok((mut stream, _)) = listener.accept() {
                let _ = stream.write_all(b"pong");
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        false
    });
    let weak = SandboxConfig {
        weakened_sockets: true,
        ..SandboxConfig::default()
    };
    let report = attempts_in(
        weak,
        &ws,
        json!({}),
        json!([{"op": "connect", "path": addr}]),
    )
    .await?;
    assert_eq!(
        worked(&report),
        vec![true],
        "the control connects: {report:?}"
    );
    assert!(answered.join().unwrap_or(false), "the listener saw it");
    Ok(())
}

#[tokio::test]
async fn a_hook_sees_no_environment_variable_it_was_not_granted() -> TestResult {
    let (_dir, ws) = workspace()?;
    let path = std::env::var("PATH")?;
    let tries = json!([{"op": "env", "name": "PATH"}, {"op": "env", "name": "HOME"},
                       {"op": "env_all"}, {"op": "env", "name": "PWD"}]);
    let report = attempts(&ws, json!({}), tries.clone()).await?;
    // The two variables every hook has name the workspace its input names
    // anyway: PWD (the convention for where a WASI program starts) and
    // CLAUDE_PROJECT_DIR (as a Claude Code command hook is told it), never the
    // host's.
    assert_eq!(
        worked(&report),
        vec![false, false, true, true],
        "{report:?}"
    );
    assert_eq!(
        report[2]["detail"], "PWD,CLAUDE_PROJECT_DIR",
        "nothing of the host's"
    );
    assert_eq!(report[3]["detail"], ws.display().to_string());
    let report = attempts(&ws, json!({"env": ["PATH"]}), tries).await?;
    assert_eq!(
        report[0]["detail"],
        path.as_str(),
        "granted by name: visible"
    );
    assert_eq!(report[1]["ok"], false, "HOME was not granted");
    assert_eq!(
        report[2]["detail"], "PWD,CLAUDE_PROJECT_DIR,PATH",
        "only the granted name exists, besides the workspace's"
    );
    Ok(())
}

#[tokio::test]
async fn a_hook_cannot_be_granted_writes_to_protected_places() -> TestResult {
    let (_dir, ws) = workspace()?;
    hook_script(&ws, json!({}))?;
    let sandbox = carapace_test_support::sandbox()?;
    for protected in [
        ws.join(".carapace"),
        ws.join(".claude").join("hooks"),
        ws.join(".git").join("hooks"),
    ] {
        let mut handler = typed(&ws);
        handler["grants"]["write"] = json!([protected.display().to_string()]);
        handler["failClosed"] = json!(true);
        let loaded = support::load_hooks(&sandbox, &hook_on("Stop", "", handler), &ws).await;
        let error = loaded.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            error.contains("protected"),
            "{}: {error}",
            protected.display()
        );
        assert!(!protected.exists(), "nothing was created");
    }
    // Control: the same handler with a write grant on an ordinary folder
    // loads.
    let mut handler = typed(&ws);
    handler["grants"]["write"] = json!([ws.join("out").display().to_string()]);
    handler["failClosed"] = json!(true);
    let loaded = support::load_hooks(&sandbox, &hook_on("Stop", "", handler), &ws).await;
    assert!(
        loaded.is_ok(),
        "an ordinary write grant loads: {:?}",
        loaded.err().map(|e| e.to_string())
    );
    Ok(())
}

/// A hook granted an ordinary folder plants, in it, what would make git or
/// carapace run its program: refused at the call (nothing sweeps a hook's
/// writes), under several spellings; the weakened sandbox lets each be made.
#[tokio::test]
async fn a_hook_cannot_make_a_protected_name_in_its_granted_folder() -> TestResult {
    let (_dir, ws) = workspace()?;
    let out = ws.join("out");
    let tries = |out: &Path| {
        std::fs::create_dir_all(out.join("bare"))?;
        std::fs::write(out.join("bare/HEAD"), "ref: refs/heads/main\n")?;
        let p = |rel: &str| out.join(rel).display().to_string();
        Ok::<_, std::io::Error>(json!([
            {"op": "create", "path": p(".mcp.json")},
            {"op": "write", "path": p(".Claude")},
            {"op": "create", "path": p("bare/config")},
            {"op": "create", "path": p("CLAUDE.md")},
            {"op": "create", "path": p("plain.txt")},
        ]))
    };
    let grants = json!({"write": [out.display().to_string()]});
    let report = attempts(&ws, grants.clone(), tries(&out)?).await?;
    assert_eq!(
        worked(&report),
        vec![false, false, false, false, true],
        "{report:?}"
    );
    for (i, name) in [".mcp.json", ".Claude", "bare/config", "CLAUDE.md"]
        .iter()
        .enumerate()
    {
        assert!(
            report[i]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("ermission denied")),
            "{name}: {report:?}"
        );
        assert!(!out.join(name).exists(), "{name} exists");
    }
    let (_weak_dir, weak_ws) = workspace()?;
    let weak_out = weak_ws.join("out");
    let weak = SandboxConfig {
        weakened_creation: true,
        ..SandboxConfig::default()
    };
    let report = attempts_in(
        weak,
        &weak_ws,
        json!({"write": [weak_out.display().to_string()]}),
        tries(&weak_out)?,
    )
    .await?;
    assert_eq!(
        worked(&report),
        vec![true; 5],
        "the weakened sandbox: {report:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_hook_is_never_granted_carapaces_credentials_or_the_homes_dotfiles() -> TestResult {
    let (_dir, ws) = workspace()?;
    hook_script(&ws, json!({}))?;
    let home_dir = tempfile::tempdir()?;
    let home = std::fs::canonicalize(home_dir.path())?;
    std::fs::create_dir_all(home.join(".ssh"))?;
    std::fs::create_dir_all(home.join("projects"))?;
    std::fs::write(home.join(".netrc"), "machine x password y")?;
    // A link in the workspace that leads to the keys.
    std::os::unix::fs::symlink(home.join(".ssh"), ws.join("keys"))?;
    let sandbox = carapace_test_support::sandbox()?;
    let load = |grants: Value| {
        let mut handler = typed(&ws);
        handler["grants"] = grants;
        handler["failClosed"] = json!(true);
        let settings = hook_on("Stop", "", handler);
        let sandbox = &sandbox;
        let ws = &ws;
        let home = &home;
        async move {
            support::load_hooks_at_home(sandbox, &settings, ws, home)
                .await
                .err()
                .map(|e| e.to_string())
        }
    };
    let path = |p: &Path| p.display().to_string();
    for (grants, why) in [
        (
            json!({"env": ["ANTHROPIC_API_KEY"]}),
            "never granted to hooks",
        ),
        (
            json!({"env": ["CARAPACE_CONFIG_DIR"]}),
            "never granted to hooks",
        ),
        // Protected by meaning (the reason says what it is).
        (
            json!({"read": [path(&home.join(".ssh"))]}),
            "ssh's configuration",
        ),
        (json!({"read": [path(&home.join(".netrc"))]}), "credentials"),
        (
            json!({"read": [path(&home.join(".aws-cache"))]}),
            "dotfiles",
        ),
        (json!({"read": [path(&home)]}), "home directory"),
        (json!({"read": ["/"]}), "home directory"),
        // Grants are resolved in the host: /proc/self is carapace itself.
        (
            json!({"read": ["/proc/self/environ"]}),
            "process information",
        ),
        (
            json!({"read": ["/proc/thread-self"]}),
            "process information",
        ),
        (json!({"read": ["/dev/fd"]}), "process information"),
        (json!({"read": ["/dev/stdin"]}), "process information"),
        (
            json!({"read": [path(&ws.join("keys"))]}),
            "ssh's configuration",
        ),
        (json!({"write": [path(&ws)]}), "protected"),
        // Credential files: by name, inside a tree, by a key in a file.
        (
            json!({"read": [path(&ws.join("app/.env"))]}),
            "holds credentials",
        ),
        (
            json!({"read": [path(&ws.join("app"))]}),
            "holds credentials",
        ),
        (
            json!({"read": [path(&ws.join("certs/bundle.txt"))]}),
            "holds credentials",
        ),
    ] {
        if why == "holds credentials" {
            std::fs::create_dir_all(ws.join("app"))?;
            std::fs::write(ws.join("app/.env"), "TOKEN=x\n")?;
            std::fs::create_dir_all(ws.join("certs"))?;
            std::fs::write(
                ws.join("certs/bundle.txt"),
                "-----BEGIN EC PRIVATE KEY-----\nx\n",
            )?;
        }
        if why == "protected" {
            // A write tree holding a protected entry.
            std::fs::create_dir_all(ws.join(".git/hooks"))?;
        }
        let error = load(grants.clone()).await.unwrap_or_default();
        assert!(error.contains(why), "{grants}: {error}");
    }
    // The control: the same shapes, harmless names, load.
    for grants in [
        json!({"env": ["PATH"]}),
        json!({"read": [path(&home.join("projects"))]}),
        json!({"write": [path(&ws.join("audit"))]}),
        json!({"read": [path(&ws.join("app/settings.toml"))]}),
    ] {
        if grants.to_string().contains("settings.toml") {
            std::fs::write(ws.join("app/settings.toml"), "a = 1\n")?;
        }
        assert_eq!(load(grants.clone()).await, None, "{grants}");
    }
    Ok(())
}
