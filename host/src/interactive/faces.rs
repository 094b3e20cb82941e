//! A call's view, as its tool's presentation makes it, turned into what
//! the screen's cells and questions draw.

use crate::tools::{CallView, ToolKind};
use crate::tui::cells::{CallFace, OutputRows};

pub fn face(view: CallView) -> CallFace {
    CallFace {
        subject: view.subject,
        action: view.action.to_string(),
        change: view.change.map(|c| (c.old.unwrap_or_default(), c.new)),
        plan: view.plan,
        // A command's end is what matters; what a read brought is the
        // model's, the person sees how much.
        rows: match view.kind {
            ToolKind::Execute => OutputRows::Tail,
            ToolKind::Read => OutputRows::Count,
            _ => OutputRows::Head,
        },
    }
}
