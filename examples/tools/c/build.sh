#!/usr/bin/env bash
# Builds the C WordCount plugin: build.sh [OUT_DIR]
# Writes OUT_DIR/word-count-c.wasm and its manifest beside it.
# Needs Zig's C compiler, from PyPI (pip install ziglang==0.17.1), and cargo
# for c-tool-toolchain (toolchain/: wit-bindgen's C generator and the
# preview 1 reactor adapter).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../out}"
mkdir -p "$out"
if ! python3 -m ziglang version >/dev/null 2>&1; then
  echo "Zig is not installed: pip install ziglang==0.17.1" >&2
  exit 3
fi
target="${CARGO_TARGET_DIR:-$here/toolchain/target}"
locked=()
[ -f "$here/toolchain/Cargo.lock" ] && locked=(--locked)
cargo build --release --manifest-path "$here/toolchain/Cargo.toml" --target-dir "$target" "${locked[@]}" >&2
toolchain="$target/release/c-tool-toolchain"
wit="$here/../../../wit/tool/v0.2.0"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$toolchain" bindgen "$wit" tool-plugin "$work"
python3 -m ziglang cc -target wasm32-wasi -mexec-model=reactor -O2 -s \
  -Wall -Wextra -Werror -Wno-unused-parameter -I"$work" -Wl,-z,stack-size=131072 \
  -o "$work/core.wasm" "$here/tool.c" "$work/tool_plugin.c" "$work/tool_plugin_component_type.c"
"$toolchain" componentize "$wit" tool-plugin "$work/core.wasm" "$out/word-count-c.wasm"
cp "$here/carapace-plugin.toml" "$out/word-count-c.toml"
