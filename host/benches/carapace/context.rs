//! What the context the model gets costs a session's start: reading a
//! memory hierarchy of 30 files (with imports and rules), 100 skills and
//! 50 custom commands, beside an empty workspace, in the same run, and the
//! size of the blocks the first request carries (the context reminder and
//! the skills listing).

use super::{BenchResult, report};
use carapace::commands::{CustomCommands, Folders};
use carapace::memory::{Memory, MemoryPlaces, MemorySources, context_reminder};
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
        let places = MemoryPlaces {
            cwd: dir.clone(),
            home: root.join("home"),
            config_dir: root.join("home/.carapace"),
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
    Ok(())
}
