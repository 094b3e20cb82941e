//! Styled text for a terminal of a given width: lines wrapped to it at
//! word boundaries (by display width, so wide characters and emoji take
//! their two columns), and a line written as the terminal's escape codes.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Display columns of `text`.
pub fn width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// A line's display columns.
pub fn line_width(line: &Line<'_>) -> usize {
    line.spans.iter().map(|s| width(&s.content)).sum()
}

/// `line` cut into rows of at most `width` columns, breaking after spaces
/// where it can and inside a word only when the word is wider than a row;
/// rows after the first start with `indent`. An empty line is one row.
pub fn wrap(line: &Line<'_>, width: usize, indent: &str) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent: String = indent.chars().take(width.saturating_sub(1)).collect();
    let mut rows = Vec::new();
    let mut row: Vec<(char, Style)> = Vec::new();
    let mut used = 0;
    // Whether the row holds nothing but its indent yet.
    let mut fresh = true;
    for word in words(line) {
        let word_width: usize = word.iter().map(|(c, _)| c.width().unwrap_or(0)).sum();
        let is_space = word.first().is_some_and(|(c, _)| *c == ' ');
        if !fresh && used + word_width > width {
            end_row(&mut rows, &mut row);
            used = start_row(&mut row, &indent, line.style);
            fresh = true;
        }
        // A space at a break is dropped, not carried to the next row.
        if fresh && is_space && !rows.is_empty() {
            continue;
        }
        for (c, style) in word {
            let w = c.width().unwrap_or(0);
            if !fresh && used + w > width {
                end_row(&mut rows, &mut row);
                used = start_row(&mut row, &indent, line.style);
            }
            row.push((c, style));
            used += w;
            fresh = false;
        }
    }
    rows.push(row);
    rows.into_iter().map(|r| to_line(r, line.style)).collect()
}

/// Ends a row, without the spaces it ended on.
fn end_row(rows: &mut Vec<Vec<(char, Style)>>, row: &mut Vec<(char, Style)>) {
    while row.last().is_some_and(|(c, _)| *c == ' ') {
        row.pop();
    }
    rows.push(std::mem::take(row));
}

fn start_row(row: &mut Vec<(char, Style)>, indent: &str, style: Style) -> usize {
    row.extend(indent.chars().map(|c| (c, style)));
    width(indent)
}

/// The line's characters with their styles, in runs of spaces (one each)
/// and runs of anything else.
fn words(line: &Line<'_>) -> Vec<Vec<(char, Style)>> {
    let mut words: Vec<Vec<(char, Style)>> = Vec::new();
    let mut word = Vec::new();
    for span in &line.spans {
        let style = line.style.patch(span.style);
        for c in span.content.chars() {
            let c = if c == '\t' { ' ' } else { c };
            if c.is_control() {
                continue;
            }
            if c == ' ' {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                words.push(vec![(c, style)]);
            } else {
                word.push((c, style));
            }
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Characters back into spans, one per run of a style.
fn to_line(chars: Vec<(char, Style)>, base: Style) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut current: Option<Style> = None;
    for (c, style) in chars {
        if current.is_some_and(|s| s != style) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                current.unwrap_or(base),
            ));
        }
        current = Some(style);
        text.push(c);
    }
    if let Some(style) = current {
        spans.push(Span::styled(text, style));
    }
    Line::from(spans)
}

/// What is written to the terminal for `c`: itself when it only shows; a
/// visible stand-in for a character that would act — a control character
/// (`ESC` starting an OSC that sets the title or fills the clipboard, a
/// carriage return or backspace overwriting what was shown), `DEL`, a C1
/// control, a bidirectional override that reorders what is shown. Every
/// byte carapace draws passes here: file names, command lines, a model's
/// text, a session's title alike.
pub fn visible(c: char) -> Option<String> {
    match c {
        '\t' => Some(" ".into()),
        '\x00'..='\x1f' => Some(format!("^{}", char::from(b'@' + c as u8))),
        '\x7f' => Some("^?".into()),
        '\u{80}'..='\u{9f}' => Some(format!("<U+{:04X}>", c as u32)),
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => {
            Some(format!("<U+{:04X}>", c as u32))
        }
        _ => None,
    }
}

/// `line` cut to `width` columns (a row the terminal would otherwise wrap
/// onto a row the screen does not know of), what would act on the
/// terminal made visible first ([`visible`]).
pub fn fit(line: &Line<'_>, width: usize) -> Line<'static> {
    let mut spans = Vec::new();
    let mut used = 0;
    for span in &line.spans {
        let mut text = String::new();
        let shown = span.content.chars().flat_map(|c| match visible(c) {
            Some(stand_in) => stand_in.chars().collect::<Vec<_>>(),
            None => vec![c],
        });
        for c in shown {
            let w = c.width().unwrap_or(0);
            if used + w > width {
                break;
            }
            used += w;
            text.push(c);
        }
        spans.push(Span::styled(text, span.style));
        if used >= width {
            break;
        }
    }
    Line::from(spans).style(line.style)
}

/// Writes `line` with the terminal's escape codes for its styles (colours
/// left out when `color` is false, as `NO_COLOR` asks), ending reset.
pub fn to_ansi(line: &Line<'_>, color: bool) -> String {
    let mut out = String::new();
    for span in &line.spans {
        let style = line.style.patch(span.style);
        let codes = sgr(style, color);
        // Again here, whatever came without `fit`: nothing but carapace's
        // own codes acts on the terminal.
        let content: std::borrow::Cow<'_, str> =
            if span.content.chars().any(|c| visible(c).is_some()) {
                span.content
                    .chars()
                    .map(|c| visible(c).unwrap_or_else(|| c.to_string()))
                    .collect::<String>()
                    .into()
            } else {
                std::borrow::Cow::Borrowed(&span.content)
            };
        if codes.is_empty() {
            out.push_str(&content);
        } else {
            out.push_str(&format!("\x1b[{codes}m{content}\x1b[0m"));
        }
    }
    out
}

/// The Select Graphic Rendition parameters for a style.
fn sgr(style: Style, color: bool) -> String {
    let mut codes: Vec<String> = Vec::new();
    let m = style.add_modifier;
    for (modifier, code) in [
        (Modifier::BOLD, "1"),
        (Modifier::DIM, "2"),
        (Modifier::ITALIC, "3"),
        (Modifier::UNDERLINED, "4"),
        (Modifier::REVERSED, "7"),
        (Modifier::CROSSED_OUT, "9"),
    ] {
        if m.contains(modifier) {
            codes.push(code.into());
        }
    }
    if color {
        if let Some(fg) = style.fg.and_then(|c| color_code(c, false)) {
            codes.push(fg);
        }
        if let Some(bg) = style.bg.and_then(|c| color_code(c, true)) {
            codes.push(bg);
        }
    }
    codes.join(";")
}

fn color_code(color: Color, background: bool) -> Option<String> {
    let base = if background { 40 } else { 30 };
    let bright = if background { 100 } else { 90 };
    let code = match color {
        Color::Reset => return None,
        Color::Black => base,
        Color::Red => base + 1,
        Color::Green => base + 2,
        Color::Yellow => base + 3,
        Color::Blue => base + 4,
        Color::Magenta => base + 5,
        Color::Cyan => base + 6,
        Color::Gray => base + 7,
        Color::DarkGray => bright,
        Color::LightRed => bright + 1,
        Color::LightGreen => bright + 2,
        Color::LightYellow => bright + 3,
        Color::LightBlue => bright + 4,
        Color::LightMagenta => bright + 5,
        Color::LightCyan => bright + 6,
        Color::White => bright + 7,
        Color::Indexed(n) => return Some(format!("{};5;{n}", base + 8)),
        Color::Rgb(r, g, b) => return Some(format!("{};2;{r};{g};{b}", base + 8)),
    };
    Some(code.to_string())
}

/// The plain text of rows (for tests and for measuring).
pub fn plain(lines: &[Line<'_>]) -> String {
    let rows: Vec<String> = lines
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect();
    rows.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str, width: usize, indent: &str) -> Vec<String> {
        wrap(&Line::from(text.to_string()), width, indent)
            .iter()
            .map(|l| plain(std::slice::from_ref(l)))
            .collect()
    }

    #[test]
    fn wraps_at_spaces_and_splits_only_words_wider_than_a_row() {
        assert_eq!(
            rows("the quick brown fox", 10, ""),
            ["the quick", "brown fox"]
        );
        assert_eq!(rows("abcdefghijkl", 5, ""), ["abcde", "fghij", "kl"]);
        assert_eq!(rows("one two", 80, ""), ["one two"]);
        assert_eq!(rows("", 10, ""), [""]);
        assert_eq!(rows("aaa bbb ccc", 5, "  "), ["aaa", "  bbb", "  ccc"]);
    }

    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(
            rows("日本語のテキスト", 6, ""),
            ["日本語", "のテキ", "スト"]
        );
        for row in rows("日本語 のテキスト emoji 🦀🦀🦀", 7, "") {
            assert!(width(&row) <= 7, "{row:?}");
        }
    }

    #[test]
    fn colours_are_left_out_when_asked() {
        let line = Line::from(vec![
            Span::styled(
                "ok",
                Style::default()
                    .fg(Color::Green)
                    .add_modifier(Modifier::BOLD),
            ),
            Span::raw(" done"),
        ]);
        assert_eq!(to_ansi(&line, true), "\x1b[1;32mok\x1b[0m done");
        assert_eq!(to_ansi(&line, false), "\x1b[1mok\x1b[0m done");
    }

    #[test]
    fn nothing_drawn_can_act_on_the_terminal() {
        // A file name that would set the window's title (OSC 2) and fill
        // the clipboard with a command (OSC 52), then hide itself.
        let hostile = "notes\x1b]2;pwned\x07\x1b]52;c;cm0gLXJmIH4=\x07\r\u{202e}txt.exe";
        let line = Line::from(vec![Span::raw(hostile)]);
        let drawn = to_ansi(&fit(&line, 200), false);
        assert!(
            !drawn.contains('\x1b') && !drawn.contains('\x07') && !drawn.contains('\r'),
            "{drawn:?}"
        );
        assert!(
            drawn.contains("^[]2;pwned^G") && drawn.contains("<U+202E>"),
            "{drawn:?}"
        );
        // The same without `fit`, and carapace's own styling still works.
        let styled = Line::from(vec![Span::styled(
            hostile,
            Style::default().add_modifier(Modifier::BOLD),
        )]);
        let drawn = to_ansi(&styled, true);
        assert!(
            drawn.starts_with("\x1b[1m") && drawn.matches('\x1b').count() == 2,
            "{drawn:?}"
        );
        // The control: written as it was, the bytes reach the terminal.
        assert!(hostile.contains('\x1b'));
    }
}
