#!/usr/bin/env python3
# A PreToolUse guard as Claude Code users write them: the event on stdin,
# exit 2 with a reason on stderr to block.
import json, sys

event = json.load(sys.stdin)
command = event.get("tool_input", {}).get("command", "")
if "rm -rf" in command:
    print("blocked by guard.py: rm -rf is not allowed here", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
