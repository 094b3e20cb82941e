#!/bin/sh
# At the start of a session: plain text on stdout is context for the model.
cat > /dev/null
echo "guard-kit is active in this session"
