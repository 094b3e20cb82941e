"""WordCount, a third-party tool plugin in Python (carapace:tool@0.2.0).

`plan` runs with no capabilities and says what one call needs: read access
to the one file it counts. `call` then runs in an instance where that file,
and nothing else, exists; it reads it with `open()`. Built with
componentize-py (see build.sh); the same tool exists in Rust, JavaScript and
C next to this directory, and answers byte for byte the same.
"""

import json
import re

from wit_world import exports
from wit_world.imports import types
from componentize_py_types import Err

TOOL = "WordCount"

SCHEMA = json.dumps({
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Absolute path of the file to count"},
        "top": {"type": "integer", "minimum": 0, "maximum": 20,
                "description": "Also list this many most frequent words (default 0)"},
    },
    "required": ["file_path"],
    "additionalProperties": False,
})

WHITESPACE = re.compile(rb"[ \t\n\r\f]+")
EDGES = re.compile(rb"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")


def parse(tool: str, text: str) -> dict:
    if tool != TOOL:
        raise ValueError(f"this plugin has no tool `{tool}`")
    args = json.loads(text)
    path = args.get("file_path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"file_path must be an absolute path, not `{path}`")
    return args


def report(data: bytes, top: int) -> str:
    words = [w for w in WHITESPACE.split(data) if w]
    out = f"lines: {data.count(b'\n')}\nwords: {len(words)}\nbytes: {len(data)}\n"
    if top > 0:
        counts: dict[bytes, int] = {}
        for word in words:
            word = EDGES.sub(b"", word).lower()
            if word:
                counts[word] = counts.get(word, 0) + 1
        # Most frequent first; ties in byte order.
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
        shown = ", ".join(f"{w.decode('utf-8', 'replace')} {n}" for w, n in ranked)
        out += f"top: {shown}\n"
    return out


class ToolProvider(exports.ToolProvider):
    def tools(self):
        return [types.ToolDefinition(
            name=TOOL,
            description="Counts the lines, words and bytes of a text file, and optionally "
                        "lists its most frequent words. `file_path` must be absolute.",
            input_schema=SCHEMA,
            annotations=types.ToolAnnotations(
                read_only=True, destructive=False, idempotent=True, open_world=False),
        )]

    def plan(self, tool, input):
        try:
            args = parse(tool, input)
        except ValueError as e:
            raise Err(str(e))
        return types.CallPlan(
            concurrency_safe=True,
            interrupt=types.InterruptBehavior.CANCEL,
            needs=[types.Capability_ReadFile(args["file_path"])],
        )

    def call(self, tool, input, context):
        try:
            args = parse(tool, input)
        except ValueError as e:
            raise Err(types.CallError_InvalidInput(str(e)))
        try:
            with open(args["file_path"], "rb") as f:
                data = f.read()
        except OSError as e:
            raise Err(types.CallError_Failed(f"cannot read {args['file_path']}: {e.strerror}"))
        return types.ToolOutput(
            content=[types.Content_Text(report(data, int(args.get("top", 0))))],
            is_error=False,
        )
