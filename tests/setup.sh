#!/usr/bin/env bash
# What the test suite needs besides cargo, installed once, so that no test
# reaches a registry itself:
# - the wasm target;
# - Debian's packages: Python with venv, Node with npm, ripgrep (what Grep
#   and Glob are compared with), an OCI registry (docker-registry: the tests
#   start their own on loopback), PostgreSQL (the transcript store's tests
#   start a cluster of their own), and the tools tests run (curl, ps, kill,
#   setpriv, unshare, ip, git);
# - into <target>/test-deps (beside the build, never the source tree or the
#   system's Python): a virtual environment with the Python packages (the
#   MCP SDK, the Agent SDK, the examples' componentizer and Zig, the
#   Kubernetes schemas deploy/ is checked against), and `npm ci` of each
#   lock file the tests pin, the examples' componentizer's too
#   (tests/support/src/deps.rs finds them).
# Every test that needs one of these fails without it: nothing is skipped.
# Runs as root (apt-get) or as a user for whom every Debian package below is
# installed already.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

rustup target add wasm32-wasip2

# Debian packages, by the command (or file) each brings.
missing=()
need() { # need PACKAGE PROBE...: PACKAGE when no PROBE is found
    local package="$1"
    shift
    for probe in "$@"; do
        case "$probe" in
        /*) compgen -G "$probe" >/dev/null && return 0 ;;
        *) command -v "$probe" >/dev/null && return 0 ;;
        esac
    done
    missing+=("$package")
}
need python3 python3
need nodejs node
need npm npm
need ripgrep rg
need docker-registry docker-registry
need postgresql '/usr/lib/postgresql/*/bin/postgres'
need curl curl
need procps ps
need util-linux setpriv
need util-linux unshare
need iproute2 ip
need git git
# Debian's Python makes virtual environments only with python3-venv.
if command -v python3 >/dev/null && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    missing+=(python3-venv)
fi
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "tests/setup.sh: these Debian packages are missing and only root can install them: ${missing[*]}" >&2
        exit 1
    fi
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
deps="$target/test-deps"
mkdir -p "$deps/node"

# Python: a virtual environment of the tests' own, reinstalled when a
# requirements file changes.
requirements=(examples/hooks/requirements.txt tests/mcp/requirements.txt tests/sdk/requirements.txt tests/deploy/requirements.txt)
stamp="$(cat "${requirements[@]}" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$deps/venv/.requirements" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$deps/venv"
    python3 -m venv "$deps/venv"
    args=()
    for file in "${requirements[@]}"; do args+=(-r "$file"); done
    "$deps/venv/bin/pip" install --disable-pip-version-check --quiet "${args[@]}"
    echo "$stamp" >"$deps/venv/.requirements"
fi

# Node: each pinned lock file installed under its own name, again when the
# lock changes. The SDK's own copy of Claude Code is an optional
# dependency the tests do not use.
node_install() { # node_install NAME SOURCE-DIR [NPM-ARGS...]
    local name="$1" source="$2" dir="$deps/node/$1"
    shift 2
    if ! cmp -s "$source/package-lock.json" "$dir/package-lock.json" || [ ! -d "$dir/node_modules" ]; then
        rm -rf "$dir"
        mkdir -p "$dir"
        cp "$source/package.json" "$source/package-lock.json" "$dir/"
        npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error "$@"
    fi
}
node_install acp-ts tests/acp/ts
node_install sdk-ts tests/sdk/ts --omit=optional
node_install mcp-servers tests/mcp/servers
# The JavaScript examples' componentizer (the hook's and the tool's pin
# the same versions; their build.sh finds it in COMPONENTIZE_JS_PREFIX).
node_install componentize-js examples/tools/javascript
