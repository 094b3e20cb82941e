//! What the context the model gets costs a session's start: reading a
//! memory hierarchy of 30 files (with imports and rules), 100 skills and
//! 50 custom commands, beside an empty workspace, in the same run, and the
//! size of the blocks the first request carries (the context reminder and
//! the skills listing).

use super::{BenchResult, report};
use carapace::commands::{CustomCommands, Folders};
use carapace::memory::{Memory, MemoryPlaces, MemorySources, context_reminder};
use scripted_server::{Reply, ScriptedServer};
use std::path::Path;
use std::time::Instant;

/// 30 memory files: the user's two, 5 ancestors × (CLAUDE.md, an import,
/// .claude/CLAUDE.md, 2 rules), a second import in two of them, a local
/// file; 100 skills (the user's and the project's) and 50 commands.
fn lay_out(root: &Path) -> std::io::Result<std::path::PathBuf> {
    let write = |path: &Path, text: &str| -> std::io::Result<()> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)
    };
    let body = "Run the tests before committing. Keep functions short.\n".repeat(20);
    write(&root.join("home/.claude/CLAUDE.md"), &body)?;
    write(&root.join("home/.carapace/CLAUDE.md"), &body)?;
    let mut dir = root.join("p");
    for level in 0..5 {
        let second = if level < 2 {
            write(&dir.join("second.md"), &body)?;
            " and @second.md"
        } else {
            ""
        };
        write(
            &dir.join("CLAUDE.md"),
            &format!("{body}See @imported-{level}.md{second}\n"),
        )?;
        write(&dir.join(format!("imported-{level}.md")), &body)?;
        write(&dir.join(".claude/CLAUDE.md"), &body)?;
        for rule in 0..2 {
            write(&dir.join(format!(".claude/rules/rule-{rule}.md")), &body)?;
        }
        dir = dir.join(format!("level-{level}"));
    }
    write(&dir.join("CLAUDE.local.md"), &body)?;
    for n in 0..50 {
        write(
            &dir.join(format!(".claude/commands/command-{n}.md")),
            &format!("---\ndescription: command {n}\n---\nDo thing {n} with $ARGUMENTS.\n"),
        )?;
    }
    for n in 0..100 {
        let base = if n % 2 == 0 {
            root.join("home")
        } else {
            dir.clone()
        };
        write(
            &base.join(format!(".claude/skills/skill-{n}/SKILL.md")),
            &format!(
                "---\nname: skill-{n}\ndescription: Does task {n} the team's way\nwhen_to_use: When asked for task {n}\n---\n{body}"
            ),
        )?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// A `-p` run in `dir` (HOME `home`) against a server that answers at
/// once: how long from spawn until its first request had arrived, and how
/// large that request was.
fn one_run(
    program: &Path,
    dir: &Path,
    home: &Path,
    cache: &Path,
) -> Result<(std::time::Duration, usize), Box<dyn std::error::Error>> {
    let server = ScriptedServer::start(vec![Reply::text("ok")])?;
    let started = Instant::now();
    let out = std::process::Command::new(program)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CARAPACE_CONFIG_DIR", home.join(".carapace"))
        .env("CARAPACE_CACHE_DIR", cache)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "bench")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .args(["-p", "hi", "--model", "claude-sonnet-4-5"])
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "{}: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let first = server.requests().into_iter().next().ok_or("no request")?;
    let took = first.received_at.saturating_duration_since(started);
    Ok((took, first.body.to_string().len()))
}

/// Spawn to the first request of a `-p` run, the context-heavy workspace
/// beside an empty one (the difference is what the context adds), and the
/// size of the first request; Claude Code's too when `CLAUDE` names its
/// binary.
fn spawn_benches(root: &Path, cwd: &Path, empty: &Path) -> BenchResult {
    let cache = root.join("cache");
    let home = root.join("home");
    let empty_home = root.join("empty-home");
    std::fs::create_dir_all(&empty_home)?;
    let mut programs = vec![(
        "carapace",
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_carapace")),
        40,
    )];
    if let Some(claude) = std::env::var_os("CLAUDE") {
        programs.push(("Claude Code", claude.into(), 10));
    }
    for (who, program, runs) in programs {
        for (label, dir, home) in [
            ("an empty workspace", empty, &empty_home),
            ("30 memory files, 100 skills, 50 commands", cwd, &home),
        ] {
            one_run(&program, dir, home, &cache)?;
            let mut samples = Vec::with_capacity(runs);
            let mut size = 0;
            for _ in 0..runs {
                let (took, bytes) = one_run(&program, dir, home, &cache)?;
                samples.push(took);
                size = bytes;
            }
            report(
                &format!("context: {who} -p, spawn to first request, {label}"),
                &samples,
                &format!("first request body {size} bytes"),
            );
        }
    }
    Ok(())
}

pub fn context_benches(work: &Path) -> BenchResult {
    let root = std::fs::canonicalize(work)?.join("context");
    let cwd = lay_out(&root)?;
    let empty = root.join("empty");
    std::fs::create_dir_all(&empty)?;
    for (label, dir) in [
        ("an empty workspace", &empty),
        (
            "30 memory files (imports, rules, a local file), 100 skills and 50 commands",
            &cwd,
        ),
    ] {
        let home = if dir == &empty {
            root.join("empty-home")
        } else {
            root.join("home")
        };
        let places = MemoryPlaces {
            cwd: dir.clone(),
            config_dir: home.join(".carapace"),
            home,
            managed: Vec::new(),
        };
        let mut samples = Vec::with_capacity(200);
        let mut files = 0;
        let mut bytes = 0;
        for _ in 0..200 {
            let started = Instant::now();
            let memory = Memory::load(&places, MemorySources::ALL);
            let reminder = context_reminder(&memory, "2026-12-02");
            let commands = CustomCommands::load(&Folders::of(dir, &places.home, true, true));
            let listing = commands.listing().unwrap_or_default();
            samples.push(started.elapsed());
            files = memory.files.len() + commands.names().len();
            bytes = reminder.len() + listing.len();
            std::hint::black_box((reminder, listing, commands));
        }
        report(
            &format!("context: memory and commands at session start, {label}"),
            &samples,
            &format!(
                "{files} files read; the context and skills blocks the first request carries: {bytes} bytes"
            ),
        );
    }
    spawn_benches(&root, &cwd, &empty)?;
    Ok(())
}
