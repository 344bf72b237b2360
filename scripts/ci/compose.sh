#!/usr/bin/env bash
# CI's container step (issue 48; docs/deploy.md): the image built and compose.yaml proven end to end.
#   1. Docker: the CLI, the daemon (started here when none runs, without its bridge: see
#      shared STACK.md "Containers"), docker-compose and debootstrap, installed from Debian's
#      packages when missing. Where none of it can run, the step is skipped with a line saying why.
#   2. The base image debian:trixie-slim: imported from the tarball in $CONTAINER_CACHE_DIR when
#      there (outside the clone; scripts/ci/packages.sh makes it with debootstrap while CI installs),
#      else pulled where a registry answers, else made here with debootstrap and kept there.
#   3. The images (Dockerfile targets runtime, postgres, redis, haproxy), Docker's layer cache kept by
#      the daemon between runs (npm ci is redone only when the lockfile changes).
#   4. tests/proofs/container-image.test.ts on the image just built (start, health, stop; the main jest run
#      skips it, having no image or no daemon), then scripts/compose-smoke.ts: compose up with the
#      simulator profile, the smoke test, compose down.
# Exit status: 0 passed, 3 skipped (the reason printed), anything else failed. Bounded by
# COMPOSE_STEP_SECONDS (default 600) in all; the images' build by what that leaves for the smoke.
set -uo pipefail
cd "$(dirname "$0")/../.."
limit=${COMPOSE_STEP_SECONDS:-600}
cache=${CONTAINER_CACHE_DIR:-/var/cache/messaging-ci}
skip() { echo "compose: SKIPPED: $*"; exit 3; }
left() { echo $(( limit - SECONDS )); }
own_daemon=""
cleanup() { if [ -n "$own_daemon" ]; then kill "$own_daemon" 2>/dev/null; for _ in $(seq 1 40); do kill -0 "$own_daemon" 2>/dev/null || break; sleep 0.5; done; fi; }
trap cleanup EXIT
trap 'exit 143' TERM INT

# 1. Docker.
need=()
command -v docker >/dev/null || need+=(docker.io)
command -v dockerd >/dev/null || need+=(docker.io)
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || need+=(docker-compose)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "compose: installing ${need[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || { timeout 120 apt-get update -q >/dev/null 2>&1; timeout 300 apt-get install -y -q "${need[@]}" >/dev/null 2>&1; }
  fi
fi
command -v docker >/dev/null || skip "no docker CLI (apt-get install docker.io as root)"
if command -v docker-compose >/dev/null; then export COMPOSE=docker-compose; elif docker compose version >/dev/null 2>&1; then export COMPOSE="docker compose"; else skip "no docker compose"; fi
if ! timeout 20 docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || skip "no Docker daemon running and no dockerd to start"
  [ "$(id -u)" = 0 ] || skip "no Docker daemon running, and starting one needs root"
  log=$(mktemp)
  dockerd --bridge=none --iptables=false --ip6tables=false >"$log" 2>&1 &
  own_daemon=$!
  for _ in $(seq 1 60); do timeout 5 docker info >/dev/null 2>&1 && break; kill -0 "$own_daemon" 2>/dev/null || break; sleep 0.5; done
  timeout 5 docker info >/dev/null 2>&1 || { tail -5 "$log"; own_daemon=""; skip "the Docker daemon does not start here (its log's end above)"; }
  echo "compose: started dockerd (pid $own_daemon) without its bridge; it stops at the end of this step"
fi
if [ "$COMPOSE" = docker-compose ]; then
  # docker-compose v1 is a Python program: a `docker compose` wrapper it is not.
  compose_bin=$(command -v docker-compose); export COMPOSE="$compose_bin"
fi

# 2. The base image.
if ! docker image inspect debian:trixie-slim >/dev/null 2>&1; then
  # The tarball first when it is there (scripts/ci/packages.sh makes it beside the install): a pull
  # where no registry answers can spend its whole minute failing.
  if [ -s "$cache/debian-trixie-base.tar" ]; then
    docker import "$cache/debian-trixie-base.tar" debian:trixie-slim >/dev/null || skip "could not import $cache/debian-trixie-base.tar"
    echo "compose: imported debian:trixie-slim from $cache/debian-trixie-base.tar"
  elif timeout 60 docker pull -q debian:trixie-slim >/dev/null 2>&1; then
    echo "compose: pulled debian:trixie-slim"
  else
    command -v debootstrap >/dev/null || { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q debootstrap >/dev/null 2>&1; }
    command -v debootstrap >/dev/null || skip "debian:trixie-slim cannot be pulled and debootstrap is missing"
    mkdir -p "$cache"; rootfs="$cache/rootfs-trixie.$$"
    echo "compose: making debian:trixie-slim with debootstrap (once; kept in $cache)"
    t0=$SECONDS
    timeout "$(left)" debootstrap --variant=minbase trixie "$rootfs" http://deb.debian.org/debian >/dev/null 2>&1 || { rm -rf "$rootfs"; skip "debootstrap of trixie failed or took too long"; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . > "$cache/debian-trixie-base.tar.part" && mv "$cache/debian-trixie-base.tar.part" "$cache/debian-trixie-base.tar"
    rm -rf "$rootfs"
    docker import "$cache/debian-trixie-base.tar" debian:trixie-slim >/dev/null || skip "could not import the debootstrapped base"
    echo "compose: debian:trixie-slim made in $(( SECONDS - t0 )) s"
  fi
fi

# 3. The images. A TLS-inspecting proxy's CA (the host's locally added certificates) is trusted by
# the build stage only, so npm ci reaches the registry as the host does.
extra_ca=""
for f in /usr/local/share/ca-certificates/*.crt; do [ -f "$f" ] && extra_ca+="$(cat "$f")"$'\n'; done
smoke_reserve=300
build_limit=$(( $(left) - smoke_reserve ))
[ "$build_limit" -gt 60 ] || skip "too little of the step's time left to build ($(left) s)"
t0=$SECONDS
for target in runtime postgres redis haproxy; do
  tag=$([ "$target" = runtime ] && echo messaging-service:ci || echo "messaging-$target:ci")
  blog=$(mktemp)
  timeout "$(( build_limit - (SECONDS - t0) ))" docker build -q --network host --target "$target" --build-arg EXTRA_CA_CERTS="$extra_ca" -t "$tag" . >"$blog" 2>&1
  status=$?
  if [ "$status" = 124 ]; then skip "the image build ($target) did not finish within ${build_limit} s (the next run starts from the layers built so far)"; fi
  if [ "$status" != 0 ]; then tail -30 "$blog"; echo "compose: FAILED: docker build --target $target"; exit 1; fi
done
size=$(docker image inspect -f '{{.Size}}' messaging-service:ci)
echo "compose: images built in $(( SECONDS - t0 )) s; messaging-service:ci is $(( size / 1000000 )) MB"

# 4. The image's own test (start, health, stop), then the smoke test.
t0=$SECONDS
jlog=$(mktemp)
IMAGE=messaging-service:ci timeout 180 node --no-node-snapshot --experimental-vm-modules node_modules/jest/bin/jest.js tests/proofs/container-image.test.ts >"$jlog" 2>&1
jstatus=$?
grep -E "container-image:|Tests:" "$jlog"
[ "$jstatus" = 0 ] || { tail -60 "$jlog"; echo "compose: FAILED: tests/proofs/container-image.test.ts"; exit 1; }
echo "compose: tests/proofs/container-image.test.ts passed in $(( SECONDS - t0 )) s"
SMOKE_TIMEOUT_SECONDS=$(( $(left) - 20 )) timeout -k 10 "$(( $(left) - 5 ))" node --import tsx scripts/compose-smoke.ts
