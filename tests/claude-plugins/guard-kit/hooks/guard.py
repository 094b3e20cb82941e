#!/usr/bin/env python3
"""Blocks recursive deletes: the event on stdin, exit 2 and a reason to block."""
import json
import sys

event = json.load(sys.stdin)
command = event.get("tool_input", {}).get("command", "")
if "rm -rf" in command or "rm -r " in command:
    print("guard-kit: recursive deletes are blocked in this project", file=sys.stderr)
    sys.exit(2)
