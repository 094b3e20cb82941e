//! The Glob tool: files under a directory matching a glob pattern, most
//! recently modified first. Granted read access to that directory tree only.

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
use std::path::{Path, PathBuf};

/// Paths returned at most; the rest is summarised.
const MAX_RESULTS: usize = 100;

const DESCRIPTION: &str = "\
Finds files by name pattern (glob syntax such as `**/*.rs` or \
`src/**/*.{ts,tsx}`), searching the directory `path` (the working \
directory when omitted). Returns matching file paths, most recently \
modified first, at most 100 of them. Use it to locate files by name; use \
Grep to search their contents.";

const INPUT_SCHEMA: &str = r#"{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The glob pattern to match file paths against"},
    "path": {"type": "string", "description": "The directory to search in (absolute); the working directory when omitted"}
  },
  "required": ["pattern"],
  "additionalProperties": false
}"#;

#[derive(Deserialize)]
struct GlobInput {
    pattern: String,
    path: Option<String>,
}

struct GlobTool;

fn parse(input: &str) -> Result<(globset::GlobMatcher, PathBuf), String> {
    let input: GlobInput =
        serde_json::from_str(input).map_err(|e| format!("invalid input: {e}"))?;
    let root = path_or_cwd(
        "path",
        input.path.as_deref(),
        carapace::tool::host::working_directory(),
    )?;
    let glob = globset::GlobBuilder::new(&input.pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("`{}` is not a valid glob pattern: {e}", input.pattern))?;
    Ok((glob.compile_matcher(), root))
}

impl Guest for GlobTool {
    fn tools() -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: "Glob".into(),
            description: DESCRIPTION.into(),
            input_schema: INPUT_SCHEMA.into(),
            annotations: ToolAnnotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
        }]
    }

    fn plan(_tool: String, input: String) -> Result<CallPlan, String> {
        let (_, root) = parse(&input)?;
        Ok(CallPlan {
            concurrency_safe: true,
            interrupt: InterruptBehavior::Cancel,
            needs: vec![Capability::ReadTree(root.to_string_lossy().into_owned())],
        })
    }

    fn call(_tool: String, input: String, context: CallContext) -> Result<ToolOutput, CallError> {
        let started = std::time::Instant::now();
        let (glob, root) = parse(&input).map_err(CallError::InvalidInput)?;
        if !root.is_dir() {
            return Err(CallError::Failed(format!(
                "{} is not a directory.",
                root.display()
            )));
        }
        let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
        let mut unlisted = 0;
        walk(&root, &root, &glob, &mut found, &mut unlisted);
        // Newest first; equal times by name, so the order is stable.
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let total = found.len();
        let filenames: Vec<String> = found
            .into_iter()
            .take(MAX_RESULTS)
            .map(|(_, p)| p.display().to_string())
            .collect();
        // Claude Code's shape for Glob's result.
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
                "(Showing {MAX_RESULTS} of {total} matches. Use a more specific pattern or path to see the rest.)"
            ));
        }
        lines.extend(carapace_guest_util::unrepresentable_note(unlisted));
        Ok(ToolOutput {
            content: vec![Content::Text(lines.join("\n"))],
            is_error: false,
            structured: context.wants_structured.then(|| structured.to_string()),
        })
    }
}

/// `unlisted` counts names WASI cannot carry (not UTF-8): they are skipped,
/// never their siblings.
fn walk(
    root: &Path,
    dir: &Path,
    glob: &globset::GlobMatcher,
    found: &mut Vec<(std::time::SystemTime, PathBuf)>,
    unlisted: &mut usize,
) {
    let Ok((entries, skipped)) = carapace_guest_util::list_dir(dir) else {
        return;
    };
    *unlisted += skipped;
    for path in entries {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            walk(root, &path, glob, found, unlisted);
        } else if let Ok(relative) = path.strip_prefix(root)
            && glob.is_match(relative)
        {
            let modified = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            found.push((modified, path));
        }
    }
}

export!(GlobTool);
