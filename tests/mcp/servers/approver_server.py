"""A permission prompt tool as an MCP server (built with the `mcp` Python
package), for `--permission-prompt-tool mcp__approver__approve`: it grants
the first directory of a RequestPermissions call (for the turn, as asked)
and refuses every other question. Each question it is asked is appended to
the file APPROVER_LOG names, one JSON line {tool_name, input}.

Run: python3 approver_server.py
"""

import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("approver")
LOG = os.environ.get("APPROVER_LOG")


@server.tool()
def approve(tool_name: str, input: dict, tool_use_id: str = "", question: str = "") -> str:
    """Answers carapace's permission questions."""
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps({"tool_name": tool_name, "input": input}) + "\n")
    if tool_name == "RequestPermissions":
        narrowed = dict(input)
        narrowed["directories"] = input.get("directories", [])[:1]
        return json.dumps({"behavior": "allow", "updatedInput": narrowed})
    return json.dumps({"behavior": "deny", "message": f"the approver refuses {tool_name}"})


if __name__ == "__main__":
    server.run()
