//! Helpers the first-party tools share: path normalisation, file stamps,
//! line numbering, output caps, patches, and a directory listing that a
//! name WASI cannot carry does not cut short. Each tool keeps its own WIT
//! bindings.

use std::path::{Component, Path, PathBuf};

/// `raw` as an absolute path with `.` and `..` resolved lexically, so the
/// path a tool asks for and the path it opens are the same string; a
/// relative path is an error for the model to fix.
pub fn absolute_path(field: &str, raw: &str) -> Result<PathBuf, String> {
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(format!(
            "{field} must be an absolute path, but `{raw}` is relative"
        ));
    }
    let mut normal = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::Normal(name) => normal.push(name),
            Component::ParentDir => {
                normal.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Ok(normal)
}

/// An optional path argument, else `cwd` (the host's working directory).
pub fn path_or_cwd(field: &str, raw: Option<&str>, cwd: Option<String>) -> Result<PathBuf, String> {
    match raw {
        Some(raw) if !raw.trim().is_empty() => absolute_path(field, raw),
        _ => cwd.map(PathBuf::from).ok_or_else(|| {
            format!("no {field} given, and the host has no working directory to use instead")
        }),
    }
}

/// (modification time in ns since the epoch, size) of a file's metadata.
pub fn stamp(meta: &std::fs::Metadata) -> (u64, u64) {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    (modified, meta.len())
}

/// Refuses an edit of a file the model has not read in this conversation,
/// or that changed since it did: `seen` is what the host's read ledger
/// says it was shown (`last-read`), as [`stamp`]'s pair.
pub fn read_before_edit(
    path: &str,
    meta: &std::fs::Metadata,
    seen: Option<(u64, u64)>,
) -> Result<(), String> {
    match seen {
        None => Err(format!(
            "{path} has not been read in this conversation. Read it first, then edit it."
        )),
        Some(seen) if seen != stamp(meta) => Err(format!(
            "{path} has changed since it was last read. Read it again, then make the edit."
        )),
        Some(_) => Ok(()),
    }
}

/// Replaces the file at `path` with `bytes` as Claude Code's Write and Edit
/// do: a new file beside it, renamed over it, so that the old content or
/// the new one is there, never half of either. Carapace stages the granted
/// file's directory for the call and commits what the tool left under the
/// granted name (synced, renamed over the real file) after it returns; the
/// rename here is what makes that file a new one. Where nothing can be
/// created beside the file, or the rename is refused, the file is written
/// in place, as Claude Code falls back to; a write that fails (a full disk)
/// leaves the old file as it was.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return std::fs::write(path, bytes);
    };
    let mut attempt = 0u32;
    let (temp, mut file) = loop {
        let temp = dir.join(format!(
            ".{}.carapace-{}-{attempt}",
            name.to_string_lossy(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or_default()
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => break (temp, file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
            // A directory where nothing may be created beside the file.
            Err(_) => return std::fs::write(path, bytes),
        }
    };
    if let Err(e) = file.write_all(bytes) {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    drop(file);
    if std::fs::rename(&temp, path).is_err() {
        let _ = std::fs::remove_file(&temp);
        return std::fs::write(path, bytes);
    }
    Ok(())
}

/// `text` cut to at most `max` characters, with a note saying how much was
/// left out.
pub fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!("{}\n\n[… {rest} more characters not shown]", &text[..cut])
        }
    }
}

/// The file's text numbered `N<TAB>line` from `first` (1-based).
pub fn numbered(text: &str, first: usize) -> String {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| format!("{}\t{}", first + i, line.strip_suffix('\r').unwrap_or(line)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether the first bytes look binary (a NUL byte).
pub fn looks_binary(head: &[u8]) -> bool {
    head.iter().take(8192).any(|b| *b == 0)
}

/// Lines of context around each change in a [`structured_patch`].
const PATCH_CONTEXT: usize = 3;

/// The change from `old` to `new` as Claude Code reports it in Write's and
/// Edit's structured results (the `diff` package's `structuredPatch`
/// hunks): `oldStart`, `oldLines`, `newStart`, `newLines`, and `lines`
/// prefixed with ` `, `-` or `+`.
pub fn structured_patch(old: &str, new: &str) -> serde_json::Value {
    let diff = similar::TextDiff::from_lines(old, new);
    let hunks: Vec<serde_json::Value> = diff
        .grouped_ops(PATCH_CONTEXT)
        .iter()
        .filter_map(|group| {
            let (first, last) = (group.first()?, group.last()?);
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            let lines: Vec<String> = group
                .iter()
                .flat_map(|op| diff.iter_changes(op))
                .map(|change| {
                    let sign = match change.tag() {
                        similar::ChangeTag::Equal => ' ',
                        similar::ChangeTag::Delete => '-',
                        similar::ChangeTag::Insert => '+',
                    };
                    let value = change.value();
                    format!("{sign}{}", value.strip_suffix('\n').unwrap_or(value))
                })
                .collect();
            Some(serde_json::json!({
                "oldStart": old_range.start + 1,
                "oldLines": old_range.len(),
                "newStart": new_range.start + 1,
                "newLines": new_range.len(),
                "lines": lines,
            }))
        })
        .collect();
    serde_json::Value::Array(hunks)
}

/// Every entry of `dir` whose name WASI can carry, and how many it cannot
/// (names that are not UTF-8). `std::fs::read_dir` stops at the first such
/// name — hiding every sibling after it — so this reads the directory
/// through `wasi:filesystem` itself and steps over them.
#[cfg(target_os = "wasi")]
pub fn list_dir(dir: &Path) -> std::io::Result<(Vec<PathBuf>, usize)> {
    use wasi::filesystem::types::{DescriptorFlags, ErrorCode, OpenFlags, PathFlags};
    let wasi_error = |e: ErrorCode| std::io::Error::other(format!("{dir:?}: {e:?}"));
    // The preopen the directory lies in (the deepest that holds it).
    let (base, relative) = wasi::filesystem::preopens::get_directories()
        .into_iter()
        .filter_map(|(descriptor, guest)| {
            let relative = dir.strip_prefix(&guest).ok()?.to_path_buf();
            Some((guest.len(), descriptor, relative))
        })
        .max_by_key(|(depth, _, _)| *depth)
        .map(|(_, descriptor, relative)| (descriptor, relative))
        .ok_or_else(|| std::io::Error::other(format!("{dir:?} is not granted")))?;
    let relative = relative.to_string_lossy().into_owned();
    let opened;
    let descriptor = if relative.is_empty() {
        &base
    } else {
        opened = base
            .open_at(
                PathFlags::empty(),
                &relative,
                OpenFlags::DIRECTORY,
                DescriptorFlags::READ,
            )
            .map_err(wasi_error)?;
        &opened
    };
    let entries = descriptor.read_directory().map_err(wasi_error)?;
    let mut names = Vec::new();
    let mut unrepresentable = 0;
    loop {
        match entries.read_directory_entry() {
            Ok(Some(entry)) => names.push(dir.join(entry.name)),
            Ok(None) => break,
            Err(ErrorCode::IllegalByteSequence) => unrepresentable += 1,
            Err(e) => return Err(wasi_error(e)),
        }
    }
    Ok((names, unrepresentable))
}

/// Outside WASI (this crate's own tests): `std::fs::read_dir`, which has
/// no such limit.
#[cfg(not(target_os = "wasi"))]
pub fn list_dir(dir: &Path) -> std::io::Result<(Vec<PathBuf>, usize)> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        names.push(entry?.path());
    }
    Ok((names, 0))
}

/// The note a listing adds when names were skipped.
pub fn unrepresentable_note(count: usize) -> Option<String> {
    (count > 0).then(|| {
        format!(
            "({count} file name{} that {} not UTF-8 could not be listed)",
            if count == 1 { "" } else { "s" },
            if count == 1 { "is" } else { "are" }
        )
    })
}

/// A tool's definition as its `tool.json` records it. The host embeds the
/// same file, so it offers the tool without compiling it, and what it
/// offers and what the tool says it is are one text.
pub struct Definition {
    pub name: String,
    pub description: String,
    /// The JSON Schema, as JSON text.
    pub input_schema: String,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// `tools()` of a one-tool plugin: its `tool.json` (beside `src/`) in the
/// plugin's own binding types, which must be in scope as `ToolDefinition`
/// and `ToolAnnotations`.
#[macro_export]
macro_rules! tools_from_json {
    () => {
        $crate::definition(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tool.json"
        )))
        .map(|d| ToolDefinition {
            name: d.name,
            description: d.description,
            input_schema: d.input_schema,
            annotations: ToolAnnotations {
                read_only: d.read_only,
                destructive: d.destructive,
                idempotent: d.idempotent,
                open_world: d.open_world,
            },
        })
        .into_iter()
        .collect()
    };
}

/// `path` as Grep and Glob show it: relative to the working directory
/// `cwd` when beneath it, else as given.
pub fn shown_path(cwd: Option<&Path>, path: &str) -> String {
    cwd.and_then(|cwd| Path::new(path).strip_prefix(cwd).ok())
        .filter(|rest| !rest.as_os_str().is_empty())
        .map_or_else(|| path.to_string(), |rest| rest.display().to_string())
}

/// Reads a `tool.json`; `None` when it is not one (a test checks every
/// first-party file reads).
pub fn definition(json: &str) -> Option<Definition> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let flag = |key: &str| value["annotations"][key].as_bool().unwrap_or(false);
    if !value["input_schema"].is_object() {
        return None;
    }
    Some(Definition {
        name: value["name"].as_str()?.to_string(),
        description: value["description"].as_str()?.to_string(),
        input_schema: value["input_schema"].to_string(),
        read_only: flag("read_only"),
        destructive: flag("destructive"),
        idempotent: flag("idempotent"),
        open_world: flag("open_world"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_line_change_is_one_hunk_as_claude_code_reports_it() {
        assert_eq!(
            structured_patch("abc\n", "xyz\n"),
            serde_json::json!([{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                                "lines": ["-abc", "+xyz"]}])
        );
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n";
        assert_eq!(
            structured_patch(old, new),
            serde_json::json!([{"oldStart": 2, "oldLines": 7, "newStart": 2, "newLines": 7,
                                "lines": [" 2", " 3", " 4", "-5", "+five", " 6", " 7", " 8"]}])
        );
        assert_eq!(structured_patch("same\n", "same\n"), serde_json::json!([]));
    }
}
