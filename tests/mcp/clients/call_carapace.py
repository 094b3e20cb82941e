"""A real MCP client (the `mcp` Python package) driving `carapace mcp serve`.

    python3 call_carapace.py CARAPACE_BINARY WORKDIR CALLS_JSON [ARGS...]

CALLS_JSON is a list of [tool, arguments]. With CARAPACE_MCP_URL set, the
client connects to that Streamable HTTP endpoint instead of starting
`carapace mcp serve` on stdio; CARAPACE_MCP_MODE is the client's `mode`
(`auto`, `legacy` for the handshake, or a revision it is pinned to). Prints one JSON object: the
negotiated protocol version, the tools offered, and for each call its text
and isError.
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters


async def main() -> None:
    binary, workdir, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    # carapace's own settings pass through (the client's default
    # environment for a server is a short list of variables).
    env = {k: v for k, v in os.environ.items() if k.startswith("CARAPACE_")}
    params = StdioServerParameters(
        command=binary, args=["mcp", "serve", *sys.argv[4:]], cwd=workdir, env=env
    )
    target = os.environ.get("CARAPACE_MCP_URL") or params
    mode = os.environ.get("CARAPACE_MCP_MODE") or "auto"
    async with Client(target, read_timeout_seconds=120, mode=mode) as client:
        tools = await client.list_tools()
        results = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = "".join(getattr(block, "text", "") for block in result.content)
            results.append({"tool": name, "text": text, "is_error": bool(result.is_error)})
        print(json.dumps({
            "protocol_version": client.protocol_version,
            "tools": [tool.name for tool in tools.tools],
            "results": results,
        }))


asyncio.run(main())
