//! [`ToolKind`]: what kind of work a tool's calls do, as a front end shows
//! them (an editor's icon and grouping, the screen's wording). Declared
//! where a tool is registered — the first-party table, a host tool itself
//! — so no front end keeps a table of tool names of its own.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolKind {
    /// Reads a file.
    Read,
    /// Changes a file.
    Edit,
    /// Runs or controls a command.
    Execute,
    /// Searches files.
    Search,
    /// Reaches the web.
    Fetch,
    /// Plans or delegates (a task list, a subagent).
    Think,
    /// Changes the session's mode.
    SwitchMode,
    /// Anything else (an installed plugin's or an MCP server's tool).
    #[default]
    Other,
}
