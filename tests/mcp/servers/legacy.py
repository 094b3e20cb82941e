"""A 2025-only server made of one built with the `mcp` Python package, for
the tests: `server/discover` refused, and (over stdio) the probe no longer
opens the connection in the 2026 era — a test fixture reaching into the
SDK, which otherwise serves both revisions."""

import sys

import mcp.server.runner as runner
from mcp.shared.exceptions import MCPError
from mcp.types import METHOD_NOT_FOUND, RequestParams


def refuse_discover(server) -> None:
    async def refuse(ctx, params):
        raise MCPError(METHOD_NOT_FOUND, "this server speaks the 2025 handshake only")

    server._lowlevel_server.add_request_handler("server/discover", RequestParams, refuse)
    runner._has_modern_envelope = lambda params: False


def run(server) -> None:
    """Serves `server` as the command line says: stdio, or `--http PORT`
    (Streamable HTTP on 127.0.0.1:PORT/mcp); `--legacy` for 2025 only."""
    args = sys.argv[1:]
    if "--legacy" in args:
        args.remove("--legacy")
        refuse_discover(server)
    if len(args) == 2 and args[0] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(args[1]))
    else:
        server.run()
