#!/usr/bin/env bash
# What the test suite needs besides cargo, installed once: the wasm target,
# the Python packages (the SDK, MCP, the Python examples' componentizer,
# the Kubernetes schemas deploy/ is checked against),
# Node with npm (the JavaScript examples and the npm MCP server),
# ripgrep (what Grep and Glob are compared with), an OCI registry
# (Debian's docker-registry: components are installed from it) and a
# PostgreSQL server (the shared transcript store's tests start their own). Every
# test that needs one of these fails without it, so nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-wasip2
pip install -r examples/hooks/requirements.txt -r tests/mcp/requirements.txt -r tests/sdk/requirements.txt -r tests/deploy/requirements.txt
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt-get update && apt-get install -y nodejs npm
fi
# Grep and Glob are compared with ripgrep itself (tests/tools/search.rs).
if ! command -v rg >/dev/null; then
    apt-get update && apt-get install -y ripgrep
fi
# Components installed from a registry (tests/e2e/oci_registry.rs); the
# tests start their own on loopback, never the packaged service.
if ! command -v docker-registry >/dev/null; then
    apt-get update && apt-get install -y docker-registry
fi
# The shared transcript store (host/src/transcript, tests/e2e/transcript_store.rs);
# the tests start a cluster of their own on loopback, never the packaged one.
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    apt-get update && apt-get install -y postgresql
fi
