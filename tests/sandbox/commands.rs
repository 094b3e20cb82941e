//! Escape attempts against the command sandbox (what Bash and stdio MCP
//! servers run in). The model chose each command and the policy allowed it
//! (bypassPermissions, or an allow rule): only the OS sandbox stands between
//! the command and the host. Every attempt runs twice — as carapace runs it,
//! where it must fail, and with the layer that stops it turned off, where it
//! must succeed (so the test would notice that layer breaking).

use carapace::agent::{ToolCall, ToolCallResult, ToolRuntime};
use carapace::policy::{
    Anchors, PermissionMode, Policy, PolicyConfig, ReadDenials, Rule, RuleKind, RuleSet,
    RuleSource, SourceKind,
};
use carapace::sandbox::{DeniedPaths, ProcessConfig, Sandbox, SandboxConfig, SandboxLayer};
use carapace::tools::{ToolPipeline, ToolRegistry};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[path = "commands/git.rs"]
mod git;
#[path = "commands/guard.rs"]
mod guard;
#[path = "commands/listen.rs"]
mod listen;
#[path = "commands/reach.rs"]
mod reach;

type TestResult = Result<(), Box<dyn std::error::Error>>;
type BoxError = Box<dyn std::error::Error>;

/// A workspace, a directory outside it (another session's files, the
/// user's secrets), and Bash wired as a session wires it.
struct Bench {
    _dirs: Vec<tempfile::TempDir>,
    ws: PathBuf,
    outside: PathBuf,
    pipeline: Arc<ToolPipeline>,
}

/// What a test changes in the bench.
#[derive(Default)]
struct Setup {
    mode: Option<PermissionMode>,
    rules: Vec<(RuleKind, String)>,
    /// Layers turned off: the weakened control.
    without: Vec<SandboxLayer>,
    /// Write roots beside the workspace.
    extra_writes: Vec<PathBuf>,
    memory: Option<u64>,
    /// Bytes the private temp dir holds.
    temp: Option<u64>,
    /// The egress proxy's socket.
    egress: Option<PathBuf>,
    tasks: Option<u64>,
    /// A network grant: without namespaces and Landlock nothing else
    /// keeps a command off the network, and carapace refuses to run it.
    network: bool,
    /// `sandbox.network.allowLocalBinding`.
    bind: bool,
}

impl Setup {
    /// As carapace sets it up (`strong`), or with `layer` turned off: the
    /// two sides of an escape test.
    fn strong_or_without(strong: bool, layer: SandboxLayer) -> Self {
        if strong {
            Setup::default()
        } else {
            Setup::without(&[layer])
        }
    }

    fn without(layers: &[SandboxLayer]) -> Self {
        Setup {
            without: layers.to_vec(),
            ..Setup::default()
        }
    }
}

async fn bench(setup: Setup) -> Result<Bench, BoxError> {
    let ws_dir = tempfile::tempdir()?;
    let out_dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(ws_dir.path())?;
    let outside = std::fs::canonicalize(out_dir.path())?;
    let anchors = Anchors {
        cwd: ws.clone(),
        home: outside.clone(),
        project: ws.clone(),
    };
    let source = RuleSource {
        kind: SourceKind::CliFlag,
        file: None,
    };
    let rules = setup
        .rules
        .iter()
        .map(|(k, r)| Rule::parse(r, *k, source.clone(), &anchors))
        .collect::<Result<Vec<_>, _>>()?;
    let policy = Policy::from_config(PolicyConfig {
        mode: setup.mode.unwrap_or(PermissionMode::BypassPermissions),
        bypass_allowed: false,
        rules: RuleSet::new(rules),
        cwd: ws.clone(),
        additional_dirs: vec![],
        home: outside.join("home"),
        config_dir: outside.join("home/.carapace"),
        internal_hosts: Vec::new(),
        credential_files: Vec::new(),
        masked_files: Vec::new(),
        auto_hard_deny: Vec::new(),
    });
    let mut write_roots = vec![ws.clone()];
    write_roots.extend(setup.extra_writes.iter().cloned());
    // As the session assembles it: the read deny rules, hidden.
    let read_denied = ReadDenials::from_rules(policy.rules(), write_roots.clone())
        .map(|d| Arc::new(d) as Arc<dyn DeniedPaths>);
    let defaults = ProcessConfig::new(&ws);
    let sandbox = Sandbox::new(SandboxConfig {
        guest_cwd: Some(ws.clone()),
        process: Some(ProcessConfig {
            helper: Some(PathBuf::from(env!("CARGO_BIN_EXE_carapace-sandbox"))),
            write_roots,
            read_denied,
            memory_limit: setup.memory.unwrap_or(defaults.memory_limit),
            task_limit: setup.tasks.unwrap_or(defaults.task_limit),
            temp_limit: setup.temp.unwrap_or(defaults.temp_limit),
            egress: setup.egress.clone(),
            // As a session gives it: the policy's whole table.
            protected_names: carapace::policy::command_protected_names(),
            without: setup.without.clone(),
            allow_network: setup.network,
            allow_local_binding: setup.bind,
            ..defaults
        }),
        ..carapace_test_support::sandbox_config()
    })?;
    let registry = ToolRegistry::builtin(&sandbox).await?;
    let pipeline = Arc::new(ToolPipeline::new(
        registry,
        policy,
        carapace::sandbox::CallLimits::default(),
    ));
    Ok(Bench {
        _dirs: vec![ws_dir, out_dir],
        ws,
        outside,
        pipeline,
    })
}

impl Bench {
    async fn bash(&self, command: &str) -> ToolCallResult {
        self.bash_with(json!({"command": command})).await
    }

    async fn bash_with(&self, input: Value) -> ToolCallResult {
        let call = ToolCall {
            id: "toolu_bash".into(),
            name: "Bash".into(),
            input,
            invalid_input: None,
        };
        self.pipeline.clone().call(call).await
    }
}

fn text(result: &ToolCallResult) -> String {
    result.content.text()
}

/// Runs `command` on a bench as carapace sets it up and on one without
/// `layers`; returns both outputs.
async fn both(command: &str, layers: &[SandboxLayer]) -> Result<(String, String), BoxError> {
    let strong = bench(Setup::default()).await?;
    let weak = bench(Setup {
        network: true,
        ..Setup::without(layers)
    })
    .await?;
    let command_for = |b: &Bench| {
        command
            .replace("{ws}", &b.ws.to_string_lossy())
            .replace("{outside}", &b.outside.to_string_lossy())
    };
    let held = text(&strong.bash(&command_for(&strong)).await);
    let escaped = text(&weak.bash(&command_for(&weak)).await);
    Ok((held, escaped))
}

#[tokio::test]
async fn carapaces_own_process_is_out_of_sight() -> TestResult {
    // The host's environment (API keys among it) through /proc.
    let command = format!(
        "tr '\\0' '\\n' < /proc/{}/environ | grep -c '^CARGO_'; ls /proc | grep -c '^[0-9]'",
        std::process::id()
    );
    // Three layers stop it: the private /proc, Landlock's ptrace scoping,
    // and (carapace running as root) a caller with fewer capabilities than
    // its target.
    let (held, escaped) = both(
        &command,
        &[
            SandboxLayer::Namespaces,
            SandboxLayer::Landlock,
            SandboxLayer::Capabilities,
        ],
    )
    .await?;
    assert!(held.contains("No such file"), "{held}");
    let processes: u32 = held
        .lines()
        .rev()
        .find_map(|l| l.trim().parse().ok())
        .ok_or("no process count")?;
    assert!(
        processes < 10,
        "only the call's own processes are visible: {held}"
    );
    let leaked: u32 = escaped
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| format!("the control read nothing: {escaped}"))?;
    assert!(leaked > 0, "the control reads the environment: {escaped}");
    Ok(())
}

#[tokio::test]
async fn signals_stay_inside_the_sandbox() -> TestResult {
    let command = format!("kill -0 {} && echo REACHED", std::process::id());
    let (held, escaped) = both(
        &command,
        &[SandboxLayer::Namespaces, SandboxLayer::Landlock],
    )
    .await?;
    assert!(!held.contains("REACHED"), "{held}");
    assert!(
        escaped.contains("REACHED"),
        "the control signals: {escaped}"
    );
    Ok(())
}

/// A client that connects to `address` (a path, or `@name` for the abstract
/// namespace) and says hello.
fn unix_client(address: &str) -> String {
    let target = match address.strip_prefix('@') {
        Some(name) => format!("'\\0{name}'"),
        None => format!("'{address}'"),
    };
    format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect({target}); s.sendall(b'hi'); print('CONNECTED')\""
    )
}

/// Whether a connection waits on the listener. Asked once the client
/// has ended: a UNIX socket's connect succeeds only once the connection is
/// queued, so one that got through is there already.
fn accepted(listener: &std::os::unix::net::UnixListener) -> bool {
    listener.accept().is_ok()
}

#[tokio::test]
async fn unix_sockets_outside_are_unreachable() -> TestResult {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    // An agent or daemon socket of the user's (ssh-agent, docker.sock).
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("agent.sock");
    let listener = UnixListener::bind(&path)?;
    listener.set_nonblocking(true)?;
    let command = unix_client(&path.to_string_lossy());
    let (held, escaped) = both(&command, &[SandboxLayer::Seccomp, SandboxLayer::Landlock]).await?;
    assert!(!held.contains("CONNECTED"), "{held}");
    assert!(
        escaped.contains("CONNECTED"),
        "the control connects: {escaped}"
    );
    assert!(accepted(&listener), "the control's connection arrived");
    assert!(!accepted(&listener), "nothing else did");

    // An abstract socket (no file to protect; only its namespace).
    let name = format!("carapace-test-{}", std::process::id());
    let listener = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)?;
    listener.set_nonblocking(true)?;
    let (held, escaped) = both(
        &unix_client(&format!("@{name}")),
        &[
            SandboxLayer::Seccomp,
            SandboxLayer::Landlock,
            SandboxLayer::Namespaces,
        ],
    )
    .await?;
    assert!(!held.contains("CONNECTED"), "{held}");
    assert!(
        escaped.contains("CONNECTED"),
        "the control connects: {escaped}"
    );
    assert!(accepted(&listener) && !accepted(&listener));
    Ok(())
}

#[tokio::test]
async fn no_capabilities_no_device_nodes() -> TestResult {
    let command = "grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status; mknod node c 1 3 && echo MADE";
    let (held, escaped) = both(command, &[SandboxLayer::Capabilities]).await?;
    for set in ["CapEff", "CapPrm", "CapBnd", "CapAmb"] {
        assert!(
            held.contains(&format!("{set}:\t0000000000000000")),
            "{set} is empty: {held}"
        );
    }
    assert!(held.contains("NoNewPrivs:\t1"), "{held}");
    assert!(!held.contains("MADE"), "{held}");
    // The control shows what the layer takes away only from a user who has
    // capabilities to lose: root. An ordinary user's command has none
    // either way, and the strong half above still holds.
    if carapace_test_support::runs_as_root() {
        assert!(
            !escaped.contains("CapEff:\t0000000000000000") && escaped.contains("MADE"),
            "the control keeps capabilities: {escaped}"
        );
    } else {
        eprintln!("no_capabilities_no_device_nodes: the control needs root (this run is not)");
    }
    Ok(())
}

#[tokio::test]
async fn protected_paths_cannot_be_written_or_created() -> TestResult {
    // Written through expansions the policy's command analysis cannot see
    // into: the OS sandbox is what holds.
    let attack = "g=.gi; echo 'echo pwned' > ${g}t/hooks/pre-commit; echo '[core] fsmonitor = evil' >> ${g}t/config; \
                  m=.mcp; echo '{}' > $m.json; c=.cla; mkdir -p ${c}ude/x ${g%gi}carapace; mv ${g}t g2; echo ok";
    for strong in [true, false] {
        let b = bench(Setup::strong_or_without(
            strong,
            SandboxLayer::ProtectedPaths,
        ))
        .await?;
        std::fs::create_dir_all(b.ws.join(".git/hooks"))?;
        std::fs::write(b.ws.join(".git/config"), "[core]\n")?;
        let result = b.bash(attack).await;
        let out = text(&result);
        let planted = [".git/hooks/pre-commit", ".mcp.json", ".claude", ".carapace"]
            .iter()
            .filter(|p| b.ws.join(p).exists())
            .count();
        let config = std::fs::read_to_string(b.ws.join(".git/config")).unwrap_or_default();
        if strong {
            assert_eq!(planted, 0, "{out}");
            assert_eq!(config, "[core]\n");
            assert!(b.ws.join(".git").is_dir() && !b.ws.join("g2").exists());
            assert!(out.contains(".mcp.json was not created"), "{out}");
        } else {
            assert!(planted >= 3 || b.ws.join("g2").exists(), "control: {out}");
        }
    }
    Ok(())
}

#[tokio::test]
async fn other_temp_directories_are_out_of_reach() -> TestResult {
    // `outside` stands for another session's staging directory in /tmp.
    let command =
        "echo planted > {outside}/planted; echo mine > $TMPDIR/mine && echo \"tmp=$TMPDIR\"";
    let strong = bench(Setup::default()).await?;
    let run = |b: &Bench| command.replace("{outside}", &b.outside.to_string_lossy());
    let out = text(&strong.bash(&run(&strong)).await);
    assert!(!strong.outside.join("planted").exists(), "{out}");
    let tmp = out
        .lines()
        .find_map(|l| l.strip_prefix("tmp="))
        .ok_or_else(|| format!("the private temp dir is writable: {out}"))?;
    assert!(
        !Path::new(tmp).exists(),
        "the private temp dir goes with the call"
    );
    // The control: all of the temp dir writable, as before.
    let weak = bench(Setup {
        extra_writes: vec![std::env::temp_dir()],
        ..Setup::default()
    })
    .await?;
    let out = text(&weak.bash(&run(&weak)).await);
    assert!(weak.outside.join("planted").exists(), "control: {out}");
    Ok(())
}

#[tokio::test]
async fn nothing_outlives_the_call() -> TestResult {
    // Each command waits until its child has left the session before it
    // returns, times out or is abandoned: otherwise, on a loaded machine,
    // the call could end before the child detached, and the control would
    // lose a survivor to the race rather than to the sandbox.
    let escape = "setsid sh -c 'touch {ws}/gone; sleep 1; echo late > {ws}/late' > /dev/null 2>&1 < /dev/null & until [ -e {ws}/gone ]; do sleep 0.01; done; echo started";
    let stalled = "setsid sh -c 'touch {ws}/gone-too; sleep 4; echo late > {ws}/late-too' > /dev/null 2>&1 < /dev/null & until [ -e {ws}/gone-too ]; do sleep 0.01; done; sleep 30";
    for strong in [true, false] {
        let b = bench(if strong {
            Setup::default()
        } else {
            Setup::without(&[SandboxLayer::Namespaces])
        })
        .await?;
        let ws = b.ws.to_string_lossy().into_owned();
        let escape = escape.replace("{ws}", &ws);
        let abandon = stalled
            .replace("{ws}", &ws)
            .replace("late-too", "late-three")
            .replace("gone-too", "gone-three")
            .replace("done; sleep 30", "done; touch abandoned-started; sleep 30");
        let returned = b.bash(&escape);
        // Long enough for the child to detach however slow the machine, and
        // shorter than the child's wait before it writes.
        let timed_out =
            b.bash_with(json!({"command": stalled.replace("{ws}", &ws), "timeout": 3000}));
        // And a call abandoned mid-way (the session is cancelled) once its
        // command has started what would outlive it.
        let started = b.ws.join("abandoned-started");
        let abandoned = async {
            tokio::select! {
                _ = b.bash(&abandon) => {}
                _ = guard::wait_for(&started) => {}
            }
        };
        let (returned, timed_out, ()) = tokio::join!(returned, timed_out, abandoned);
        assert!(text(&returned).contains("started"), "{}", text(&returned));
        assert!(
            text(&timed_out).contains("timed out"),
            "{}",
            text(&timed_out)
        );
        let survivors = || {
            ["late", "late-too", "late-three"]
                .iter()
                .filter(|f| b.ws.join(f).exists())
                .count()
        };
        if strong {
            // Once nothing that could write them runs, none was written.
            let needle = format!("{ws}/late");
            tokio::task::spawn_blocking(move || {
                carapace_test_support::processes::wait_until_none_mention(
                    &needle,
                    Duration::from_secs(30),
                )
            })
            .await??;
            assert_eq!(survivors(), 0, "a process outlived its call");
        } else {
            // The control's three write, each once its second is up.
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while survivors() < 3 && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(survivors(), 3, "the control's processes outlive the call");
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_command_tree_stays_within_its_task_and_memory_caps() -> TestResult {
    // Forty processes against a cap of sixteen for the whole tree, counted
    // by the one that forks them (a shell dies at its first refused fork).
    let forks = "python3 -c \"import os, time\nn = 0\nfor i in range(40):\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n        time.sleep(3)\n        os._exit(0)\n    n += 1\nprint('forked', n)\"";
    let hog = "python3 -c \"b = bytearray(256 * 2**20); b[::4096] = b'x' * len(b[::4096]); print('ALLOCATED')\"";
    for strong in [true, false] {
        let b = bench(Setup {
            tasks: Some(16),
            memory: Some(64 << 20),
            without: if strong {
                Vec::new()
            } else {
                vec![SandboxLayer::Limits]
            },
            ..Setup::default()
        })
        .await?;
        let counted = text(&b.bash(forks).await);
        let forked: Option<u32> = counted
            .lines()
            .find_map(|l| l.strip_prefix("forked ")?.trim().parse().ok());
        let hogged = text(&b.bash(hog).await);
        if strong {
            assert!(forked.is_some_and(|n| n < 16), "{counted}");
            assert!(!hogged.contains("ALLOCATED"), "{hogged}");
        } else {
            assert_eq!(forked, Some(40), "control: {counted}");
            assert!(hogged.contains("ALLOCATED"), "control: {hogged}");
        }
    }
    Ok(())
}

#[tokio::test]
async fn read_deny_rules_hold_for_commands() -> TestResult {
    // `cat` is allowed; what the read deny rules cover is not there for it.
    let rules = |deny: bool| {
        let mut rules = vec![(RuleKind::Allow, "Bash(cat:*)".to_string())];
        if deny {
            rules.push((RuleKind::Deny, "Read(~/secrets/**)".into()));
            rules.push((RuleKind::Deny, "Read(*.env)".into()));
        }
        rules
    };
    let command = "cat {outside}/secrets/key; cat sub/prod.env; cat {outside}/secrets/link-to-key";
    for deny in [true, false] {
        let b = bench(Setup {
            mode: Some(PermissionMode::Default),
            rules: rules(deny),
            ..Setup::default()
        })
        .await?;
        std::fs::create_dir_all(b.outside.join("secrets"))?;
        std::fs::create_dir_all(b.ws.join("sub"))?;
        std::fs::write(b.outside.join("secrets/key"), "KEY-SECRET")?;
        std::fs::write(b.ws.join("sub/prod.env"), "ENV-SECRET")?;
        // A link inside the workspace to the denied file, and another name
        // for it (a hard link).
        std::os::unix::fs::symlink(b.outside.join("secrets/key"), b.ws.join("key-link.env"))?;
        std::fs::hard_link(b.outside.join("secrets/key"), b.ws.join("innocent.txt"))?;
        let cmd = command.replace("{outside}", &b.outside.to_string_lossy());
        let result = b.bash(&cmd).await;
        let out = text(&result);
        assert!(result.denial.is_none(), "the policy allowed `cat`: {out}");
        let link = text(&b.bash("cat key-link.env; cat innocent.txt").await);
        if deny {
            assert!(
                !out.contains("SECRET") && !link.contains("SECRET"),
                "{out}\n{link}"
            );
        } else {
            assert!(
                out.contains("KEY-SECRET") && out.contains("ENV-SECRET"),
                "control: {out}"
            );
            assert_eq!(link.matches("KEY-SECRET").count(), 2, "control: {link}");
        }
    }
    // Where they cannot be hidden, the command is refused, not run.
    let b = bench(Setup {
        mode: Some(PermissionMode::Default),
        rules: rules(true),
        without: vec![SandboxLayer::Namespaces],
        ..Setup::default()
    })
    .await?;
    std::fs::create_dir_all(b.outside.join("secrets"))?;
    std::fs::write(b.outside.join("secrets/key"), "KEY-SECRET")?;
    let refused = b
        .bash(&format!("cat {}/secrets/key", b.outside.display()))
        .await;
    assert!(refused.is_error, "{}", text(&refused));
    assert!(
        !text(&refused).contains("KEY-SECRET") && text(&refused).contains("cannot be hidden"),
        "{}",
        text(&refused)
    );
    Ok(())
}

/// One command used to fill the disk through its private temp dir. The
/// temp dir is now a tmpfs of the configured size (its pages charged to
/// the call's cgroup): a write past it fails. The control, without the
/// limits layer, writes it all to the disk.
#[tokio::test]
async fn the_private_temp_dir_holds_only_its_configured_size() -> TestResult {
    let command = "dd if=/dev/zero of=\"$TMPDIR/fill\" bs=1M count=48 2>&1; \
                   echo size=$(stat -c %s \"$TMPDIR/fill\")";
    let size_of = |text: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix("size="))
            .and_then(|n| n.trim().parse().ok())
    };
    let strong = bench(Setup {
        temp: Some(16 << 20),
        ..Setup::default()
    })
    .await?;
    let held = text(&strong.bash(command).await);
    assert!(held.contains("No space left"), "{held}");
    let kept = size_of(&held).ok_or_else(|| format!("the attempt did not run: {held}"))?;
    assert!(kept <= 16 << 20, "{kept} bytes: {held}");
    let weak = bench(Setup {
        temp: Some(16 << 20),
        ..Setup::without(&[SandboxLayer::Limits])
    })
    .await?;
    let escaped = text(&weak.bash(command).await);
    assert_eq!(size_of(&escaped), Some(48 << 20), "{escaped}");
    Ok(())
}

/// Protection by meaning, not by a list of top-level names: a nested
/// clone's git hooks, a bare repository under another name, an editor's
/// tasks in a subfolder, direnv's file, cargo's configuration — each
/// already there, each written by a command the analysis cannot see into.
/// The control, without the protected-paths layer, plants them all.
#[tokio::test]
async fn what_makes_a_program_run_later_is_protected_at_any_depth() -> TestResult {
    let attack = "for f in lib/.git/hooks/post-checkout vendor/x/config sub/.vscode/tasks.json \
                  a/b/.envrc tool/.cargo/config.toml; do echo pwned > \"$f\" && echo \"wrote $f\"; done; echo done";
    for strong in [true, false] {
        let b = bench(Setup::strong_or_without(
            strong,
            SandboxLayer::ProtectedPaths,
        ))
        .await?;
        for dir in [
            "lib/.git/hooks",
            "vendor/x/objects",
            "vendor/x/refs",
            "sub/.vscode",
            "a/b",
            "tool/.cargo",
        ] {
            std::fs::create_dir_all(b.ws.join(dir))?;
        }
        std::fs::write(b.ws.join("vendor/x/HEAD"), "ref: refs/heads/main\n")?;
        std::fs::write(b.ws.join("vendor/x/config"), "[core]\n")?;
        std::fs::write(b.ws.join("a/b/.envrc"), "export A=1\n")?;
        let out = text(&b.bash(attack).await);
        assert!(out.contains("done"), "the attempt ran: {out}");
        let planted = [
            "lib/.git/hooks/post-checkout",
            "vendor/x/config",
            "sub/.vscode/tasks.json",
            "a/b/.envrc",
            "tool/.cargo/config.toml",
        ]
        .iter()
        .filter(|p| std::fs::read_to_string(b.ws.join(p)).is_ok_and(|t| t.contains("pwned")))
        .count();
        if strong {
            assert_eq!(planted, 0, "{out}");
        } else {
            assert_eq!(planted, 5, "control: {out}");
        }
    }
    Ok(())
}

/// The user acts while a command runs: `git init` in the workspace (here
/// its effect: a `.git` with a commit's files). carapace used to delete
/// any protected name that appeared during the call, whoever made it, and
/// the user lost the repository; then it moved it aside. Now the command
/// cannot make one (the creation guard), so what appears is the user's and
/// stays where the user put it, untouched. The command waits on the user's
/// marker, not on a clock.
#[tokio::test]
async fn a_repository_the_user_makes_during_a_command_is_left_alone() -> TestResult {
    let b = bench(Setup::default()).await?;
    let command = "touch started; i=0; while [ ! -e user-done ] && [ $i -lt 3000 ]; do \
                   sleep 0.01; i=$((i+1)); done; echo waited=$i";
    let ws = b.ws.clone();
    let user = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        for _ in 0..3000 {
            if ws.join("started").exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::fs::create_dir_all(ws.join(".git/objects/ab"))?;
        std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n")?;
        std::fs::write(ws.join(".git/objects/ab/cdef"), "the user's commit\n")?;
        std::fs::write(ws.join("user-done"), "")
    });
    let out = text(&b.bash(command).await);
    user.await??;
    assert!(out.contains("waited="), "the command ran: {out}");
    assert!(
        !out.contains("waited=3000"),
        "the user acted during the call: {out}"
    );
    assert_eq!(
        std::fs::read_to_string(b.ws.join(".git/objects/ab/cdef"))?,
        "the user's commit\n",
        "the user's repository is where the user made it: {out}"
    );
    let moved = std::fs::read_dir(&b.ws)?
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains("carapace-moved"));
    assert!(!moved, "nothing was moved: {out}");
    Ok(())
}

/// A loopback HTTP server of the test's own, answering `pong`, counting
/// the connections it accepted.
fn pong_server() -> Result<(u16, Arc<std::sync::atomic::AtomicUsize>), BoxError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut stream = stream;
            let mut buf = [0u8; 2048];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = std::io::Write::write_all(
                &mut stream,
                b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\npong",
            );
        }
    });
    Ok((port, seen))
}

/// Network for commands, by domain: the command keeps its own network
/// namespace and reaches out only through carapace's proxy. An allowed
/// name is reached (curl through the proxy variables, HTTP and SOCKS5);
/// the same server under other spellings, a direct connection past the
/// proxy, and a name not listed are not. The control, with a network
/// grant, reaches it directly.
#[tokio::test]
async fn commands_reach_only_the_allowed_domains_through_the_proxy() -> TestResult {
    let (port, seen) = pong_server()?;
    let dir = tempfile::Builder::new()
        .prefix("carapace-egress-")
        .tempdir()?;
    let rules = carapace::sandbox::egress::EgressRules::new(&["localhost".into()], &[])?;
    let proxy =
        carapace::sandbox::egress::EgressProxy::start(&dir.path().join("s"), Arc::new(rules))?;
    let b = bench(Setup {
        egress: Some(proxy.socket().to_path_buf()),
        ..Setup::default()
    })
    .await?;
    let fetch =
        |url: &str, extra: &str| format!("curl -s -m 5 {extra} {url} || echo failed-$?; echo");
    let allowed = text(
        &b.bash(&fetch(&format!("http://localhost:{port}/"), ""))
            .await,
    );
    assert!(
        allowed.contains("pong"),
        "the allowed name is reached: {allowed}"
    );
    let socks = text(
        &b.bash(&fetch(
            &format!("http://localhost:{port}/"),
            "--proxy socks5h://127.0.0.1:1080",
        ))
        .await,
    );
    assert!(socks.contains("pong"), "through SOCKS5 too: {socks}");
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 2);
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://127.1:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://0x7f.0.0.1:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://not-listed.invalid:{port}/"),
    ] {
        let said = text(&b.bash(&fetch(&url, "")).await);
        assert!(!said.contains("pong"), "{url}: {said}");
    }
    // Past the proxy: nothing to reach in the command's own namespace.
    let direct = text(
        &b.bash(&fetch(
            &format!("http://127.0.0.1:{port}/"),
            "--noproxy '*'",
        ))
        .await,
    );
    assert!(direct.contains("failed-"), "{direct}");
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "only the allowed requests arrived"
    );
    // Control: with a network grant the same server is reached directly.
    let open = bench(Setup {
        network: true,
        ..Setup::default()
    })
    .await?;
    let reached = text(
        &open
            .bash(&fetch(
                &format!("http://127.0.0.1:{port}/"),
                "--noproxy '*'",
            ))
            .await,
    );
    assert!(reached.contains("pong"), "control: {reached}");
    Ok(())
}
