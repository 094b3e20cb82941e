#!/usr/bin/env bash
# Builds the C guard middleware: build.sh [OUT_DIR]
# Needs Zig's C compiler, from PyPI (pip install ziglang==0.17.1), and cargo
# for componentize-middleware (componentize/: the C bindings, and the
# wrapping of the compiled module into a component).
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
tool="$target/release/componentize-middleware"
wit="$here/../../../wit/hook/v0.2.0"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$tool" bindings "$wit" "$work"
python3 -m ziglang cc -target wasm32-wasi -mexec-model=reactor -O2 -s -Wall -Wextra -Werror \
  -Wno-unused-parameter -I "$work" -o "$work/core.wasm" "$here/guard.c" "$work/middleware_hook.c" \
  "$work/middleware_hook_component_type.o"
"$tool" wrap "$work/core.wasm" "$out/guard-c.wasm"
