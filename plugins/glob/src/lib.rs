//! The Glob tool: files by name pattern, listed by the host
//! (`carapace:tool/search`, confined to the granted tree) and answered in
//! Claude Code's shape — paths relative to the working directory, oldest
//! first by modification time, at most 100.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../wit/tool/v0.3.0",
});

use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, InterruptBehavior, ToolAnnotations,
    ToolDefinition, ToolOutput,
};
use carapace_guest_util::path_or_cwd;
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;
use std::path::PathBuf;

const MAX_RESULTS: usize = 100;

#[derive(Deserialize)]
struct GlobInput {
    pattern: String,
    path: Option<String>,
}

struct GlobCall {
    root: PathBuf,
    pattern: String,
    cwd: Option<PathBuf>,
}

/// An absolute pattern searches from its literal part (`/src/**/*.rs`:
/// below `/src`), as Claude Code splits it.
fn split_absolute(pattern: &str) -> Option<(PathBuf, String)> {
    if !pattern.starts_with('/') {
        return None;
    }
    let magic = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    let cut = pattern[..magic].rfind('/')?;
    let base = if cut == 0 { "/" } else { &pattern[..cut] };
    Some((PathBuf::from(base), pattern[cut + 1..].to_string()))
}

fn parse(input: &str) -> Result<GlobCall, String> {
    let input: GlobInput =
        serde_json::from_str(input).map_err(|e| format!("invalid input: {e}"))?;
    let cwd = carapace::tool::host::working_directory();
    let mut root = path_or_cwd("path", input.path.as_deref(), cwd.clone())?;
    let mut pattern = input.pattern;
    if let Some((base, rest)) = split_absolute(&pattern) {
        root = base;
        pattern = rest;
    }
    if pattern.trim().is_empty() {
        return Err("`pattern` is empty".into());
    }
    Ok(GlobCall {
        root,
        pattern,
        cwd: cwd.map(PathBuf::from),
    })
}

struct GlobTool;

impl Guest for GlobTool {
    fn tools() -> Vec<ToolDefinition> {
        // The definition the host embeds too (see tool.json).
        carapace_guest_util::tools_from_json!()
    }

    fn plan(_tool: String, input: String) -> Result<CallPlan, String> {
        let call = parse(&input)?;
        Ok(CallPlan {
            concurrency_safe: true,
            interrupt: InterruptBehavior::Cancel,
            needs: vec![Capability::ReadTree(
                call.root.to_string_lossy().into_owned(),
            )],
        })
    }

    fn call(_tool: String, input: String, context: CallContext) -> Result<ToolOutput, CallError> {
        let started = std::time::Instant::now();
        let call = parse(&input).map_err(CallError::InvalidInput)?;
        let root = call.root.to_string_lossy().into_owned();
        // The host keeps the oldest (as Claude Code's `rg --sort=modified`
        // lists them) and counts the rest.
        let page = carapace::tool::search::glob_oldest(&root, &call.pattern, MAX_RESULTS as u32)
            .map_err(|e| match e.starts_with("invalid glob") {
                true => CallError::InvalidInput(e),
                false => CallError::Failed(e),
            })?;
        // The files a name could be given for; the others have a note.
        let named = page.total.saturating_sub(u64::from(page.unlisted));
        let total = usize::try_from(named).unwrap_or(usize::MAX);
        let filenames: Vec<String> = page
            .files
            .iter()
            .map(|f| carapace_guest_util::shown_path(call.cwd.as_deref(), &f.path))
            .collect();
        let structured = serde_json::json!({
            "filenames": filenames,
            "durationMs": started.elapsed().as_millis() as u64,
            "numFiles": filenames.len(),
            "truncated": total > MAX_RESULTS,
            "totalMatches": total,
        });
        let mut lines = filenames;
        if total == 0 {
            lines.push("No files found".into());
        } else if total > MAX_RESULTS {
            lines.push(format!(
                "(Showing {MAX_RESULTS} of {total} matching files; {} more are not listed. Use a more specific pattern or path to see the rest.)",
                total - MAX_RESULTS
            ));
        }
        lines.extend(carapace_guest_util::unrepresentable_note(
            page.unlisted as usize,
        ));
        Ok(ToolOutput {
            content: vec![Content::Text(lines.join("\n"))],
            is_error: false,
            structured: context.wants_structured.then(|| structured.to_string()),
        })
    }
}

export!(GlobTool);
