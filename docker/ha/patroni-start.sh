#!/bin/sh
# The Patroni container's entrypoint (compose.yaml's profile `ha`): Patroni, and beside it the
# backup schedule of scripts/ha/cluster.sh's supervisor, taken only while this node is primary
# (asked of its own REST API): the stanza created on first use, a full backup when the repository
# has none, then an incremental one every HA_BACKUP_INCR_SECONDS (3600) and a full one every
# HA_BACKUP_FULL_SECONDS (86400), by the age of the repository's newest backups (so a failover or
# a restart keeps the schedule). Logged on the container's output.
set -u
INCR="${HA_BACKUP_INCR_SECONDS:-3600}"
FULL="${HA_BACKUP_FULL_SECONDS:-86400}"
API="http://${PATRONI_RESTAPI_CONNECT_ADDRESS}"

primary() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/primary", timeout=2)' "$API" 2>/dev/null; }
# Seconds since the newest full backup and since the newest backup of any type ("none none": none yet).
ages() {
  pgbackrest --stanza=messaging --output=json info 2>/dev/null | python3 -c '
import json, sys, time
b = (json.load(sys.stdin) or [{}])[0].get("backup", [])
age = lambda xs: str(int(time.time()) - max(x["timestamp"]["stop"] for x in xs)) if xs else "none"
print(age([x for x in b if x["type"] == "full"]), age(b))'
}
backup() {
  pgbackrest --stanza=messaging stanza-create >/dev/null && pgbackrest --stanza=messaging --type="$1" backup \
    && echo "$(date -u +%FT%TZ) pgbackrest: $1 backup of ${PATRONI_NAME} done" \
    || echo "$(date -u +%FT%TZ) pgbackrest: $1 backup of ${PATRONI_NAME} failed" >&2
}
schedule() {
  while sleep 15; do
    [ "${HA_BACKUPS:-1}" != 0 ] && primary || continue
    set -- $(ages || echo none none)
    if [ "$1" = none ] || [ "$1" -ge "$FULL" ]; then backup full
    elif [ "$2" -ge "$INCR" ]; then backup incr
    fi
  done
}

schedule &
exec patroni /etc/patroni/patroni.yml
