#!/usr/bin/env bash
# Proves the lockfile installs on the machines our users have, without those machines: for each
# platform, in a scratch folder holding package.json and package-lock.json,
#   `npm install --package-lock-only --os … --cpu …`  the lockfile needs no change (it resolves as committed),
#   `npm install --dry-run --json --os … --cpu …`      what npm would install there, by path,
# then checks (scripts/ci/platform-check.mjs) that
#   - the embedded PostgreSQL is that platform's binaries (@embedded-postgres/<platform>) and no
#     other platform's (they come only through embedded-postgres's optional dependencies),
#   - esbuild and @swc/core get that platform's binary too,
#   - no package to install declares an engines.node that a Node version the README supports
#     (20.19, 22.12, 24) does not satisfy, but for the ones listed in KNOWN_ENGINES with the reason,
# and fetches the packages only that platform gets (`npm cache add`: the registry has them, their
# integrity matches the lockfile's). Planned, not extracted: four full installs took about three
# minutes of CI's two cores beside its checks; the plan is npm's own, the one an install carries out.
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
  echo "-- $p: npm install --os $os --cpu $cpu --ignore-scripts (--package-lock-only, then --dry-run)"
  start=$(date +%s)
  local flags=(--os "$os" --cpu "$cpu" --ignore-scripts --no-audit --no-fund --loglevel=error)
  if ! (cd "$dir" && npm install --package-lock-only "${flags[@]}" >"$dir/npm.log" 2>&1 && npm install --dry-run --json "${flags[@]}" >"$dir/plan.out" 2>>"$dir/npm.log"); then
    tail -20 "$dir/npm.log"
    echo "CI: $p: npm install failed" >&2
    return 1
  fi
  node "$root/scripts/ci/platform-check.mjs" "$dir" "$p" "$root/package-lock.json" "$dir/plan.out" "$root/node_modules" "$dir/own.txt" || return 1
  local pkg
  while read -r pkg; do
    [ -n "$pkg" ] || continue
    (cd "$dir" && npm cache add "$pkg" --loglevel=error >>"$dir/npm.log" 2>&1) || { tail -5 "$dir/npm.log"; echo "CI: $p: $pkg cannot be fetched" >&2; return 1; }
  done <"$dir/own.txt"
  echo "   fetched: $(tr '\n' ' ' <"$dir/own.txt")"
  echo "   ($(( $(date +%s) - start )) s)"
  rm -rf "$dir"
}

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
