"""An MCP server built with the `mcp` Python package (2.x) that uses the
protocol beyond tools, for the bridge tests: instructions, resources (one
listed, one template), prompts with arguments, a tool that asks the user
(elicitation, form and URL), one that reports progress, one that asks the
client for a completion (sampling, which carapace refuses).

Run: python3 library_server.py            (stdio)
     python3 library_server.py --http PORT (Streamable HTTP on 127.0.0.1:PORT/mcp)
     either with --legacy: `server/discover` is refused, so a client falls
     back to the 2025-11-25 handshake, where a server may send requests
     in the middle of its answer (elicitation, sampling)
"""


import anyio
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
import legacy
from mcp.types import SamplingMessage, TextContent
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

server = MCPServer(
    "library",
    instructions="Books are resources: list them before reading one. Shelf codes are three letters.",
)

BOOKS = {
    "dune": "Dune, by Frank Herbert. Shelf SCI.",
    "emma": "Emma, by Jane Austen. Shelf CLA.",
}


@server.resource("library://catalogue", name="catalogue", description="Every book's key", mime_type="text/plain")
def catalogue() -> str:
    return "\n".join(sorted(BOOKS))


@server.resource("library://books/{key}", name="book", description="One book's card", mime_type="text/plain")
def book(key: str) -> str:
    return BOOKS.get(key, f"no book {key}")


@server.prompt(description="Asks for a review of one book")
def review(book: str, tone: str = "plain") -> str:
    return f"Write a {tone} review of {book}."


class Shelf(BaseModel):
    shelf: str


@server.tool()
async def shelve(title: str, ctx: Context) -> str:
    """Asks the user which shelf a new book goes on."""
    answer = await ctx.elicit(f"Which shelf for {title}?", Shelf)
    if answer.action == "accept":
        return f"{title} shelved on {answer.data.shelf}"
    return f"not shelved: {answer.action}"


@server.tool()
async def shelve_by_round_trip(title: str, ctx: Context):
    """Asks the user which shelf, the 2026-07-28 way: an input_required
    result first, the answer on the retry."""
    answers = ctx.input_responses
    if not answers or "shelf" not in answers:
        return InputRequiredResult(
            input_requests={
                "shelf": ElicitRequest(
                    params=ElicitRequestFormParams(
                        message=f"Which shelf for {title}?",
                        requested_schema={
                            "type": "object",
                            "properties": {"shelf": {"type": "string"}},
                            "required": ["shelf"],
                        },
                    )
                )
            },
            request_state="asked-once",
        )
    answer = answers["shelf"]
    if answer.action == "accept":
        return f"{title} shelved on {answer.content['shelf']} ({ctx.request_state})"
    return f"not shelved: {answer.action}"


@server.tool()
async def sign_in_elsewhere(ctx: Context) -> str:
    """Sends the user to a page of the library's (URL elicitation)."""
    answer = await ctx.elicit_url("Sign in to the library", "https://library.example/sign-in", "sign-1")
    return f"sign-in: {answer.action}"


@server.tool()
async def inventory(steps: int, ctx: Context) -> str:
    """Counts the shelves, reporting progress at each one."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"shelf {step}")
        await anyio.sleep(0.05)
    return f"counted {steps} shelves"


@server.tool()
async def nap(seconds: float) -> str:
    """Sleeps, saying nothing meanwhile."""
    await anyio.sleep(seconds)
    return f"slept {seconds} s"


@server.tool()
async def summarise(ctx: Context) -> str:
    """Asks the client's model for a summary (sampling)."""
    try:
        result = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text="Summarise the library."))],
            max_tokens=50,
            related_request_id=ctx.request_id,
        )
        return f"sampled: {result.content}"
    except Exception as error:  # the client refused: say how
        return f"sampling refused: {error}"


if __name__ == "__main__":
    legacy.run(server)
