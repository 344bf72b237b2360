#!/usr/bin/env bash
# The high-availability topology of docs/deploy.md ("High availability") natively, on loopback,
# with Debian's packages: 3 etcd members, 3 PostgreSQL 15 nodes under Patroni (synchronous mode),
# HAProxy on one port leading to the primary (Patroni's REST check GET /primary), a Redis master, a
# replica and 3 sentinels. Every process on a free 127.0.0.1 port, everything in one folder.
#
#   scripts/ha/cluster.sh up DIR     # starts it; waits for a primary with a synchronous standby,
#                                    # the sentinels and HAProxy; writes DIR/cluster.env
#   scripts/ha/cluster.sh down DIR   # SIGKILLs everything it started (also after a partial up)
#
# DIR/cluster.env (shell and dotenv syntax) holds DATABASE_URL (through HAProxy), REDIS_SENTINELS,
# REDIS_SENTINEL_MASTER and each process's ports; DIR/pids names every process started.
# Needs root (PostgreSQL and Patroni run as the user postgres) and the packages patroni,
# etcd-server, redis-sentinel, haproxy, postgresql-15 (apt-get install; no main cluster needed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
conf="$(cd "$here/../../docker/ha" && pwd)"
cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 up|down DIR" >&2; exit 2; }
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
NAME=messaging

down() {
  [ -f "$dir/pids" ] || return 0
  # Process groups first (each process was started as its own session), then any postmaster that
  # Patroni detached into a session of its own.
  while read -r _ pid; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done < "$dir/pids"
  for f in "$dir"/pg*/data/postmaster.pid; do
    [ -f "$f" ] && { pm=$(head -1 "$f"); kill -KILL -- "-$pm" 2>/dev/null || kill -KILL "$pm" 2>/dev/null || true; }
  done
  rm -f "$dir/pids"
}

if [ "$cmd" = down ]; then down; exit 0; fi
[ "$cmd" = up ] || { echo "usage: $0 up|down DIR" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "scripts/ha/cluster.sh: needs root (PostgreSQL runs as the user postgres)" >&2; exit 3; }
for b in etcd patroni haproxy redis-server redis-sentinel "$PG_BIN/postgres"; do
  command -v "$b" >/dev/null || { echo "scripts/ha/cluster.sh: missing $b (apt-get install patroni etcd-server redis-sentinel haproxy postgresql)" >&2; exit 3; }
done

mkdir -p "$dir"; chmod 755 "$dir"
: > "$dir/pids"
trap 'status=$?; if [ $status != 0 ]; then echo "scripts/ha/cluster.sh: up failed; logs in $dir" >&2; down; fi' EXIT

# 18 free ports at once (each held until all are chosen, so none repeats).
read -r -a P <<<"$(node -e '
const net = require("net"); const ss = [];
(async () => { for (let i = 0; i < 18; i++) { const s = net.createServer(); await new Promise((r) => s.listen(0, "127.0.0.1", r)); ss.push(s); }
  console.log(ss.map((s) => s.address().port).join(" ")); ss.forEach((s) => s.close()); })();')"
ETCD_CLIENT=("${P[0]}" "${P[1]}" "${P[2]}"); ETCD_PEER=("${P[3]}" "${P[4]}" "${P[5]}")
PG_PORT=("${P[6]}" "${P[7]}" "${P[8]}"); PG_API=("${P[9]}" "${P[10]}" "${P[11]}")
PG_LB_PORT="${P[12]}"; REDIS_MASTER_PORT="${P[13]}"; REDIS_REPLICA_PORT="${P[14]}"
SENTINEL_PORT=("${P[15]}" "${P[16]}" "${P[17]}")
SUPER_PW="$(node -e 'console.log(require("crypto").randomBytes(12).toString("hex"))')"
REPL_PW="$(node -e 'console.log(require("crypto").randomBytes(12).toString("hex"))')"

# Starts "$@" as a session of its own (so `down` can kill its group), logging to $dir/$name.log.
start() { local name="$1"; shift; setsid "$@" >"$dir/$name.log" 2>&1 < /dev/null & echo "$name $!" >> "$dir/pids"; }

# --- etcd: three members, one cluster.
cluster=""; for i in 0 1 2; do cluster+="${cluster:+,}e$((i+1))=http://127.0.0.1:${ETCD_PEER[$i]}"; done
for i in 0 1 2; do
  start "etcd$((i+1))" etcd --name "e$((i+1))" --data-dir "$dir/etcd$((i+1))" \
    --listen-client-urls "http://127.0.0.1:${ETCD_CLIENT[$i]}" --advertise-client-urls "http://127.0.0.1:${ETCD_CLIENT[$i]}" \
    --listen-peer-urls "http://127.0.0.1:${ETCD_PEER[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER[$i]}" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "ha-$$" \
    --heartbeat-interval 100 --election-timeout 1000 --log-level warn
done
ETCD_HOSTS="127.0.0.1:${ETCD_CLIENT[0]},127.0.0.1:${ETCD_CLIENT[1]},127.0.0.1:${ETCD_CLIENT[2]}"
wait_for() { local what="$1" secs="$2"; shift 2; local t=$((SECONDS + secs)); until "$@" >/dev/null 2>&1; do
  [ $SECONDS -lt $t ] || { echo "scripts/ha/cluster.sh: $what not ready within ${secs} s" >&2; return 1; }; sleep 0.3; done; }
etcd_healthy() { for i in 0 1 2; do curl -fsS "http://127.0.0.1:${ETCD_CLIENT[$i]}/health" | grep -q '"health":"true"' || return 1; done; }
wait_for "etcd" 30 etcd_healthy

# --- PostgreSQL under Patroni: three nodes; the first to take the leader key bootstraps, the others
# clone it (pg_basebackup) and stream from it.
for i in 0 1 2; do
  n=$((i+1)); mkdir -p "$dir/pg$n"; chown postgres: "$dir/pg$n"; chmod 700 "$dir/pg$n"
  start "patroni$n" env \
    PATRONI_NAME="pg$n" \
    PATRONI_RESTAPI_LISTEN="127.0.0.1:${PG_API[$i]}" PATRONI_RESTAPI_CONNECT_ADDRESS="127.0.0.1:${PG_API[$i]}" \
    PATRONI_POSTGRESQL_LISTEN="127.0.0.1:${PG_PORT[$i]}" PATRONI_POSTGRESQL_CONNECT_ADDRESS="127.0.0.1:${PG_PORT[$i]}" \
    PATRONI_POSTGRESQL_DATA_DIR="$dir/pg$n/data" PATRONI_POSTGRESQL_PGPASS="$dir/pg$n/pgpass" \
    PATRONI_POSTGRESQL_BIN_DIR="$PG_BIN" \
    PATRONI_ETCD3_HOSTS="$ETCD_HOSTS" \
    PATRONI_SUPERUSER_PASSWORD="$SUPER_PW" PATRONI_REPLICATION_PASSWORD="$REPL_PW" PATRONI_REWIND_PASSWORD="$SUPER_PW" \
    PATRONI_POSTGRESQL_PARAMETERS_UNIX_SOCKET_DIRECTORIES="$dir/pg$n" \
    HOME="$dir/pg$n" \
    setpriv --reuid=postgres --regid=postgres --init-groups patroni "$conf/patroni.yml"
  # Let the first node take the leader key and bootstrap before the others look for one.
  [ $i = 0 ] && wait_for "the first PostgreSQL node" 60 curl -fsS "http://127.0.0.1:${PG_API[0]}/primary"
done
# A primary with a synchronous standby, and the third node streaming.
sync_ready() {
  curl -fsS "http://127.0.0.1:${PG_API[0]}/cluster" | node -e '
let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
  const m = JSON.parse(s).members; const up = (x) => x.state === "running" || x.state === "streaming";
  const ok = m.some((x) => x.role === "leader" && x.state === "running") && m.some((x) => x.role === "sync_standby" && up(x)) && m.filter(up).length === 3;
  process.exit(ok ? 0 : 1); });'
}
wait_for "a primary with a synchronous standby" 120 sync_ready

# --- HAProxy: the primary's port.
start haproxy env PG_LB_BIND=127.0.0.1 PG_LB_PORT="$PG_LB_PORT" \
  PG1_ADDR="127.0.0.1:${PG_PORT[0]}" PG1_API_HOST=127.0.0.1 PG1_API_PORT="${PG_API[0]}" \
  PG2_ADDR="127.0.0.1:${PG_PORT[1]}" PG2_API_HOST=127.0.0.1 PG2_API_PORT="${PG_API[1]}" \
  PG3_ADDR="127.0.0.1:${PG_PORT[2]}" PG3_API_HOST=127.0.0.1 PG3_API_PORT="${PG_API[2]}" \
  haproxy -db -f "$conf/haproxy-postgres.cfg"
DATABASE_URL="postgres://postgres:${SUPER_PW}@127.0.0.1:${PG_LB_PORT}/postgres"
# HAProxy counts every server up until its first check: wait until only the primary answers.
lb_primary() { for _ in 1 2 3 4; do "$PG_BIN/psql" "$DATABASE_URL" -Atc 'SELECT pg_is_in_recovery()' | grep -qx f || return 1; done; }
wait_for "PostgreSQL's primary through HAProxy" 30 lb_primary

# --- Redis: a master, a replica, three sentinels (quorum 2).
for r in master replica; do mkdir -p "$dir/redis-$r"; done
start redis-master redis-server --port "$REDIS_MASTER_PORT" --bind 127.0.0.1 --dir "$dir/redis-master" --save '' --appendonly no --protected-mode no
start redis-replica redis-server --port "$REDIS_REPLICA_PORT" --bind 127.0.0.1 --dir "$dir/redis-replica" --save '' --appendonly no --protected-mode no --replicaof 127.0.0.1 "$REDIS_MASTER_PORT"
wait_for "the Redis replica" 30 sh -c "redis-cli -p $REDIS_REPLICA_PORT info replication | grep -q 'master_link_status:up'"
for i in 0 1 2; do
  f="$dir/sentinel$((i+1)).conf"
  { echo "port ${SENTINEL_PORT[$i]}"; echo "bind 127.0.0.1"; echo "dir $dir"
    echo "sentinel monitor $NAME 127.0.0.1 $REDIS_MASTER_PORT 2"; grep -v '^#' "$conf/sentinel.conf"; } > "$f"
  start "sentinel$((i+1))" redis-sentinel "$f"
done
sentinels_ready() { for p in "${SENTINEL_PORT[@]}"; do
  redis-cli -p "$p" sentinel master "$NAME" 2>/dev/null | grep -A1 -x num-other-sentinels | tail -1 | grep -qx 2 || return 1
  redis-cli -p "$p" sentinel master "$NAME" 2>/dev/null | grep -A1 -x num-slaves | tail -1 | grep -qx 1 || return 1; done; }
wait_for "the sentinels (each seeing the 2 others and the replica)" 60 sentinels_ready

cat > "$dir/cluster.env" <<ENV
DATABASE_URL=$DATABASE_URL
PG_SUPERUSER_PASSWORD=$SUPER_PW
PG_LB_PORT=$PG_LB_PORT
PG_PORTS="${PG_PORT[*]}"
PATRONI_API_PORTS="${PG_API[*]}"
ETCD_CLIENT_PORTS="${ETCD_CLIENT[*]}"
REDIS_SENTINELS=127.0.0.1:${SENTINEL_PORT[0]},127.0.0.1:${SENTINEL_PORT[1]},127.0.0.1:${SENTINEL_PORT[2]}
REDIS_SENTINEL_MASTER=$NAME
REDIS_MASTER_PORT=$REDIS_MASTER_PORT
REDIS_REPLICA_PORT=$REDIS_REPLICA_PORT
ENV
trap - EXIT
echo "HA topology up in $dir ($SECONDS s): PostgreSQL primary at 127.0.0.1:$PG_LB_PORT (HAProxy), sentinels ${SENTINEL_PORT[*]}"
