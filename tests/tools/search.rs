//! Grep and Glob against ripgrep itself, on the benchmark's tree (15,600
//! files, nested .gitignores, hidden and binary files, a long line, a link
//! out): the same files and the same lines as `rg` run with the arguments
//! Claude Code 2.1.197 gives it. Needs `rg` on PATH (tests/setup.sh
//! installs it); the comparison fails without it rather than passing.

#[path = "search_tree.rs"]
mod search_tree;

use carapace::agent::{ToolCall, ToolRuntime};
use carapace::policy::{
    Anchors, PermissionMode, Policy, PolicyConfig, Rule, RuleKind, RuleSet, RuleSource, SourceKind,
};
use carapace::sandbox::{CallLimits, Sandbox, SandboxConfig};
use carapace::tools::{ToolPipeline, ToolRegistry};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The version-control folders Claude Code keeps ripgrep out of.
const VCS: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

async fn pipeline(root: &Path) -> Result<Arc<ToolPipeline>, Box<dyn std::error::Error>> {
    pipeline_denying(root, &[]).await
}

/// Tools whose policy has these deny rules (from the command line).
async fn pipeline_denying(
    root: &Path,
    denied: &[String],
) -> Result<Arc<ToolPipeline>, Box<dyn std::error::Error>> {
    let sandbox = Sandbox::new(SandboxConfig {
        guest_cwd: Some(root.to_path_buf()),
        ..carapace_test_support::sandbox_config()
    })?;
    let registry = ToolRegistry::builtin(&sandbox).await?;
    let anchors = Anchors {
        cwd: root.to_path_buf(),
        home: root.to_path_buf(),
        project: root.to_path_buf(),
    };
    let source = RuleSource {
        kind: SourceKind::CliFlag,
        file: None,
    };
    let rules = denied
        .iter()
        .map(|r| Rule::parse(r, RuleKind::Deny, source.clone(), &anchors))
        .collect::<Result<Vec<_>, _>>()?;
    let policy = Policy::from_config(PolicyConfig {
        rules: RuleSet::new(rules),
        ..PolicyConfig::new(PermissionMode::Default, root)
    });
    Ok(Arc::new(
        ToolPipeline::new(registry, policy, CallLimits::default()).with_structured_results(true),
    ))
}

/// The tool's structured result (its full answer, before the output cap).
async fn structured(
    pipeline: &Arc<ToolPipeline>,
    tool: &str,
    input: Value,
) -> Result<Value, String> {
    let result = pipeline
        .clone()
        .call(ToolCall {
            id: "toolu_search".into(),
            name: tool.into(),
            input,
            invalid_input: None,
        })
        .await;
    if result.is_error {
        return Err(result.content.text());
    }
    result
        .structured
        .ok_or_else(|| format!("{tool} gave no structured result"))
}

/// `rg` in `root` with Claude Code's arguments: its output lines, sorted.
fn rg(root: &Path, args: &[&str]) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let mut command = std::process::Command::new("rg");
    command
        .current_dir(root)
        .args(["--hidden", "--max-columns", "500"]);
    for dir in VCS {
        command.args(["--glob", &format!("!{dir}")]);
    }
    let out = command.args(args).output().map_err(|e| {
        format!("ripgrep is needed for this comparison (tests/setup.sh installs it): {e}")
    })?;
    // 1: nothing matched.
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(format!("rg {args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(sorted(&String::from_utf8(out.stdout)?))
}

/// Lines sorted, each without a trailing CR (ripgrep leaves a CRLF line's
/// CR in; carapace shows the line without it).
fn sorted(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect();
    lines.sort();
    lines
}

fn tree() -> Result<PathBuf, Box<dyn std::error::Error>> {
    Ok(search_tree::cached(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        15_600,
    )?)
}

#[tokio::test]
async fn grep_finds_what_ripgrep_finds_in_every_mode() -> TestResult {
    let root = tree()?;
    let tools = pipeline(&root).await?;
    for pattern in ["fn main", "unsafe impl Send", "(?i)FN MAIN\\("] {
        let files =
            structured(&tools, "Grep", json!({"pattern": pattern, "head_limit": 0})).await?;
        let mut ours: Vec<String> = files["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect();
        ours.sort();
        let theirs = rg(&root, &["-l", pattern])?;
        assert!(
            theirs.len() > 100,
            "{pattern}: the tree matches too little to tell"
        );
        assert_eq!(ours, theirs, "{pattern}: files_with_matches");

        let content = structured(
            &tools,
            "Grep",
            json!({"pattern": pattern, "output_mode": "content", "head_limit": 0}),
        )
        .await?;
        let ours = sorted(content["content"].as_str().unwrap_or_default());
        assert_eq!(ours, rg(&root, &["-n", pattern])?, "{pattern}: content");

        let counts = structured(
            &tools,
            "Grep",
            json!({"pattern": pattern, "output_mode": "count", "head_limit": 0}),
        )
        .await?;
        let ours = sorted(counts["content"].as_str().unwrap_or_default());
        assert_eq!(ours, rg(&root, &["-c", "-H", pattern])?, "{pattern}: count");
    }
    // Context, a type and a glob, the way Claude Code passes them.
    let narrowed = structured(
        &tools,
        "Grep",
        json!({"pattern": "unsafe impl", "output_mode": "content", "-C": 2,
               "type": "rust", "glob": "a/**", "head_limit": 0}),
    )
    .await?;
    let ours: Vec<String> = sorted(narrowed["content"].as_str().unwrap_or_default());
    let theirs = rg(
        &root,
        &[
            "-n",
            "-C",
            "2",
            "--type",
            "rust",
            "--glob",
            "a/**",
            "unsafe impl",
        ],
    )?;
    assert_eq!(ours, theirs, "context with a type and a glob");
    Ok(())
}

#[tokio::test]
async fn glob_lists_what_ripgrep_lists() -> TestResult {
    let root = tree()?;
    let tools = pipeline(&root).await?;
    let rg_files = |glob: &str| -> Result<Vec<String>, Box<dyn std::error::Error>> {
        let out = std::process::Command::new("rg")
            .current_dir(&root)
            .args(["--files", "--no-ignore", "--hidden", "--glob", glob])
            .args(
                VCS.iter()
                    .flat_map(|d| ["--glob".to_string(), format!("!{d}")]),
            )
            .output()?;
        Ok(sorted(&String::from_utf8(out.stdout)?))
    };
    // Under the 100 shown: every name compared.
    for glob in ["a/m1/**/*.rs", "**/*.log", "b/m1/**", ".config/*"] {
        let found = structured(&tools, "Glob", json!({"pattern": glob})).await?;
        let mut ours: Vec<String> = found["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect();
        ours.sort();
        let theirs = rg_files(glob)?;
        assert!(
            !theirs.is_empty() && theirs.len() <= 100,
            "{glob}: {}",
            theirs.len()
        );
        assert_eq!(ours, theirs, "{glob}");
    }
    // Over it: the count of all of them.
    for glob in ["**/*.rs", "*.md"] {
        let found = structured(&tools, "Glob", json!({"pattern": glob})).await?;
        assert_eq!(found["totalMatches"], rg_files(glob)?.len(), "{glob}");
        assert_eq!(found["truncated"], true);
    }
    Ok(())
}

/// A read-denied file inside the tree, and a hard link inside the tree to
/// a read-denied file outside it: neither is ever searched. Control: with
/// no rule, the same searches find both secrets (named so that they are
/// not credential files, which are withheld with no rule at all).
#[tokio::test]
async fn read_denied_files_and_links_to_them_are_not_searched() -> TestResult {
    let dir = tempfile::tempdir()?;
    let base = std::fs::canonicalize(dir.path())?;
    let (ws, outside) = (base.join("ws"), base.join("outside"));
    std::fs::create_dir_all(ws.join("src"))?;
    std::fs::create_dir_all(&outside)?;
    std::fs::write(ws.join("src/config.secret"), "TOKEN=SECRET-env\n")?;
    std::fs::write(ws.join("src/main.rs"), "fn main() {}\n")?;
    std::fs::write(outside.join("stash_key"), "SECRET-key\n")?;
    std::fs::hard_link(outside.join("stash_key"), ws.join("src/innocent.txt"))?;
    let search = |tools: Arc<ToolPipeline>, tool: &'static str, input: Value| async move {
        let result = tools
            .call(ToolCall {
                id: "toolu_denied".into(),
                name: tool.into(),
                input,
                invalid_input: None,
            })
            .await;
        (result.is_error, result.content.text())
    };
    let grep = json!({"pattern": "SECRET", "output_mode": "content"});
    let env_listed = json!({"pattern": "**/*.secret"});

    let control = pipeline(&ws).await?;
    let (_, found) = search(control.clone(), "Grep", grep.clone()).await;
    assert!(
        found.contains("SECRET-env") && found.contains("SECRET-key"),
        "{found}"
    );
    let (_, listed) = search(control, "Glob", env_listed.clone()).await;
    assert!(listed.contains("config.secret"), "{listed}");

    let denying_env = pipeline_denying(&ws, &["Read(*.secret)".into()]).await?;
    for (tool, input) in [("Grep", &grep), ("Glob", &env_listed)] {
        let (refused, text) = search(denying_env.clone(), tool, input.clone()).await;
        assert!(
            refused && !text.contains("SECRET") && text.contains("Read(*.secret)"),
            "{tool}: {text}"
        );
    }
    let rule = format!("Read(/{}/**)", outside.display());
    let denying_key = pipeline_denying(&ws, &[rule]).await?;
    let (refused, text) = search(denying_key, "Grep", grep).await;
    assert!(refused && !text.contains("SECRET-key"), "{text}");
    Ok(())
}
