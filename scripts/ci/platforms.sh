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

# One platform's install and check, its lines into $scratch/<platform>.out.
one() {
  local p=$1 os=${1%-*} cpu=${1#*-} dir="$scratch/$1" start
  mkdir -p "$dir"
  cp package.json package-lock.json "$dir/"
  echo "-- $p: npm install --os $os --cpu $cpu --ignore-scripts"
  start=$(date +%s)
  if ! (cd "$dir" && npm install --os "$os" --cpu "$cpu" --ignore-scripts --no-audit --no-fund --loglevel=error >"$dir/npm.log" 2>&1); then
    tail -20 "$dir/npm.log"
    echo "CI: $p: npm install failed" >&2
    return 1
  fi
  node "$root/scripts/ci/platform-check.mjs" "$dir" "$p" "$root/package-lock.json" || return 1
  echo "   ($(( $(date +%s) - start )) s)"
  rm -rf "$dir"
}

# The installs wait on the registry, not the CPU: all at once (one at a time took six minutes of CI).
pids=()
for p in "${platforms[@]}"; do
  one "$p" >"$scratch/$p.out" 2>&1 &
  pids+=($!)
done
for i in "${!platforms[@]}"; do
  wait "${pids[$i]}" || failed=1
  cat "$scratch/${platforms[$i]}.out"
done
exit $failed
