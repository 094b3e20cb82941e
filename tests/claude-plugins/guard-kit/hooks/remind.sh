#!/bin/sh
# After each command: a reminder for the model, as Claude Code's JSON.
cat > /dev/null
printf '%s\n' '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "guard-kit reminder: keep the notes up to date"}}'
