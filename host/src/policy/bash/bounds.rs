//! What the analysis takes on before it parses: a bound on the line's
//! size and on how deeply it could nest, so that no command line — however
//! it is written — can exhaust the host's stack or time.
//!
//! The bash parser (and its tokenizer) recurse once per level of nesting.
//! The nesting a line can reach is at most the number of tokens that open
//! a level, counted here without regard to quoting: a quote, a comment or a
//! here-document can only make the count larger than the real depth, never
//! smaller, so no spelling slips past it. What exceeds a bound is refused
//! before it reaches the parser; the parse itself runs on a thread whose
//! stack is sized for the bound (see `PARSE_STACK_BYTES`).

/// The longest command line analysed.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The most tokens that could open a nesting level in one line.
pub const MAX_OPENERS: usize = 1024;
/// The stack the parse runs on. The deepest-recursing construct at the
/// bound needs between 8 and 16 MiB in an unoptimised build (measured with
/// the `every_construct_nested_to_the_bound_parses_on_its_stack` test at
/// smaller sizes), less when optimised: four times that. Reserved, not
/// used: only what the parse touches is backed by memory.
pub const PARSE_STACK_BYTES: usize = 64 << 20;

/// Up to this many openers a line is parsed on a thread with a 2 MiB
/// stack: at the measured ~16 KiB of stack per level (unoptimised), 32
/// levels take half a MiB of it.
pub const SHALLOW_OPENERS: usize = 32;

/// The deepest a line may nest parentheses. Where a line does not parse,
/// the parser backtracks over every enclosing `(` (a subshell, an
/// arithmetic command, a substitution?), about doubling its time per
/// level: 16 left open took 0.1 s, 24 took 7.5 s, and lines of 85 bytes
/// found by fuzzing ran for hours — one of them closing all but 12 of its
/// 33. At 12 deep a line parses in milliseconds, whatever follows.
pub const MAX_PAREN_DEPTH: usize = 12;

/// The deepest a line may nest subscripted parameter expansions
/// (`${a[${b[…]}]}`). The parser tries each of its ~20 forms of a
/// parameter expansion again inside every subscript, about 20 times the
/// time per level: unoptimised, 3 deep took 12–80 ms, 4 deep 0.2–1.8 s,
/// 5 deep 4–37 s, and a 22-byte line found by fuzzing
/// (`k[${x[${x[}${x[${x[}}}`) 4 s.
pub const MAX_SUBSCRIPT_DEPTH: usize = 3;

/// Why a line is not analysed at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exceeded {
    Length {
        bytes: usize,
    },
    Nesting {
        openers: usize,
    },
    Parens {
        depth: usize,
    },
    Subscripts {
        depth: usize,
    },
    /// Its parse overran the deadline.
    Time {
        limit: std::time::Duration,
    },
    /// An earlier line's parse overran its deadline and is still running.
    Busy,
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::Length { bytes } => write!(
                f,
                "the command line is {bytes} bytes long; at most {MAX_LINE_BYTES} are checked"
            ),
            Exceeded::Nesting { openers } => write!(
                f,
                "the command line could nest {openers} levels deep (brackets, braces, substitutions, keywords, unary operators); at most {MAX_OPENERS} are checked"
            ),
            Exceeded::Parens { depth } => write!(
                f,
                "the command line nests parentheses {depth} deep (in double quotes and here-documents too); at most {MAX_PAREN_DEPTH} are checked"
            ),
            Exceeded::Time { limit } => write!(
                f,
                "the command line took more than {} ms to analyse",
                limit.as_millis()
            ),
            Exceeded::Busy => write!(
                f,
                "an earlier command line's analysis overran its deadline and is still running; no line is analysed until it ends"
            ),
            Exceeded::Subscripts { depth } => write!(
                f,
                "the command line could nest subscripted expansions (`${{a[${{b[…]}}]}}`) {depth} deep; at most {MAX_SUBSCRIPT_DEPTH} are checked"
            ),
        }
    }
}

/// Reserved words that open a compound command.
const OPENING_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "while", "until", "for", "do", "case", "select", "function",
    "coproc",
];

/// Checks `line` against the bounds; within them, how many openers it has.
pub fn check(line: &str) -> Result<usize, Exceeded> {
    if line.len() > MAX_LINE_BYTES {
        return Err(Exceeded::Length { bytes: line.len() });
    }
    let openers = openers(line.as_bytes());
    if openers > MAX_OPENERS {
        return Err(Exceeded::Nesting { openers });
    }
    let depth = paren_depth(line.as_bytes());
    if depth > MAX_PAREN_DEPTH {
        return Err(Exceeded::Parens { depth });
    }
    let depth = subscript_depth(line.as_bytes());
    if depth > MAX_SUBSCRIPT_DEPTH {
        return Err(Exceeded::Subscripts { depth });
    }
    Ok(openers)
}

/// What a subscript-depth scan has open, innermost last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// `${`, closed by `}`.
    Expansion,
    /// The `[` of `${NAME[`, closed by `]`.
    Subscript,
    /// Any other `[` (an array element in arithmetic, a glob), closed by `]`.
    Bracket,
    /// `(`, `$(`, `<(`, closed by `)`.
    Paren,
    DoubleQuote,
    Backquote,
}

/// The open frames and how many of them are subscripts.
#[derive(Default)]
struct Frames {
    open: Vec<Frame>,
    subscripts: usize,
    deepest: usize,
}

impl Frames {
    fn top(&self) -> Option<Frame> {
        self.open.last().copied()
    }

    fn push(&mut self, frame: Frame) {
        self.open.push(frame);
        if frame == Frame::Subscript {
            self.subscripts += 1;
            self.deepest = self.deepest.max(self.subscripts);
        }
    }

    /// Closes the innermost frame when it is one of `kinds`; a closer
    /// inside anything else is literal to the parser, and closes nothing.
    fn close(&mut self, kinds: &[Frame]) {
        if let Some(top) = self.top().filter(|top| kinds.contains(top)) {
            self.open.pop();
            self.subscripts -= usize::from(top == Frame::Subscript);
        }
    }
}

/// How deep the line could nest subscripted parameter expansions, as the
/// parser's word grammar reads them: inside `${` only `}` closes, inside
/// a subscript or a bracket only `]`, inside parentheses only `)`, inside
/// double quotes only `"`; a closer escaped or in single quotes closes
/// nothing. What the scan cannot place for certain — an opener in single
/// quotes or a comment, a `[` that is only text — it counts as open: the
/// count may come out higher than the parser's depth, never lower.
fn subscript_depth(bytes: &[u8]) -> usize {
    let mut frames = Frames::default();
    let mut i = 0;
    while i < bytes.len() {
        let top = frames.top();
        match bytes[i] {
            b'\\' => i += 1,
            b'\'' if top != Some(Frame::DoubleQuote) => {
                let len = quoted_len(&bytes[i + 1..], b'\'', i > 0 && bytes[i - 1] == b'$');
                let quoted = &bytes[i + 1..i + 1 + len];
                (0..quoted.len())
                    .filter(|&at| subscript_opener(&quoted[at..]).is_some())
                    .for_each(|_| frames.push(Frame::Subscript));
                i += len + 1;
            }
            b'"' if top == Some(Frame::DoubleQuote) => frames.close(&[Frame::DoubleQuote]),
            b'"' => frames.push(Frame::DoubleQuote),
            b'`' if top == Some(Frame::Backquote) => frames.close(&[Frame::Backquote]),
            b'`' => frames.push(Frame::Backquote),
            b'(' => frames.push(Frame::Paren),
            b')' => frames.close(&[Frame::Paren]),
            b'}' => frames.close(&[Frame::Expansion]),
            b']' => frames.close(&[Frame::Subscript, Frame::Bracket]),
            b'[' => frames.push(Frame::Bracket),
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                frames.push(Frame::Expansion);
                match subscript_opener(&bytes[i..]) {
                    Some(len) => {
                        frames.push(Frame::Subscript);
                        i += len;
                    }
                    None => i += 2,
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    frames.deepest
}

/// Whether `rest` starts with `${NAME[` (`!` or `#` may precede the
/// name): how many bytes that takes.
fn subscript_opener(rest: &[u8]) -> Option<usize> {
    let mut i = 2;
    if !rest.starts_with(b"${") {
        return None;
    }
    if matches!(rest.get(i), Some(b'!' | b'#')) {
        i += 1;
    }
    if !rest
        .get(i)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        return None;
    }
    while rest
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    {
        i += 1;
    }
    (rest.get(i) == Some(&b'[')).then_some(i + 1)
}

/// How deep the line nests `(`, counted so that no spelling counts less
/// than the parser sees. Single quotes hold no code: skipped. Double
/// quotes and here-document bodies may (`"$(…)"`): their `(` count, and
/// their `)` close only what opened inside them. Outside them a `)` closes
/// one unless escaped or in a comment; after a `case`, whose patterns end
/// in `)`, none does.
fn paren_depth(bytes: &[u8]) -> usize {
    let (mut open, mut deepest) = (0usize, 0usize);
    let mut closes = true;
    let mut heredocs: Vec<(Vec<u8>, bool)> = Vec::new();
    let mut i = 0;
    let mut word_start = true;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'(' => open += 1,
            b')' if closes => open = open.saturating_sub(1),
            b'\\' => i += 1,
            b'\'' => i += quoted_len(&bytes[i + 1..], b'\'', i > 0 && bytes[i - 1] == b'$') + 1,
            b'"' => {
                let len = quoted_len(&bytes[i + 1..], b'"', true);
                let (inner, inner_deepest) = quoted_depth(&bytes[i + 1..i + 1 + len], open);
                (open, deepest) = (inner, deepest.max(inner_deepest));
                i += len + 1;
            }
            b'#' if word_start => {
                i += bytes[i..].iter().take_while(|c| **c != b'\n').count();
                continue;
            }
            b'<' if bytes[i..].starts_with(b"<<") && !bytes[i..].starts_with(b"<<<") => {
                let (delimiter, strip_tabs, len) = heredoc_delimiter(&bytes[i + 2..]);
                heredocs.push((delimiter, strip_tabs));
                i += 2 + len;
                continue;
            }
            b'\n' if !heredocs.is_empty() => {
                for (delimiter, strip_tabs) in std::mem::take(&mut heredocs) {
                    let (body, len) = heredoc_body(&bytes[i + 1..], &delimiter, strip_tabs);
                    let (inner, inner_deepest) = quoted_depth(body, open);
                    (open, deepest) = (inner, deepest.max(inner_deepest));
                    i += len;
                }
            }
            b'c' if word_start && bytes[i..].starts_with(b"case") => closes = false,
            _ => {}
        }
        deepest = deepest.max(open);
        word_start = matches!(b, b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')');
        i += 1;
    }
    deepest.max(open)
}

/// Whether a `<<` (not `<<<`) has no delimiter word after it: bash
/// refuses such a line, and the parser's tokenizer loops on it, allocating
/// until the process dies (`x[x=$($ $(<<-    >&&F`, found by fuzzing).
/// Counted in quotes too, so no spelling hides one.
pub fn heredoc_without_delimiter(line: &str) -> bool {
    let bytes = line.as_bytes();
    (0..bytes.len()).any(|i| {
        bytes[i..].starts_with(b"<<")
            && !bytes[i..].starts_with(b"<<<")
            && (i == 0 || bytes[i - 1] != b'<')
            && heredoc_delimiter(&bytes[i + 2..]).0.is_empty()
    })
}

/// Whether a `<<` (not `<<<`) that follows a command substitution's
/// `$(` has no line after it for its body: the parser's tokenizer loops
/// on such a line, allocating half a gigabyte a second
/// (`$(<<  l))#`, 10 bytes, found by fuzzing). Counted in quotes too, and
/// after any `$(` on the line, so no spelling hides one; bash itself
/// reads such a body to the end of the input and warns.
pub fn heredoc_without_body(line: &str) -> bool {
    let bytes = line.as_bytes();
    let substitution = (0..bytes.len())
        .find(|&i| bytes[i..].starts_with(b"$(") && !bytes[i..].starts_with(b"$(("));
    let Some(substitution) = substitution else {
        return false;
    };
    (substitution..bytes.len()).any(|i| {
        bytes[i..].starts_with(b"<<")
            && !bytes[i..].starts_with(b"<<<")
            && bytes[i - 1] != b'<'
            && !bytes[i..].contains(&b'\n')
    })
}

/// After `<<`: the delimiter (its quotes and escapes removed), whether
/// tabs are stripped (`<<-`), and how many bytes the operator's rest took.
fn heredoc_delimiter(rest: &[u8]) -> (Vec<u8>, bool, usize) {
    let strip_tabs = rest.first() == Some(&b'-');
    let mut i = usize::from(strip_tabs);
    while matches!(rest.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    let start = i;
    while let Some(c) = rest.get(i) {
        if c.is_ascii_whitespace() || b";&|<>()".contains(c) {
            break;
        }
        i += 1;
    }
    let word = rest[start..i]
        .iter()
        .filter(|c| !matches!(c, b'\'' | b'"' | b'\\'))
        .copied()
        .collect();
    (word, strip_tabs, i)
}

/// A here-document's body from the line after its operator: the body,
/// and the bytes it takes with its closing line (all of `rest` when the
/// delimiter never comes).
fn heredoc_body<'a>(rest: &'a [u8], delimiter: &[u8], strip_tabs: bool) -> (&'a [u8], usize) {
    let mut at = 0;
    while at < rest.len() {
        let end = rest[at..]
            .iter()
            .position(|c| *c == b'\n')
            .map_or(rest.len(), |e| at + e);
        let line = &rest[at..end];
        let line = match strip_tabs {
            true => &line[line.iter().take_while(|c| **c == b'\t').count()..],
            false => line,
        };
        if line == delimiter {
            return (&rest[..at], end);
        }
        at = end + 1;
    }
    (rest, rest.len())
}

/// Inside double quotes opened at depth `open`: the depth after them (what
/// they leave open stays open) and the deepest reached.
fn quoted_depth(quoted: &[u8], open: usize) -> (usize, usize) {
    let (mut depth, mut deepest) = (open, open);
    let mut i = 0;
    while i < quoted.len() {
        match quoted[i] {
            b'\\' => i += 1,
            b'(' => depth += 1,
            b')' if depth > open => depth -= 1,
            _ => {}
        }
        deepest = deepest.max(depth);
        i += 1;
    }
    (depth, deepest)
}

/// How many bytes of `rest` a quote ending in `quote` holds (all of it
/// when it never ends).
fn quoted_len(rest: &[u8], quote: u8, escapes: bool) -> usize {
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'\\' if escapes => i += 2,
            c if c == quote => return i,
            _ => i += 1,
        }
    }
    rest.len()
}

/// Every token that could open a level, counted whatever quotes it: the
/// brackets `(`, `{`, `[` and the backquote; the reserved words that open
/// compound commands; and a unary operator (`! - + ~`) that another
/// operator or an operand could follow without a space-separated word
/// between (`- - 1`, `!!x`, `-(`), since the arithmetic and test parsers
/// recurse on those.
fn openers(bytes: &[u8]) -> usize {
    let mut count = 0;
    let mut word_start: Option<usize> = None;
    for (i, &b) in bytes.iter().enumerate() {
        let is_word = b.is_ascii_alphanumeric() || b == b'_';
        match (is_word, word_start) {
            (true, None) => word_start = Some(i),
            (false, Some(start)) => {
                count += usize::from(is_opening_word(&bytes[start..i]));
                word_start = None;
            }
            _ => {}
        }
        count += match b {
            b'(' | b'{' | b'[' | b'`' => 1,
            b'!' | b'-' | b'+' | b'~' => usize::from(unary_chain(&bytes[i + 1..])),
            _ => 0,
        };
    }
    if let Some(start) = word_start {
        count += usize::from(is_opening_word(&bytes[start..]));
    }
    count
}

fn is_opening_word(word: &[u8]) -> bool {
    OPENING_WORDS.iter().any(|w| w.as_bytes() == word)
}

/// Whether what follows an operator (after blanks) could be another
/// operator or an operand of its own: `-1`, `- -`, `!$x`, `~(`.
fn unary_chain(rest: &[u8]) -> bool {
    let next = rest.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n'));
    matches!(
        next,
        Some(b'!' | b'-' | b'+' | b'~' | b'(' | b'$' | b'0'..=b'9')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_lines_are_well_within_the_bounds() {
        for line in [
            "cargo test --workspace -- --nocapture",
            "git log --oneline -n 20 | head -5",
            "for f in *.rs; do wc -l \"$f\"; done",
            "if [ -f x ]; then echo $((1 + 2)); fi",
            "ls -la && echo ${HOME:-/} $(date +%s)",
        ] {
            assert!(check(line).is_ok_and(|n| n < 12), "{line}");
        }
    }

    #[test]
    fn every_way_to_nest_counts_toward_the_bound() {
        let deep = MAX_OPENERS + 1;
        for (name, line) in [
            ("$(", "$(".repeat(deep)),
            ("${", "${x:-".repeat(deep)),
            ("{", "{ ".repeat(deep)),
            ("(", "(".repeat(deep)),
            ("`", "`".repeat(deep)),
            ("if", "if true; then ".repeat(deep)),
            ("while", "while x; do ".repeat(deep)),
            ("unary", format!("echo $(({}1))", "- ".repeat(deep))),
            ("not", format!("[[ {}x ]]", "! ".repeat(deep))),
            // Quotes, comments and here-documents never lower the count.
            ("quoted", format!("echo '{}'", "(".repeat(deep))),
            ("closers", "$(echo \")\" ".repeat(deep)),
            ("comment", "$(true #)\n".repeat(deep)),
        ] {
            assert!(
                matches!(check(&line), Err(Exceeded::Nesting { .. })),
                "{name} was not bounded"
            );
        }
        assert!(matches!(
            check(&"a".repeat(MAX_LINE_BYTES + 1)),
            Err(Exceeded::Length { .. })
        ));
    }

    #[test]
    fn parentheses_nested_too_deep_are_bounded_however_they_hide() {
        let open = "(".repeat(MAX_PAREN_DEPTH + 1);
        let closers = ")".repeat(MAX_PAREN_DEPTH + 1);
        for (name, line) in [
            ("bare", format!("{open}true")),
            ("found by fuzzing", "((((((((((((((((((()((((((((((((((((((()(((((((((((((((tru))))))))))))))))))))))))))".to_string()),
            ("closed first", format!("{closers}{open}true")),
            ("quoted closers", format!("{open} \"{closers}\" true")),
            ("single-quoted closers", format!("{open} '{closers}' true")),
            ("escaped closers", format!("{open} true {}", "\\)".repeat(MAX_PAREN_DEPTH + 1))),
            ("closed late", "((((((((((((((()(((((((((((((((x=$((1+2)[);${x:-y}'x:-y}'))))))))))))))))))".to_string()),
            ("closed in time", format!("{open}true{closers}")),
            ("commented closers", format!("{open} true #{closers}\n")),
            ("here-document closers", format!("{open} cat <<E\n{closers}\nE\n")),
            ("case patterns", format!("{open} case x in {} esac", "a) ;; ".repeat(13))),
            ("quoted substitution", format!("echo \"${open}\"")),
            ("here-document quote", format!("cat <<E\nit's\nE\n{open}true")),
            ("quoted closers first", format!("\"{closers}\"{open}true")),
            ("escaped quote", format!("{open} \"\\\" {closers} \"")),
            ("ansi-c quote", format!("{open} $'\\' {closers} '")),
        ] {
            assert!(
                matches!(check(&line), Err(Exceeded::Parens { .. })),
                "{name} was not bounded: {line}"
            );
        }
        // The control: 12 deep is fine, as are ordinary lines.
        let open = "(".repeat(MAX_PAREN_DEPTH);
        let closers = ")".repeat(MAX_PAREN_DEPTH);
        for line in [
            format!("{open}true{closers}"),
            format!("{open}true"),
            "echo $((1 + (2 * 3))) $(date) <(ls) \"(a)\"".to_string(),
            format!("case x in {} esac", "a) ;; ".repeat(20)),
            format!("python3 -c \"{}\"", "print(len(x)); ".repeat(40)),
            format!("python3 -c '{}'", "f(((a)));".repeat(40)),
            format!(
                "python3 - <<'EOF'\n{}\nEOF\necho done",
                "print(len(str(x)))\n".repeat(20)
            ),
            format!("cat <<-E > f\n\t{}\n\tE\n(true)", "(a) ".repeat(30)),
        ] {
            assert!(check(&line).is_ok(), "{line}");
        }
    }

    #[test]
    fn subscripted_expansions_nested_too_deep_are_bounded_however_they_hide() {
        let deep = |n: usize| format!("echo {}{}", "${x[".repeat(n), "]}".repeat(n));
        for (name, line) in [
            ("nested", deep(MAX_SUBSCRIPT_DEPTH + 1)),
            ("found by fuzzing", "k[${x[${x[}${x[${x[}}}".to_string()),
            ("found by fuzzing, whole", "eck[Tx${x[Tx${x[Toke2n:0Word(_, z?} A''= oken:5Wo\"\\\\\",  =Az?x${x[Tx${x[Token:0Word(_, z?} A''= oken:5Wo\"\\\\\",  =Az?} oke} oken$".to_string()),
            // A closer the parser reads as text closes nothing.
            ("braces in a subscript", "echo ${x[}${x[}${x[}${x[}".to_string()),
            ("quoted closers", "echo ${x[\"]\"${x[\"]\"${x[\"]\"${x[".to_string()),
            ("single-quoted closers", "echo ${x[']'${x[']'${x[']'${x[".to_string()),
            ("escaped closers", "echo ${x[\\]${x[\\]${x[\\]${x[".to_string()),
            ("bracketed closers", "echo ${x[a[]${x[a[]${x[a[]${x[".to_string()),
            ("parenthesised closers", "echo ${x[(]${x[(]${x[(]${x[".to_string()),
            ("in double quotes", format!("echo \"{}\"", deep(MAX_SUBSCRIPT_DEPTH + 1))),
            ("in single quotes", format!("echo '{}'", deep(MAX_SUBSCRIPT_DEPTH + 1))),
            ("indirect and length", "echo ${!x[${#x[${!x[${#x[0]}]}]}]}".to_string()),
            ("in a here-document", format!("cat <<E\n{}\nE\n", deep(MAX_SUBSCRIPT_DEPTH + 1))),
        ] {
            assert!(
                matches!(check(&line), Err(Exceeded::Subscripts { .. })),
                "{name} was not bounded: {line}"
            );
        }
        // The control: as deep as the bound, and subscripts side by side.
        for line in [
            deep(MAX_SUBSCRIPT_DEPTH),
            format!("echo {}", "${a[0]} ${b[$i]} \"${c[@]}\" ".repeat(20)),
            "[[ -n ${a[${b[0]}]} && ${#c[@]} -gt 0 ]] && echo ${d[$((i+1))]}".to_string(),
            "for i in \"${!arr[@]}\"; do echo \"${arr[$i]}\"; done".to_string(),
            "echo ${x:-${y:-${z:-${w:-default}}}}".to_string(),
        ] {
            assert!(check(&line).is_ok(), "{line}: {:?}", check(&line));
        }
    }

    #[test]
    fn a_here_document_in_a_substitution_without_a_body_is_found() {
        for line in [
            "$(<<  l))#",
            "echo \"$(cat <<EOF)\"",
            "x=$(a) && cat << E",
            "$(echo $((1<<2)))",
        ] {
            assert!(heredoc_without_body(line), "{line}");
        }
        // The control: a body on the lines after, shifts, herestrings, and
        // here-documents outside a substitution.
        for line in [
            "git commit -m \"$(cat <<'EOF'\nmessage\nEOF\n)\"",
            "echo $((1 << 3))",
            "$(cat <<< word)",
            "cat <<E\nbody\nE\necho $(date)",
            "python3 -c 'print(1<<3)'",
            "$(<<  l))#  \n",
        ] {
            assert!(!heredoc_without_body(line), "{line}");
        }
    }
}
