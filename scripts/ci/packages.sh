#!/usr/bin/env bash
# CI's Debian packages, all in one apt run started beside `npm ci` (.ci/run), then the container
# step's base image made ahead (debootstrap into $CONTAINER_CACHE_DIR, which scripts/ci/compose.sh
# imports). One apt run because apt holds one lock: steps that each ran apt-get waited in turn.
#   chromium                      the page tests (playwright-core drives it)
#   haproxy                       tests/http/balancer.test.ts
#   postgresql pgbackrest         the restore drills (backup-restore, pitr)
#   patroni etcd-server redis-sentinel   the HA topology (failover, ha-cluster)
#   docker.io docker-compose debootstrap the container step
# Only as root with apt-get; where a package cannot be had, the step that needs it says so and skips.
# `--base` after the packages also makes the base image's tarball when it is missing.
set -uo pipefail
cache=${CONTAINER_CACHE_DIR:-/var/cache/messaging-ci}

[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || { echo "packages: not root or no apt-get: nothing installed"; exit 0; }
export DEBIAN_FRONTEND=noninteractive
t0=$SECONDS

want=()
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || want+=(chromium)
command -v haproxy >/dev/null || want+=(haproxy)
{ ls /usr/lib/postgresql/*/bin/initdb && ls /usr/lib/postgresql/*/bin/pg_dump; } >/dev/null 2>&1 || want+=(postgresql)
command -v pgbackrest >/dev/null || want+=(pgbackrest)
command -v patroni >/dev/null || want+=(patroni)
command -v etcd >/dev/null || want+=(etcd-server)
command -v redis-sentinel >/dev/null || want+=(redis-sentinel)
{ command -v docker && command -v dockerd; } >/dev/null || want+=(docker.io)
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || want+=(docker-compose)
command -v debootstrap >/dev/null || want+=(debootstrap)

if [ "${#want[@]}" -gt 0 ]; then
  # PostgreSQL's package would create and start a cluster of its own, and the HA packages start their
  # services: the tests start their own, on their own ports.
  mkdir -p /etc/postgresql-common
  grep -qs '^create_main_cluster' /etc/postgresql-common/createcluster.conf || echo 'create_main_cluster = false' >> /etc/postgresql-common/createcluster.conf
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d; policy=1; fi
  install() { timeout 600 apt-get install -y -q "$@" >/dev/null 2>&1; }
  install "${want[@]}" || { timeout 120 apt-get update -q >/dev/null 2>&1; install "${want[@]}"; } || {
    # One missing package must not cost the others: each on its own.
    for p in "${want[@]}"; do install "$p" || echo "packages: could not install $p"; done
  }
  [ -n "$policy" ] && rm -f /usr/sbin/policy-rc.d
  echo "packages: installed ${want[*]} in $(( SECONDS - t0 )) s"
else
  echo "packages: all present"
fi

if [ "${1:-}" = --base ] && [ ! -s "$cache/debian-trixie-base.tar" ] && command -v debootstrap >/dev/null; then
  t0=$SECONDS
  mkdir -p "$cache"; rootfs="$cache/rootfs-trixie.$$"
  if timeout 400 debootstrap --variant=minbase trixie "$rootfs" http://deb.debian.org/debian >/dev/null 2>&1; then
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . > "$cache/debian-trixie-base.tar.part" && mv "$cache/debian-trixie-base.tar.part" "$cache/debian-trixie-base.tar"
    echo "packages: the container base (debian trixie, debootstrap) made in $(( SECONDS - t0 )) s"
  else
    echo "packages: debootstrap of trixie failed (the container step tries again)"
  fi
  rm -rf "$rootfs"
fi
exit 0
