//! Command lines that only make, copy, move or remove files, which
//! acceptEdits (and auto mode before its classifier) runs without asking
//! when every path they name is inside the working directories — Claude
//! Code 2.1.332 allows `mkdir`, `touch`, `rm`, `rmdir`, `mv`, `cp` and
//! `sed` there. `sed` is left out here: its script can write any file
//! (`w`) or run a program (`e`), which a path check does not see.
//!
//! Each program's options are a short list; any other option (`-t DIR`,
//! `--target-directory=`, `mkdir -m`, `touch -d`) makes the line ask. A
//! line may mix these with commands that only read
//! ([`super::read_only`]); anything else asks as before.

use super::read_only::{command_reads, judged_line, plain_words};
use super::{Analysis, SimpleCommand};

/// What an editing line touches, as written (relative to the working
/// directory unless absolute).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LineEdits {
    /// Paths it reads (the read-only commands' arguments).
    pub reads: Vec<String>,
    /// Paths it writes; `true` when a directory there is written whole
    /// (removed, moved, copied recursively).
    pub writes: Vec<(String, bool)>,
}

/// The programs, the single-letter options each accepts, its long
/// options, and whether a directory it names is written whole.
struct Editor {
    name: &'static str,
    letters: &'static str,
    long: &'static [&'static str],
    whole_tree: fn(&[&str]) -> bool,
}

const EDITORS: &[Editor] = &[
    Editor {
        name: "mkdir",
        letters: "pv",
        long: &["--parents", "--verbose"],
        whole_tree: |_| false,
    },
    Editor {
        name: "touch",
        letters: "",
        long: &[],
        whole_tree: |_| false,
    },
    Editor {
        name: "rm",
        letters: "rRfvdi",
        long: &["--recursive", "--force", "--verbose", "--dir"],
        whole_tree: |_| true,
    },
    Editor {
        name: "rmdir",
        letters: "pv",
        long: &["--parents", "--verbose"],
        whole_tree: |_| false,
    },
    Editor {
        name: "mv",
        letters: "fnvi",
        long: &["--force", "--no-clobber", "--verbose"],
        whole_tree: |_| true,
    },
    Editor {
        name: "cp",
        letters: "rRapfnvi",
        long: &[
            "--recursive",
            "--archive",
            "--force",
            "--no-clobber",
            "--verbose",
        ],
        whole_tree: |args| {
            args.iter().any(|a| {
                matches!(*a, "--recursive" | "--archive")
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains(['r', 'R', 'a']))
            })
        },
    },
];

/// What `line` touches when every command in it only reads or is one of
/// the editing programs with options from its list; `None` otherwise.
pub fn edits_of_analysed_line(line: &str, analysis: &Analysis) -> Option<LineEdits> {
    /// What one command of the line does.
    enum Part {
        Writes(Vec<(String, bool)>),
        Reads(Vec<String>),
    }
    let (parts, redirected) = judged_line(line, analysis, |command| {
        command_writes(command)
            .map(Part::Writes)
            .or_else(|| command_reads(command).map(Part::Reads))
    })?;
    let mut edits = LineEdits {
        reads: redirected,
        writes: Vec::new(),
    };
    for part in parts {
        match part {
            Part::Writes(writes) => edits.writes.extend(writes),
            Part::Reads(reads) => edits.reads.extend(reads),
        }
    }
    (!edits.writes.is_empty()).then_some(edits)
}

/// One editing command's paths, or `None` when it is not one.
fn command_writes(command: &SimpleCommand) -> Option<Vec<(String, bool)>> {
    let words = plain_words(command)?;
    let (program, args) = words.split_first()?;
    let editor = EDITORS.iter().find(|e| e.name == *program)?;
    let whole = (editor.whole_tree)(args);
    let mut paths = Vec::new();
    let mut options_done = false;
    for arg in args {
        if !options_done && *arg == "--" {
            options_done = true;
        } else if !options_done && arg.starts_with("--") {
            editor.long.contains(arg).then_some(())?;
        } else if !options_done && arg.starts_with('-') && arg.len() > 1 {
            arg[1..]
                .chars()
                .all(|c| editor.letters.contains(c))
                .then_some(())?;
        } else {
            plain_path(arg).then_some(())?;
            paths.push(((*arg).to_string(), whole));
        }
    }
    (!paths.is_empty()).then_some(paths)
}

/// A path the check can follow: not empty, and no glob that could match
/// `.` or `..` (a pattern component starting with a dot).
fn plain_path(word: &str) -> bool {
    !word.is_empty()
        && word
            .split('/')
            .all(|part| !(part.starts_with('.') && part.contains(['*', '?', '['])))
}

#[cfg(test)]
mod tests {
    use super::super::analyse;
    use super::*;

    fn edits(line: &str) -> Option<LineEdits> {
        edits_of_analysed_line(line, &analyse(line))
    }

    #[test]
    fn editing_lines_name_what_they_write() {
        let writes = |line: &str| edits(line).map(|e| e.writes);
        assert_eq!(writes("mkdir -p a/b"), Some(vec![("a/b".into(), false)]));
        assert_eq!(
            writes("touch made.txt"),
            Some(vec![("made.txt".into(), false)])
        );
        assert_eq!(
            writes("cp -r src dst"),
            Some(vec![("src".into(), true), ("dst".into(), true)])
        );
        assert_eq!(
            writes("cp a b"),
            Some(vec![("a".into(), false), ("b".into(), false)])
        );
        assert_eq!(writes("rm -rf build"), Some(vec![("build".into(), true)]));
        assert_eq!(
            edits("mkdir out && cat a.txt 2>/dev/null"),
            Some(LineEdits {
                reads: vec!["a.txt".into()],
                writes: vec![("out".into(), false)],
            })
        );
    }

    #[test]
    fn lines_that_may_do_more_are_not_edits() {
        for line in [
            "ls",
            "mkdir -m 777 x",
            "touch -d yesterday x",
            "cp -t /tmp a",
            "cp --target-directory=/tmp a",
            "mv a b; curl example.com",
            "mkdir $HOME/x",
            "rm ~/x",
            "rm -rf .*",
            "rm -rf ./.[!.]*/..",
            "touch a > b",
            "sed -i s/a/b/ a.txt",
            "FOO=1 mkdir x",
            "sudo mkdir x",
            "mkdir",
        ] {
            assert_eq!(edits(line), None, "{line}");
        }
    }
}
