#!/usr/bin/env bash
# The official MCP conformance suite's 2026-07-28 server scenarios against /mcp (issue 67 item 4).
# The suite's 0.2 line needs Node 22 (it imports fs.globSync) and the service runs on Node 20, so
# both are installed outside the clone, in $CONFORMANCE_DIR (default /tmp/mcp-conformance, kept
# between runs): the suite at $CONFORMANCE_VERSION and Node 22 from the npm `node` package. Then
# tests/mcp/mcp-conformance-2026.test.ts starts the service (as the other tests do, on
# TEST_DATABASE_URL/REDIS_TEST_URL), puts a loopback gateway with a bearer in front of it, and runs
# each applicable scenario; the scenarios and checks that cannot apply are named there with why.
# Exit status: 0 passed, 3 skipped (the registry unreachable: the reason printed), else failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=${CONFORMANCE_DIR:-/tmp/mcp-conformance}
version=${CONFORMANCE_VERSION:-0.2.0-alpha.12}
node_version=${CONFORMANCE_NODE_VERSION:-22.23.3}
bin="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
node22="$dir/node_modules/node/bin/node"

have() { [ -f "$bin" ] && grep -q "\"version\": \"$version\"" "$dir/node_modules/@modelcontextprotocol/conformance/package.json" && [ -x "$node22" ] && "$node22" --version | grep -q "^v$node_version$"; }
if ! have; then
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"mcp-conformance-runner","private":true}' > "$dir/package.json"
  # --ignore-scripts is not used: the `node` package's preinstall fetches its platform binary (from npm).
  if ! (cd "$dir" && npm install --no-audit --no-fund --no-save "@modelcontextprotocol/conformance@$version" "node@$node_version" >/dev/null 2>"$dir/install.log"); then
    echo "mcp-conformance: SKIPPED: could not install the suite or Node 22 from npm (see $dir/install.log)"
    exit 3
  fi
fi
CONFORMANCE_2026_BIN="$bin" CONFORMANCE_NODE="$node22" exec npm test -- tests/mcp/mcp-conformance-2026.test.ts
