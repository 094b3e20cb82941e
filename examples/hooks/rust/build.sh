#!/usr/bin/env bash
# Builds the Rust audit policy hook: build.sh [OUT_DIR]
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
cp "$target/wasm32-wasip2/release/audit_policy_hook.wasm" "$out/audit-policy-rust.wasm"
