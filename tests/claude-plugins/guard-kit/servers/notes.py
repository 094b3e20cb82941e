#!/usr/bin/env python3
"""A small MCP server over stdio (newline-delimited JSON-RPC) with one tool,
add_note, written without an SDK so that the plugin needs nothing but Python."""
import json
import sys

NOTES = []


def answer(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


TOOL = {
    "name": "add_note",
    "description": "Keeps a note",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}

for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue  # a notification
    if method == "initialize":
        answer(request_id, {
            "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "guard-kit-notes", "version": "0.1.0"},
        })
    elif method == "tools/list":
        answer(request_id, {"tools": [TOOL]})
    elif method == "tools/call":
        NOTES.append(message["params"]["arguments"]["text"])
        answer(request_id, {"content": [{"type": "text", "text": f"noted ({len(NOTES)}): {NOTES[-1]}"}]})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                     "error": {"code": -32601, "message": f"no method {method}"}}) + "\n")
        sys.stdout.flush()
