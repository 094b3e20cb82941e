#!/usr/bin/env bash
# Builds the Rust WordCount plugin: build.sh [OUT_DIR]
# Writes OUT_DIR/word-count-rust.wasm and its manifest beside it.
# Needs the wasm32-wasip2 target (rustup target add wasm32-wasip2).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../out}"
mkdir -p "$out"
target="${CARGO_TARGET_DIR:-$here/target}"
locked=()
[ -f "$here/Cargo.lock" ] && locked=(--locked)
cargo build --release --target wasm32-wasip2 --manifest-path "$here/Cargo.toml" \
  --target-dir "$target" "${locked[@]}" >&2
cp "$target/wasm32-wasip2/release/word_count_tool.wasm" "$out/word-count-rust.wasm"
cp "$here/carapace-plugin.toml" "$out/word-count-rust.toml"
