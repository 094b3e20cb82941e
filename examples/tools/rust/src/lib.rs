//! WordCount, a third-party tool plugin in Rust (carapace:tool@0.2.0).
//!
//! `plan` runs with no capabilities and says what one call needs: read
//! access to the one file it counts. `call` then runs in an instance where
//! that file, and nothing else, exists; it reads it with `std::fs`.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../../wit/tool/v0.2.0",
});

use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, InterruptBehavior, ToolAnnotations,
    ToolDefinition, ToolOutput,
};
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;
use std::collections::BTreeMap;

const TOOL: &str = "WordCount";

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "Absolute path of the file to count"},
    "top": {"type": "integer", "minimum": 0, "maximum": 20,
            "description": "Also list this many most frequent words (default 0)"}
  },
  "required": ["file_path"],
  "additionalProperties": false
}"#;

#[derive(Deserialize)]
struct Input {
    file_path: String,
    #[serde(default)]
    top: usize,
}

fn parse(tool: &str, input: &str) -> Result<Input, String> {
    if tool != TOOL {
        return Err(format!("this plugin has no tool `{tool}`"));
    }
    let input: Input = serde_json::from_str(input).map_err(|e| e.to_string())?;
    if !input.file_path.starts_with('/') {
        return Err(format!(
            "file_path must be an absolute path, not `{}`",
            input.file_path
        ));
    }
    Ok(input)
}

/// The report every language's WordCount prints, byte for byte.
fn report(bytes: &[u8], top: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines = bytes.iter().filter(|&&b| b == b'\n').count();
    let words: Vec<&str> = text.split_ascii_whitespace().collect();
    let mut out = format!(
        "lines: {lines}\nwords: {}\nbytes: {}\n",
        words.len(),
        bytes.len()
    );
    if top > 0 {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for word in &words {
            let word = word
                .trim_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_ascii_lowercase();
            if !word.is_empty() {
                *counts.entry(word).or_default() += 1;
            }
        }
        let mut ranked: Vec<(String, usize)> = counts.into_iter().collect();
        // Most frequent first; ties in alphabetical order (the map's order,
        // kept by a stable sort).
        ranked.sort_by(|a, b| b.1.cmp(&a.1));
        let shown: Vec<String> = ranked
            .iter()
            .take(top)
            .map(|(word, n)| format!("{word} {n}"))
            .collect();
        out.push_str(&format!("top: {}\n", shown.join(", ")));
    }
    out
}

struct WordCount;

impl Guest for WordCount {
    fn tools() -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: TOOL.into(),
            description: "Counts the lines, words and bytes of a text file, and optionally \
                          lists its most frequent words. `file_path` must be absolute."
                .into(),
            input_schema: SCHEMA.into(),
            annotations: ToolAnnotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
        }]
    }

    fn plan(tool: String, input: String) -> Result<CallPlan, String> {
        let input = parse(&tool, &input)?;
        Ok(CallPlan {
            concurrency_safe: true,
            interrupt: InterruptBehavior::Cancel,
            needs: vec![Capability::ReadFile(input.file_path)],
        })
    }

    fn call(tool: String, input: String, _context: CallContext) -> Result<ToolOutput, CallError> {
        let input = parse(&tool, &input).map_err(CallError::InvalidInput)?;
        let bytes = std::fs::read(&input.file_path)
            .map_err(|e| CallError::Failed(format!("cannot read {}: {e}", input.file_path)))?;
        Ok(ToolOutput {
            content: vec![Content::Text(report(&bytes, input.top))],
            is_error: false,
        })
    }
}

export!(WordCount);
