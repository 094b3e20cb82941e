//! A resumed session's conversation, shown again: its last messages as
//! the screen's cells (prompts, answers, each call with its result), so
//! the person sees where they left off.

use super::faces::face;
use crate::model::{ContentBlock, Message, Role};
use crate::tools::Presentations;
use crate::tui::cells::{Cell, NoticeLevel, ToolCell, ToolState};
use std::collections::HashMap;

/// Cells shown from a resumed session at most.
const SHOWN: usize = 40;

/// The conversation's cells, its last [`SHOWN`], with a note of how many
/// earlier ones are not shown.
pub fn cells(history: &[Message], presentations: &Presentations) -> Vec<Cell> {
    let results: HashMap<&str, (String, bool)> = history
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some((tool_use_id.as_str(), (content.text(), *is_error))),
            _ => None,
        })
        .collect();
    let mut cells = Vec::new();
    for message in history {
        for block in &message.content {
            match (message.role, block) {
                (Role::User, ContentBlock::Text { text })
                    if !text.starts_with("<system-reminder>") =>
                {
                    cells.push(Cell::User(text.clone()));
                }
                (Role::Assistant, ContentBlock::Text { text }) if !text.trim().is_empty() => {
                    cells.push(Cell::Answer(text.clone()));
                }
                (Role::Assistant, ContentBlock::ToolUse { id, name, input }) => {
                    let (output, is_error) = results.get(id.as_str()).cloned().unwrap_or_default();
                    cells.push(Cell::Tool(Box::new(ToolCell {
                        id: id.clone(),
                        name: name.clone(),
                        face: face(presentations.view(name, input)),
                        state: if is_error {
                            ToolState::Failed
                        } else {
                            ToolState::Done
                        },
                        duration: None,
                        output,
                        nested: false,
                        progress: None,
                    })));
                }
                _ => {}
            }
        }
    }
    let hidden = cells.len().saturating_sub(SHOWN);
    let mut shown = cells.split_off(hidden);
    if hidden > 0 {
        let note = format!("(resumed: {hidden} earlier entries are not shown)");
        shown.insert(0, Cell::Notice(NoticeLevel::Info, note));
    }
    shown
}
