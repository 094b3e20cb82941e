#!/usr/bin/env python3
"""An MCP server (stdio, JSON-RPC by hand: no SDK) that starts and lists its
one tool, `go`, correctly and then misbehaves when it is called, as its
first argument says:

  hang   never answers
  half   writes half of its answer and exits
  flood  writes 1 GiB on one line
  spam   writes 1 GiB as 8 MiB lines that are not JSON-RPC
"""

import json
import sys
import time

MODE = sys.argv[1]
CHUNK = b"x" * (1 << 20)


def send(message):
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def misbehave(request_id):
    out = sys.stdout.buffer
    if MODE == "hang":
        while True:
            time.sleep(3600)
    if MODE == "half":
        answer = json.dumps({"jsonrpc": "2.0", "id": request_id,
                             "result": {"content": [{"type": "text", "text": "you will not see this"}]}})
        out.write(answer[: len(answer) // 2].encode())
        out.flush()
        sys.exit(0)
    if MODE == "flood":
        for _ in range(1024):
            out.write(CHUNK)
        out.write(b"\n")
    if MODE == "spam":
        for _ in range(128):
            out.write(CHUNK * 8 + b"\n")
    out.flush()


for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": request["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}}, "serverInfo": {"name": MODE, "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [{
            "name": "go", "description": f"misbehaves: {MODE}",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": True}}]}})
    elif method == "tools/call":
        misbehave(request_id)
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})
