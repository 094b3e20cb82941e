#!/usr/bin/env bash
# Builds the Python guard middleware: build.sh [OUT_DIR]
# Needs componentize-py from PyPI (pip install componentize-py==0.25.1).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../out}"
mkdir -p "$out"
if ! command -v componentize-py >/dev/null; then
  echo "componentize-py is not installed: pip install componentize-py==0.25.1" >&2
  exit 3
fi
# Built from a copy: the componentizer's Python leaves bytecode beside
# what it imports, and the source tree is only read.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here"/*.py "$work/"
componentize-py -d "$here/../../../wit/hook/v0.2.0" -w middleware-hook \
  componentize -p "$work" app -o "$out/guard-python.wasm"
