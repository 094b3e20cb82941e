#!/usr/bin/env sh
# Builds carapace and runs one real agent run: against the Anthropic API when
# ANTHROPIC_API_KEY is set, else the replay demo (no key, no network). In a
# terminal it opens the interactive screen with the prompt sent (Ctrl-D
# leaves); elsewhere it prints the run as text.
set -eu
cd "$(dirname "$0")/../.."
rustup target add wasm32-wasip2 >/dev/null
cargo build --locked -p carapace
if [ -n "${ANTHROPIC_API_KEY:-}" ]; then
  set -- "Read examples/demo/notes.txt and summarise it in two sentences."
else
  echo "(no ANTHROPIC_API_KEY: playing examples/demo/replay.json)" >&2
  set -- "Summarise the demo notes" --model replay:examples/demo/replay.json
fi
if [ -t 0 ] && [ -t 1 ]; then
  exec "${CARGO_TARGET_DIR:-target}/debug/carapace" "$@"
else
  exec "${CARGO_TARGET_DIR:-target}/debug/carapace" -p "$@" --verbose
fi
