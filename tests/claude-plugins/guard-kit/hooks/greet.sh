#!/bin/sh
# At the start of a session: plain text on stdout is context for the model,
# and what it writes to $CLAUDE_ENV_FILE is set for the session's commands.
cat > /dev/null
echo "guard-kit is active in this session"
if [ -n "$CLAUDE_ENV_FILE" ]; then
    echo 'export GUARD_KIT_ACTIVE=yes' >> "$CLAUDE_ENV_FILE"
    echo 'export PATH="$HOME/.guard-kit/bin:$PATH"' >> "$CLAUDE_ENV_FILE"
fi
