#!/usr/bin/env bash
# Builds the JavaScript audit policy hook: build.sh [OUT_DIR]
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
# The world's packages: carapace:hook from this repository, WASI from jco.
# (Inside this directory: jco's tools see only the working directory.)
wit="$here/.wit-build"
rm -rf "$wit"
trap 'rm -rf "$wit"' EXIT
mkdir -p "$wit/deps/carapace-hook"
cp "$here/wit/world.wit" "$wit/"
cp "$here/../../../wit/hook/v0.1.0/hook.wit" "$wit/deps/carapace-hook/"
for package in io clocks filesystem; do
  cp -r "$here/node_modules/@bytecodealliance/jco/lib/wit/builtin/0.2.12/wasi-$package" "$wit/deps/"
done
cd "$here"
./node_modules/.bin/componentize-js hook.js --wit .wit-build --world-name audit-policy \
  --disable http fetch-event random -o "$out/audit-policy-javascript.wasm" >&2
