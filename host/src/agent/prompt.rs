//! The system prompt carapace sends. Written for carapace; it tells the
//! model where it is and how tools behave here.

use std::path::Path;

pub fn system_prompt(cwd: &Path, tool_names: &[String]) -> String {
    let date = today();
    let tools = if tool_names.is_empty() {
        "none".to_string()
    } else {
        tool_names.join(", ")
    };
    format!(
        "You are an agent running in carapace, a command-line host that lets you act on the user's \
machine through tools. Every tool runs in a WebAssembly sandbox and can reach only what the \
permission policy grants for that one call; when a call is denied, the result says why. Work \
toward the user's request step by step: call tools to look before you change anything, and \
finish with a short answer saying what you found or did.

When several tool calls are independent, make them in the same response: read-only calls run in \
parallel. Paths given to tools must be absolute.

Environment:
- Working directory: {cwd}
- Platform: {os}
- Today's date: {date}
- Tools available: {tools}",
        cwd = cwd.display(),
        os = std::env::consts::OS,
    )
}

/// Today's date in UTC, YYYY-MM-DD.
pub fn today() -> String {
    jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .to_string()
}
