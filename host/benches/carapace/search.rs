//! Grep and Glob as a user runs them, side by side with ripgrep run the
//! way Claude Code 2.1.197 runs it: `carapace tool call grep Grep` (a
//! whole process: start, policy, grant, the component, the host's search)
//! against `rg` with Claude Code's arguments, same tree, same hour — the
//! generated 15,600-file repository, and the cargo registry's sources
//! where this machine has them. Wall time and peak resident memory of each
//! process.

#[path = "../../../tests/tools/search_tree.rs"]
mod search_tree;

use super::{BenchResult, report, wait_sampling_peak};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const RUNS: usize = 10;
const VCS: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// One case: the tool's input, and ripgrep's arguments for the same.
struct Case {
    label: &'static str,
    tool: &'static str,
    input: Value,
    rg: Vec<&'static str>,
}

fn cases() -> Vec<Case> {
    let grep = |label, input: Value, rg: Vec<&'static str>| Case {
        label,
        tool: "Grep",
        input,
        rg: [vec!["--hidden", "--max-columns", "500"], rg].concat(),
    };
    vec![
        grep(
            "Grep `fn main`, files_with_matches",
            json!({"pattern": "fn main"}),
            vec!["-l", "fn main"],
        ),
        grep(
            "Grep `unsafe impl Send`, content -n",
            json!({"pattern": "unsafe impl Send", "output_mode": "content"}),
            vec!["-n", "unsafe impl Send"],
        ),
        grep(
            "Grep `fn main`, count",
            json!({"pattern": "fn main", "output_mode": "count"}),
            vec!["-c", "-H", "fn main"],
        ),
        Case {
            label: "Glob `**/*.rs`",
            tool: "Glob",
            input: json!({"pattern": "**/*.rs"}),
            rg: vec![
                "--files",
                "--glob",
                "**/*.rs",
                "--sort=modified",
                "--no-ignore",
                "--hidden",
            ],
        },
    ]
}

/// Wall time of each run after a first one, and the median peak (KiB).
fn measure(
    mut spawn: impl FnMut() -> std::io::Result<std::process::Child>,
) -> Result<(Vec<Duration>, i64), Box<dyn std::error::Error>> {
    let mut samples = Vec::new();
    let mut peaks = Vec::new();
    for run in 0..=RUNS {
        let started = Instant::now();
        let (succeeded, peak) = wait_sampling_peak(spawn()?)?;
        let took = started.elapsed();
        if !succeeded {
            return Err("a search run failed".into());
        }
        if run > 0 {
            samples.push(took);
            peaks.push(peak);
        }
    }
    peaks.sort_unstable();
    Ok((samples, peaks[peaks.len() / 2]))
}

/// The carapace measured: this bench's build, or the binary
/// `CARAPACE_BENCH_BIN` names (a release build, as a user installs it).
fn carapace_binary() -> std::ffi::OsString {
    std::env::var_os("CARAPACE_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_carapace").into())
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn compare(tree: &Path, name: &str, home: &Path, cache: &Path) -> BenchResult {
    for case in cases() {
        let (ours, our_peak) = measure(|| {
            std::process::Command::new(carapace_binary())
                .current_dir(tree)
                .env_clear()
                .env("HOME", home)
                .env("CARAPACE_CACHE_DIR", cache)
                .args(["tool", "call", &case.tool.to_ascii_lowercase(), case.tool])
                .arg("--input")
                .arg(case.input.to_string())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
        })?;
        let (theirs, their_peak) = measure(|| {
            let mut rg = std::process::Command::new("rg");
            rg.current_dir(tree).args(&case.rg);
            for dir in VCS {
                rg.arg("--glob").arg(format!("!{dir}"));
            }
            rg.stdout(std::process::Stdio::null()).spawn()
        })?;
        let ratio = median(&ours).as_secs_f64() / median(&theirs).as_secs_f64();
        report(
            &format!("search: {} on {name} — carapace tool call", case.label),
            &ours,
            &format!(
                "{ratio:.2}× ripgrep's p50; peak RSS {:.1} MiB ({:.1}× ripgrep's)",
                our_peak as f64 / 1024.0,
                our_peak as f64 / their_peak.max(1) as f64
            ),
        );
        report(
            &format!("search: the same with rg {}", case.rg.join(" ")),
            &theirs,
            &format!("ripgrep; peak RSS {:.1} MiB", their_peak as f64 / 1024.0),
        );
    }
    Ok(())
}

/// Resident memory by kind, from `/proc/PID/smaps`, in KiB: the binary's
/// and libraries' code (file-backed, executable), their read-only data
/// (file-backed, read-only) and anonymous memory (heap, stacks, the rest).
#[derive(Clone, Copy, Default)]
struct Resident {
    code: u64,
    read_only: u64,
    anonymous: u64,
}

fn resident(pid: u32) -> Option<Resident> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    let mut found = Resident::default();
    let mut kind: Option<fn(&mut Resident) -> &mut u64> = None;
    for line in smaps.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        // A mapping's header: address range, permissions, offset, device,
        // inode, then its path when it has one.
        if words.len() >= 5 && words[0].contains('-') && words[1].len() == 4 {
            let file_backed = words.get(5).is_some_and(|p| p.starts_with('/'));
            kind = match (file_backed, words[1]) {
                (true, perms) if perms.contains('x') => Some(|r| &mut r.code),
                (true, perms) if !perms.contains('w') => Some(|r| &mut r.read_only),
                (false, _) => Some(|r| &mut r.anonymous),
                _ => None,
            };
        } else if let (Some(kind), Some(kib)) = (kind, line.strip_prefix("Rss:")) {
            *kind(&mut found) += kib
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()?;
        }
    }
    Some(found)
}

/// Where a process's peak lies: its smaps read every 2 ms until it exits
/// (an untimed run: reading smaps slows what it reads), the reading with
/// the most resident kept.
fn resident_at_peak(
    mut child: std::process::Child,
) -> Result<Resident, Box<dyn std::error::Error>> {
    let mut peak = Resident::default();
    let total = |r: &Resident| r.code + r.read_only + r.anonymous;
    while child.try_wait()?.is_none() {
        if let Some(now) = resident(child.id())
            && total(&now) > total(&peak)
        {
            peak = now;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(peak)
}

/// The breakdown of carapace's and ripgrep's peaks for Grep's first case.
fn breakdown(tree: &Path, home: &Path, cache: &Path) -> BenchResult {
    let Some(case) = cases().into_iter().next() else {
        return Ok(());
    };
    let ours = resident_at_peak(
        std::process::Command::new(carapace_binary())
            .current_dir(tree)
            .env_clear()
            .env("HOME", home)
            .env("CARAPACE_CACHE_DIR", cache)
            .args(["tool", "call", "grep", case.tool])
            .arg("--input")
            .arg(case.input.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?,
    )?;
    let theirs = resident_at_peak(
        std::process::Command::new("rg")
            .current_dir(tree)
            .args(&case.rg)
            .stdout(std::process::Stdio::null())
            .spawn()?,
    )?;
    let mib = |kib: u64| kib as f64 / 1024.0;
    for (who, r) in [("carapace tool call", ours), ("rg", theirs)] {
        println!(
            "| search: {} on the generated tree — {who}, resident at its peak (smaps) | 1 | | | | code {:.1} MiB, read-only data {:.1} MiB, anonymous {:.1} MiB |",
            case.label,
            mib(r.code),
            mib(r.read_only),
            mib(r.anonymous)
        );
    }
    Ok(())
}

pub fn search_benches(work: &Path, cache: &Path) -> BenchResult {
    if std::process::Command::new("rg")
        .arg("--version")
        .output()
        .is_err()
    {
        return Err("the search bench compares with ripgrep: put `rg` on PATH".into());
    }
    let tree = search_tree::cached(Path::new(env!("CARGO_TARGET_TMPDIR")), 15_600)?;
    compare(
        &tree,
        "the generated tree (15,600 files + ignored ones)",
        work,
        cache,
    )?;
    breakdown(&tree, work, cache)?;
    withheld_listing(&tree)?;
    let registry = std::env::var_os("HOME")
        .map(|home| Path::new(&home).join(".cargo/registry/src"))
        .and_then(|src| {
            std::fs::read_dir(&src)
                .ok()?
                .flatten()
                .next()
                .map(|e| e.path())
        });
    match registry {
        Some(real) => compare(&real, "the cargo registry's sources", work, cache)?,
        None => eprintln!("(no ~/.cargo/registry/src here: the real-tree rows are left out)"),
    }
    Ok(())
}

/// What a command pays before it starts to keep credential files from it:
/// the workspace listed for names that hold credentials (no rules, the
/// built-in table), beside `find` looking for the same names natively.
fn withheld_listing(tree: &Path) -> BenchResult {
    use carapace::policy::{LiveReadDenials, PermissionMode, Policy, PolicyConfig, RuleSet};
    use carapace::sandbox::DeniedPaths;
    let policy = Policy::from_config(PolicyConfig::new(PermissionMode::Default, tree));
    let live = || LiveReadDenials::new(&RuleSet::default(), policy.withheld(), vec![tree.into()]);
    const N: usize = 20;
    let mut samples = Vec::with_capacity(N);
    for _ in 0..N {
        let fresh = live();
        let started = Instant::now();
        std::hint::black_box(fresh.list()?);
        samples.push(started.elapsed());
    }
    report(
        "withheld: credential files listed for a session's first command (the generated tree, 15,600 files)",
        &samples,
        "every folder read",
    );
    let kept = live();
    kept.list()?;
    let mut samples = Vec::with_capacity(N);
    for _ in 0..N {
        let started = Instant::now();
        std::hint::black_box(kept.list()?);
        samples.push(started.elapsed());
    }
    report(
        "withheld: the same for each later command",
        &samples,
        "one stat per unchanged folder",
    );
    let mut samples = Vec::with_capacity(N);
    for _ in 0..N {
        let started = Instant::now();
        let found = std::process::Command::new("find")
            .arg(tree)
            .args([
                "(", "-name", ".env", "-o", "-name", ".env.*", "-o", "-name", "*.pem",
            ])
            .args([
                "-o", "-name", "*.key", "-o", "-name", "id_*", "-o", "-name", ".npmrc", ")",
            ])
            .output()?;
        samples.push(started.elapsed());
        std::hint::black_box(found);
    }
    report(
        "withheld: the same names found by find(1) on the same tree",
        &samples,
        "native reference",
    );
    Ok(())
}
