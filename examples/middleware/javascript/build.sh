#!/usr/bin/env bash
# Builds the JavaScript guard middleware: build.sh [OUT_DIR]
# Needs Node.js and npm; installs componentize-js (package-lock.json).
# (It calls componentize-js directly: jco's own wrapper cannot read WIT
# paths on Node.js 20.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if ! command -v npm >/dev/null; then
  echo "npm is not installed (Node.js 20 or later is needed)" >&2
  exit 3
fi
# componentize-js: installed beside the example that pins it, or in
# COMPONENTIZE_JS_PREFIX (a folder holding its node_modules, as the test
# suite's setup installs it outside the source tree).
prefix="${COMPONENTIZE_JS_PREFIX:-$here}"
if [ ! -d "$prefix/node_modules/@bytecodealliance/componentize-js" ]; then
  if [ -n "${COMPONENTIZE_JS_PREFIX:-}" ]; then
    echo "componentize-js is not installed in $COMPONENTIZE_JS_PREFIX" >&2
    exit 3
  fi
  npm ci --prefix "$prefix" --no-audit --no-fund --loglevel=error >&2
fi
# Built in a folder of its own (componentize-js reads WIT only below its
# working directory), so the source tree is only read.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
wit="$work/.wit-build"
mkdir -p "$wit/deps/carapace-hook"
cp "$here/wit/world.wit" "$wit/"
cp "$here/../../../wit/hook/v0.2.0/hook.wit" "$wit/deps/carapace-hook/"
cp "$here/guard.js" "$work/"
cd "$work"
"$prefix/node_modules/.bin/componentize-js" guard.js --wit .wit-build --world-name guard \
  --disable http fetch-event random -o "$out/guard-javascript.wasm" >&2
