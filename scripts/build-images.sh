#!/usr/bin/env bash
# Builds the images compose.yaml runs, and nothing else (docs/deploy.md "The image"): the Dockerfile's
# targets runtime (the service), postgres, redis and haproxy, tagged as compose.yaml names them.
#   scripts/build-images.sh [--ca FILE]... [--tag TAG] [--only TARGET] [--no-cache] [--base IMAGE]
# - The build's RUN steps use the host's network (--network host): no Docker bridge is needed, and
#   apt and npm reach their registries as the host does (its proxy settings included: HTTP_PROXY,
#   HTTPS_PROXY and NO_PROXY are passed on as build arguments when set).
# - A TLS-inspecting proxy: its CA certificates (PEM) are trusted by the build stage. Given with
#   --ca FILE (repeatable), else from EXTRA_CA_CERTS (PEM text), else the host's locally added ones
#   (/usr/local/share/ca-certificates/*.crt).
# - Prints each target's build time and the total; exits non-zero naming the target that failed.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=latest
only=""
ca_files=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ca) ca_files+=("$2"); shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --no-cache) extra+=(--no-cache); shift ;;
    --base) extra+=(--build-arg "BASE=$2"); shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-images: unknown argument $1 (--help)" >&2; exit 64 ;;
  esac
done

command -v docker >/dev/null || { echo "build-images: no docker CLI" >&2; exit 69; }
docker info >/dev/null 2>&1 || { echo "build-images: the Docker daemon does not answer (docker info)" >&2; exit 69; }

ca=""
if [ "${#ca_files[@]}" -gt 0 ]; then
  for f in "${ca_files[@]}"; do [ -r "$f" ] || { echo "build-images: cannot read $f" >&2; exit 66; }; ca+="$(cat "$f")"$'\n'; done
elif [ -n "${EXTRA_CA_CERTS:-}" ]; then
  ca="$EXTRA_CA_CERTS"
else
  for f in /usr/local/share/ca-certificates/*.crt; do [ -f "$f" ] && ca+="$(cat "$f")"$'\n'; done
fi
[ -n "$ca" ] && echo "build-images: the build trusts $(grep -c 'BEGIN CERTIFICATE' <<<"$ca") extra CA certificate(s)"
for v in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
  [ -n "${!v:-}" ] && extra+=(--build-arg "$v=${!v}")
done

declare -A names=([runtime]="messaging-service:$tag" [postgres]="messaging-postgres:$([ "$tag" = latest ] && echo 17 || echo "$tag")" [redis]="messaging-redis:$tag" [haproxy]="messaging-haproxy:$tag")
total=$SECONDS
for target in runtime postgres redis haproxy; do
  [ -n "$only" ] && [ "$only" != "$target" ] && continue
  t0=$SECONDS
  echo "build-images: $target → ${names[$target]}"
  if ! docker build --network host --target "$target" --build-arg EXTRA_CA_CERTS="$ca" ${extra[@]+"${extra[@]}"} -t "${names[$target]}" .; then
    echo "build-images: FAILED: target $target" >&2
    exit 1
  fi
  echo "build-images: $target built in $(( SECONDS - t0 )) s"
done
size=$(docker image inspect -f '{{.Size}}' "${names[runtime]}" 2>/dev/null || echo 0)
echo "build-images: done in $(( SECONDS - total )) s$([ "$size" != 0 ] && echo "; ${names[runtime]} is $(( size / 1000000 )) MB")"
