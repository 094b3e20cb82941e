//! Grep: ripgrep's walk (`.gitignore`, `.ignore`, `.rgignore`, hidden
//! files searched as Claude Code's `--hidden` asks, version-control folders
//! skipped) and its matcher and searcher, on every core.

use super::confine::{Root, confined, parent_ignore_files};
use super::{Cancel, MAX_COLUMNS, SearchError, modified_ns, overrides, threads};
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of matching and context lines kept for one search; past it the
/// search stops and says its result is incomplete (more than a model could
/// be shown many times over).
const MAX_KEPT_BYTES: usize = 32 << 20;

/// Files up to this size are read whole when they must also be checked for
/// a private key (one read for both); larger ones stream.
const WHOLE_READ_LIMIT: u64 = 16 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrepMode {
    /// Which files match (each file's search stops at its first match).
    Files,
    /// How many lines match in each file.
    Count,
    /// The matching lines, with their context.
    Content,
}

#[derive(Debug, Clone)]
pub struct GrepRequest {
    /// A granted file, or the root of a granted tree.
    pub root: PathBuf,
    pub pattern: String,
    pub case_insensitive: bool,
    /// `.` matches newlines and a match may span lines (`rg -U
    /// --multiline-dotall`).
    pub multiline: bool,
    /// Each match on a line of its own instead of the line (`rg -o`).
    pub only_matching: bool,
    /// ripgrep's `--glob`s (`!` excludes).
    pub globs: Vec<String>,
    /// A ripgrep file type (`rust`, `py`, …).
    pub file_type: Option<String>,
    pub mode: GrepMode,
    pub before: usize,
    pub after: usize,
    /// Files the caller may not read: skipped unsearched, and named in
    /// the outcome.
    pub withheld: Option<Withheld>,
}

/// Which files of a tree a search skips (the caller's judgement: this
/// folder imports none): by the path, before the file is opened, and by
/// the content of a file that matched.
#[derive(Clone)]
pub struct Withheld {
    pub by_path: std::sync::Arc<dyn Fn(&Path) -> bool + Send + Sync>,
    pub by_content: fn(&[u8]) -> bool,
}

impl std::fmt::Debug for Withheld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Withheld(..)")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepLine {
    /// Counted from 1.
    pub number: u64,
    pub text: String,
    /// A matching line (else context).
    pub is_match: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepFile {
    pub path: PathBuf,
    pub modified_ns: u64,
    /// Matching lines (1 in files mode: the search stopped there).
    pub count: u64,
    /// Content mode only: matches and context, in order.
    pub lines: Vec<GrepLine>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrepOutcome {
    /// Matching files, in no particular order.
    pub files: Vec<GrepFile>,
    /// The search stopped at [`MAX_KEPT_BYTES`] of lines.
    pub incomplete: bool,
    /// Files skipped because they hold credentials: by the caller's
    /// judgement of their path, or found holding a private key.
    pub withheld: Vec<PathBuf>,
}

/// Runs one search, confined to `request.root`.
pub fn grep(request: &GrepRequest, cancel: &Cancel) -> Result<GrepOutcome, SearchError> {
    super::bounded("the regular expression", &request.pattern)?;
    let matcher = RegexMatcherBuilder::new()
        .size_limit(super::REGEX_SIZE_LIMIT)
        .dfa_size_limit(super::REGEX_SIZE_LIMIT)
        .case_insensitive(request.case_insensitive)
        .multi_line(true)
        .dot_matches_new_line(request.multiline)
        .line_terminator((!request.multiline).then_some(b'\n'))
        .build(&request.pattern)
        .map_err(|e| SearchError::Pattern(e.to_string()))?;
    let root = Root::open(&request.root)?;
    let walk = match root.is_dir {
        true => Some(walker(
            &root.path,
            &request.globs,
            request.file_type.as_deref(),
        )?),
        false => None,
    };
    let extra = match root.is_dir {
        true => parent_ignore_files(&root.path),
        false => Vec::new(),
    };
    let search = Search {
        request,
        matcher,
        root: &root,
        found: Mutex::new(Vec::new()),
        withheld: Mutex::new(Vec::new()),
        kept: AtomicUsize::new(0),
        cancel,
    };
    confined(&root, extra, |_| match walk {
        Some(walk) => search.walk(walk),
        None => search.one(&root.path),
    })?;
    if cancel.is_cancelled() && search.kept.load(Ordering::Relaxed) <= MAX_KEPT_BYTES {
        return Err(SearchError::Cancelled);
    }
    let incomplete = search.kept.load(Ordering::Relaxed) > MAX_KEPT_BYTES;
    let mut withheld = search.withheld.into_inner().unwrap_or_default();
    withheld.sort();
    Ok(GrepOutcome {
        files: search.found.into_inner().unwrap_or_default(),
        incomplete,
        withheld,
    })
}

/// ripgrep's walk from `root`, with Claude Code's `--hidden` and its
/// version-control exclusions.
fn walker(
    root: &Path,
    globs: &[String],
    file_type: Option<&str>,
) -> Result<ignore::WalkParallel, SearchError> {
    let globs: Vec<&str> = globs.iter().map(String::as_str).collect();
    let overrides = overrides(root, &globs)?;
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(true)
        .git_global(false)
        .follow_links(false)
        .overrides(overrides)
        .threads(threads());
    if let Some(name) = file_type {
        let mut types = ignore::types::TypesBuilder::new();
        types.add_defaults();
        if !types.definitions().iter().any(|d| d.name() == name) {
            return Err(SearchError::FileType(name.to_string()));
        }
        types.select(name);
        builder.types(
            types
                .build()
                .map_err(|e| SearchError::FileType(format!("{name}: {e}")))?,
        );
    }
    Ok(builder.build_parallel())
}

struct Search<'a> {
    request: &'a GrepRequest,
    matcher: RegexMatcher,
    root: &'a Root,
    found: Mutex<Vec<GrepFile>>,
    withheld: Mutex<Vec<PathBuf>>,
    kept: AtomicUsize,
    cancel: &'a Cancel,
}

impl Search<'_> {
    fn searcher(&self) -> Searcher {
        let content = self.request.mode == GrepMode::Content;
        SearcherBuilder::new()
            .line_number(true)
            .multi_line(self.request.multiline)
            .before_context(if content { self.request.before } else { 0 })
            .after_context(if content { self.request.after } else { 0 })
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .build()
    }

    fn walk(&self, walk: ignore::WalkParallel) {
        walk.run(|| {
            let mut searcher = self.searcher();
            let mut buffer = Vec::new();
            Box::new(move |entry| {
                if self.cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|t| t.is_file())
                {
                    self.search_file(&mut searcher, &mut buffer, entry.path());
                }
                WalkState::Continue
            })
        });
    }

    fn one(&self, path: &Path) {
        let mut searcher = self.searcher();
        self.search_file(&mut searcher, &mut Vec::new(), path);
    }

    fn search_file(&self, searcher: &mut Searcher, buffer: &mut Vec<u8>, path: &Path) {
        if self
            .request
            .withheld
            .as_ref()
            .is_some_and(|w| (w.by_path)(path))
        {
            self.withhold(path);
            return;
        }
        // A name swapped for a link, or gone, since it was listed: skipped,
        // as ripgrep skips what it cannot open.
        let Ok(file) = self.root.open_file(path) else {
            return;
        };
        let mut sink = Collect {
            search: self,
            count: 0,
            lines: Vec::new(),
        };
        let content_check = self.request.withheld.as_ref().map(|w| w.by_content);
        // Asked once: the size (when the file must be checked for a key)
        // and, for a file that matched, its modification time.
        let meta = content_check.and_then(|_| file.metadata().ok());
        // Read once, searched and checked for a private key from the same
        // bytes; a file too large for that is searched as it streams, and
        // read again only if it matched.
        let whole = meta.as_ref().is_some_and(|m| m.len() <= WHOLE_READ_LIMIT);
        buffer.clear();
        let searched = if whole {
            std::io::Read::read_to_end(&mut &file, buffer).is_ok()
                && searcher
                    .search_slice(&self.matcher, buffer, &mut sink)
                    .is_ok()
        } else {
            searcher
                .search_file(&self.matcher, &file, &mut sink)
                .is_ok()
        };
        if !searched || sink.count == 0 {
            return;
        }
        // Only a file that matched is checked for a private key: the check
        // costs nothing where nothing would be shown.
        if let Some(by_content) = content_check {
            let holds = match whole {
                true => by_content(buffer),
                false => self.holds_secret(path, by_content),
            };
            if holds {
                self.withhold(path);
                return;
            }
        }
        let modified = meta
            .or_else(|| file.metadata().ok())
            .map_or(0, |m| modified_ns(&m));
        let found = GrepFile {
            path: path.to_path_buf(),
            modified_ns: modified,
            count: sink.count,
            lines: sink.lines,
        };
        if let Ok(mut all) = self.found.lock() {
            all.push(found);
        }
    }

    fn withhold(&self, path: &Path) {
        if let Ok(mut all) = self.withheld.lock() {
            all.push(path.to_path_buf());
        }
    }

    fn holds_secret(&self, path: &Path, by_content: fn(&[u8]) -> bool) -> bool {
        use std::io::Read;
        let mut bytes = Vec::new();
        match self.root.open_file(path) {
            Ok(mut file) => file.read_to_end(&mut bytes).is_err() || by_content(&bytes),
            // Unreadable now: not shown either way.
            Err(_) => true,
        }
    }

    /// Counts `bytes` against the search's budget; false once it is spent
    /// (the search is stopped).
    fn keep(&self, bytes: usize) -> bool {
        let kept = self.kept.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if kept > MAX_KEPT_BYTES {
            self.cancel.cancel();
            return false;
        }
        true
    }
}

/// One file's matches.
struct Collect<'s, 'a> {
    search: &'s Search<'a>,
    count: u64,
    lines: Vec<GrepLine>,
}

impl Collect<'_, '_> {
    fn push(&mut self, number: u64, bytes: &[u8], is_match: bool) -> bool {
        let bytes = trim_terminator(bytes);
        let text = if bytes.len() > MAX_COLUMNS {
            match is_match {
                true => "[Omitted long matching line]".to_string(),
                false => "[Omitted long context line]".to_string(),
            }
        } else {
            String::from_utf8_lossy(bytes).into_owned()
        };
        let fits = self.search.keep(text.len() + 32);
        self.lines.push(GrepLine {
            number,
            text,
            is_match,
        });
        fits
    }
}

fn trim_terminator(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl Sink for Collect<'_, '_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        self.count += 1;
        let request = self.search.request;
        match request.mode {
            GrepMode::Files => return Ok(false),
            GrepMode::Count => return Ok(!self.search.cancel.is_cancelled()),
            GrepMode::Content => {}
        }
        let first = found.line_number().unwrap_or(1);
        for (i, line) in found.lines().enumerate() {
            let number = first + i as u64;
            if !request.only_matching {
                if !self.push(number, line, true) {
                    return Ok(false);
                }
                continue;
            }
            let mut parts = Vec::new();
            let _ = self.search.matcher.find_iter(line, |m| {
                if !m.is_empty() {
                    parts.push(line[m].to_vec());
                }
                true
            });
            for part in parts {
                if !self.push(number, &part, true) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, std::io::Error> {
        let number = context.line_number().unwrap_or(0);
        Ok(self.push(number, context.bytes(), false))
    }
}
