#!/usr/bin/env bash
# The high-availability topology of docs/deploy.md ("High availability") natively, on loopback,
# with Debian's packages: 3 etcd members, 3 PostgreSQL 15 nodes under Patroni (synchronous mode,
# failsafe mode), HAProxy on one port leading to the primary (Patroni's REST check GET /primary), a
# Redis master, a replica and 3 sentinels, and a supervisor that restarts any of them that dies.
# Everything in one folder.
#
#   scripts/ha/cluster.sh up DIR          # starts it; waits for a primary with a synchronous standby,
#                                         # the sentinels and HAProxy; writes DIR/cluster.env first
#   scripts/ha/cluster.sh status DIR      # each node: running or not, and its role (exit 1 if one is not running)
#   scripts/ha/cluster.sh stop DIR NODE   # stops one node (SIGTERM, then SIGKILL after 20 s); the supervisor leaves it stopped
#   scripts/ha/cluster.sh start DIR NODE  # starts it again, with the same ports and secrets
#   scripts/ha/cluster.sh backup DIR full|incr   # a pgBackRest backup from whichever node is primary
#   scripts/ha/cluster.sh down DIR        # SIGKILLs everything it started (also after a partial up)
#
# NODE: etcd1..3, pg1..3 (Patroni and its PostgreSQL), haproxy, redis-master, redis-replica,
# sentinel1..3, supervisor.
#
# Ports: free ones unless set in the environment of `up` (ETCD_CLIENT_PORTS, ETCD_PEER_PORTS,
# PG_PORTS, PATRONI_API_PORTS, SENTINEL_PORTS: three each, space-separated; PG_LB_PORT,
# REDIS_MASTER_PORT, REDIS_REPLICA_PORT). Secrets: HA_PG_SUPERUSER_PASSWORD and
# HA_PG_REPLICATION_PASSWORD, random unless set. DIR/cluster.env (shell and dotenv syntax) keeps
# every port and secret, DATABASE_URL (through HAProxy), REDIS_SENTINELS, REDIS_SENTINEL_MASTER and
# HA_ETCD_ENDPOINTS (the service's settings);
# `start` and the supervisor read it back. HA_SUPERVISE=0 starts no supervisor (the kill test: a
# primary restarted at once would keep its leader key, and no failover would be seen).
# Point-in-time recovery, where pgbackrest is installed (HA_BACKUPS=0: none): the primary archives
# its WAL into DIR/backup (DIR/pgbackrest.conf), `up` takes a full backup, and the supervisor an
# incremental one every HA_BACKUP_INCR_SECONDS (3600) and a full one every HA_BACKUP_FULL_SECONDS
# (86400), logged in DIR/backup.log.
# Needs root (PostgreSQL and Patroni run as the user postgres) and the packages patroni,
# etcd-server, redis-sentinel, haproxy, postgresql-15 (apt-get install; no main cluster needed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
self="$here/$(basename "$0")"
conf="$(cd "$here/../../docker/ha" && pwd)"
usage() { echo "usage: $0 up|down|status|supervise DIR, $0 start|stop DIR NODE, or $0 backup DIR full|incr" >&2; exit 2; }
cmd="${1:-}"; dir="${2:-}"; node_arg="${3:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || usage
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
NAME=messaging
NODES="etcd1 etcd2 etcd3 pg1 pg2 pg3 haproxy redis-master redis-replica sentinel1 sentinel2 sentinel3"

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { [ -f "$dir/pids" ] && awk -v n="$1" '$1 == n { p = $2 } END { if (p) print p }' "$dir/pids" || true; }
# A node's postmaster, which Patroni runs in a session of its own.
postmaster_of() { local f="$dir/$1/data/postmaster.pid"; [ -f "$f" ] && head -1 "$f" || true; }
kill_group() { kill "-$1" -- "-$2" 2>/dev/null || kill "-$1" "$2" 2>/dev/null || true; }

down() {
  [ -f "$dir/pids" ] || return 0
  # The supervisor first, so it restarts nothing; then process groups (each process was started as
  # its own session), then any postmaster Patroni detached into a session of its own.
  local sup; sup="$(pid_of supervisor)"; [ -n "$sup" ] && kill_group KILL "$sup"
  while read -r _ pid; do kill_group KILL "$pid"; done < "$dir/pids"
  for f in "$dir"/pg*/data/postmaster.pid; do [ -f "$f" ] && kill_group KILL "$(head -1 "$f")"; done
  rm -f "$dir/pids"
}

load_env() { [ -f "$dir/cluster.env" ] || { echo "scripts/ha/cluster.sh: no $dir/cluster.env (run up first)" >&2; exit 3; }
  set -a; . "$dir/cluster.env"; set +a
  read -r -a ETCD_CLIENT <<<"$ETCD_CLIENT_PORTS"; read -r -a ETCD_PEER <<<"$ETCD_PEER_PORTS"
  read -r -a PG_PORT <<<"$PG_PORTS"; read -r -a PG_API <<<"$PATRONI_API_PORTS"; read -r -a SENTINEL_PORT <<<"$SENTINEL_PORTS"
  ETCD_HOSTS="127.0.0.1:${ETCD_CLIENT[0]},127.0.0.1:${ETCD_CLIENT[1]},127.0.0.1:${ETCD_CLIENT[2]}"; }

# Starts one node as a session of its own (so it can be stopped with its children), appending to
# DIR/NODE.log, and records its pid in DIR/pids.
launch() {
  local n="$1" i; local -a argv
  case "$n" in
    etcd[123]) i=$(( ${n#etcd} - 1 )); local cluster=""
      for j in 0 1 2; do cluster+="${cluster:+,}e$((j+1))=http://127.0.0.1:${ETCD_PEER[$j]}"; done
      # --initial-cluster-state is ignored once the member has data: a restart rejoins.
      argv=(etcd --name "e$((i+1))" --data-dir "$dir/$n"
        --listen-client-urls "http://127.0.0.1:${ETCD_CLIENT[$i]}" --advertise-client-urls "http://127.0.0.1:${ETCD_CLIENT[$i]}"
        --listen-peer-urls "http://127.0.0.1:${ETCD_PEER[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER[$i]}"
        --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "ha-$NAME"
        --heartbeat-interval 100 --election-timeout 1000 --log-level warn) ;;
    pg[123]) i=$(( ${n#pg} - 1 ))
      mkdir -p "$dir/$n"; chown postgres: "$dir/$n"; chmod 700 "$dir/$n"
      argv=(env PATRONI_NAME="$n"
        PATRONI_RESTAPI_LISTEN="127.0.0.1:${PG_API[$i]}" PATRONI_RESTAPI_CONNECT_ADDRESS="127.0.0.1:${PG_API[$i]}"
        PATRONI_POSTGRESQL_LISTEN="127.0.0.1:${PG_PORT[$i]}" PATRONI_POSTGRESQL_CONNECT_ADDRESS="127.0.0.1:${PG_PORT[$i]}"
        PATRONI_POSTGRESQL_DATA_DIR="$dir/$n/data" PATRONI_POSTGRESQL_PGPASS="$dir/$n/pgpass"
        PATRONI_POSTGRESQL_BIN_DIR="$PG_BIN" PATRONI_ETCD3_HOSTS="$ETCD_HOSTS"
        PATRONI_SUPERUSER_PASSWORD="$PG_SUPERUSER_PASSWORD" PATRONI_REPLICATION_PASSWORD="$PG_REPLICATION_PASSWORD"
        PATRONI_REWIND_PASSWORD="$PG_SUPERUSER_PASSWORD" PATRONI_POSTGRESQL_PARAMETERS_UNIX_SOCKET_DIRECTORIES="$dir/$n"
        # patroni.yml's archive_command pushes WAL with pgBackRest when PGBACKREST_CONFIG is set; its
        # PGBACKREST_PG1_* name this node, whichever is primary.
        $(backups_on && echo PGBACKREST_CONFIG="$dir/pgbackrest.conf" PGBACKREST_PG1_PATH="$dir/$n/data" PGBACKREST_PG1_PORT="${PG_PORT[$i]}" || true)
        HOME="$dir/$n" setpriv --reuid=postgres --regid=postgres --init-groups patroni "$conf/patroni.yml") ;;
    haproxy) argv=(env PG_LB_BIND=127.0.0.1 PG_LB_PORT="$PG_LB_PORT"
        PG1_ADDR="127.0.0.1:${PG_PORT[0]}" PG1_API_HOST=127.0.0.1 PG1_API_PORT="${PG_API[0]}"
        PG2_ADDR="127.0.0.1:${PG_PORT[1]}" PG2_API_HOST=127.0.0.1 PG2_API_PORT="${PG_API[1]}"
        PG3_ADDR="127.0.0.1:${PG_PORT[2]}" PG3_API_HOST=127.0.0.1 PG3_API_PORT="${PG_API[2]}"
        haproxy -db -f "$conf/haproxy-postgres.cfg") ;;
    redis-master) mkdir -p "$dir/$n"
      argv=(redis-server --port "$REDIS_MASTER_PORT" --bind 127.0.0.1 --dir "$dir/$n" --save '' --appendonly no --protected-mode no) ;;
    # Restarted after a failover, either one starts as what it was; the sentinels then make it a
    # replica of the current master (they reconfigure a returning old master).
    redis-replica) mkdir -p "$dir/$n"
      argv=(redis-server --port "$REDIS_REPLICA_PORT" --bind 127.0.0.1 --dir "$dir/$n" --save '' --appendonly no --protected-mode no --replicaof 127.0.0.1 "$REDIS_MASTER_PORT") ;;
    sentinel[123]) i=$(( ${n#sentinel} - 1 )); local f="$dir/$n.conf"
      # A sentinel rewrites its file with what it learnt: written once, kept across restarts.
      [ -f "$f" ] || { echo "port ${SENTINEL_PORT[$i]}"; echo "bind 127.0.0.1"; echo "dir $dir"
        echo "sentinel monitor $NAME 127.0.0.1 $REDIS_MASTER_PORT 2"; grep -v '^#' "$conf/sentinel.conf"; } > "$f"
      argv=(redis-sentinel "$f") ;;
    supervisor) argv=("$self" supervise "$dir") ;;
    *) echo "scripts/ha/cluster.sh: unknown node $n (one of: $NODES supervisor)" >&2; return 2 ;;
  esac
  setsid "${argv[@]}" >>"$dir/$n.log" 2>&1 < /dev/null &
  local pid=$!
  { [ -f "$dir/pids" ] && awk -v n="$n" '$1 != n' "$dir/pids"; echo "$n $pid"; } > "$dir/pids.new" || true
  mv "$dir/pids.new" "$dir/pids"
  rm -f "$dir/stopped/$n"
}

stop_node() {
  local n="$1" pid pm; pid="$(pid_of "$n")"
  mkdir -p "$dir/stopped"; : > "$dir/stopped/$n"   # the supervisor leaves it stopped
  pm=""; case "$n" in pg*) pm="$(postmaster_of "$n")" ;; esac
  if alive "$pid"; then
    kill_group TERM "$pid"
    local t=$((SECONDS + 20)); while alive "$pid" && [ $SECONDS -lt $t ]; do sleep 0.2; done
    alive "$pid" && kill_group KILL "$pid"
  fi
  # Patroni stops its PostgreSQL on SIGTERM; one left behind (Patroni killed) is stopped too.
  if [ -n "$pm" ] && alive "$pm"; then kill -INT "$pm" 2>/dev/null || true
    local t=$((SECONDS + 20)); while alive "$pm" && [ $SECONDS -lt $t ]; do sleep 0.2; done; alive "$pm" && kill -KILL "$pm" 2>/dev/null || true; fi
  echo "$n stopped"
}

backups_on() { [ -f "$dir/pgbackrest.conf" ]; }

# A pgBackRest backup of whichever node is primary now (the stanza is created on first use).
backup() {
  local type="$1" i primary=""
  backups_on || { echo "scripts/ha/cluster.sh: no backups here (pgbackrest missing, or HA_BACKUPS=0 at up)" >&2; return 3; }
  for i in 0 1 2; do curl -fsS -m 2 -o /dev/null "http://127.0.0.1:${PG_API[$i]}/primary" 2>/dev/null && { primary=$i; break; }; done
  [ -n "$primary" ] || { echo "scripts/ha/cluster.sh: no primary to back up" >&2; return 1; }
  local data="$dir/pg$((primary+1))/data"
  # pgBackRest reaches PostgreSQL through its Unix socket: the folder its postmaster.pid names.
  local socket; socket="$(sed -n 5p "$data/postmaster.pid")"
  local -a on=(--config="$dir/pgbackrest.conf" --stanza="$NAME" --pg1-path="$data" --pg1-port="${PG_PORT[$primary]}" --pg1-socket-path="$socket")
  runuser -u postgres -- pgbackrest "${on[@]}" stanza-create || return 1
  runuser -u postgres -- pgbackrest "${on[@]}" --type="$type" backup || return 1
  echo "$(date -u +%FT%TZ) $type backup of pg$((primary+1)) done"
}

# Restarts every node whose process is gone, unless `stop` stopped it; each at most every 5 s.
# Takes the scheduled backups too (in the background, so restarts never wait for one).
supervise() {
  declare -A last=()
  local incr_every="${HA_BACKUP_INCR_SECONDS:-3600}" full_every="${HA_BACKUP_FULL_SECONDS:-86400}" last_incr=$SECONDS last_full=$SECONDS
  echo "$(date -u +%FT%TZ) supervisor: watching $NODES"
  while :; do
    for n in $NODES; do
      [ -f "$dir/stopped/$n" ] && continue
      pid="$(pid_of "$n")"; [ -n "$pid" ] || continue
      alive "$pid" && continue
      [ $(( SECONDS - ${last[$n]:-(-10)} )) -ge 5 ] || continue
      last[$n]=$SECONDS
      echo "$(date -u +%FT%TZ) supervisor: $n (pid $pid) is gone: restarting it"
      launch "$n" || echo "$(date -u +%FT%TZ) supervisor: could not restart $n"
    done
    if backups_on; then
      if [ $(( SECONDS - last_full )) -ge "$full_every" ]; then last_full=$SECONDS; last_incr=$SECONDS; "$self" backup "$dir" full >> "$dir/backup.log" 2>&1 &
      elif [ $(( SECONDS - last_incr )) -ge "$incr_every" ]; then last_incr=$SECONDS; "$self" backup "$dir" incr >> "$dir/backup.log" 2>&1 &
      fi
    fi
    sleep 1
  done
}

status() {
  local bad=0 n pid state detail
  printf '%-14s %-8s %-8s %s\n' NODE PID STATE DETAIL
  for n in $NODES supervisor; do
    pid="$(pid_of "$n")"; detail=""
    if alive "$pid"; then state=running
    elif [ -f "$dir/stopped/$n" ]; then state=stopped; bad=1
    else state=dead; bad=1; fi
    if [ "$state" = running ]; then
      case "$n" in
        etcd[123]) detail="$(curl -fsS -m 2 "http://127.0.0.1:${ETCD_CLIENT[$(( ${n#etcd} - 1 ))]}/health" 2>/dev/null || echo 'health: no answer')" ;;
        pg[123]) detail="$(curl -fsS -m 2 "http://127.0.0.1:${PG_API[$(( ${n#pg} - 1 ))]}/cluster" 2>/dev/null | node -e '
let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { try {
  const m = JSON.parse(s).members.find((x) => x.name === process.argv[1]);
  console.log(m ? `${m.role} ${m.state}` + (m.lag !== undefined && m.lag !== "" ? ` lag ${m.lag}` : "") : "not a member yet");
} catch { console.log("REST API: no answer"); } });' "$n")" ;;
        redis-master|redis-replica) local port="$REDIS_MASTER_PORT"; [ "$n" = redis-replica ] && port="$REDIS_REPLICA_PORT"
          detail="$(redis-cli -p "$port" info replication 2>/dev/null | tr -d '\r' | grep -E '^(role|connected_slaves|master_link_status):' | tr '\n' ' ')" ;;
        sentinel[123]) detail="master $(redis-cli -p "${SENTINEL_PORT[$(( ${n#sentinel} - 1 ))]}" sentinel get-master-addr-by-name "$NAME" 2>/dev/null | tr '\n' ':' | sed 's/:$//')" ;;
      esac
    fi
    printf '%-14s %-8s %-8s %s\n' "$n" "${pid:--}" "$state" "$detail"
  done
  return $bad
}

case "$cmd" in
  down) down; exit 0 ;;
  status) load_env; status; exit $? ;;
  supervise) load_env; supervise ;;
  backup) case "$node_arg" in full|incr) ;; *) usage ;; esac; load_env; backup "$node_arg"; exit $? ;;
  start|stop) [ -n "$node_arg" ] || usage; load_env
    if [ "$cmd" = stop ]; then stop_node "$node_arg"
    else alive "$(pid_of "$node_arg")" && { echo "$node_arg is running"; exit 0; }; launch "$node_arg"; echo "$node_arg started"; fi
    exit 0 ;;
  up) ;;
  *) usage ;;
esac

[ "$(id -u)" = 0 ] || { echo "scripts/ha/cluster.sh: needs root (PostgreSQL runs as the user postgres)" >&2; exit 3; }
for b in etcd patroni haproxy redis-server redis-sentinel "$PG_BIN/postgres"; do
  command -v "$b" >/dev/null || { echo "scripts/ha/cluster.sh: missing $b (apt-get install patroni etcd-server redis-sentinel haproxy postgresql)" >&2; exit 3; }
done

mkdir -p "$dir"; chmod 755 "$dir"
: > "$dir/pids"; rm -rf "$dir/stopped"
trap 'status=$?; if [ $status != 0 ]; then echo "scripts/ha/cluster.sh: up failed; logs in $dir" >&2; down; fi' EXIT

# Free ports for those not set, all chosen at once (each held until all are, so none repeats), and
# none of those that are set (a caller's free port is not held while these are chosen). They are
# drawn from 10000-19999, below the kernel's ephemeral range: a node stopped and started again takes
# its port back, and in between an outgoing connection could have been given an ephemeral one.
read -r -a P <<<"$(TAKEN="${ETCD_CLIENT_PORTS:-} ${ETCD_PEER_PORTS:-} ${PG_PORTS:-} ${PATRONI_API_PORTS:-} ${PG_LB_PORT:-} ${REDIS_MASTER_PORT:-} ${REDIS_REPLICA_PORT:-} ${SENTINEL_PORTS:-}" node -e '
const net = require("net"); const ss = []; const taken = new Set(process.env.TAKEN.split(/\s+/).filter(Boolean).map(Number));
(async () => { while (ss.filter((s) => !taken.has(s.address().port)).length < 18) { const s = net.createServer(); const port = 10000 + Math.floor(Math.random() * 10000);
    if (taken.has(port) || ss.some((x) => x.address().port === port)) continue;
    if (await new Promise((r) => { s.once("error", () => r(false)); s.listen(port, "0.0.0.0", () => r(true)); })) ss.push(s); }
  console.log(ss.map((s) => s.address().port).filter((p) => !taken.has(p)).slice(0, 18).join(" ")); ss.forEach((s) => s.close()); })();')"
secret() { node -e 'console.log(require("crypto").randomBytes(16).toString("hex"))'; }
cat > "$dir/cluster.env" <<ENV
ETCD_CLIENT_PORTS="${ETCD_CLIENT_PORTS:-${P[0]} ${P[1]} ${P[2]}}"
ETCD_PEER_PORTS="${ETCD_PEER_PORTS:-${P[3]} ${P[4]} ${P[5]}}"
PG_PORTS="${PG_PORTS:-${P[6]} ${P[7]} ${P[8]}}"
PATRONI_API_PORTS="${PATRONI_API_PORTS:-${P[9]} ${P[10]} ${P[11]}}"
PG_LB_PORT=${PG_LB_PORT:-${P[12]}}
REDIS_MASTER_PORT=${REDIS_MASTER_PORT:-${P[13]}}
REDIS_REPLICA_PORT=${REDIS_REPLICA_PORT:-${P[14]}}
SENTINEL_PORTS="${SENTINEL_PORTS:-${P[15]} ${P[16]} ${P[17]}}"
PG_SUPERUSER_PASSWORD=${HA_PG_SUPERUSER_PASSWORD:-$(secret)}
PG_REPLICATION_PASSWORD=${HA_PG_REPLICATION_PASSWORD:-$(secret)}
REDIS_SENTINEL_MASTER=$NAME
ENV
chmod 600 "$dir/cluster.env"
load_env
{ echo "DATABASE_URL=postgres://postgres:${PG_SUPERUSER_PASSWORD}@127.0.0.1:${PG_LB_PORT}/postgres"
  echo "REDIS_SENTINELS=127.0.0.1:${SENTINEL_PORT[0]},127.0.0.1:${SENTINEL_PORT[1]},127.0.0.1:${SENTINEL_PORT[2]}"
  echo "HA_ETCD_ENDPOINTS=http://127.0.0.1:${ETCD_CLIENT[0]},http://127.0.0.1:${ETCD_CLIENT[1]},http://127.0.0.1:${ETCD_CLIENT[2]}"; } >> "$dir/cluster.env"
load_env

# pgBackRest's repository and settings (the node to read from is given per command).
if [ "${HA_BACKUPS:-1}" != 0 ] && command -v pgbackrest >/dev/null; then
  mkdir -p "$dir/backup" "$dir/backup/log"; chown -R postgres: "$dir/backup"; chmod 700 "$dir/backup"
  cat > "$dir/pgbackrest.conf" <<CONF
[global]
repo1-path=$dir/backup
repo1-retention-full=2
log-path=$dir/backup/log
lock-path=$dir/backup/log
log-level-console=warn
start-fast=y
CONF
  chmod 644 "$dir/pgbackrest.conf"
fi

wait_for() { local what="$1" secs="$2"; shift 2; local t=$((SECONDS + secs)); until "$@" >/dev/null 2>&1; do
  [ $SECONDS -lt $t ] || { echo "scripts/ha/cluster.sh: $what not ready within ${secs} s" >&2; return 1; }; sleep 0.3; done; }

# --- etcd: three members, one cluster.
for n in etcd1 etcd2 etcd3; do launch "$n"; done
etcd_healthy() { for i in 0 1 2; do curl -fsS "http://127.0.0.1:${ETCD_CLIENT[$i]}/health" | grep -q '"health":"true"' || return 1; done; }
wait_for "etcd" 30 etcd_healthy

# --- PostgreSQL under Patroni: three nodes; the first to take the leader key bootstraps, the others
# clone it (pg_basebackup) and stream from it.
launch pg1
# Let the first node take the leader key and bootstrap before the others look for one.
wait_for "the first PostgreSQL node" 60 curl -fsS "http://127.0.0.1:${PG_API[0]}/primary"
launch pg2; launch pg3
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
launch haproxy
# HAProxy counts every server up until its first check: wait until only the primary answers.
lb_primary() { for _ in 1 2 3 4; do "$PG_BIN/psql" "$DATABASE_URL" -Atc 'SELECT pg_is_in_recovery()' | grep -qx f || return 1; done; }
wait_for "PostgreSQL's primary through HAProxy" 30 lb_primary

# --- Redis: a master, a replica, three sentinels (quorum 2).
launch redis-master; launch redis-replica
wait_for "the Redis replica" 30 sh -c "redis-cli -p $REDIS_REPLICA_PORT info replication | grep -q 'master_link_status:up'"
for n in sentinel1 sentinel2 sentinel3; do launch "$n"; done
sentinels_ready() { for p in "${SENTINEL_PORT[@]}"; do
  redis-cli -p "$p" sentinel master "$NAME" 2>/dev/null | grep -A1 -x num-other-sentinels | tail -1 | grep -qx 2 || return 1
  redis-cli -p "$p" sentinel master "$NAME" 2>/dev/null | grep -A1 -x num-slaves | tail -1 | grep -qx 1 || return 1; done; }
# What each sentinel saw, and its log's tail, when they did not agree in time (the dir is removed after).
sentinels_report() { for i in 0 1 2; do local p="${SENTINEL_PORT[$i]}"
  echo "sentinel$((i + 1)) (port $p): $(redis-cli -p "$p" sentinel master "$NAME" 2>&1 | paste -sd ' ' | grep -oE '(ip|port|flags|num-slaves|num-other-sentinels|quorum) [^ ]+' | paste -sd ' ')"
  tail -8 "$dir/sentinel$((i + 1)).log" | sed 's/^/    /'; done >&2; }
wait_for "the sentinels (each seeing the 2 others and the replica)" 60 sentinels_ready || { sentinels_report; exit 1; }

# The first full backup, so that the archive has a base to recover from.
if backups_on; then backup full >> "$dir/backup.log" 2>&1 || { echo "scripts/ha/cluster.sh: the first backup failed (see $dir/backup.log)" >&2; exit 1; }; fi

[ "${HA_SUPERVISE:-1}" = 0 ] || launch supervisor
trap - EXIT
echo "HA topology up in $dir ($SECONDS s): PostgreSQL primary at 127.0.0.1:$PG_LB_PORT (HAProxy), sentinels ${SENTINEL_PORT[*]}$([ "${HA_SUPERVISE:-1}" = 0 ] && echo ', no supervisor' || echo ', supervised')"
