#!/usr/bin/env bash
# Builds the JavaScript WordCount plugin: build.sh [OUT_DIR]
# Writes OUT_DIR/word-count-javascript.wasm and its manifest beside it.
# Needs Node.js and npm; installs componentize-js (package-lock.json).
# (It calls componentize-js directly: jco's own wrapper cannot read WIT
# paths on Node.js 20.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../out}"
mkdir -p "$out"
if ! command -v npm >/dev/null; then
  echo "npm is not installed (Node.js 20 or later is needed)" >&2
  exit 3
fi
if [ ! -d "$here/node_modules/@bytecodealliance/componentize-js" ]; then
  npm ci --prefix "$here" --no-audit --no-fund --loglevel=error >&2
fi
# The world's packages: carapace:tool from this repository, WASI from jco.
# (Inside this directory: jco's tools see only the working directory.)
wit="$here/.wit-build"
rm -rf "$wit"
trap 'rm -rf "$wit"' EXIT
mkdir -p "$wit/deps/carapace-tool"
cp "$here/wit/world.wit" "$wit/"
cp "$here/../../../wit/tool/v0.2.0/tool.wit" "$wit/deps/carapace-tool/"
for package in io clocks filesystem; do
  cp -r "$here/node_modules/@bytecodealliance/jco/lib/wit/builtin/0.2.12/wasi-$package" "$wit/deps/"
done
cd "$here"
./node_modules/.bin/componentize-js tool.js --wit .wit-build --world-name word-count \
  --disable http fetch-event random -o "$out/word-count-javascript.wasm" >&2
cp "$here/carapace-plugin.toml" "$out/word-count-javascript.toml"
