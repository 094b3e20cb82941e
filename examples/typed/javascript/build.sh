#!/usr/bin/env bash
# Builds the JavaScript fetch component: build.sh [OUT_DIR]
# Writes OUT_DIR/typed-fetch-javascript.wasm and its policy beside it.
# A component in the ecosystem's style: its own typed export, plain
# wasi:http, no carapace contract or manifest. Needs Node.js and npm; uses
# the componentize-js that examples/tools/javascript pins.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if ! command -v npm >/dev/null; then
  echo "npm is not installed (Node.js 20 or later is needed)" >&2
  exit 3
fi
tools="$here/../../tools/javascript"
# componentize-js and jco: installed beside the example that pins them, or
# in COMPONENTIZE_JS_PREFIX (a folder holding their node_modules, as the
# test suite's setup installs them outside the source tree).
prefix="${COMPONENTIZE_JS_PREFIX:-$tools}"
if [ ! -d "$prefix/node_modules/@bytecodealliance/componentize-js" ]; then
  if [ -n "${COMPONENTIZE_JS_PREFIX:-}" ]; then
    echo "componentize-js is not installed in $COMPONENTIZE_JS_PREFIX" >&2
    exit 3
  fi
  npm ci --prefix "$prefix" --no-audit --no-fund --loglevel=error >&2
fi
# The world and the WASI packages it needs, from jco. Built in a folder of its own (componentize-js reads WIT only below its
# working directory), so the source tree is only read.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
wit="$work/.wit-build"
mkdir -p "$wit/deps"
cp "$here/wit/world.wit" "$wit/"
for package in io clocks http cli random filesystem sockets; do
  cp -r "$prefix/node_modules/@bytecodealliance/jco/lib/wit/builtin/0.2.12/wasi-$package" "$wit/deps/"
done
cp "$here/fetch.js" "$work/"
cd "$work"
# fetch-event and the built-in fetch are off: the export calls
# wasi:http/outgoing-handler itself, synchronously.
"$prefix/node_modules/.bin/componentize-js" fetch.js --wit .wit-build --world-name typed-fetch \
  --disable fetch-event http -o "$out/typed-fetch-javascript.wasm" >&2
cp "$here/policy.yaml" "$out/typed-fetch-javascript.policy.yaml"
