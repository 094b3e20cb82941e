#!/usr/bin/env bash
# Builds the Rust guard middleware: build.sh [OUT_DIR]
# Needs the wasm32-wasip2 target (rustup target add wasm32-wasip2).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../out}"
mkdir -p "$out"
target="${CARGO_TARGET_DIR:-$here/target}"
locked=()
[ -f "$here/Cargo.lock" ] && locked=(--locked)
cargo build --release --target wasm32-wasip2 --manifest-path "$here/Cargo.toml" \
  --target-dir "$target" "${locked[@]}"
cp "$target/wasm32-wasip2/release/guard_middleware.wasm" "$out/guard-rust.wasm"
