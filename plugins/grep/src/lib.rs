//! The Grep tool: Claude Code's input and output, the search itself done by
//! the host (`carapace:tool/search`: ripgrep's walker and matcher on every
//! core, confined to the granted tree). This component validates the
//! input, says what the call needs, and shapes the answer.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../wit/tool/v0.3.0",
});

mod render;

use carapace::tool::search::{GrepMode, GrepRequest};
use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, InterruptBehavior, ToolAnnotations,
    ToolDefinition, ToolOutput,
};
use carapace_guest_util::{cap_chars, path_or_cwd};
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;
use std::path::PathBuf;

/// Characters of output before the rest is cut with a note.
const MAX_OUTPUT_CHARS: usize = 100_000;
/// Lines or entries shown when `head_limit` is not given (Claude Code's).
const DEFAULT_HEAD_LIMIT: usize = 250;

#[derive(Deserialize)]
struct GrepInput {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    output_mode: Option<String>,
    #[serde(rename = "-B")]
    before: Option<f64>,
    #[serde(rename = "-A")]
    after: Option<f64>,
    #[serde(rename = "-C")]
    context_short: Option<f64>,
    context: Option<f64>,
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    #[serde(rename = "-i")]
    ignore_case: Option<bool>,
    #[serde(rename = "-o")]
    only_matching: Option<bool>,
    #[serde(rename = "type")]
    file_type: Option<String>,
    head_limit: Option<f64>,
    offset: Option<f64>,
    multiline: Option<bool>,
}

/// One call, validated.
pub(crate) struct Search {
    pub(crate) request: GrepRequest,
    pub(crate) root: PathBuf,
    pub(crate) line_numbers: bool,
    /// `None`: no limit.
    pub(crate) head_limit: Option<usize>,
    pub(crate) offset: usize,
    pub(crate) cwd: Option<PathBuf>,
}

/// A count the model gave: a whole, non-negative number.
fn count(field: &str, value: Option<f64>) -> Result<Option<usize>, String> {
    match value {
        None => Ok(None),
        Some(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => {
            Ok(Some(n as usize))
        }
        Some(n) => Err(format!(
            "`{field}` must be a whole number of at least 0, not {n}"
        )),
    }
}

/// Claude Code's reading of `glob`: split on white space, then on commas
/// unless the part has braces (`*.{ts,tsx}` stays one glob).
fn globs(glob: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    for part in glob.unwrap_or_default().split_whitespace() {
        if part.contains('{') && part.contains('}') {
            out.push(part.to_string());
        } else {
            out.extend(
                part.split(',')
                    .filter(|g| !g.is_empty())
                    .map(str::to_string),
            );
        }
    }
    out
}

fn parse(input: &str) -> Result<Search, String> {
    let input: GrepInput =
        serde_json::from_str(input).map_err(|e| format!("invalid input: {e}"))?;
    let mode = match input.output_mode.as_deref() {
        None | Some("files_with_matches") => GrepMode::FilesWithMatches,
        Some("content") => GrepMode::Content,
        Some("count") => GrepMode::Count,
        Some(other) => return Err(format!("unknown output_mode `{other}`")),
    };
    let cwd = carapace::tool::host::working_directory();
    let root = path_or_cwd("path", input.path.as_deref(), cwd.clone())?;
    let context = count("context", input.context)?.or(count("-C", input.context_short)?);
    let before = context.or(count("-B", input.before)?).unwrap_or(0);
    let after = context.or(count("-A", input.after)?).unwrap_or(0);
    let head_limit = match count("head_limit", input.head_limit)? {
        Some(0) => None,
        Some(n) => Some(n),
        None => Some(DEFAULT_HEAD_LIMIT),
    };
    let wide = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Ok(Search {
        request: GrepRequest {
            path: root.to_string_lossy().into_owned(),
            pattern: input.pattern,
            case_insensitive: input.ignore_case.unwrap_or(false),
            multiline: input.multiline.unwrap_or(false),
            only_matching: input.only_matching.unwrap_or(false),
            globs: globs(input.glob.as_deref()),
            file_type: input.file_type,
            mode,
            before: wide(before),
            after: wide(after),
        },
        root,
        line_numbers: input.line_numbers.unwrap_or(true),
        head_limit,
        offset: count("offset", input.offset)?.unwrap_or(0),
        cwd: cwd.map(PathBuf::from),
    })
}

struct GrepTool;

impl Guest for GrepTool {
    fn tools() -> Vec<ToolDefinition> {
        // The definition the host embeds too (see tool.json).
        carapace_guest_util::tools_from_json!()
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
        let outcome = carapace::tool::search::grep(&search.request).map_err(|e| {
            if e.starts_with("invalid regular expression")
                || e.starts_with("invalid glob")
                || e.starts_with("unknown file type")
            {
                CallError::InvalidInput(e)
            } else {
                CallError::Failed(e)
            }
        })?;
        let (text, structured) = render::render(&search, outcome);
        Ok(ToolOutput {
            content: vec![Content::Text(cap_chars(&text, MAX_OUTPUT_CHARS))],
            is_error: false,
            structured: context.wants_structured.then(|| structured.to_string()),
        })
    }
}

export!(GrepTool);
