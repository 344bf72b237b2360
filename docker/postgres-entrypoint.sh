#!/bin/sh
# PostgreSQL 17 (Debian's package) for compose.yaml: creates the cluster on first start with the
# superuser password from POSTGRES_PASSWORD (password logins over TCP, as the service's per-project
# roles need), then runs the server in the foreground. Settings: PGPORT, LISTEN_ADDRESSES, POSTGRES_DB.
set -eu
bin=/usr/lib/postgresql/17/bin
: "${PGDATA:=/var/lib/postgresql/data}" "${PGPORT:=5432}" "${LISTEN_ADDRESSES:=*}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then echo "postgres: POSTGRES_PASSWORD is not set" >&2; exit 78; fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp); printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  "$bin/initdb" -D "$PGDATA" -U postgres --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "host all all ::/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  if [ -n "${POSTGRES_DB:-}" ] && [ "$POSTGRES_DB" != postgres ]; then
    "$bin/postgres" --single -D "$PGDATA" postgres <<SQL >/dev/null
CREATE DATABASE "$POSTGRES_DB";
SQL
  fi
  echo "postgres: created the cluster in $PGDATA"
fi
exec "$bin/postgres" -D "$PGDATA" -p "$PGPORT" -c listen_addresses="$LISTEN_ADDRESSES" -c unix_socket_directories=/tmp -c max_connections="${POSTGRES_MAX_CONNECTIONS:-200}"
