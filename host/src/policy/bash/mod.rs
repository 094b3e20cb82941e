//! What a Bash command line would run, for the permission rules.
//!
//! The line is parsed with `brush-parser` (a bash grammar) into the simple
//! commands it runs: every part of `&&`, `||`, `;`, `|`, `&`, subshells and
//! brace groups, and the commands inside `$(…)`, backticks and `<(…)`. Words
//! are unquoted (`r''m` is `rm`); a word that depends on an expansion is
//! marked dynamic. Anything the analysis does not follow — loops,
//! conditionals, functions, a command name that is itself an expansion, a
//! line that does not parse, too many parts, a substitution hidden inside a
//! parameter or arithmetic expansion, an alias — makes the line opaque: no
//! allow rule matches an opaque line and every deny or ask rule does. The
//! analysis falls back to deny, never to allow.
//!
//! Deny and ask rules also see what a command would run: the program by its
//! name when invoked by path (`/bin/rm`), without leading assignments, and
//! the commands it hands to another — wrappers (`env`, `timeout`, `xargs`,
//! `sudo`…), `find -exec`, `sh -c STRING`, `eval`. Allow rules match the line
//! as written, and a prefix rule never allows a program's own ways of running
//! arbitrary code (`git -c …`, `--exec-path`, `find -exec`, `rg --pre`…).

mod bounds;
mod edits;
mod pattern;
mod read_only;
mod run;

pub use pattern::CommandPattern;

pub use bounds::{Exceeded, MAX_LINE_BYTES, MAX_OPENERS};
use brush_parser::ast;
use brush_parser::word::{WordPiece, WordPieceWithSource};
pub use edits::{LineEdits, edits_of_analysed_line};
pub use read_only::{reads_of_analysed_line, reads_of_read_only_line};
pub use run::{ANALYSIS_DEADLINE, analyse};

/// More simple commands than this in one line make it opaque.
const MAX_COMMANDS: usize = 256;
/// Deeper nesting (substitutions inside substitutions…) makes it opaque.
const MAX_DEPTH: usize = 8;
/// More commands derived from wrappers than this make the line opaque.
const MAX_DERIVED: usize = 1024;

/// Programs that run (part of) the rest of their arguments as a command.
const WRAPPERS: &[&str] = &[
    "env",
    "command",
    "exec",
    "builtin",
    "nice",
    "nohup",
    "timeout",
    "time",
    "stdbuf",
    "xargs",
    "sudo",
    "doas",
    "setsid",
    "ionice",
    "taskset",
    "chrt",
    "unbuffer",
    "watch",
    "flock",
    "chroot",
    "strace",
    "ltrace",
    "busybox",
    "runuser",
    "systemd-run",
    "firejail",
    "proot",
    "unshare",
    "nsenter",
    "setpriv",
    "caffeinate",
];

/// Shells: `-c STRING` runs STRING.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "su",
];

/// Options through which a program runs arbitrary code of the caller's
/// choosing: a prefix rule for the program does not allow them.
const EXECUTING_OPTIONS: &[(&str, &[&str])] = &[
    (
        "git",
        &[
            "--upload-pack",
            "--receive-pack",
            "--exec",
            "--ext-diff",
            "--textconv",
        ],
    ),
    ("find", &["-exec", "-execdir", "-ok", "-okdir"]),
    ("rg", &["--pre"]),
    (
        "tar",
        &[
            "--to-command",
            "--use-compress-program",
            "-I",
            "--checkpoint-action",
            "--info-script",
            "--new-volume-script",
        ],
    ),
    ("rsync", &["-e", "--rsh", "--rsync-path"]),
    ("ssh", &["-o", "ProxyCommand", "LocalCommand"]),
    ("less", &["-P"]),
    ("man", &["-P", "--pager"]),
];

/// One word of a command as the analysis sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WordText {
    Literal(String),
    /// Its value depends on an expansion or a substitution.
    Dynamic,
}

/// One simple command: its words in order (assignments first, redirections
/// left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    pub words: Vec<WordText>,
    /// Where the program's name is (after the leading assignments).
    pub name: usize,
    /// The commands it hands to another program to run (a wrapper's, `sh
    /// -c`'s, `eval`'s, `find -exec`'s).
    pub runs: Vec<SimpleCommand>,
}

impl SimpleCommand {
    /// The literal words before the first dynamic one, and whether the
    /// command is wholly literal.
    fn literal_prefix(&self) -> (String, bool) {
        literal_text(self.words.iter())
    }

    /// The same from the program's name on, the name as written or by its
    /// last path component.
    fn program_text(&self, by_base_name: bool) -> (String, bool) {
        let mut words: Vec<WordText> = self.words.iter().skip(self.name).cloned().collect();
        if by_base_name && let Some(WordText::Literal(name)) = words.first_mut() {
            *name = base_name(name).to_string();
        }
        literal_text(words.iter())
    }

    fn program(&self) -> Option<&str> {
        match self.words.get(self.name) {
            Some(WordText::Literal(name)) => Some(base_name(name)),
            _ => None,
        }
    }

    /// Whether one of its arguments is an option through which the program
    /// runs code of the caller's choosing.
    fn runs_code_through_options(&self) -> bool {
        let Some(program) = self.program() else {
            return false;
        };
        if program == "git" && self.git_global_option_runs_code() {
            return true;
        }
        let Some((_, options)) = EXECUTING_OPTIONS.iter().find(|(p, _)| *p == program) else {
            return false;
        };
        self.words
            .iter()
            .skip(self.name + 1)
            .any(|word| match word {
                WordText::Literal(arg) => options.iter().any(|option| {
                    arg == option
                        || arg
                            .strip_prefix(option)
                            .is_some_and(|rest| rest.starts_with('='))
                        || (option.len() == 2 && option.starts_with('-') && arg.starts_with(option))
                        || (!option.starts_with('-') && arg.contains(option))
                }),
                WordText::Dynamic => false,
            })
    }
}

impl SimpleCommand {
    /// git's options before its subcommand that set configuration (a pager,
    /// an alias to `!cmd`, `core.fsmonitor`, `core.sshCommand`…) or where
    /// its own programs come from; and `clone -u` (the upload program).
    fn git_global_option_runs_code(&self) -> bool {
        let args: Vec<&WordText> = self.words.iter().skip(self.name + 1).collect();
        let mut i = 0;
        while let Some(word) = args.get(i) {
            let WordText::Literal(arg) = word else {
                // An unknown word where an option may be: it may be one.
                return true;
            };
            if arg.starts_with("-c")
                || arg.starts_with("--config-env")
                || arg.starts_with("--exec-path")
            {
                return true;
            }
            if [
                "-C",
                "--git-dir",
                "--work-tree",
                "--namespace",
                "--super-prefix",
            ]
            .contains(&arg.as_str())
            {
                i += 2;
                continue;
            }
            if arg.starts_with('-') {
                i += 1;
                continue;
            }
            // The subcommand.
            return arg == "clone"
                && args[i + 1..].iter().any(
                    |w| matches!(w, WordText::Literal(a) if a == "-u" || a.starts_with("-u")),
                );
        }
        false
    }
}

fn literal_text<'a>(words: impl Iterator<Item = &'a WordText>) -> (String, bool) {
    let mut parts = Vec::new();
    for word in words {
        match word {
            WordText::Literal(text) => parts.push(text.as_str()),
            WordText::Dynamic => return (parts.join(" "), false),
        }
    }
    (parts.join(" "), true)
}

fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Analysis {
    Commands(Vec<SimpleCommand>),
    Opaque {
        reason: String,
    },
    /// Too long or too deeply nested to be parsed at all: refused in every
    /// mode, whatever the rules say.
    Exceeds(Exceeded),
}

impl Analysis {
    pub fn describe(&self) -> String {
        match self {
            Analysis::Commands(commands) => format!("{} command(s)", commands.len()),
            Analysis::Opaque { reason } => format!("not analysable: {reason}"),
            Analysis::Exceeds(exceeded) => format!("not analysed: {exceeded}"),
        }
    }
}

fn analyse_within_bounds(line: &str) -> Analysis {
    let mut out = Vec::new();
    match walk_line(line, 0, &mut out) {
        Ok(()) if out.is_empty() => Analysis::Opaque {
            reason: "no command".into(),
        },
        Ok(()) => Analysis::Commands(out),
        Err(reason) => Analysis::Opaque { reason },
    }
}

type Walk = Result<(), String>;

fn walk_line(line: &str, depth: usize, out: &mut Vec<SimpleCommand>) -> Walk {
    if depth > MAX_DEPTH {
        return Err("nested too deeply".into());
    }
    let options = brush_parser::ParserOptions::default();
    let mut parser = brush_parser::Parser::new(std::io::Cursor::new(line), &options);
    let program = parser
        .parse_program()
        .map_err(|e| format!("does not parse: {e}"))?;
    for list in &program.complete_commands {
        walk_list(list, depth, out)?;
    }
    Ok(())
}

fn walk_list(list: &ast::CompoundList, depth: usize, out: &mut Vec<SimpleCommand>) -> Walk {
    for ast::CompoundListItem(and_or, _separator) in &list.0 {
        walk_pipeline(&and_or.first, depth, out)?;
        for next in &and_or.additional {
            match next {
                ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline) => {
                    walk_pipeline(pipeline, depth, out)?
                }
            }
        }
    }
    Ok(())
}

fn walk_pipeline(pipeline: &ast::Pipeline, depth: usize, out: &mut Vec<SimpleCommand>) -> Walk {
    for command in &pipeline.seq {
        match command {
            ast::Command::Simple(simple) => walk_simple(simple, depth, out)?,
            ast::Command::Compound(ast::CompoundCommand::BraceGroup(group), redirects) => {
                walk_list(&group.list, depth, out)?;
                walk_redirects(redirects.as_ref(), depth, out)?;
            }
            ast::Command::Compound(ast::CompoundCommand::Subshell(subshell), redirects) => {
                walk_list(&subshell.list, depth, out)?;
                walk_redirects(redirects.as_ref(), depth, out)?;
            }
            ast::Command::Compound(other, _) => {
                return Err(format!("a compound command ({})", compound_name(other)));
            }
            ast::Command::Function(_) => return Err("a function definition".into()),
            ast::Command::ExtendedTest(..) => return Err("a [[ … ]] test".into()),
        }
        if out.len() > MAX_COMMANDS {
            return Err(format!("more than {MAX_COMMANDS} commands"));
        }
    }
    Ok(())
}

fn compound_name(command: &ast::CompoundCommand) -> &'static str {
    match command {
        ast::CompoundCommand::Arithmetic(_) => "arithmetic",
        ast::CompoundCommand::ArithmeticForClause(_) | ast::CompoundCommand::ForClause(_) => {
            "for loop"
        }
        ast::CompoundCommand::BraceGroup(_) => "brace group",
        ast::CompoundCommand::Subshell(_) => "subshell",
        ast::CompoundCommand::CaseClause(_) => "case",
        ast::CompoundCommand::IfClause(_) => "if",
        ast::CompoundCommand::WhileClause(_) => "while loop",
        ast::CompoundCommand::UntilClause(_) => "until loop",
        ast::CompoundCommand::Coprocess(_) => "coprocess",
    }
}

fn walk_redirects(
    redirects: Option<&ast::RedirectList>,
    depth: usize,
    out: &mut Vec<SimpleCommand>,
) -> Walk {
    let Some(list) = redirects else { return Ok(()) };
    for redirect in &list.0 {
        walk_redirect(redirect, depth, out)?;
    }
    Ok(())
}

fn walk_redirect(redirect: &ast::IoRedirect, depth: usize, out: &mut Vec<SimpleCommand>) -> Walk {
    match redirect {
        ast::IoRedirect::File(_, _, ast::IoFileRedirectTarget::Filename(word)) => {
            word_text(&word.value, depth, out).map(|_| ())
        }
        ast::IoRedirect::File(
            _,
            _,
            ast::IoFileRedirectTarget::ProcessSubstitution(_, subshell),
        ) => walk_list(&subshell.list, depth + 1, out),
        ast::IoRedirect::File(_, _, ast::IoFileRedirectTarget::Duplicate(word)) => {
            word_text(&word.value, depth, out).map(|_| ())
        }
        ast::IoRedirect::File(_, _, ast::IoFileRedirectTarget::Fd(_)) => Ok(()),
        ast::IoRedirect::HereString(_, word) => word_text(&word.value, depth, out).map(|_| ()),
        ast::IoRedirect::HereDocument(..) => Err("a here-document".into()),
        ast::IoRedirect::OutputAndError(word, _) => word_text(&word.value, depth, out).map(|_| ()),
    }
}

fn walk_simple(simple: &ast::SimpleCommand, depth: usize, out: &mut Vec<SimpleCommand>) -> Walk {
    let mut words = Vec::new();
    let mut items: Vec<&ast::CommandPrefixOrSuffixItem> = Vec::new();
    if let Some(prefix) = &simple.prefix {
        items.extend(prefix.0.iter());
    }
    let mut name_index = None;
    for item in &items {
        walk_item(item, depth, out, &mut words)?;
    }
    if let Some(name) = &simple.word_or_name {
        name_index = Some(words.len());
        words.push(word_text(&name.value, depth, out)?);
    }
    if let Some(suffix) = &simple.suffix {
        for item in &suffix.0 {
            walk_item(item, depth, out, &mut words)?;
        }
    }
    if let Some(index) = name_index
        && words[index] == WordText::Dynamic
    {
        return Err("the command name is an expansion".into());
    }
    if !words.is_empty() {
        let name = name_index.unwrap_or(words.len());
        let mut budget = MAX_DERIVED;
        let runs = derive_runs(&words, name, depth, &mut budget)?;
        out.push(SimpleCommand { words, name, runs });
    }
    Ok(())
}

/// What the command at `words[name..]` hands to another program to run.
fn derive_runs(
    words: &[WordText],
    name: usize,
    depth: usize,
    budget: &mut usize,
) -> Result<Vec<SimpleCommand>, String> {
    if depth > MAX_DEPTH {
        return Err("nested too deeply".into());
    }
    let Some(WordText::Literal(program)) = words.get(name) else {
        return Ok(Vec::new());
    };
    let program = base_name(program);
    let args = words.get(name + 1..).unwrap_or_default();
    let mut runs = Vec::new();
    let view = |words: &[WordText], budget: &mut usize| -> Result<SimpleCommand, String> {
        *budget = budget
            .checked_sub(1)
            .ok_or("too many commands hidden in wrappers")?;
        Ok(SimpleCommand {
            words: words.to_vec(),
            name: 0,
            runs: derive_runs(words, 0, depth + 1, budget)?,
        })
    };
    match program {
        "alias" | "shopt" | "enable" => {
            return Err(format!("`{program}` can change what a later name runs"));
        }
        _ if WRAPPERS.contains(&program) => {
            // Options and their values differ between wrappers: any later
            // word may be where the wrapped command starts.
            for start in 0..args.len() {
                runs.push(view(&args[start..], budget)?);
            }
        }
        "find" => {
            let mut i = 0;
            while i < args.len() {
                let starts = matches!(&args[i], WordText::Literal(a) if ["-exec", "-execdir", "-ok", "-okdir"].contains(&a.as_str()));
                i += 1;
                if starts {
                    let end = args[i..]
                        .iter()
                        .position(|a| matches!(a, WordText::Literal(t) if t == ";" || t == "+"))
                        .map_or(args.len(), |p| i + p);
                    runs.push(view(&args[i..end], budget)?);
                    i = end;
                }
            }
        }
        "eval" => {
            let mut text = Vec::new();
            for arg in args {
                match arg {
                    WordText::Literal(t) => text.push(t.as_str()),
                    WordText::Dynamic => {
                        return Err("`eval` of text the analysis cannot see".into());
                    }
                }
            }
            walk_line(&text.join(" "), depth + 1, &mut runs)?;
        }
        _ if SHELLS.contains(&program) => {
            let flag = args.iter().position(|a| {
                matches!(a, WordText::Literal(t) if t.starts_with('-') && !t.starts_with("--") && t.contains('c'))
            });
            match flag.and_then(|f| args.get(f + 1)) {
                Some(WordText::Literal(script)) => walk_line(script, depth + 1, &mut runs)?,
                Some(WordText::Dynamic) => {
                    return Err(format!("`{program} -c` of text the analysis cannot see"));
                }
                None if flag.is_some() => return Err(format!("`{program} -c` without a command")),
                // A shell with no script reads its commands from its input.
                None if args
                    .iter()
                    .all(|a| matches!(a, WordText::Literal(t) if t.starts_with('-'))) =>
                {
                    return Err(format!("`{program}` reading commands from its input"));
                }
                None => {}
            }
        }
        _ => {}
    }
    Ok(runs)
}

fn walk_item(
    item: &ast::CommandPrefixOrSuffixItem,
    depth: usize,
    out: &mut Vec<SimpleCommand>,
    words: &mut Vec<WordText>,
) -> Walk {
    match item {
        ast::CommandPrefixOrSuffixItem::Word(word) => {
            words.push(word_text(&word.value, depth, out)?)
        }
        ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
            words.push(word_text(&word.value, depth, out)?)
        }
        ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
            walk_redirect(redirect, depth, out)?
        }
        ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
            walk_list(&subshell.list, depth + 1, out)?;
            words.push(WordText::Dynamic);
        }
    }
    Ok(())
}

/// A word unquoted; substitutions inside it are analysed as commands of
/// their own and make the word dynamic.
fn word_text(raw: &str, depth: usize, out: &mut Vec<SimpleCommand>) -> Result<WordText, String> {
    let options = brush_parser::ParserOptions::default();
    let pieces = brush_parser::word::parse(raw, &options)
        .map_err(|e| format!("a word does not parse: {e}"))?;
    let mut text = String::new();
    let mut dynamic = false;
    collect_pieces(raw, &pieces, depth, out, &mut text, &mut dynamic)?;
    Ok(if dynamic {
        WordText::Dynamic
    } else {
        WordText::Literal(text)
    })
}

fn collect_pieces(
    raw: &str,
    pieces: &[WordPieceWithSource],
    depth: usize,
    out: &mut Vec<SimpleCommand>,
    text: &mut String,
    dynamic: &mut bool,
) -> Walk {
    for piece in pieces {
        match &piece.piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
                text.push_str(t)
            }
            WordPiece::EscapeSequence(e) => text.push_str(e.trim_start_matches('\\')),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                collect_pieces(raw, inner, depth, out, text, dynamic)?
            }
            WordPiece::CommandSubstitution(command)
            | WordPiece::BackquotedCommandSubstitution(command) => {
                walk_line(command, depth + 1, out)?;
                *dynamic = true;
            }
            WordPiece::ParameterExpansion(_) => {
                // `${x:-$(cmd)}`: a command the expansion may run.
                let source = raw.get(piece.start_index..piece.end_index).unwrap_or(raw);
                if hides_a_command(source) {
                    return Err("a substitution inside a parameter expansion".into());
                }
                *dynamic = true;
            }
            WordPiece::ArithmeticExpression(expression) => {
                if hides_a_command(&expression.value) {
                    return Err("a substitution inside an arithmetic expansion".into());
                }
                *dynamic = true;
            }
            WordPiece::TildeExpansion(_) => *dynamic = true,
        }
    }
    Ok(())
}

/// Whether expansion text could run a command.
fn hides_a_command(text: &str) -> bool {
    ["$(", "`", "<(", ">("].iter().any(|m| text.contains(m))
}

#[cfg(test)]
mod tests;
