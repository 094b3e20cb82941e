//! git works in a sandboxed command — commit, stash, branch, checkout,
//! rebase write the object database, the index, refs, logs and `HEAD` —
//! while everything that would make git run a program later stays out of
//! reach: the configuration, hooks, `commondir`, `config.worktree`, a
//! submodule's or worktree's own, under any spelling and through any call.

use super::*;

/// A repository with one commit on `main`, made outside the sandbox as the
/// user's own would be; its author is in its configuration, which commands
/// cannot change.
fn repository(ws: &Path) -> Result<(), BoxError> {
    let git = |args: &[&str]| -> Result<(), BoxError> {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(ws)
            .stdout(std::process::Stdio::null())
            .status()?;
        if !status.success() {
            return Err(format!("git {args:?} failed").into());
        }
        Ok(())
    };
    git(&["init", "-q", "-b", "main"])?;
    git(&["config", "user.name", "Sandboxed"])?;
    git(&["config", "user.email", "sandboxed@example.invalid"])?;
    std::fs::write(ws.join("README"), "one\n")?;
    git(&["add", "README"])?;
    git(&["commit", "-q", "-m", "first"])?;
    Ok(())
}

fn git_output(ws: &Path, args: &[&str]) -> Result<String, BoxError> {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(ws)
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn commit_stash_branch_and_rebase_work_in_the_sandbox() -> TestResult {
    let b = bench(Setup::default()).await?;
    repository(&b.ws)?;
    let work = "set -e; echo two >> README; git add README; git commit -qm second; \
                echo draft > notes; git stash -q -u; test ! -e notes; git stash pop -q; \
                git checkout -q -b feature; git add notes; git commit -qm notes; \
                git checkout -q main; echo three > other; git add other; git commit -qm third; \
                git checkout -q feature; git rebase -q main; git tag done; \
                git status --short | wc -l; echo finished";
    let result = b.bash(work).await;
    let out = text(&result);
    assert!(out.contains("0\nfinished"), "{out}");
    let log = git_output(&b.ws, &["log", "--format=%s", "feature"])?;
    assert_eq!(log, "notes\nthird\nsecond\nfirst\n", "{out}");
    assert_eq!(git_output(&b.ws, &["stash", "list"])?, "");
    assert_eq!(git_output(&b.ws, &["tag"])?, "done\n");
    Ok(())
}

/// Each attempt, in a repository whose control files are what `git init`
/// makes, and the file it would plant or change.
const ATTEMPTS: &[(&str, &str)] = &[
    (
        "git config core.fsmonitor 'touch pwned-fsmonitor'",
        ".git/config",
    ),
    ("echo '[core] pager = evil' >> .git/config", ".git/config"),
    (
        "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/post-checkout",
        ".git/hooks/post-checkout",
    ),
    ("echo ../elsewhere > .git/commondir", ".git/commondir"),
    (
        "echo '[core] fsmonitor = evil' > .git/config.worktree",
        ".git/config.worktree",
    ),
    (
        "mkdir -p .git/modules/lib/refs && echo '[core] fsmonitor = evil' > .git/modules/lib/config",
        ".git/modules/lib/config",
    ),
    (
        "mkdir -p .git/modules/a/refs && echo '[core] fsmonitor = evil' > .git/modules/a/refs/config",
        ".git/modules/a/refs/config",
    ),
    (
        "mkdir -p .git/worktrees/w && echo /elsewhere > .git/worktrees/w/commondir",
        ".git/worktrees/w/commondir",
    ),
    (
        "python3 -c \"open('.git/' + 'config.worktree', 'a').write('x')\"",
        ".git/config.worktree",
    ),
    (
        "mv .git/hooks .git/hooks-gone && mkdir .git/hooks",
        ".git/hooks-gone",
    ),
    (
        "rm -rf .git/hooks && mkdir .git/hooks && touch .git/hooks/.made",
        ".git/hooks/.made",
    ),
    // Last: the control's later checks look for what it planted in here.
    ("mv .git stolen", "stolen"),
];

/// Whether the attempt's file is there, in `.git` or in the folder the
/// control moved it to.
fn planted(ws: &Path, path: &str) -> bool {
    let moved = path
        .strip_prefix(".git/")
        .map(|rest| ws.join("stolen").join(rest));
    ws.join(path).symlink_metadata().is_ok() || moved.is_some_and(|p| p.symlink_metadata().is_ok())
}

#[tokio::test]
async fn what_makes_git_run_programs_stays_out_of_reach() -> TestResult {
    for strong in [true, false] {
        let b = bench(if strong {
            Setup::default()
        } else {
            Setup::without(&[SandboxLayer::CreationGuard, SandboxLayer::ProtectedPaths])
        })
        .await?;
        repository(&b.ws)?;
        let config = std::fs::read(b.ws.join(".git/config"))?;
        let script: Vec<String> = ATTEMPTS
            .iter()
            .map(|(attempt, _)| format!("( {attempt} ) 2>&1"))
            .chain(["echo ran".to_string()])
            .collect();
        let out = text(&b.bash(&script.join("; ")).await);
        assert!(out.contains("ran"), "the attempts ran: {out}");
        let now = std::fs::read(b.ws.join(".git/config"))
            .or_else(|_| std::fs::read(b.ws.join("stolen/config")))?;
        let changed = now != config;
        let planted: Vec<&str> = ATTEMPTS
            .iter()
            .map(|(_, path)| *path)
            .filter(|p| *p != ".git/config" && planted(&b.ws, p))
            .collect();
        if strong {
            assert!(!changed, "the configuration changed: {out}");
            assert_eq!(planted, Vec::<&str>::new(), "{out}");
            assert!(out.contains("commondir was not created"), "said why: {out}");
            // Still a working repository, its history whole.
            assert_eq!(git_output(&b.ws, &["log", "--format=%s"])?, "first\n");
        } else {
            assert!(changed, "control: {out}");
            // All but the hook, which the control's own later `rm -rf
            // .git/hooks` took away again.
            assert_eq!(
                planted.len(),
                ATTEMPTS.len() - 3,
                "control planted {planted:?}: {out}"
            );
            assert!(!planted.contains(&".git/hooks/post-checkout"));
        }
    }
    Ok(())
}
