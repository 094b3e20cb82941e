//! What an invoked command or skill says: its body with the arguments and
//! the session's values put in, as Claude Code 2.1.197 puts them in
//! (recorded: `tests/claude-code/skill-*.json`, `command-*.json`), and the
//! `` !`command` `` spans whose output replaces them.

use std::ops::Range;
use std::path::Path;

/// The values a body may refer to.
pub struct Substitutions<'a> {
    pub args: &'a str,
    /// `${CLAUDE_SKILL_DIR}` (skills only).
    pub skill_dir: Option<&'a Path>,
    /// `${CLAUDE_PLUGIN_ROOT}` (a plugin's entries only).
    pub plugin_root: Option<&'a Path>,
    /// `${CLAUDE_SESSION_ID}`.
    pub session_id: &'a str,
}

/// One pass over `body`, so that an argument containing `$1` is not
/// substituted again: `$ARGUMENTS`, `$ARGUMENTS[N]` and `$N` (words from
/// 0), `${CLAUDE_SKILL_DIR}`, `${CLAUDE_SESSION_ID}`. Arguments the body
/// never refers to are appended as Claude Code appends them.
pub fn substitute(body: &str, values: &Substitutions<'_>) -> String {
    let words: Vec<&str> = values.args.split_whitespace().collect();
    let word = |n: &str| {
        n.parse::<usize>()
            .ok()
            .map(|n| words.get(n).copied().unwrap_or(""))
    };
    let mut out = String::with_capacity(body.len() + values.args.len());
    let mut used_args = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let (replacement, taken) = if let Some(after) = tail.strip_prefix("${CLAUDE_SKILL_DIR}") {
            match values.skill_dir {
                Some(dir) => (dir.display().to_string(), tail.len() - after.len()),
                None => ("$".to_string(), 1),
            }
        } else if let Some(after) = tail.strip_prefix("${CLAUDE_PLUGIN_ROOT}") {
            match values.plugin_root {
                Some(root) => (root.display().to_string(), tail.len() - after.len()),
                None => ("$".to_string(), 1),
            }
        } else if let Some(after) = tail.strip_prefix("${CLAUDE_SESSION_ID}") {
            (values.session_id.to_string(), tail.len() - after.len())
        } else if let Some(after) = tail.strip_prefix("$ARGUMENTS") {
            used_args = true;
            match indexed(after) {
                Some((digits, len)) => (
                    word(digits).unwrap_or_default().to_string(),
                    "$ARGUMENTS".len() + len,
                ),
                None => (values.args.to_string(), "$ARGUMENTS".len()),
            }
        } else {
            let digits: &str = &tail[1..tail[1..]
                .find(|c: char| !c.is_ascii_digit())
                .map_or(tail.len(), |end| end + 1)];
            match word(digits) {
                Some(found) if !digits.is_empty() => {
                    used_args = true;
                    (found.to_string(), 1 + digits.len())
                }
                _ => ("$".to_string(), 1),
            }
        };
        out.push_str(&replacement);
        rest = &tail[taken..];
    }
    out.push_str(rest);
    if !used_args && !values.args.is_empty() {
        out.push_str(&format!("\n\nARGUMENTS: {}", values.args));
    }
    out
}

/// `[N]` at the start of `after`: the digits and the length taken.
fn indexed(after: &str) -> Option<(&str, usize)> {
    let inner = after.strip_prefix('[')?;
    let end = inner.find(']')?;
    let digits = &inner[..end];
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())).then_some((digits, end + 2))
}

/// One `` !`command` `` span of a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSpan {
    /// As written, `` !`…` `` included (what an error quotes).
    pub pattern: String,
    pub command: String,
    range: Range<usize>,
}

/// The commands of `text`, in order: each ```` ```! ```` fenced block (its
/// lines up to the closing fence, as one command), and each
/// `` !`command` `` span outside them — a `!` at a line's start or after
/// white space, a command on one line between backticks.
pub fn shell_spans(text: &str) -> Vec<ShellSpan> {
    let mut spans = fenced_blocks(text);
    let inline = inline_spans(text)
        .into_iter()
        .filter(|i| {
            !spans
                .iter()
                .any(|f| f.range.start < i.range.end && i.range.start < f.range.end)
        })
        .collect::<Vec<_>>();
    spans.extend(inline);
    spans.sort_by_key(|s| s.range.start);
    spans
}

/// ```` ```! ```` … ```` ``` ````: the command runs from the first
/// character after the opening fence that is not white space to the next
/// fence (Claude Code's reading).
fn fenced_blocks(text: &str) -> Vec<ShellSpan> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("```!") {
        let start = from + found;
        let body = start + 4;
        let Some(len) = text[body..].find("```") else {
            break;
        };
        let end = body + len + 3;
        from = end;
        let command = text[body..body + len].trim();
        if command.is_empty() {
            continue;
        }
        spans.push(ShellSpan {
            pattern: text[start..end].to_string(),
            command: command.to_string(),
            range: start..end,
        });
    }
    spans
}

fn inline_spans(text: &str) -> Vec<ShellSpan> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("!`") {
        let start = from + found;
        let open = start + 2;
        from = open;
        let starts_word = text[..start]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        let Some(len) = text[open..].find(['`', '\n']) else {
            break;
        };
        let end = open + len;
        if !starts_word || text[end..].starts_with('\n') || len == 0 {
            continue;
        }
        let command = text[open..end].trim();
        if command.is_empty() {
            continue;
        }
        spans.push(ShellSpan {
            pattern: text[start..=end].to_string(),
            command: command.to_string(),
            range: start..end + 1,
        });
        from = end + 1;
    }
    spans
}

/// `text` with each span replaced by its output.
pub fn fill(text: &str, spans: &[ShellSpan], outputs: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (span, output) in spans.iter().zip(outputs) {
        out.push_str(&text[at..span.range.start]);
        out.push_str(output);
        at = span.range.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_args(body: &str, args: &str) -> String {
        substitute(
            body,
            &Substitutions {
                args,
                skill_dir: Some(Path::new("/skills/deploy")),
                plugin_root: Some(Path::new("/plugins/kit")),
                session_id: "sid",
            },
        )
    }

    #[test]
    fn substitutions_match_the_recording() {
        assert_eq!(
            with_args(
                "Deploy to $ARGUMENTS (first word: $0, also $ARGUMENTS[0]).\nSkill dir: ${CLAUDE_SKILL_DIR}\nSession: ${CLAUDE_SESSION_ID}\n",
                "staging now"
            ),
            "Deploy to staging now (first word: staging, also staging).\nSkill dir: /skills/deploy\nSession: sid\n"
        );
        assert_eq!(
            with_args(
                "Say hello to $ARGUMENTS. First: $1, second: $2.\n",
                "Alice Bob"
            ),
            "Say hello to Alice Bob. First: Bob, second: .\n"
        );
        assert_eq!(with_args("cost $ and $0", "x"), "cost $ and x");
        assert_eq!(
            with_args("${CLAUDE_PLUGIN_ROOT}/bin", ""),
            "/plugins/kit/bin"
        );
        // Arguments are put in once: a `$1` inside them stays as written.
        assert_eq!(with_args("[$ARGUMENTS] $0", "$1 b"), "[$1 b] $1");
    }

    #[test]
    fn unused_arguments_are_appended() {
        assert_eq!(
            with_args("Plain command body.\n", "extra words"),
            "Plain command body.\n\n\nARGUMENTS: extra words"
        );
        assert_eq!(with_args("Plain.\n", ""), "Plain.\n");
    }

    #[test]
    fn fenced_blocks_are_one_command_each() {
        let text = "Before\n```!\ngit status\necho two\n```\nand !`echo inline`\n```!```\n";
        let spans = shell_spans(text);
        let commands: Vec<&str> = spans.iter().map(|s| s.command.as_str()).collect();
        assert_eq!(commands, ["git status\necho two", "echo inline"]);
        assert_eq!(spans[0].pattern, "```!\ngit status\necho two\n```");
        let filled = fill(text, &spans, &["S".into(), "I".into()]);
        assert_eq!(filled, "Before\nS\nand I\n```!```\n");
        // An inline span inside a fenced block is part of the block.
        let spans = shell_spans("```!\necho !`not this`\n```");
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].command, "echo !`not this`");
    }

    #[test]
    fn shell_spans_are_found_and_filled() {
        let text = "Status: !`echo ok`\nnot!`this` and `!`either` !`\n!`two words` end";
        let spans = shell_spans(text);
        let commands: Vec<_> = spans.iter().map(|s| s.command.as_str()).collect();
        assert_eq!(commands, ["echo ok", "two words"]);
        assert_eq!(spans[0].pattern, "!`echo ok`");
        assert_eq!(
            fill(text, &spans, &["ok".into(), "2".into()]),
            "Status: ok\nnot!`this` and `!`either` !`\n2 end"
        );
    }
}
