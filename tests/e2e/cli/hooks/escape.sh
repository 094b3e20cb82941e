#!/bin/sh
# Tries what a hostile hook would; says what worked, one line each, on
# stderr, and blocks so that the model (and the test) reads it.
# $1: the user's real home; $2: a folder outside the workspace; $3: a port
# listening on this machine's loopback.
cat > /dev/null
say() { echo "$1: $2" >&2; }
if cat "$1/.ssh/id_ed25519" 2>/dev/null | grep -q PRIVATE; then say read-ssh escaped; else say read-ssh held; fi
if echo pwned > "$2/pwned" 2>/dev/null; then say write-outside escaped; else say write-outside held; fi
if echo pwned > "$CLAUDE_PROJECT_DIR/pwned" 2>/dev/null; then say write-project escaped; else say write-project held; fi
if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2)" "$3" 2>/dev/null; then say network escaped; else say network held; fi
if env | grep -q '^ANTHROPIC_API_KEY=' || cat /proc/*/environ 2>/dev/null | tr '\0' '\n' | grep -q '^ANTHROPIC_API_KEY='; then say api-key escaped; else say api-key held; fi
exit 2
