//! The Read tool as a component: numbered lines of one file, or an image.
//!
//! The host grants this component read access to exactly the file the call
//! names (nothing else exists for it), and the component reads that file with
//! `std::fs` as any program would. All the tool's logic (validation, line
//! numbering, binary detection, images, caps, errors) lives here.

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../wit/tool/v0.3.0",
});

use carapace::tool::host::{FileStamp, record_read};
use carapace::tool::types::{
    CallContext, CallError, CallPlan, Capability, Content, Image, InterruptBehavior,
    ToolAnnotations, ToolDefinition, ToolOutput,
};
use carapace_guest_util::{absolute_path, looks_binary, stamp};
use exports::carapace::tool::tool_provider::Guest;
use serde::Deserialize;
use serde::Serialize;
use serde_json::json;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::Path;

const TOOL_NAME: &str = "Read";
/// Lines returned when the call gives no `limit`.
const DEFAULT_LINE_LIMIT: u64 = 2000;
/// Characters kept of one line; the rest is cut with a marker.
const MAX_LINE_CHARS: usize = 2000;
/// Characters of output, all lines together, before the rest is left for a
/// later call.
const MAX_OUTPUT_CHARS: usize = 256 * 1024;
/// The largest image sent to the model.
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

#[derive(Deserialize)]
struct ReadInput {
    file_path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

struct ReadTool;

impl Guest for ReadTool {
    fn tools() -> Vec<ToolDefinition> {
        // The definition the host embeds too (see tool.json).
        carapace_guest_util::tools_from_json!()
    }

    fn plan(tool: String, input: String) -> Result<CallPlan, String> {
        check_tool(&tool)?;
        let input = parse_input(&input)?;
        let path = absolute_path("file_path", &input.file_path)?;
        Ok(CallPlan {
            concurrency_safe: true,
            interrupt: InterruptBehavior::Cancel,
            needs: vec![Capability::ReadFile(path.to_string_lossy().into_owned())],
        })
    }

    fn call(tool: String, input: String, context: CallContext) -> Result<ToolOutput, CallError> {
        check_tool(&tool).map_err(CallError::InvalidInput)?;
        let input = parse_input(&input).map_err(CallError::InvalidInput)?;
        let path = absolute_path("file_path", &input.file_path).map_err(CallError::InvalidInput)?;
        let (content, structured) =
            read(&path, input.offset, input.limit, context.wants_structured)
                .map_err(CallError::Failed)?;
        Ok(ToolOutput {
            content: vec![content],
            is_error: false,
            structured,
        })
    }
}

export!(ReadTool);

fn check_tool(tool: &str) -> Result<(), String> {
    if tool == TOOL_NAME {
        Ok(())
    } else {
        Err(format!("this plugin provides `{TOOL_NAME}`, not `{tool}`"))
    }
}

fn parse_input(input: &str) -> Result<ReadInput, String> {
    serde_json::from_str(input).map_err(|e| format!("invalid input: {e}"))
}

/// Claude Code's shape for Read's structured result of a text read.
#[derive(Serialize)]
struct TextResult<'a> {
    r#type: &'static str,
    file: TextFile<'a>,
}

/// The lines' text as in the file, how many, from which line, of how
/// many.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TextFile<'a> {
    file_path: &'a str,
    content: &'a str,
    num_lines: u64,
    start_line: u64,
    total_lines: u64,
}

/// The structured result of a text read, serialised straight into one
/// buffer: a fresh instance pays for every page of memory it touches.
fn text_result(path: &str, content: &str, start: u64, lines: u64, total: u64) -> String {
    let result = TextResult {
        r#type: "text",
        file: TextFile {
            file_path: path,
            content,
            num_lines: lines,
            start_line: start,
            total_lines: total,
        },
    };
    let mut out = Vec::with_capacity(content.len() + path.len() + 128);
    match serde_json::to_writer(&mut out, &result) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The file's content (numbered lines, or an image) and, when `structured`,
/// the structured result (JSON).
fn read(
    path: &Path,
    offset: Option<u64>,
    limit: Option<u64>,
    structured: bool,
) -> Result<(Content, Option<String>), String> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => format!("File does not exist: {shown}"),
        ErrorKind::PermissionDenied => format!("Permission denied: {shown}"),
        _ => format!("Cannot open {shown}: {e}"),
    })?;
    let meta = file
        .metadata()
        .map_err(|e| format!("Cannot inspect {shown}: {e}"))?;
    if meta.is_dir() {
        return Err(format!(
            "{shown} is a directory, not a file. Read only reads files; list a directory with another tool."
        ));
    }
    let (modified_ns, size) = stamp(&meta);
    let read = Reading {
        path,
        structured,
        stamp: FileStamp { modified_ns, size },
        len: meta.len(),
    };
    if meta.len() == 0 {
        read.record();
        return Ok((
            Content::Text(format!(
                "<system-reminder>The file {shown} exists but is empty.</system-reminder>"
            )),
            read.describe("", 1, 0, 0),
        ));
    }
    let mut reader = BufReader::new(file);
    let head = reader
        .fill_buf()
        .map_err(|e| format!("Cannot read {shown}: {e}"))?;
    if let Some(media_type) = image_type(head) {
        return read.image(&mut reader, media_type);
    }
    if looks_binary(head) {
        return Err(format!(
            "{shown} is a binary file; Read only returns text and images."
        ));
    }
    read.text(&mut reader, offset, limit)
}

/// One file being read.
struct Reading<'a> {
    path: &'a Path,
    /// Whether the structured result is wanted.
    structured: bool,
    stamp: FileStamp,
    len: u64,
}

/// The lines of one page of a file, as read.
struct Page {
    /// The numbered lines.
    out: String,
    /// The lines as they are in the file (for the structured result).
    raw: String,
    /// The last line number seen.
    line_no: u64,
    /// The line the read stopped at (a limit reached), if it stopped.
    stopped_at: Option<u64>,
    /// Whether the line that stopped the read ended with a newline.
    stopped_on_newline: bool,
}

impl Reading<'_> {
    /// Only what will be read is built: a fresh instance pays for every
    /// page it touches.
    fn describe(&self, content: &str, start: u64, lines: u64, total: u64) -> Option<String> {
        let path = self.path.to_string_lossy();
        self.structured
            .then(|| text_result(&path, content, start, lines, total))
    }

    /// What the model was shown of the file, for a later Edit's check.
    fn record(&self) {
        record_read(&self.path.to_string_lossy(), self.stamp);
    }

    /// An image, whole, within the size limit.
    fn image(
        &self,
        reader: &mut impl Read,
        media_type: &str,
    ) -> Result<(Content, Option<String>), String> {
        let shown = self.path.display();
        if self.len > MAX_IMAGE_BYTES {
            return Err(format!(
                "{shown} is an image of {} bytes, larger than the {MAX_IMAGE_BYTES}-byte limit for images.",
                self.len
            ));
        }
        let mut data = Vec::with_capacity(self.len as usize);
        reader
            .read_to_end(&mut data)
            .map_err(|e| format!("Cannot read {shown}: {e}"))?;
        self.record();
        let structured = self.structured.then(|| {
            json!({"type": "image", "file": {
                "filePath": self.path.to_string_lossy(),
                "type": media_type,
                "originalSize": data.len(),
            }})
            .to_string()
        });
        let image = Image {
            media_type: media_type.to_string(),
            data,
        };
        Ok((Content::Image(image), structured))
    }

    /// Numbered lines from `offset`, at most `limit` of them and
    /// `MAX_OUTPUT_CHARS`, with where to go on when there is more.
    fn text(
        &self,
        reader: &mut impl BufRead,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> Result<(Content, Option<String>), String> {
        let shown = self.path.display();
        let first = offset.unwrap_or(1).max(1);
        let last = first.saturating_add(limit.unwrap_or(DEFAULT_LINE_LIMIT)); // exclusive
        let mut page = self.page(reader, first, last)?;
        let line_no = page.line_no;
        let returned = match page.stopped_at {
            Some(next) => next.saturating_sub(first),
            None => line_no.saturating_sub(first) + 1,
        };
        // The total counts the lines not returned too: a file has one line
        // more than it has newlines.
        let total = match page.stopped_at {
            Some(_) => {
                line_no
                    + u64::from(page.stopped_on_newline)
                    + newlines_left(reader, &shown.to_string())?
            }
            None => line_no,
        };
        if line_no < first {
            return Ok((
                Content::Text(format!(
                    "<system-reminder>The file {shown} has {line_no} lines, fewer than the requested offset {first}.</system-reminder>"
                )),
                self.describe("", first, 0, total),
            ));
        }
        self.record();
        if let Some(next) = page.stopped_at {
            page.out.push_str(&format!(
                "\n\n(The file continues after line {}. Call Read again with offset {next} to see more.)",
                next - 1
            ));
        }
        let described = self.describe(&page.raw, first, returned, total);
        Ok((Content::Text(page.out), described))
    }

    /// Lines `first..last` (the file split on '\n': a final newline starts
    /// one more, empty line, so "a\nb\n" has three), numbered.
    fn page(&self, reader: &mut impl BufRead, first: u64, last: u64) -> Result<Page, String> {
        // Sized once: growing a buffer in a fresh instance touches new pages.
        let expected = usize::try_from(self.len).unwrap_or(0).min(MAX_OUTPUT_CHARS);
        let structured = self.structured;
        let mut page = Page {
            out: String::with_capacity(expected + expected / 8 + 64),
            raw: String::with_capacity(if structured { expected } else { 0 }),
            line_no: 0,
            stopped_at: None,
            stopped_on_newline: false,
        };
        let mut previous_ended_with_newline = true;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| format!("Cannot read {}: {e}", self.path.display()))?;
            if n == 0 && !previous_ended_with_newline {
                break;
            }
            let ended_with_newline = buf.last() == Some(&b'\n');
            if ended_with_newline {
                buf.pop();
            }
            page.line_no += 1;
            let full = page.line_no >= first && page.out.len() >= MAX_OUTPUT_CHARS;
            if page.line_no >= last || full {
                page.stopped_at = Some(page.line_no);
                page.stopped_on_newline = ended_with_newline;
                break;
            }
            if page.line_no >= first {
                if page.line_no > first {
                    page.out.push('\n');
                    if structured {
                        page.raw.push('\n');
                    }
                }
                push_line(&mut page.out, page.line_no, &buf);
                if structured && page.raw.len() < MAX_OUTPUT_CHARS {
                    page.raw.push_str(&String::from_utf8_lossy(&buf));
                }
            }
            if n == 0 {
                break;
            }
            previous_ended_with_newline = ended_with_newline;
        }
        Ok(page)
    }
}

/// The newlines left in `reader`.
fn newlines_left(reader: &mut impl BufRead, shown: &str) -> Result<u64, String> {
    let mut left = 0u64;
    loop {
        let chunk = reader
            .fill_buf()
            .map_err(|e| format!("Cannot read {shown}: {e}"))?;
        if chunk.is_empty() {
            return Ok(left);
        }
        left += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        let n = chunk.len();
        reader.consume(n);
    }
}
fn push_line(out: &mut String, line_no: u64, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    out.push_str(&line_no.to_string());
    out.push('\t');
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => {
            out.push_str(&text[..cut]);
            out.push_str("… [line truncated]");
        }
        None => out.push_str(text),
    }
}

/// The media type of an image, from its first bytes.
fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}
