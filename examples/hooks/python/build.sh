#!/usr/bin/env bash
# Builds the Python audit policy hook: build.sh [OUT_DIR]
# Needs componentize-py from PyPI (pip install componentize-py==0.25.1).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../out}"
mkdir -p "$out"
if ! command -v componentize-py >/dev/null; then
  echo "componentize-py is not installed: pip install componentize-py==0.25.1" >&2
  exit 3
fi
componentize-py -d "$here/../../../wit/hook/v0.1.0" -w hook-plugin \
  componentize -p "$here" app -o "$out/audit-policy-python.wasm"
