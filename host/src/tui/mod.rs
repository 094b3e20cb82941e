//! The interactive screen's parts: what a session looks like as rows of a
//! terminal (cells: prompts, answers as markdown, tool calls with their
//! state, diffs, notices), the prompt being typed, the approval question,
//! the inline screen that writes finished rows into the scrollback and
//! redraws the live area, and the terminal's raw mode, given back on
//! every way out. ratatui supplies the text model (styled lines and
//! spans), crossterm the terminal's input and modes.
//!
//! The screen is drawn by carapace rather than by a ratatui viewport: the
//! live area changes height as questions open and answers stream, and
//! an inline viewport of ratatui's is of one fixed height. What is drawn
//! is written as rows, so the scrollback holds real text.
//!
//! This folder imports nothing of carapace's: `cli` feeds it the
//! session's events and answers.

pub mod approval;
pub mod cells;
pub mod form;
pub mod input;
pub mod markdown;
pub mod screen;
pub mod terminal;
pub mod text;
