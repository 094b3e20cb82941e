//! Command lines that only read, which default mode runs without asking,
//! as Claude Code does. Recorded from Claude Code 2.1.332 on the scripted
//! server (`tests/claude-code/read-only-commands.json`): it runs `git
//! status`, `git diff`, `git log`, `git show`, `ls`, `cat`/`head`/`tail`/
//! `grep`/`rg`/`wc`/`sort`/`cut`/`diff`/`file`/`stat` of files in the
//! working directories, `find` without `-exec`/`-delete`, `sed -n`, `pwd`,
//! `echo`, `which`, `date`, `whoami`, `du`, `df` — alone or joined by pipes,
//! `&&`, `||` and `;` — and asks for anything else, and for a read outside
//! the working directories. Such a line still runs in the command sandbox
//! and still meets every deny and ask rule first.
//!
//! The table errs on the side of asking: a line with a substitution, a
//! variable, a loop, a here-document, an output redirection other than to
//! `/dev/null`, a wrapper, or an option that writes or runs a program
//! (`sort -o`, `git diff --output`, `rg --pre`, `find -fprint`) is not
//! read-only.

use super::{Analysis, SimpleCommand, WordText, analyse};
use brush_parser::ast;

/// Programs that only read, and which of their words name what they read.
#[derive(Clone, Copy)]
enum Reads {
    /// Every word that is not an option is a path.
    Paths,
    /// The first such word is a pattern, the rest are paths (`grep`).
    PatternThenPaths,
    /// Nothing it is given is a path to check (`echo`, `date`, `git`).
    Nothing,
}

const PROGRAMS: &[(&str, Reads)] = &[
    ("ls", Reads::Paths),
    ("cat", Reads::Paths),
    ("head", Reads::Paths),
    ("tail", Reads::Paths),
    ("wc", Reads::Paths),
    ("sort", Reads::Paths),
    ("cut", Reads::Paths),
    ("diff", Reads::Paths),
    ("file", Reads::Paths),
    ("stat", Reads::Paths),
    ("du", Reads::Paths),
    ("find", Reads::Paths),
    ("tree", Reads::Paths),
    ("realpath", Reads::Paths),
    ("basename", Reads::Nothing),
    ("dirname", Reads::Nothing),
    ("grep", Reads::PatternThenPaths),
    ("egrep", Reads::PatternThenPaths),
    ("fgrep", Reads::PatternThenPaths),
    ("rg", Reads::PatternThenPaths),
    ("sed", Reads::PatternThenPaths),
    ("pwd", Reads::Nothing),
    ("echo", Reads::Nothing),
    ("which", Reads::Nothing),
    ("date", Reads::Nothing),
    ("whoami", Reads::Nothing),
    ("df", Reads::Nothing),
    ("uname", Reads::Nothing),
    ("true", Reads::Nothing),
    ("false", Reads::Nothing),
    ("git", Reads::Nothing),
];

/// Options through which a reading program writes or runs something.
const WRITING_OPTIONS: &[(&str, &[&str])] = &[
    ("sort", &["-o", "--output", "--compress-program"]),
    (
        "find",
        &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ],
    ),
    ("rg", &["--pre", "--pre-glob", "--search-zip", "-z"]),
    ("date", &["-s", "--set"]),
    ("tail", &["-f", "--follow", "-F"]),
    ("diff", &["--to-file", "--from-file"]),
];

/// git's subcommands that only read (with no option that writes or runs
/// a program).
const GIT_READING: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "blame",
    "shortlog",
    "describe",
    "rev-parse",
    "ls-files",
    "grep",
];

/// git's options that write, run a program or point git elsewhere.
const GIT_UNSAFE: &[&str] = &[
    "-c",
    "--config-env",
    "--exec-path",
    "--git-dir",
    "--work-tree",
    "--output",
    "--ext-diff",
    "--textconv",
    "-o",
    "--open-files-in-pager",
    "-O",
];

/// The words of `line` that name what it reads, as written (relative to
/// the working directory unless absolute), when the line only reads;
/// `None` when it may do more, or the analysis cannot tell.
pub fn reads_of_read_only_line(line: &str) -> Option<Vec<String>> {
    reads_of_analysed_line(line, &analyse(line))
}

/// [`reads_of_read_only_line`], with the line's analysis (the protected
/// one: a line past its bounds or its deadline is never parsed again
/// here) already made.
pub fn reads_of_analysed_line(line: &str, analysis: &Analysis) -> Option<Vec<String>> {
    let (reads, redirected) = judged_line(line, analysis, command_reads)?;
    Some(reads.into_iter().flatten().chain(redirected).collect())
}

/// Each command of a plain line as `judge` judges it, and the files the
/// line's redirections read; `None` when the line has a substitution, a
/// variable or a line break, the analysis could not follow it, `judge`
/// refuses a command, or a redirection writes.
pub(super) fn judged_line<T>(
    line: &str,
    analysis: &Analysis,
    judge: impl FnMut(&SimpleCommand) -> Option<T>,
) -> Option<(Vec<T>, Vec<String>)> {
    if line.contains('`') || line.contains('$') || line.contains('\n') {
        return None;
    }
    let Analysis::Commands(commands) = analysis else {
        return None;
    };
    // The programs first (cheap): most lines stop here.
    let judged = commands.iter().map(judge).collect::<Option<Vec<T>>>()?;
    // The parser panics on some lines (an fd number past `i32`): such a
    // line is not plain.
    let redirected = std::panic::catch_unwind(|| redirected_reads(line)).ok()??;
    Some((judged, redirected))
}

/// A plain command's words as written: none when it has leading
/// assignments, hands its arguments to another program (a wrapper), or a
/// word depends on an expansion.
pub(super) fn plain_words(command: &SimpleCommand) -> Option<Vec<&str>> {
    if command.name != 0 || !command.runs.is_empty() {
        return None;
    }
    command
        .words
        .iter()
        .map(|w| match w {
            WordText::Literal(text) => Some(text.as_str()),
            WordText::Dynamic => None,
        })
        .collect()
}

/// One simple command's reads, if it only reads.
pub(super) fn command_reads(command: &SimpleCommand) -> Option<Vec<String>> {
    let words = plain_words(command)?;
    let (program, args) = words.split_first()?;
    let (_, reads) = PROGRAMS.iter().find(|(name, _)| name == program)?;
    let unsafe_options = WRITING_OPTIONS
        .iter()
        .find(|(name, _)| name == program)
        .map_or(&[][..], |(_, options)| *options);
    if args.iter().any(|a| {
        unsafe_options
            .iter()
            .any(|o| a == o || a.starts_with(&format!("{o}=")))
    }) {
        return None;
    }
    match *program {
        "git" => git_reads(args).then(Vec::new),
        "sed" => sed_prints_only(args).then(|| paths(args, 1)),
        "echo" | "pwd" | "which" | "date" | "whoami" | "df" | "uname" | "true" | "false"
        | "basename" | "dirname" => Some(Vec::new()),
        _ => Some(match reads {
            Reads::Paths => paths(args, 0),
            Reads::PatternThenPaths => paths(args, 1),
            Reads::Nothing => Vec::new(),
        }),
    }
}

/// The words that are not options, skipping the first `skip` of them (a
/// pattern); everything after `--` is a path.
fn paths(args: &[&str], skip: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut options_done = false;
    let mut skipped = 0;
    for arg in args {
        if !options_done && *arg == "--" {
            options_done = true;
            continue;
        }
        if !options_done && arg.starts_with('-') && arg.len() > 1 {
            continue;
        }
        if skipped < skip {
            skipped += 1;
            continue;
        }
        out.push((*arg).to_string());
    }
    out
}

/// `git SUBCOMMAND …` that only reads; `branch`, `remote`, `stash` and
/// `tag` only when they list.
fn git_reads(args: &[&str]) -> bool {
    if args.iter().any(|a| {
        GIT_UNSAFE
            .iter()
            .any(|o| a == o || a.starts_with(&format!("{o}=")))
    }) {
        return false;
    }
    let Some((sub, rest)) = args.split_first() else {
        return false;
    };
    match *sub {
        s if GIT_READING.contains(&s) => true,
        "branch" | "tag" => rest.iter().all(|a| {
            matches!(
                *a,
                "-a" | "-r" | "-v" | "-vv" | "-l" | "--list" | "--all" | "--show-current"
            )
        }),
        "remote" => rest.iter().all(|a| matches!(*a, "-v" | "--verbose")),
        "stash" => rest == ["list"],
        _ => false,
    }
}

/// `sed -n` with a script that only prints lines (`1p`, `2,5p`, `/re/p`).
fn sed_prints_only(args: &[&str]) -> bool {
    let quiet = args.iter().any(|a| *a == "-n" || *a == "--quiet");
    let others = args
        .iter()
        .filter(|a| a.starts_with('-'))
        .all(|a| *a == "-n" || *a == "--quiet" || *a == "-E" || *a == "-r");
    let script = args.iter().find(|a| !a.starts_with('-'));
    let prints = script.is_some_and(|s| {
        let body = s.strip_suffix('p').unwrap_or("");
        !s.is_empty()
            && s.ends_with('p')
            && body
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c == '$')
    });
    quiet && others && prints
}

/// The files a line's redirections read; `None` when one writes anywhere
/// but `/dev/null`, duplicates into a file, or is a here-document.
fn redirected_reads(line: &str) -> Option<Vec<String>> {
    let options = brush_parser::ParserOptions::default();
    let mut parser = brush_parser::Parser::new(std::io::Cursor::new(line), &options);
    let program = parser.parse_program().ok()?;
    let mut reads = Vec::new();
    for list in &program.complete_commands {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            let pipelines = std::iter::once(&and_or.first).chain(and_or.additional.iter().map(
                |next| match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => p,
                },
            ));
            for pipeline in pipelines {
                for command in &pipeline.seq {
                    let ast::Command::Simple(simple) = command else {
                        return None;
                    };
                    let items = simple
                        .prefix
                        .iter()
                        .flat_map(|p| p.0.iter())
                        .chain(simple.suffix.iter().flat_map(|s| s.0.iter()));
                    for item in items {
                        if let ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) = item {
                            reads.extend(redirect_read(redirect)?);
                        }
                    }
                }
            }
        }
    }
    Some(reads)
}

fn redirect_read(redirect: &ast::IoRedirect) -> Option<Option<String>> {
    use ast::{IoFileRedirectKind as Kind, IoFileRedirectTarget as Target};
    match redirect {
        ast::IoRedirect::File(_, Kind::Read, Target::Filename(word)) => {
            Some(Some(word.value.clone()))
        }
        ast::IoRedirect::File(
            _,
            Kind::Write | Kind::Append | Kind::Clobber,
            Target::Filename(word),
        )
        | ast::IoRedirect::OutputAndError(word, _)
            if word.value == "/dev/null" =>
        {
            Some(None)
        }
        ast::IoRedirect::File(_, Kind::DuplicateOutput | Kind::DuplicateInput, Target::Fd(_)) => {
            Some(None)
        }
        ast::IoRedirect::File(_, Kind::DuplicateOutput, Target::Duplicate(word))
            if word.value.chars().all(|c| c.is_ascii_digit()) =>
        {
            Some(None)
        }
        ast::IoRedirect::HereString(..) => Some(None),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_lines_name_what_they_read() {
        for (line, reads) in [
            ("git status", vec![]),
            ("git diff HEAD", vec![]),
            ("ls -la", vec![]),
            ("cat a.txt | grep alpha", vec!["a.txt"]),
            ("ls && pwd", vec![]),
            ("head -1 src/m.rs", vec!["src/m.rs"]),
            ("grep -n alpha a.txt b.txt", vec!["a.txt", "b.txt"]),
            ("find . -name '*.rs'", vec![".", "*.rs"]),
            ("sed -n 1p a.txt", vec!["a.txt"]),
            ("cat /etc/hostname", vec!["/etc/hostname"]),
            ("wc -l < a.txt 2>/dev/null", vec!["a.txt"]),
            ("git log --oneline 2>&1", vec![]),
        ] {
            assert_eq!(
                reads_of_read_only_line(line),
                Some(reads.into_iter().map(String::from).collect()),
                "{line}"
            );
        }
    }

    #[test]
    fn lines_that_may_write_or_run_are_not_read_only() {
        for line in [
            "git add a.txt",
            "git commit -m x",
            "git config user.name",
            "git -c core.pager=x log",
            "git diff --output=x",
            "git branch new",
            "rm a.txt",
            "touch b.txt",
            "env",
            "python3 -c 'print(1)'",
            "sed -i s/a/b/ a.txt",
            "sed -n 'w out' a.txt",
            "awk '{print $1}' a.txt",
            "uniq a.txt",
            "find . -delete",
            "find . -name x -exec cat {} ;",
            "sort -o out a.txt",
            "cat a.txt > b.txt",
            "cat a.txt >> b.txt",
            "echo $(rm x)",
            "echo `rm x`",
            "cat $HOME/x",
            "xargs echo < a.txt",
            "FOO=1 ls",
            "for f in *; do cat $f; done",
            "(ls)",
            "cat <<EOF\nx\nEOF",
            "rg --pre cat x",
            "git status; rm a.txt",
            "cat a 99999999999999999999>x",
        ] {
            assert_eq!(reads_of_read_only_line(line), None, "{line}");
        }
    }
}
