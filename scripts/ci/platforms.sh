#!/usr/bin/env bash
# Proves the lockfile installs on the machines our users have, without those machines: for each
# platform, `npm install --os … --cpu … --ignore-scripts` from package.json and package-lock.json
# into a scratch folder (no script runs, nothing native is built), then checks that
#   - the lockfile needed no change (it resolves as committed),
#   - the embedded PostgreSQL got that platform's binaries (@embedded-postgres/<platform>) and no
#     other platform's (they come only through embedding-postgres's optional dependencies),
#   - esbuild and @swc/core got that platform's binary too,
#   - no installed package declares an engines.node that a Node version the README supports
#     (20.19, 22.12, 24) does not satisfy, but for the ones listed in KNOWN_ENGINES with the reason.
# npm resolves `--os/--cpu` from the lockfile; it is also what the npm documentation describes.
# Usage: scripts/ci/platforms.sh [platform …]   (default: darwin-arm64 darwin-x64 linux-arm64 linux-x64)
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
platforms=("$@")
[ ${#platforms[@]} -eq 0 ] && platforms=(darwin-arm64 darwin-x64 linux-arm64 linux-x64)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/platforms-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
failed=0

for p in "${platforms[@]}"; do
  os=${p%-*}
  cpu=${p#*-}
  dir="$scratch/$p"
  mkdir -p "$dir"
  cp package.json package-lock.json "$dir/"
  echo "-- $p: npm install --os $os --cpu $cpu --ignore-scripts"
  start=$(date +%s)
  if ! (cd "$dir" && npm install --os "$os" --cpu "$cpu" --ignore-scripts --no-audit --no-fund --loglevel=error >"$dir/npm.log" 2>&1); then
    tail -20 "$dir/npm.log"
    echo "CI: $p: npm install failed" >&2
    failed=1
    continue
  fi
  node "$root/scripts/ci/platform-check.mjs" "$dir" "$p" "$root/package-lock.json" || failed=1
  echo "   ($(( $(date +%s) - start )) s)"
  rm -rf "$dir"
done
exit $failed
