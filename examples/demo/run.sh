#!/usr/bin/env sh
# Builds carapace and runs one real agent run: against the Anthropic API when
# ANTHROPIC_API_KEY is set, else the replay demo (no key, no network).
set -eu
cd "$(dirname "$0")/../.."
rustup target add wasm32-wasip2 >/dev/null
cargo build --locked -p carapace
if [ -n "${ANTHROPIC_API_KEY:-}" ]; then
  exec ./target/debug/carapace -p "Read examples/demo/notes.txt and summarise it in two sentences." \
    --output-format stream-json --verbose
else
  echo "(no ANTHROPIC_API_KEY: playing examples/demo/replay.json)" >&2
  exec ./target/debug/carapace -p "Summarise the demo notes" \
    --model replay:examples/demo/replay.json --output-format stream-json --verbose
fi
