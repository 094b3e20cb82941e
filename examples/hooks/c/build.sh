#!/usr/bin/env bash
# Builds the C audit policy hook (a Claude Code–protocol command hook):
# build.sh [OUT_DIR]
# Needs Zig's C compiler, from PyPI (pip install ziglang==0.17.1), and cargo
# for componentize-command-hook (componentize/).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../out}"
mkdir -p "$out"
if ! python3 -m ziglang version >/dev/null 2>&1; then
  echo "Zig is not installed: pip install ziglang==0.17.1" >&2
  exit 3
fi
target="${CARGO_TARGET_DIR:-$here/componentize/target}"
locked=()
[ -f "$here/componentize/Cargo.lock" ] && locked=(--locked)
cargo build --release --manifest-path "$here/componentize/Cargo.toml" --target-dir "$target" "${locked[@]}" >&2
core="$(mktemp)"
trap 'rm -f "$core"' EXIT
python3 -m ziglang cc -target wasm32-wasi -O2 -s -Wall -Wextra -Werror -o "$core" "$here/hook.c"
"$target/release/componentize-command-hook" "$core" "$out/audit-policy-c.wasm"
