"""A deliberately minimal stdio MCP server (no SDK) that pages its tool list
three tools at a time, for the bridge's `nextCursor` handling. It speaks
only the 2025-11-25 handshake and refuses `server/discover`, as an older
server would.
"""

import json
import sys

TOOLS = [
    {"name": f"tool_{i}", "description": f"Tool number {i}",
     "inputSchema": {"type": "object", "properties": {}},
     "annotations": {"readOnlyHint": i % 2 == 0}}
    for i in range(7)
]
PAGE = 3


def reply(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    method, rid = request.get("method"), request.get("id")
    if rid is None:
        continue
    if method == "initialize":
        reply({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "paged", "version": "1"}}})
    elif method == "tools/list":
        start = int((request.get("params") or {}).get("cursor") or 0)
        result = {"tools": TOOLS[start:start + PAGE]}
        if start + PAGE < len(TOOLS):
            result["nextCursor"] = str(start + PAGE)
        reply({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "tools/call":
        name = request["params"]["name"]
        reply({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": f"{name} ran"}]}})
    else:
        reply({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
