#!/usr/bin/env bash
# embedded_postgres.sh — a project-local throwaway PostgreSQL 15 for the load tools.
#
#   load/embedded_postgres.sh start DIR   # initdb DIR if new, start; prints the connection string
#   load/embedded_postgres.sh stop DIR    # fast shutdown; DIR is kept
#   load/embedded_postgres.sh restart DIR # fast shutdown, then start (the pg_restart scenario)
#
# The server listens only on a Unix socket in DIR (no TCP port to collide with), with the
# durability settings off: it holds benchmark data, nothing else. BULKHEAD_PG_DURABLE=1 starts it
# with them on (fsync, synchronous_commit, full_page_writes) and max_wal_size 2GB, as a
# production server runs: the benchmarks that measure the database's own work use it (a
# cluster keeps the settings it was started with; give such a run a DIR of its own). PostgreSQL refuses to run as
# root, so under root it runs as the `postgres` system user (./setup.sh installs it).
set -euo pipefail

bindir=${BULKHEAD_PG_BINDIR:-$(pg_config --bindir)}
action=${1:-}
dir=${2:-}
[ -n "$action" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|restart DIR" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

as_server() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Under root, the `postgres` user must reach DIR. A clone in a private folder (mktemp -d is
# mode 0700) is out of its reach, so the cluster then lives in a postgres-owned folder under
# /tmp named after DIR; start and stop map DIR to it the same way.
if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$dir"; then
  dir=/tmp/bulkhead-pg-$(printf '%s' "$dir" | md5sum | cut -c1-16)
  mkdir -p "$dir"
  chown postgres: "$dir"
fi

start() {
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    as_server "$bindir/initdb" -D "$dir/data" -U bulkhead --auth=trust -E UTF8 --no-locale \
      --no-sync --no-instructions >"$dir/initdb.log"
  fi
  if ! as_server "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    local durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    if [ "${BULKHEAD_PG_DURABLE:-0}" = 1 ]; then
      durability="-c fsync=on -c synchronous_commit=on -c full_page_writes=on -c max_wal_size=2GB"
    fi
    as_server "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-k $dir -c listen_addresses='' $durability \
          -c max_connections=200 -c shared_buffers=256MB \
          -c shared_preload_libraries=pg_stat_statements" \
      start >/dev/null
  fi
}
stop() {
  as_server "$bindir/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
}

case "$action" in
  start) start; echo "host=$dir user=bulkhead dbname=postgres" ;;
  stop) stop ;;
  restart) stop; start ;;
  *) echo "usage: $0 start|stop|restart DIR" >&2; exit 2 ;;
esac
