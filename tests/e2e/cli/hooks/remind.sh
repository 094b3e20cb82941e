#!/bin/sh
# A PostToolUse reminder: advice for the model, as JSON on stdout.
cat > /dev/null
printf '%s\n' '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "reminder from remind.sh: run the tests"}}'
