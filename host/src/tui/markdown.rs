//! The model's markdown as terminal rows: paragraphs wrapped to the width,
//! headings and emphasis styled, lists with their markers and nesting,
//! block quotes with a bar, code blocks kept line for line. Parsed by
//! pulldown-cmark; a response still streaming is parsed as it stands (an
//! open code block renders as code until it closes).

use super::text::wrap;
use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// `markdown` as rows at most `width` columns wide.
pub fn render(markdown: &str, width: usize) -> Vec<Line<'static>> {
    let mut writer = Writer {
        width: width.max(8),
        ..Writer::default()
    };
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(markdown, options) {
        writer.event(event);
    }
    writer.flush();
    while writer.rows.last().is_some_and(|l| l.spans.is_empty()) {
        writer.rows.pop();
    }
    writer.rows
}

#[derive(Default)]
struct Writer {
    width: usize,
    rows: Vec<Line<'static>>,
    /// The line being built.
    spans: Vec<Span<'static>>,
    /// Inline styles open now (emphasis, strong, code, links).
    styles: Vec<Style>,
    /// Prefixes of the blocks open now: list indents, quote bars.
    prefixes: Vec<String>,
    /// Each open list's next number (`None`: bullets).
    lists: Vec<Option<u64>>,
    /// A list item's marker, written before its first line.
    marker: Option<String>,
    code_block: bool,
    heading: Option<HeadingLevel>,
    /// A blank row is due before the next block.
    gap: bool,
}

impl Writer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) if self.code_block => self.code_text(&text),
            Event::Text(text) => self.push(text.into_string()),
            Event::Code(code) => {
                let style = self.style().fg(Color::Cyan);
                self.spans.push(Span::styled(code.into_string(), style));
            }
            Event::SoftBreak => self.push(" ".into()),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.block_start();
                let rule = "─".repeat(self.width.min(40));
                self.rows.push(Line::styled(
                    rule,
                    Style::default().add_modifier(Modifier::DIM),
                ));
                self.gap = true;
            }
            Event::TaskListMarker(done) => self.push(if done { "[x] " } else { "[ ] " }.into()),
            Event::Html(html) | Event::InlineHtml(html) => self.push(html.into_string()),
            Event::FootnoteReference(name) => self.push(format!("[^{name}]")),
            Event::InlineMath(m) | Event::DisplayMath(m) => self.push(m.into_string()),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_start(),
            Tag::Heading { level, .. } => {
                self.block_start();
                self.heading = Some(level);
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.prefixes.push("│ ".into());
            }
            Tag::CodeBlock(_) => {
                // Code shows indented and coloured, without its fences.
                self.block_start();
                self.code_block = true;
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.block_start();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    _ => "• ".into(),
                };
                self.prefixes.push(" ".repeat(marker.chars().count()));
                self.marker = Some(marker);
            }
            Tag::Emphasis => self
                .styles
                .push(self.style().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(self.style().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(self.style().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { .. } => self
                .styles
                .push(self.style().add_modifier(Modifier::UNDERLINED)),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::Heading(_) => {
                self.flush();
                self.heading = None;
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.prefixes.pop();
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                self.code_block = false;
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.gap = self.lists.is_empty();
            }
            TagEnd::Item => {
                self.flush();
                self.prefixes.pop();
                self.marker = None;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link => {
                self.styles.pop();
            }
            TagEnd::TableRow | TagEnd::TableHead => self.flush(),
            TagEnd::TableCell => self.push("  ".into()),
            _ => {}
        }
    }

    fn style(&self) -> Style {
        let base = match self.heading {
            Some(HeadingLevel::H1) => {
                Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
            }
            Some(_) => Style::default().add_modifier(Modifier::BOLD),
            None => Style::default(),
        };
        self.styles.last().copied().unwrap_or(base)
    }

    fn push(&mut self, text: String) {
        let style = self.style();
        self.spans.push(Span::styled(text, style));
    }

    fn prefix(&self) -> String {
        self.prefixes.concat()
    }

    /// A blank row between blocks (not before the first).
    fn block_start(&mut self) {
        self.flush();
        if self.gap && !self.rows.is_empty() {
            self.rows.push(Line::default());
        }
        self.gap = false;
    }

    /// Code is kept line for line, each line wrapped on its own.
    fn code_text(&mut self, text: &str) {
        let style = Style::default().fg(Color::Cyan);
        let prefix = format!("{}  ", self.prefix());
        for line in text.lines() {
            let line = Line::from(vec![
                Span::raw(prefix.clone()),
                Span::styled(line.to_string(), style),
            ]);
            self.rows.extend(wrap(&line, self.width, &prefix));
        }
    }

    /// The line being built, wrapped under its prefix (a list item's first
    /// row carries its marker instead).
    fn flush(&mut self) {
        if self.spans.is_empty() {
            return;
        }
        let prefix = self.prefix();
        let first = match self.marker.take() {
            Some(marker) => {
                let outer: String = prefix
                    .chars()
                    .take(prefix.chars().count() - marker.chars().count())
                    .collect();
                format!("{outer}{marker}")
            }
            None => prefix.clone(),
        };
        let mut spans = vec![Span::raw(first)];
        spans.append(&mut self.spans);
        self.rows
            .extend(wrap(&Line::from(spans), self.width, &prefix));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::text::plain;

    #[test]
    fn paragraphs_lists_and_code_keep_their_shape() {
        let text = "# Plan\n\nFirst *do* this, then **that**.\n\n- one\n- two\n  1. nested\n\n```rust\nfn main() {}\n```\nDone.";
        insta::assert_snapshot!("markdown_shapes", plain(&render(text, 40)));
    }

    #[test]
    fn long_items_wrap_under_their_text() {
        let rows = render("- a list item long enough to wrap twice at this width", 20);
        assert_eq!(
            plain(&rows),
            "• a list item long\n  enough to wrap\n  twice at this\n  width"
        );
    }
}
