"""The audit policy hook in Python, as a typed `carapace:hook` component.

Blocks Bash commands that remove files recursively (`rm -r`, `rm -rf`,
`rm --recursive`, anywhere in a command line) and logs every tool call to
`<cwd>/.audit/tool-calls.jsonl` — the one directory its settings grant.
Built with componentize-py (see build.sh); the same hook exists in Rust,
JavaScript and C next to this directory.
"""

import json
import os
import shlex
import time

from wit_world import exports
from wit_world.imports import types
from componentize_py_types import Err

# The wording every version of this hook uses, so a test can recognise it.
REASON = "Recursive deletion is blocked by the audit policy hook: `{}`. Remove specific files instead."

SEPARATORS = set(";&|\n()`")
WRAPPERS = {"sudo", "command", "env", "nice", "nohup", "time", "xargs", "exec"}


def segments(command: str):
    """The simple commands of a command line, split at ; & | newlines and
    subshell brackets."""
    current = []
    for ch in command:
        if ch in SEPARATORS:
            yield "".join(current)
            current = []
        else:
            current.append(ch)
    yield "".join(current)


def words(segment: str):
    try:
        return shlex.split(segment)
    except ValueError:
        # Unbalanced quotes: fall back to whitespace, quotes dropped.
        return [w.strip("'\"") for w in segment.split()]


def recursive_rm(command: str):
    """The first simple command that is `rm` with a recursive flag."""
    for segment in segments(command):
        tokens = words(segment)
        while tokens and (tokens[0] in WRAPPERS or "=" in tokens[0]):
            tokens = tokens[1:]
        if not tokens or os.path.basename(tokens[0]) != "rm":
            continue
        for arg in tokens[1:]:
            if arg == "--":
                break
            if arg == "--recursive" or (
                arg.startswith("-") and not arg.startswith("--") and ("r" in arg or "R" in arg)
            ):
                return segment.strip()
    return None


class Handler(exports.Handler):
    def events(self):
        return [types.EventKind.PRE_TOOL_USE]

    def handle(self, common: types.Common, event: types.Event) -> types.Outcome:
        outcome = types.Outcome(
            decision=None,
            reason=None,
            block=False,
            updated_input=None,
            additional_context=None,
            updated_tool_output=None,
            stop_reason=None,
            system_message=None,
        )
        if not isinstance(event, types.Event_PreToolUse):
            return outcome
        call = event.value
        try:
            tool_input = json.loads(call.tool_input)
        except ValueError:
            tool_input = call.tool_input
        blocked = None
        if call.tool_name == "Bash" and isinstance(tool_input, dict):
            blocked = recursive_rm(str(tool_input.get("command", "")))
        entry = {
            "time": time.time(),
            "hook": "python",
            "session_id": common.session_id,
            "tool_use_id": call.tool_use_id,
            "tool_name": call.tool_name,
            "tool_input": tool_input,
            "verdict": "deny" if blocked else "pass",
        }
        audit_dir = os.path.join(common.cwd, ".audit")
        try:
            try:
                log = open(os.path.join(audit_dir, "tool-calls.jsonl"), "a")
            except FileNotFoundError:
                # (Not os.makedirs: it would look at the parents, which the
                # sandbox does not show.)
                os.mkdir(audit_dir)
                log = open(os.path.join(audit_dir, "tool-calls.jsonl"), "a")
            with log:
                log.write(json.dumps(entry) + "\n")
        except OSError as e:
            # An unlogged call is an error: carapace reports it, and denies
            # the call when the settings say the hook fails closed.
            raise Err(f"cannot write the audit log: {e}")
        if blocked:
            outcome.decision = types.PermissionDecision.DENY
            outcome.reason = REASON.format(blocked)
        return outcome
