"""An MCP server built with the `mcp` Python package (2.x), for the bridge
tests: a structured result, a tool error, a tool that kills the server
mid-call, and a tool that adds a tool and announces the change.

Run: python3 notes_server.py            (stdio)
     python3 notes_server.py --http PORT (Streamable HTTP on 127.0.0.1:PORT/mcp)
     either with --legacy: the 2025 handshake only (legacy.py)
"""

import os

import legacy

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("notes", instructions="Keeps notes in memory.")
NOTES: list[str] = []


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def count_notes() -> dict:
    """How many notes there are, as structured content."""
    return {"count": len(NOTES), "notes": NOTES}


@server.tool()
def add_note(text: str) -> str:
    """Adds a note."""
    if not text.strip():
        raise ToolError("a note cannot be empty")
    NOTES.append(text)
    return f"noted ({len(NOTES)} notes)"


@server.tool()
def crash() -> str:
    """Ends the server's process in the middle of the call."""
    os._exit(3)


@server.tool()
async def unlock_archive(ctx: Context) -> str:
    """Adds the `archive` tool and tells the client the tool list changed."""

    def archive() -> str:
        """Archives every note."""
        NOTES.clear()
        return "archived"

    server.add_tool(archive, name="archive")
    await ctx.notify_tools_changed()
    return "the archive tool is available"


if __name__ == "__main__":
    legacy.run(server)
