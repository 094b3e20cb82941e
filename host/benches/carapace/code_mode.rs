//! Code mode (issue 51): one recorded refactoring task — rename a function
//! across twenty files, then count what remains — run as ordinary tool
//! calls (the model batching as it can: a Grep, twenty Reads, twenty
//! Edits, a command) and as one Script call doing the same; the requests
//! sent, their size, and the wall time (the scripted server answers at
//! once, so the time is carapace's). Then the script's own costs: a
//! script that returns at once against no tool call at all, and a hundred
//! Reads inside one script against the same hundred Reads in one model
//! response.

use super::BenchResult;
use scripted_server::{Block, Reply, ScriptedServer};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

const FILES: usize = 20;
const RUNS: usize = 7;

/// A workspace of `FILES` source files calling `old_name`.
fn workspace(base: &Path, name: &str) -> std::io::Result<PathBuf> {
    let ws = base.join("code-mode").join(name);
    if ws.exists() {
        std::fs::remove_dir_all(&ws)?;
    }
    std::fs::create_dir_all(ws.join("src"))?;
    for n in 0..FILES {
        std::fs::write(
            ws.join(format!("src/m{n:02}.js")),
            format!("// module {n}\nexport function f{n}() {{\n  return old_name({n});\n}}\n"),
        )?;
    }
    Ok(ws)
}

fn file(ws: &Path, n: usize) -> String {
    ws.join(format!("src/m{n:02}.js"))
        .to_string_lossy()
        .into_owned()
}

/// The task as the model does it without code mode.
fn ordinary(ws: &Path) -> Vec<Reply> {
    let reads = (0..FILES)
        .map(|n| {
            Block::tool_use(
                format!("toolu_r{n}"),
                "Read",
                json!({"file_path": file(ws, n)}),
            )
        })
        .collect();
    let edits = (0..FILES)
        .map(|n| {
            Block::tool_use(
                format!("toolu_e{n}"),
                "Edit",
                json!({"file_path": file(ws, n), "old_string": "old_name(", "new_string": "new_name("}),
            )
        })
        .collect();
    vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_grep",
            "Grep",
            json!({"pattern": "old_name", "output_mode": "files_with_matches"}),
        )]),
        Reply::tool_uses(reads),
        Reply::tool_uses(edits),
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_check",
            "Bash",
            json!({"command": "grep -rc new_name src"}),
        )]),
        Reply::text("renamed"),
    ]
}

/// The same task as one script (Grep's paths are relative to the working
/// directory, which the model knows from its environment section).
fn scripted(ws: &Path) -> Vec<Reply> {
    let head = format!("const root = {:?};\n", ws.to_string_lossy());
    let code = head
        + r#"const found = await tools.Grep({pattern: "old_name", output_mode: "files_with_matches"});
const files = found.split("\n").filter(l => l.endsWith(".js")).map(f => `${root}/${f}`);
await Promise.all(files.map(f => tools.Read({file_path: f})));
for (const f of files) {
  await tools.Edit({file_path: f, old_string: "old_name(", new_string: "new_name("});
}
return await tools.Bash({command: "grep -rc new_name src"});"#;
    vec![
        Reply::tool_uses(vec![Block::tool_use(
            "toolu_script",
            "Script",
            json!({"code": code}),
        )]),
        Reply::text("renamed"),
    ]
}

/// One print-mode run of `replies` in `ws` (acceptEdits: the edits are
/// allowed, the check is read-only); requests, request bytes, seconds.
fn run(
    ws: &Path,
    replies: Vec<Reply>,
    base: &Path,
) -> Result<(usize, usize, f64), Box<dyn std::error::Error>> {
    let server = ScriptedServer::start(replies)?;
    let started = Instant::now();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_carapace"))
        .current_dir(ws)
        .env("CARAPACE_CONFIG_DIR", base.join("code-mode-config"))
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "bench-key")
        .args(["-p", "rename old_name to new_name everywhere"])
        .args(["--permission-mode", "acceptEdits", "--code-mode"])
        .args(["--no-session-persistence"])
        .output()?;
    let seconds = started.elapsed().as_secs_f64();
    if !output.status.success() {
        return Err(format!(
            "the run failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let requests = server.requests();
    let bytes = requests
        .iter()
        .map(|r| {
            ["system", "messages", "tools"]
                .iter()
                .map(|k| r.body[*k].to_string().len())
                .sum::<usize>()
        })
        .sum();
    Ok((requests.len(), bytes, seconds))
}

/// The median of `RUNS` runs' seconds, and the last run's counts.
fn median_run(
    base: &Path,
    name: &str,
    replies: impl Fn(&Path) -> Vec<Reply>,
) -> Result<(usize, usize, f64), Box<dyn std::error::Error>> {
    let mut times = Vec::new();
    let mut counts = (0, 0);
    for _ in 0..RUNS {
        let ws = workspace(base, name)?;
        let (requests, bytes, seconds) = run(&ws, replies(&ws), base)?;
        let renamed = std::fs::read_to_string(file(&ws, 0))?;
        if name.starts_with("refactor") && !renamed.contains("new_name(0)") {
            return Err(format!("{name}: the task was not done").into());
        }
        times.push(seconds);
        counts = (requests, bytes);
    }
    times.sort_by(f64::total_cmp);
    Ok((counts.0, counts.1, times[RUNS / 2]))
}

/// `n` Reads of one small file: in one model response, or in one script.
fn reads(ws: &Path, n: usize, in_script: bool) -> Vec<Reply> {
    let path = file(ws, 0);
    let first = match (n, in_script) {
        (0, false) => return vec![Reply::text("nothing")],
        (_, true) => Reply::tool_uses(vec![Block::tool_use(
            "toolu_script",
            "Script",
            json!({"code": format!(
                "const calls = [];\nfor (let i = 0; i < {n}; i++) calls.push(tools.Read({{file_path: {path:?}}}));\nreturn (await Promise.all(calls)).length;"
            )}),
        )]),
        (_, false) => Reply::tool_uses(
            (0..n)
                .map(|i| Block::tool_use(format!("toolu_{i}"), "Read", json!({"file_path": path})))
                .collect(),
        ),
    };
    vec![first, Reply::text("read")]
}

pub(super) fn code_mode_benches(base: &Path) -> BenchResult {
    let (requests, bytes, seconds) = median_run(base, "refactor_calls", ordinary)?;
    println!(
        "| refactor_20_files_tool_calls | {RUNS} | {seconds:.3} s | — | — | {requests} requests, {bytes} bytes sent (about {} tokens) |",
        bytes / 4
    );
    let (requests, bytes, seconds) = median_run(base, "refactor_script", scripted)?;
    println!(
        "| refactor_20_files_one_script | {RUNS} | {seconds:.3} s | — | — | {requests} requests, {bytes} bytes sent (about {} tokens) |",
        bytes / 4
    );
    let timed = |name: &str, n: usize, in_script: bool| {
        median_run(base, name, |ws| reads(ws, n, in_script)).map(|(_, _, s)| s)
    };
    let none = timed("no_call", 0, false)?;
    let empty_script = timed("empty_script", 0, true)?;
    let batch = timed("batch_100", 100, false)?;
    let script = timed("script_100", 100, true)?;
    println!(
        "| script_start | {RUNS} | {:.1} ms | — | — | a script making no call, over a run with no tool call ({:.3} s) |",
        (empty_script - none) * 1e3,
        none
    );
    println!(
        "| read_in_script_per_call | {RUNS} | {:.2} ms | — | — | 100 Reads in one script, over the empty script; beside: one Read of 100 in one model response {:.2} ms |",
        (script - empty_script) * 1e3 / 100.0,
        (batch - none) * 1e3 / 100.0
    );
    Ok(())
}
