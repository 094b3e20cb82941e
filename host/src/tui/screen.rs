//! The screen as an inline area at the bottom of the terminal: finished
//! rows are written above it, into the terminal's own scrollback (to be
//! scrolled, searched and copied there), and the live area — the answer
//! streaming, running calls, the question, the prompt, the status line —
//! is erased and drawn again below them, in one synchronized update so
//! the terminal never shows half a frame.

use super::text::{fit, line_width, to_ansi};
use ratatui::text::Line;
use std::io::Write;

pub struct Screen<W: Write> {
    out: W,
    color: bool,
    width: u16,
    height: u16,
    /// Widths of the live area's rows as last drawn.
    live: Vec<usize>,
    /// The row of the live area the cursor was left on.
    cursor_row: usize,
}

impl<W: Write> Screen<W> {
    pub fn new(out: W, color: bool, (width, height): (u16, u16)) -> Self {
        Self {
            out,
            color,
            width: width.max(1),
            height: height.max(1),
            live: Vec::new(),
            cursor_row: 0,
        }
    }

    pub fn width(&self) -> usize {
        usize::from(self.width)
    }

    pub fn height(&self) -> usize {
        usize::from(self.height)
    }

    /// The terminal's new size. Where it narrowed, the live area's rows
    /// may have been reflowed onto more rows: the next draw erases from
    /// where they may start.
    pub fn resize(&mut self, (width, height): (u16, u16)) {
        let width = width.max(1);
        if width < self.width {
            let before = self.live[..self.cursor_row.min(self.live.len())].iter();
            self.cursor_row = before.map(|w| w.div_ceil(usize::from(width)).max(1)).sum();
        }
        self.width = width;
        self.height = height.max(1);
    }

    /// Writes `finished` above the live area, then draws `live` (its last
    /// rows, when it is taller than the screen) and puts the cursor at
    /// `cursor` (row, column within `live`), hidden when `None`.
    pub fn draw(
        &mut self,
        finished: &[Line<'_>],
        live: &[Line<'_>],
        cursor: Option<(usize, usize)>,
    ) -> std::io::Result<()> {
        let mut frame = String::from("\x1b[?2026h\x1b[?25l");
        if self.cursor_row > 0 {
            frame.push_str(&format!("\x1b[{}A", self.cursor_row));
        }
        frame.push_str("\r\x1b[J");
        for row in finished {
            frame.push_str(&to_ansi(&fit(row, self.width()), self.color));
            frame.push_str("\r\n");
        }
        let room = self.height().saturating_sub(1).max(1);
        let skipped = live.len().saturating_sub(room);
        let shown: Vec<Line<'static>> = live[skipped..]
            .iter()
            .map(|l| fit(l, self.width()))
            .collect();
        for (i, row) in shown.iter().enumerate() {
            if i > 0 {
                frame.push_str("\r\n");
            }
            frame.push_str(&to_ansi(row, self.color));
        }
        self.live = shown.iter().map(line_width).collect();
        let last = shown.len().saturating_sub(1);
        let (row, column) = match cursor {
            Some((row, column)) if row >= skipped => (row - skipped, column),
            _ => (last, 0),
        };
        let row = row.min(last);
        if last > row {
            frame.push_str(&format!("\x1b[{}A", last - row));
        }
        frame.push('\r');
        let column = column.min(self.width().saturating_sub(1));
        if column > 0 {
            frame.push_str(&format!("\x1b[{column}C"));
        }
        self.cursor_row = row;
        if cursor.is_some() {
            frame.push_str("\x1b[?25h");
        }
        frame.push_str("\x1b[?2026l");
        self.out.write_all(frame.as_bytes())?;
        self.out.flush()
    }

    /// Erases the live area and leaves the cursor where it began, so what
    /// follows (the shell's prompt) starts right under the session.
    pub fn leave(&mut self) -> std::io::Result<()> {
        let mut frame = String::new();
        if self.cursor_row > 0 {
            frame.push_str(&format!("\x1b[{}A", self.cursor_row));
        }
        frame.push_str("\r\x1b[J\x1b[?25h");
        self.live.clear();
        self.cursor_row = 0;
        self.out.write_all(frame.as_bytes())?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a terminal shows after the bytes written.
    fn shown(bytes: &[u8], (rows, cols): (u16, u16)) -> String {
        let mut parser = vt100::Parser::new(rows, cols, 100);
        parser.process(bytes);
        parser.screen().contents()
    }

    #[test]
    fn finished_rows_go_above_and_the_live_area_is_redrawn_in_place() -> std::io::Result<()> {
        let mut out = Vec::new();
        {
            let mut screen = Screen::new(&mut out, false, (20, 6));
            screen.draw(&[], &[Line::raw("live 1"), Line::raw("> ab")], Some((1, 4)))?;
            screen.draw(
                &[Line::raw("done 1")],
                &[Line::raw("live 2"), Line::raw("> abc")],
                Some((1, 5)),
            )?;
            screen.draw(&[Line::raw("done 2")], &[Line::raw("> ")], Some((0, 2)))?;
        }
        assert_eq!(shown(&out, (6, 20)).trim_end(), "done 1\ndone 2\n>");
        Ok(())
    }

    #[test]
    fn a_live_area_taller_than_the_screen_shows_its_end() -> std::io::Result<()> {
        let mut out = Vec::new();
        let live: Vec<Line> = (1..=5).map(|n| Line::raw(format!("row {n}"))).collect();
        let mut screen = Screen::new(&mut out, false, (10, 3));
        screen.draw(&[], &live, Some((4, 0)))?;
        drop(screen);
        // The last rows that fit (one row is kept free), the cursor on the last.
        assert_eq!(shown(&out, (3, 10)).trim_end(), "row 4\nrow 5");
        let mut out = Vec::new();
        let mut screen = Screen::new(&mut out, false, (10, 3));
        screen.draw(&[], &live, Some((4, 0)))?;
        screen.leave()?;
        drop(screen);
        assert_eq!(
            shown(&out, (3, 10)).trim_end(),
            "",
            "leaving erases the live area"
        );
        Ok(())
    }
}
