//! The answer in Claude Code's shapes: paths relative to the working
//! directory, files most recently modified first, content as ripgrep
//! prints it, `head_limit`/`offset` pagination with its notes, and the
//! structured result SDK clients and hooks read.

use super::Search;
use crate::carapace::tool::search::{GrepFile, GrepMode, GrepOutcome};
use serde_json::{Value, json};

pub(crate) fn render(search: &Search, outcome: GrepOutcome) -> (String, Value) {
    let unlisted = outcome.unlisted as usize;
    let (mut text, structured) = match search.request.mode {
        GrepMode::FilesWithMatches => files(search, outcome.files),
        GrepMode::Content => content(search, outcome.files),
        GrepMode::Count => counts(search, outcome.files),
    };
    if let Some(note) = carapace_guest_util::unrepresentable_note(unlisted) {
        text = format!("{text}\n{note}");
    }
    if outcome.incomplete {
        text.push_str(
            "\n\n(The search stopped early: it matched more than can be shown. Narrow the pattern, path or glob.)",
        );
    }
    (text, structured)
}

fn shown(search: &Search, path: &str) -> String {
    carapace_guest_util::shown_path(search.cwd.as_deref(), path)
}

fn plural(n: usize, word: &str) -> String {
    match n {
        1 => word.to_string(),
        _ => format!("{word}s"),
    }
}

/// `items` after `offset`, at most `head_limit` of them, and the limit if
/// it cut something.
fn page<T>(search: &Search, items: Vec<T>) -> (Vec<T>, Option<usize>) {
    let rest: Vec<T> = items.into_iter().skip(search.offset).collect();
    match search.head_limit {
        Some(limit) if rest.len() > limit => (rest.into_iter().take(limit).collect(), Some(limit)),
        _ => (rest, None),
    }
}

/// `limit: L, offset: O`, as much of it as applies; empty when neither.
fn pagination(search: &Search, applied: Option<usize>) -> String {
    let mut parts = Vec::new();
    if let Some(limit) = applied {
        parts.push(format!("limit: {limit}"));
    }
    if search.offset > 0 {
        parts.push(format!("offset: {}", search.offset));
    }
    parts.join(", ")
}

fn with_pagination(structured: &mut Value, search: &Search, applied: Option<usize>) {
    if let Some(limit) = applied {
        structured["appliedLimit"] = json!(limit);
    }
    if search.offset > 0 {
        structured["appliedOffset"] = json!(search.offset);
    }
}

fn files(search: &Search, mut found: Vec<GrepFile>) -> (String, Value) {
    found.sort_by(|a, b| {
        b.modified_ns
            .cmp(&a.modified_ns)
            .then_with(|| a.path.cmp(&b.path))
    });
    let names: Vec<String> = found.iter().map(|f| shown(search, &f.path)).collect();
    let (names, applied) = page(search, names);
    let mut structured =
        json!({"mode": "files_with_matches", "filenames": names, "numFiles": names.len()});
    with_pagination(&mut structured, search, applied);
    if names.is_empty() {
        return ("No files found".into(), structured);
    }
    let mut header = format!("Found {} {}", names.len(), plural(names.len(), "file"));
    let note = pagination(search, applied);
    if !note.is_empty() {
        header = format!("{header} {note}");
    }
    let text = std::iter::once(header)
        .chain(names)
        .collect::<Vec<_>>()
        .join("\n");
    (text, structured)
}

/// Every line ripgrep would print: `path:N:text` for a match, `path-N-text`
/// for context, `--` between groups when context was asked for.
fn content_lines(search: &Search, mut found: Vec<GrepFile>) -> Vec<String> {
    found.sort_by(|a, b| a.path.cmp(&b.path));
    let one_file = found.len() == 1 && search.root.to_string_lossy() == found[0].path;
    let context = search.request.before > 0 || search.request.after > 0;
    let mut out = Vec::new();
    for file in &found {
        let name = shown(search, &file.path);
        let mut previous: Option<u64> = None;
        for line in &file.lines {
            let starts_group = previous.is_none_or(|p| line.number > p + 1);
            if context && starts_group && !out.is_empty() {
                out.push("--".to_string());
            }
            let sep = if line.is_match { ':' } else { '-' };
            let mut shown_line = String::new();
            if !one_file {
                shown_line.push_str(&name);
                shown_line.push(sep);
            }
            if search.line_numbers {
                shown_line.push_str(&format!("{}{sep}", line.number));
            }
            shown_line.push_str(&line.text);
            out.push(shown_line);
            previous = Some(line.number);
        }
    }
    out
}

fn content(search: &Search, found: Vec<GrepFile>) -> (String, Value) {
    let (lines, applied) = page(search, content_lines(search, found));
    let text = lines.join("\n");
    let mut structured = json!({
        "mode": "content",
        "numFiles": 0,
        "filenames": [],
        "content": text,
        "numLines": lines.len(),
    });
    with_pagination(&mut structured, search, applied);
    if lines.is_empty() {
        return ("No matches found".into(), structured);
    }
    let note = pagination(search, applied);
    if note.is_empty() {
        return (text, structured);
    }
    (
        format!("{text}\n\n[Showing results with pagination = {note}]"),
        structured,
    )
}

fn counts(search: &Search, mut found: Vec<GrepFile>) -> (String, Value) {
    found.sort_by(|a, b| a.path.cmp(&b.path));
    let entries: Vec<(String, u64)> = found
        .iter()
        .map(|f| (shown(search, &f.path), f.count))
        .collect();
    let (entries, applied) = page(search, entries);
    let total: u64 = entries.iter().map(|(_, n)| n).sum();
    let lines: Vec<String> = entries
        .iter()
        .map(|(name, n)| format!("{name}:{n}"))
        .collect();
    let body = lines.join("\n");
    let mut structured = json!({
        "mode": "count",
        "numFiles": entries.len(),
        "filenames": [],
        "content": body,
        "numMatches": total,
    });
    with_pagination(&mut structured, search, applied);
    let mut summary = format!(
        "Found {total} total {} across {} {}.",
        plural(total as usize, "occurrence"),
        entries.len(),
        plural(entries.len(), "file")
    );
    let note = pagination(search, applied);
    if !note.is_empty() {
        summary = format!("{summary} with pagination = {note}");
    }
    let head = if lines.is_empty() {
        "No matches found".to_string()
    } else {
        body
    };
    (format!("{head}\n\n{summary}"), structured)
}
