//! The prompt being typed: a text with a cursor, lines split by the
//! user's newlines (Shift+Enter, or `\` then Enter), pasted text taken
//! whole, and the prompts sent before walked with Up and Down.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

#[derive(Debug, Default)]
pub struct Composer {
    text: String,
    /// A byte offset into `text`, on a character boundary.
    cursor: usize,
    /// Earlier prompts, oldest first.
    history: Vec<String>,
    /// Where Up has walked to (`None`: the text being typed).
    walked: Option<usize>,
    /// What was being typed before walking the history.
    draft: String,
}

impl Composer {
    pub fn with_history(history: Vec<String>) -> Self {
        Self {
            history,
            ..Self::default()
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn insert(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    /// Pasted text, whole: its line ends made `\n`, control characters
    /// other than tabs and newlines left out.
    pub fn paste(&mut self, pasted: &str) {
        let cleaned: String = pasted
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .chars()
            .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
            .collect();
        self.text.insert_str(self.cursor, &cleaned);
        self.cursor += cleaned.len();
    }

    /// Enter: a line ending in `\` continues (the `\` becomes a newline);
    /// otherwise the text is taken and remembered.
    pub fn enter(&mut self) -> Option<String> {
        if self.text[..self.cursor].ends_with('\\') {
            self.cursor -= 1;
            self.text.remove(self.cursor);
            self.insert('\n');
            return None;
        }
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.walked = None;
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        Some(text)
    }

    /// Replaces the word the text ends with (a completion).
    pub fn complete_last_word(&mut self, word: &str) {
        let start = self.text.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        self.text.truncate(start);
        self.text.push_str(word);
        self.cursor = self.text.len();
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.walked = None;
    }

    pub fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    pub fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    pub fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    pub fn home(&mut self) {
        self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
    }

    pub fn end(&mut self) {
        self.cursor += self.text[self.cursor..]
            .find('\n')
            .unwrap_or(self.text.len() - self.cursor);
    }

    /// Deletes back to the start of the line (Ctrl-U).
    pub fn kill_line(&mut self) {
        let start = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Up: the line above within the text, else the previous prompt.
    pub fn up(&mut self) {
        if self.text[..self.cursor].contains('\n') {
            let column = self.column();
            let line_start = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
            let above = self.text[..line_start - 1].rfind('\n').map_or(0, |i| i + 1);
            self.cursor = above;
            self.advance(column);
            return;
        }
        let next = match self.walked {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.walked = Some(next);
        self.text = self.history[next].clone();
        self.cursor = self.text.len();
    }

    /// Down: the line below within the text, else the next prompt (then
    /// the draft).
    pub fn down(&mut self) {
        if self.text[self.cursor..].contains('\n') {
            let column = self.column();
            self.end();
            self.cursor += 1;
            self.advance(column);
            return;
        }
        let Some(i) = self.walked else { return };
        if i + 1 < self.history.len() {
            self.walked = Some(i + 1);
            self.text = self.history[i + 1].clone();
        } else {
            self.walked = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
    }

    fn column(&self) -> usize {
        let start = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
        self.text[start..self.cursor].chars().count()
    }

    /// Moves right up to `columns` characters, not past the line's end.
    fn advance(&mut self, columns: usize) {
        for _ in 0..columns {
            match self.text[self.cursor..].chars().next() {
                Some('\n') | None => break,
                Some(c) => self.cursor += c.len_utf8(),
            }
        }
    }

    /// The prompt's rows for `width` columns (`> ` before the first), and
    /// the cursor's row and column among them. Only the lines around the
    /// cursor are drawn, `max_rows` lines either side, the others counted:
    /// a megabyte pasted costs a frame what a short prompt does.
    pub fn render(
        &self,
        width: usize,
        placeholder: &str,
        max_rows: usize,
    ) -> (Vec<Line<'static>>, (usize, usize)) {
        let lead = Style::new().add_modifier(Modifier::BOLD);
        let dim = Style::new().add_modifier(Modifier::DIM);
        if self.text.is_empty() {
            let row = Line::from(vec![
                Span::styled("> ", lead),
                Span::styled(placeholder.to_string(), dim),
            ]);
            return (vec![row], (0, 2));
        }
        let lines: Vec<&str> = self.text.split('\n').collect();
        let at_line = self.text[..self.cursor].matches('\n').count();
        let first = at_line.saturating_sub(max_rows);
        let last = (at_line + max_rows + 1).min(lines.len());
        let mut rows = Vec::new();
        if first > 0 {
            rows.push(Line::styled(format!("  … {first} earlier lines"), dim));
        }
        let mut cursor = (0, 2);
        let mut offset: usize = lines[..first].iter().map(|l| l.len() + 1).sum();
        for (i, line) in lines.iter().enumerate().take(last).skip(first) {
            let head = if i == 0 { "> " } else { "  " };
            if (offset..=offset + line.len()).contains(&self.cursor) {
                let before = format!("{head}{}", &line[..self.cursor - offset]);
                let at = super::text::width(&before);
                cursor = (rows.len() + at / width.max(1), at % width.max(1));
            }
            for (j, row) in wrap_exact(&format!("{head}{line}"), width)
                .into_iter()
                .enumerate()
            {
                rows.push(match (i, j) {
                    (0, 0) => Line::from(vec![
                        Span::styled("> ", lead),
                        Span::raw(row.chars().skip(2).collect::<String>()),
                    ]),
                    _ => Line::raw(row),
                });
            }
            offset += line.len() + 1;
        }
        if last < lines.len() {
            rows.push(Line::styled(
                format!("  … {} more lines", lines.len() - last),
                dim,
            ));
        }
        (rows, cursor)
    }
}

/// Cuts text into rows of exactly `width` columns (the prompt wraps where
/// the terminal would, so the cursor lands where it is drawn).
fn wrap_exact(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut rows = vec![String::new()];
    let mut used = 0;
    for c in text.chars() {
        let w = super::text::width(c.encode_utf8(&mut [0; 4]));
        if used + w > width {
            rows.push(String::new());
            used = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push(c);
        }
        used += w;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(text: &str) -> Composer {
        let mut composer = Composer::default();
        for c in text.chars() {
            composer.insert(c);
        }
        composer
    }

    #[test]
    fn a_trailing_backslash_continues_the_prompt() {
        let mut composer = typed("first\\");
        assert_eq!(composer.enter(), None);
        for c in "second".chars() {
            composer.insert(c);
        }
        assert_eq!(composer.enter().as_deref(), Some("first\nsecond"));
        assert!(composer.is_empty());
    }

    #[test]
    fn up_and_down_walk_earlier_prompts_and_come_back_to_the_draft() {
        let mut composer = Composer::with_history(vec!["one".into(), "two".into()]);
        for c in "dra".chars() {
            composer.insert(c);
        }
        composer.up();
        assert_eq!(composer.text(), "two");
        composer.up();
        composer.up();
        assert_eq!(composer.text(), "one");
        composer.down();
        composer.down();
        assert_eq!(composer.text(), "dra");
    }

    #[test]
    fn a_paste_is_taken_whole_with_its_newlines() {
        let mut composer = typed("x");
        composer.paste("a\r\nb\rc\x1b[31m");
        assert_eq!(composer.text(), "xa\nb\nc[31m");
        let big = "y\n".repeat(1 << 19);
        composer.paste(&big);
        assert_eq!(composer.text().len(), 10 + (1 << 20));
        let (rows, cursor) = composer.render(80, "", 5);
        assert!(rows.len() <= 12, "{} rows drawn", rows.len());
        assert!(cursor.0 < rows.len());
    }

    #[test]
    fn the_cursor_is_where_the_text_is_drawn() {
        let mut composer = typed("abcdefgh\nxy");
        composer.left();
        let (rows, cursor) = composer.render(6, "", 10);
        let rows: Vec<String> = rows
            .iter()
            .map(|r| crate::tui::text::plain(std::slice::from_ref(r)))
            .collect();
        assert_eq!(rows, ["> abcd", "efgh", "  xy"]);
        assert_eq!(cursor, (2, 3));
    }
}
