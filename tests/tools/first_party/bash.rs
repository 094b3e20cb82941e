//! Bash.

use super::*;

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
    let unlisted = b.call("Bash", json!({"command": "mkdir unlisted"})).await;
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
    // Refused before anything ran: no process was started for it.
    let needle = smuggled_file.to_string_lossy();
    assert_eq!(
        carapace_test_support::processes::mentioning(&needle),
        Vec::<u32>::new()
    );
    assert!(!smuggled_file.exists());
    assert_eq!(shells.read_status("bash_1")?, ShellStatus::Running);
    shells.kill_all().await;
    assert_eq!(shells.read_status("bash_1")?, ShellStatus::Killed);
    Ok(())
}
