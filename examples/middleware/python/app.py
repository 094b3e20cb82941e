"""The guard middleware in Python, as a `carapace:hook@0.2.0` component.

Around every tool call: a Bash command line that removes files
recursively is answered with a refusal (the tool never runs); every
other call is passed on with `next`, and anything shaped like an AWS
access key id in its result is replaced by `[redacted]`. Built with
componentize-py (see build.sh); the same middleware exists in Rust,
JavaScript and C next to this directory.
"""

import json
import re

from wit_world import exports
from wit_world.imports import next as chain
from wit_world.imports import types

REFUSAL = "Recursive deletion is refused by the guard middleware."
KEY = re.compile(r"AKIA[A-Z0-9]{16}")
WRAPPERS = {"sudo", "env", "command"}


def removes_recursively(line: str) -> bool:
    """Whether a simple command of `line` is `rm` with a recursive flag."""
    for segment in re.split(r"[;&|\n()]", line):
        words = segment.split()
        while words and ("=" in words[0] or words[0] in WRAPPERS):
            words.pop(0)
        if not words or words[0] != "rm":
            continue
        for word in words[1:]:
            if word == "--recursive":
                return True
            if word.startswith("-") and not word.startswith("--") and ("r" in word or "R" in word):
                return True
    return False


def redacted(result: types.ToolResult) -> types.ToolResult:
    try:
        content = json.loads(result.content)
    except ValueError:
        return result
    if isinstance(content, str):
        content = KEY.sub("[redacted]", content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                block["text"] = KEY.sub("[redacted]", block["text"])
    return types.ToolResult(content=json.dumps(content), is_error=result.is_error)


class Middleware(exports.Middleware):
    def events(self):
        return [types.EventKind.TOOL_CALL]

    def on_tool_call(self, ctx, call):
        if call.tool_name == "Bash":
            try:
                command = json.loads(call.tool_input).get("command", "")
            except ValueError:
                command = ""
            if removes_recursively(command):
                return types.ToolResult(content=json.dumps(REFUSAL), is_error=True)
        return redacted(chain.call_tool(call))

    # Registered for tool calls only: these are never called.
    def on_tool_list(self, ctx, tools):
        return chain.offer_tools(tools)

    def on_subagent_spawn(self, ctx, spawn):
        return chain.spawn_subagent(spawn)

    def on_session_start(self, ctx, source):
        chain.pass_()

    def on_session_end(self, ctx, reason):
        chain.pass_()
