//! The creation guard: a command cannot make a protected name, whatever
//! call, spelling, depth or tool it uses, and racing the guard's read of
//! the path gains nothing. Each attempt runs as carapace runs it and
//! without the guard (and without the after-the-fact sweep), where it must
//! succeed. The tests run as root on this machine and in CI: root in the
//! call's user namespace has no more power over the guard than anyone.

use super::*;

/// Each attempt and the path it would make.
const ATTEMPTS: &[(&str, &str)] = &[
    ("mkdir .git", ".git"),
    ("mkdir -p a/b/c/.git", "a/b/c/.git"),
    ("mkdir .Vscode", ".Vscode"),
    ("touch .mcp.json", ".mcp.json"),
    ("ln -s /nowhere .envrc", ".envrc"),
    ("echo x > plain && ln plain .npmrc", ".npmrc"),
    ("mkfifo .exrc", ".exrc"),
    ("mkdir h && echo x > h/pre-commit && mv h .husky", ".husky"),
    (
        "mkdir .cargo; echo x > .cargo/config.toml",
        ".cargo/config.toml",
    ),
    (
        "mkdir -p s1/c2 && echo x > s1/c2/config.toml && mv s1/c2 s1/.cargo",
        "s1/.cargo/config.toml",
    ),
    (
        "mkdir s2 && ln -s .idea s2/link && echo x > s2/link",
        "s2/.idea",
    ),
    ("touch /proc/self/cwd/.zed", ".zed"),
    ("touch /dev/fd/../cwd/.fleet", ".fleet"),
    (
        "mkdir -p $TMPDIR/r/.git && cp -r $TMPDIR/r s3 && mv $TMPDIR/r s4",
        "s3/.git",
    ),
    (
        // A git directory under another name, from its first identifying
        // entry: `config` after `HEAD`…
        "mkdir -p g1/objects g1/refs && echo 'ref: refs/heads/main' > g1/HEAD && printf '[core]\\n\\tfsmonitor = ./x\\n' > g1/config",
        "g1/config",
    ),
    (
        // …and `HEAD` after `hooks`.
        "mkdir -p g2/hooks g2/objects g2/refs && echo 'ref: refs/heads/main' > g2/HEAD",
        "g2/HEAD",
    ),
    (
        // openat2, which the filter could not see into: refused, so
        // programs fall back to openat.
        "python3 -c \"import ctypes, struct; libc = ctypes.CDLL(None, use_errno=True); how = struct.pack('QQQ', 0o101, 0o644, 0); print('openat2', libc.syscall(437, -100, b'.devcontainer', how, 24), ctypes.get_errno())\"",
        ".devcontainer",
    ),
];

/// Without the guard and the sweep: what a command could make if nothing
/// but Landlock stood in its way.
fn unguarded() -> Setup {
    Setup::without(&[SandboxLayer::CreationGuard, SandboxLayer::ProtectedPaths])
}

#[tokio::test]
async fn no_protected_name_can_be_made_in_any_spelling() -> TestResult {
    for strong in [true, false] {
        let b = bench(if strong {
            Setup::default()
        } else {
            unguarded()
        })
        .await?;
        let script: Vec<String> = ATTEMPTS
            .iter()
            .map(|(attempt, _)| format!("( {attempt} ) 2>&1"))
            .chain(["echo ran".to_string()])
            .collect();
        let out = text(&b.bash(&script.join("; ")).await);
        assert!(out.contains("ran"), "the attempts ran: {out}");
        let made: Vec<&str> = ATTEMPTS
            .iter()
            .map(|(_, path)| *path)
            .filter(|path| b.ws.join(path).symlink_metadata().is_ok())
            .collect();
        if strong {
            assert_eq!(made, Vec::<&str>::new(), "{out}");
            assert!(out.contains(".git was not created"), "said why: {out}");
            assert!(
                b.ws.join("plain").is_file(),
                "ordinary files are made: {out}"
            );
            assert!(
                !out.contains("carapace-moved"),
                "prevented, not moved aside: {out}"
            );
        } else {
            assert_eq!(made.len(), ATTEMPTS.len(), "control: {out}");
        }
    }
    Ok(())
}

#[tokio::test]
async fn ordinary_work_goes_on_beside_the_guard() -> TestResult {
    let b = bench(Setup::default()).await?;
    // What builds and tools do: files, folders, renames, links, appends,
    // a clone's `.git` in the temp dir, and the umask honoured.
    let command = "umask 077; mkdir -p src/deep && echo one > src/deep/a && echo two >> src/deep/a \
                   && mv src/deep/a src/deep/b && ln -s b src/deep/c && ln src/deep/b src/deep/d \
                   && cat src/deep/c && mkdir -p $TMPDIR/clone/.git && echo ok > $TMPDIR/clone/.git/HEAD \
                   && cat $TMPDIR/clone/.git/HEAD && stat -c %a src/deep/b && echo > /dev/null && echo done";
    let out = text(&b.bash(command).await);
    assert!(out.contains("one\ntwo\n"), "{out}");
    assert!(out.contains("ok\n600\ndone"), "{out}");
    assert_eq!(
        std::fs::read_to_string(b.ws.join("src/deep/d"))?,
        "one\ntwo\n"
    );
    Ok(())
}

#[tokio::test]
async fn a_second_thread_rewriting_the_path_cannot_slip_a_name_past_the_guard() -> TestResult {
    // One thread flips the path's bytes between `plain` and `.git` while
    // the other calls mkdir on it: a guard that judged its own read and
    // let the kernel read again would lose this race.
    let race = r#"python3 - <<'EOF'
import ctypes, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
path = ctypes.create_string_buffer(b"plain", 16)
done = False
def flip():
    while not done:
        ctypes.memmove(path, b".git\0", 5)
        ctypes.memmove(path, b"plain\0", 6)
threading.Thread(target=flip, daemon=True).start()
tries = 0
end = time.time() + 3
while time.time() < end and not os.path.isdir(".git"):
    libc.mkdir(path, 0o755)
    tries += 1
    if os.path.isdir("plain"):
        os.rmdir("plain")
done = True
print("tries", tries)
EOF"#;
    for strong in [true, false] {
        let b = bench(if strong {
            Setup::default()
        } else {
            unguarded()
        })
        .await?;
        let out = text(&b.bash(race).await);
        let tries: u64 = out
            .lines()
            .find_map(|l| l.strip_prefix("tries "))
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| format!("the race ran: {out}"))?;
        assert!(tries > 0, "{out}");
        assert_eq!(!b.ws.join(".git").exists(), strong, "{out}");
    }
    Ok(())
}

#[tokio::test]
async fn a_background_shell_cannot_make_one_either() -> TestResult {
    for strong in [true, false] {
        let b = bench(if strong {
            Setup::default()
        } else {
            unguarded()
        })
        .await?;
        let started = b
            .bash_with(json!({
                "command": "mkdir -p lib/.git; touch .claude; touch bg-done; sleep 30",
                "run_in_background": true
            }))
            .await;
        assert!(!started.is_error, "{}", text(&started));
        wait_for(&b.ws.join("bg-done")).await?;
        let made = b.ws.join("lib/.git").exists() || b.ws.join(".claude").exists();
        assert_eq!(made, !strong, "{}", text(&started));
    }
    Ok(())
}

pub(super) async fn wait_for(path: &Path) -> Result<(), BoxError> {
    for _ in 0..3000 {
        if path.exists() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(format!("{} never appeared", path.display()).into())
}

#[test]
fn nothing_is_left_behind_when_carapace_is_killed() -> TestResult {
    // The helper (what carapace starts for a command) killed outright, as
    // by `kill -9` or the OOM killer: nothing runs after it to clean up, so
    // only prevention leaves no `.git` for the user's next `git status`.
    for strong in [true, false] {
        let ws = tempfile::tempdir()?;
        let ws = std::fs::canonicalize(ws.path())?;
        let mut args: Vec<String> = vec!["--write".into(), ws.to_string_lossy().into_owned()];
        args.extend(["--guard-name".into(), ".git".into()]);
        if !strong {
            args.extend(["--without".into(), "creation-guard".into()]);
        }
        args.extend([
            "--".into(),
            "mkdir .git; echo planted > .git/HEAD; touch started; sleep 30".into(),
        ]);
        let mut helper = std::process::Command::new(env!("CARGO_BIN_EXE_carapace-sandbox"))
            .args(&args)
            .current_dir(&ws)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let started = ws.join("started");
        for _ in 0..3000 {
            if started.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(started.exists(), "the command ran");
        helper.kill()?;
        helper.wait()?;
        assert_eq!(!ws.join(".git").exists(), strong);
    }
    Ok(())
}
