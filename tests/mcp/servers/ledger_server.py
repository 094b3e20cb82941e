"""An MCP server built with the `mcp` Python package (2.x) with a resource
that changes, for the subscription tests: `ledger://balance`, and a tool
`deposit` that changes it and tells whoever subscribed — on a
`subscriptions/listen` stream (2026-07-28), or after `resources/subscribe`
(2025). `ledger://rates` never changes. Every subscription is appended to
the file SUBSCRIPTIONS_LOG names, when set.

Run: python3 ledger_server.py [--http PORT] [--legacy] [--no-subscribe]
     --no-subscribe: the server offers no subscriptions (the control).
"""

import os
import sys

import legacy
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import EmptyResult, SubscribeRequestParams

OFFERS = "--no-subscribe" not in sys.argv
if not OFFERS:
    sys.argv.remove("--no-subscribe")

# Without a listen stream (2026) and without a subscribe handler (2025),
# the server offers no subscriptions.
server = MCPServer("ledger", subscriptions=None if OFFERS else False)
BALANCE = [100]
SUBSCRIBED: set[str] = set()
LOG = os.environ.get("SUBSCRIPTIONS_LOG")


def log(line: str) -> None:
    if LOG:
        with open(LOG, "a") as f:
            f.write(line + "\n")


@server.resource("ledger://balance", name="balance", mime_type="text/plain")
def balance() -> str:
    return f"balance: {BALANCE[0]}"


@server.resource("ledger://rates", name="rates", mime_type="text/plain")
def rates() -> str:
    return "rates: 2%"


@server.tool()
async def deposit(amount: int, ctx: Context) -> str:
    """Adds to the balance."""
    BALANCE[0] += amount
    await ctx.notify_resource_updated("ledger://balance")
    if "ledger://balance" in SUBSCRIBED:
        await ctx.session.send_resource_updated("ledger://balance")
    return f"deposited {amount}"


async def subscribe(ctx, params: SubscribeRequestParams) -> EmptyResult:
    SUBSCRIBED.add(str(params.uri))
    log(f"resources/subscribe {params.uri}")
    return EmptyResult()


if OFFERS:
    server._lowlevel_server.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)

if __name__ == "__main__":
    legacy.run(server)
