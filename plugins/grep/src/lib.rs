//! The Grep tool: ripgrep's semantics (regex syntax, .gitignore, hidden
//! files and binary files skipped, file types, globs, context) with the
//! `regex` and `ignore` crates inside the component. Granted read access to
//! the searched tree only.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../wit/tool/v0.3.0",
});

use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, InterruptBehavior, ToolAnnotations,
    ToolDefinition, ToolOutput,
};
use carapace_guest_util::{cap_chars, looks_binary, path_or_cwd};
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Files larger than this are not searched.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Characters of output before the rest is cut with a note.
const MAX_OUTPUT_CHARS: usize = 100_000;

const DESCRIPTION: &str = "\
Searches file contents with a regular expression (ripgrep syntax), under \
`path` (the working directory when omitted), honouring .gitignore and \
skipping hidden and binary files.

- `output_mode`: `files_with_matches` (default) lists matching files, \
`content` shows matching lines (with `-n` line numbers, on by default, and \
`-A`/`-B`/`-C` context), `count` shows matches per file.
- Narrow the search with `glob` (e.g. `*.rs`, `**/*.{ts,tsx}`) or `type` \
(ripgrep file types such as `rust`, `py`, `js`).
- `-i` ignores case; `multiline` lets a pattern span lines (`.` then \
matches newlines too); `head_limit` keeps only the first N results.";

const INPUT_SCHEMA: &str = r#"{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The regular expression to search for"},
    "path": {"type": "string", "description": "The file or directory to search (absolute); the working directory when omitted"},
    "glob": {"type": "string", "description": "Only search files matching this glob"},
    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "What to show; files_with_matches when omitted"},
    "-B": {"type": "integer", "minimum": 0, "description": "Lines of context before each match (content mode)"},
    "-A": {"type": "integer", "minimum": 0, "description": "Lines of context after each match (content mode)"},
    "-C": {"type": "integer", "minimum": 0, "description": "Lines of context before and after each match (content mode)"},
    "-n": {"type": "boolean", "description": "Show line numbers (content mode); true when omitted"},
    "-i": {"type": "boolean", "description": "Ignore case"},
    "type": {"type": "string", "description": "Only search files of this ripgrep type (rust, py, js, …)"},
    "head_limit": {"type": "integer", "minimum": 1, "description": "Keep only the first N lines or entries of the output"},
    "multiline": {"type": "boolean", "description": "Let the pattern match across lines"}
  },
  "required": ["pattern"],
  "additionalProperties": false
}"#;

#[derive(Deserialize)]
struct GrepInput {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    output_mode: Option<String>,
    #[serde(rename = "-B")]
    before: Option<usize>,
    #[serde(rename = "-A")]
    after: Option<usize>,
    #[serde(rename = "-C")]
    context: Option<usize>,
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    #[serde(rename = "-i")]
    ignore_case: Option<bool>,
    #[serde(rename = "type")]
    file_type: Option<String>,
    head_limit: Option<usize>,
    multiline: Option<bool>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Content,
    Files,
    Count,
}

struct Search {
    regex: regex::Regex,
    root: PathBuf,
    mode: Mode,
    before: usize,
    after: usize,
    line_numbers: bool,
    multiline: bool,
    glob: Option<String>,
    file_type: Option<String>,
    head_limit: Option<usize>,
}

fn parse(input: &str) -> Result<Search, String> {
    let input: GrepInput =
        serde_json::from_str(input).map_err(|e| format!("invalid input: {e}"))?;
    let mode = match input.output_mode.as_deref() {
        None | Some("files_with_matches") => Mode::Files,
        Some("content") => Mode::Content,
        Some("count") => Mode::Count,
        Some(other) => return Err(format!("unknown output_mode `{other}`")),
    };
    let multiline = input.multiline.unwrap_or(false);
    let regex = regex::RegexBuilder::new(&input.pattern)
        .case_insensitive(input.ignore_case.unwrap_or(false))
        .multi_line(true)
        .dot_matches_new_line(multiline)
        .size_limit(64 << 20)
        .build()
        .map_err(|e| format!("invalid regular expression: {e}"))?;
    let context = input.context.unwrap_or(0);
    Ok(Search {
        regex,
        root: path_or_cwd(
            "path",
            input.path.as_deref(),
            carapace::tool::host::working_directory(),
        )?,
        mode,
        before: input.before.unwrap_or(context),
        after: input.after.unwrap_or(context),
        line_numbers: input.line_numbers.unwrap_or(true),
        multiline,
        glob: input.glob,
        file_type: input.file_type,
        head_limit: input.head_limit,
    })
}

struct GrepTool;

impl Guest for GrepTool {
    fn tools() -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: "Grep".into(),
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
        let search = parse(&input)?;
        Ok(CallPlan {
            concurrency_safe: true,
            interrupt: InterruptBehavior::Cancel,
            needs: vec![Capability::ReadTree(
                search.root.to_string_lossy().into_owned(),
            )],
        })
    }

    fn call(_tool: String, input: String, context: CallContext) -> Result<ToolOutput, CallError> {
        let search = parse(&input).map_err(CallError::InvalidInput)?;
        let (text, structured) = run(&search).map_err(CallError::Failed)?;
        Ok(ToolOutput {
            content: vec![Content::Text(cap_chars(&text, MAX_OUTPUT_CHARS))],
            is_error: false,
            structured: context.wants_structured.then(|| structured.to_string()),
        })
    }
}

export!(GrepTool);

/// The files to search, and how many names could not be listed (not
/// UTF-8: WASI cannot carry them).
fn files(search: &Search) -> Result<(Vec<PathBuf>, usize), String> {
    if search.root.is_file() {
        return Ok((vec![search.root.clone()], 0));
    }
    if !search.root.is_dir() {
        return Err(format!("{} does not exist.", search.root.display()));
    }
    let overrides = match &search.glob {
        Some(glob) => {
            let mut overrides = ignore::overrides::OverrideBuilder::new(&search.root);
            for part in glob.split_whitespace() {
                overrides
                    .add(part)
                    .map_err(|e| format!("invalid glob `{part}`: {e}"))?;
            }
            Some(overrides.build().map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let types = match &search.file_type {
        Some(file_type) => {
            let mut types = ignore::types::TypesBuilder::new();
            types.add_defaults();
            types.select(file_type);
            Some(
                types
                    .build()
                    .map_err(|e| format!("unknown file type `{file_type}`: {e}"))?,
            )
        }
        None => None,
    };
    let walker = |root: &Path| {
        let mut builder = ignore::WalkBuilder::new(root);
        builder.require_git(false).parents(false).git_global(false);
        if let Some(overrides) = &overrides {
            builder.overrides(overrides.clone());
        }
        if let Some(types) = &types {
            builder.types(types.clone());
        }
        builder.build()
    };
    let wanted = |path: &Path| {
        overrides
            .as_ref()
            .is_none_or(|o| !o.matched(path, false).is_ignore())
            && types
                .as_ref()
                .is_none_or(|t| !t.matched(path, false).is_ignore())
    };
    let mut out = Vec::new();
    let mut seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut unlisted = 0;
    let mut pending = vec![search.root.clone()];
    while let Some(start) = pending.pop() {
        let mut cut_short = false;
        for entry in walker(&start) {
            match entry {
                Ok(entry) => {
                    let is_file = entry.file_type().is_some_and(|t| t.is_file());
                    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                    let path = entry.into_path();
                    if is_dir {
                        dirs.push(path.clone());
                    }
                    if seen.insert(path.clone()) && is_file {
                        out.push(path);
                    }
                }
                // A listing that stopped at a name it cannot carry drops
                // every sibling after it: list those directories again.
                Err(_) => cut_short = true,
            }
        }
        if cut_short {
            for dir in std::mem::take(&mut dirs) {
                let Ok((names, skipped)) = carapace_guest_util::list_dir(&dir) else {
                    continue;
                };
                unlisted += skipped;
                for path in names {
                    if seen.contains(&path) {
                        continue;
                    }
                    let Ok(meta) = std::fs::symlink_metadata(&path) else {
                        continue;
                    };
                    if meta.is_dir() {
                        pending.push(path);
                    } else if meta.is_file() && wanted(&path) {
                        seen.insert(path.clone());
                        out.push(path);
                    }
                }
            }
        }
    }
    Ok((out, unlisted))
}

/// The matches of one file: (line index, is_match) for every line shown.
fn matching_lines(search: &Search, text: &str) -> (Vec<usize>, usize) {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |offset: usize| starts.partition_point(|s| *s <= offset).saturating_sub(1);
    let mut lines = Vec::new();
    let mut count = 0;
    if search.multiline {
        for m in search.regex.find_iter(text) {
            count += 1;
            let (first, last) = (
                line_of(m.start()),
                line_of(m.end().saturating_sub(1).max(m.start())),
            );
            lines.extend(first..=last);
        }
    } else {
        for (i, line) in text.split('\n').enumerate() {
            let n = search
                .regex
                .find_iter(line.strip_suffix('\r').unwrap_or(line))
                .count();
            if n > 0 {
                count += n;
                lines.push(i);
            }
        }
    }
    lines.dedup();
    (lines, count)
}

/// The result for the model, and in Claude Code's shape for Grep's
/// structured result.
fn run(search: &Search) -> Result<(String, Value), String> {
    let (paths, unlisted) = files(search)?;
    let (text, structured) = render(search, paths)?;
    Ok(match carapace_guest_util::unrepresentable_note(unlisted) {
        Some(note) => (format!("{text}\n{note}"), structured),
        None => (text, structured),
    })
}

fn render(search: &Search, paths: Vec<PathBuf>) -> Result<(String, Value), String> {
    let mut found: Vec<(std::time::SystemTime, PathBuf, String, Vec<usize>, usize)> = Vec::new();
    for path in paths {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.len() > MAX_FILE_BYTES {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        if looks_binary(&bytes) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let (lines, count) = matching_lines(search, &text);
        if count > 0 {
            let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            found.push((modified, path, text, lines, count));
        }
    }
    // Most recently modified first, as Claude Code's Grep lists them.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let limit = search.head_limit.unwrap_or(usize::MAX);
    let mode = match search.mode {
        Mode::Files => "files_with_matches",
        Mode::Count => "count",
        Mode::Content => "content",
    };
    let mut structured = json!({"mode": mode, "filenames": [], "numFiles": found.len()});
    let out = match search.mode {
        Mode::Files => {
            if found.is_empty() {
                return Ok(("No files found".into(), structured));
            }
            structured["filenames"] = found
                .iter()
                .take(limit)
                .map(|f| Value::String(f.1.display().to_string()))
                .collect();
            let mut lines = vec![format!(
                "Found {} file{}",
                found.len(),
                if found.len() == 1 { "" } else { "s" }
            )];
            lines.extend(found.iter().take(limit).map(|f| f.1.display().to_string()));
            lines.join("\n")
        }
        Mode::Count => {
            if found.is_empty() {
                structured["numMatches"] = json!(0);
                return Ok(("No matches found".into(), structured));
            }
            let total: usize = found.iter().map(|f| f.4).sum();
            structured["numMatches"] = json!(total);
            let mut lines: Vec<String> = found
                .iter()
                .take(limit)
                .map(|f| format!("{}:{}", f.1.display(), f.4))
                .collect();
            lines.push(format!(
                "\nFound {total} total occurrence{} across {} file{}.",
                if total == 1 { "" } else { "s" },
                found.len(),
                if found.len() == 1 { "" } else { "s" }
            ));
            lines.join("\n")
        }
        Mode::Content => {
            let mut out: Vec<String> = Vec::new();
            for (_, path, text, matched, _) in &found {
                let all: Vec<&str> = text.split('\n').collect();
                let mut shown: Vec<(usize, bool)> = Vec::new();
                for &line in matched {
                    let from = line.saturating_sub(search.before);
                    let to = (line + search.after).min(all.len().saturating_sub(1));
                    for i in from..=to {
                        match shown.iter_mut().find(|(j, _)| *j == i) {
                            Some(entry) => entry.1 |= i == line,
                            None => shown.push((i, i == line)),
                        }
                    }
                }
                shown.sort_by_key(|(i, _)| *i);
                let mut previous: Option<usize> = None;
                for (i, is_match) in shown {
                    if let Some(p) = previous
                        && i > p + 1
                        && (search.before > 0 || search.after > 0)
                    {
                        out.push("--".into());
                    }
                    let sep = if is_match { ':' } else { '-' };
                    let line = all[i].strip_suffix('\r').unwrap_or(all[i]);
                    out.push(if search.line_numbers {
                        format!("{}{sep}{}{sep}{line}", path.display(), i + 1)
                    } else {
                        format!("{}{sep}{line}", path.display())
                    });
                    previous = Some(i);
                }
            }
            if out.is_empty() {
                structured["content"] = json!("");
                structured["numLines"] = json!(0);
                return Ok(("No matches found".into(), structured));
            }
            out.truncate(limit);
            structured["numLines"] = json!(out.len());
            out.join("\n")
        }
    };
    if !matches!(search.mode, Mode::Files) {
        structured["content"] = json!(out);
    }
    Ok((out, structured))
}
