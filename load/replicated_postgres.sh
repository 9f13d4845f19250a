#!/usr/bin/env bash
# replicated_postgres.sh — a project-local PostgreSQL 15 primary with a streaming standby, and
# the failover steps an operator takes on it (the failover scenario, docs/load.md).
#
#   load/replicated_postgres.sh start DIR        # two clusters in DIR/a and DIR/b (initdb the
#                                                # first time: a primary, a pg_basebackup standby),
#                                                # started; prints the multi-host connection string
#   load/replicated_postgres.sh recreate DIR     # stop and remove both clusters, then start anew
#                                                # (load/run.sh: every run starts from a primary
#                                                # in a and its standby in b)
#   load/replicated_postgres.sh kill-primary DIR # the primary dies: immediate stop (SIGQUIT, no
#                                                # shutdown checkpoint, as a crash)
#   load/replicated_postgres.sh stop-primary DIR # the primary stops cleanly (fast shutdown: its
#                                                # WAL goes to the standby first)
#   load/replicated_postgres.sh promote DIR      # the standby becomes the primary (pg_ctl promote)
#   load/replicated_postgres.sh rewind DIR       # the old primary, stopped, is rewound onto the new
#                                                # one's timeline (pg_rewind) and started as its
#                                                # standby; synchronous again once it streams
#   load/replicated_postgres.sh switchover DIR   # planned: stop-primary, promote, rewind
#   load/replicated_postgres.sh read-only DIR    # default_transaction_read_only on the primary,
#   load/replicated_postgres.sh read-write DIR   # applied to open sessions (reload); and off again
#   load/replicated_postgres.sh sync DIR         # synchronous_standby_names '*' on the primary
#   load/replicated_postgres.sh async DIR        # synchronous_standby_names '' (asynchronous)
#   load/replicated_postgres.sh status DIR       # which is the primary, the standby's state
#   load/replicated_postgres.sh stop DIR         # fast shutdown of both; DIR is kept
#
# Plain streaming replication scripted here rather than Patroni (it needs a DCS such as etcd)
# or pg_auto_failover (it needs a monitor node and its own extension): the scenario wants to
# choose the moment of every step and to see each one, and these are the same steps those tools
# take. Each cluster listens only on a Unix socket in its own folder (DIR/a, DIR/b): libpq's
# `host=DIR/a,DIR/b target_session_attrs=read-write` finds the writable one. Durability on
# (fsync, synchronous_commit, full_page_writes); wal_log_hints on for pg_rewind.
#
# Synchronous replication (`sync`, the default at start) blocks every commit until the standby
# has flushed it. A promoted standby has no standby of its own until the old primary is rewound:
# `promote` therefore sets synchronous_standby_names to '' on the new primary (as
# pg_auto_failover does), and `rewind` sets it back once the standby streams — when the mode
# (DIR/mode) is sync. Commits in between are on one server only.
#
# PostgreSQL refuses to run as root: under root the clusters run as the `postgres` system user,
# in a postgres-owned folder under /tmp named after DIR when DIR is out of its reach (as
# embedded_postgres.sh), or when DIR is too long for a socket's path. Every wait is bounded; a step that fails exits 1 with the reason.
set -euo pipefail

bindir=${BULKHEAD_PG_BINDIR:-$(pg_config --bindir)}
action=${1:-}
dir=${2:-}
usage="usage: $0 start|recreate|kill-primary|stop-primary|promote|rewind|switchover|read-only|read-write|sync|async|status|stop DIR"
[ -n "$action" ] && [ -n "$dir" ] || { echo "$usage" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

as_server() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# A Unix socket's path holds at most 107 bytes (DIR/a/.s.PGSQL.5432): a DIR longer than 80
# is mapped the same way.
if { [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$dir"; } || [ ${#dir} -gt 80 ]; then
  dir=/tmp/bulkhead-pgrep-$(printf '%s' "$dir" | md5sum | cut -c1-16)
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
fi

die() { echo "replicated_postgres.sh: $action: $*" >&2; exit 1; }
other() { [ "$1" = a ] && echo b || echo a; }
primary() { cat "$dir/primary" 2>/dev/null || echo a; }
mode() { cat "$dir/mode" 2>/dev/null || echo sync; }
running() { as_server "$bindir/pg_ctl" -D "$dir/$1/data" status >/dev/null 2>&1; }
# psql on node $1 (a socket folder), database postgres; the rest are psql's arguments.
sql() {
  local node=$1
  shift
  PGOPTIONS="-c client_min_messages=warning" "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 \
    "host=$dir/$node user=bulkhead dbname=postgres connect_timeout=5" "$@"
}
start_node() {  # node: started (a standby if its standby.signal is there)
  running "$1" && return 0
  as_server "$bindir/pg_ctl" -D "$dir/$1/data" -l "$dir/$1/server.log" -w -t 120 \
    -o "-k $dir/$1 -c listen_addresses=''" start >/dev/null ||
    die "node $1 did not start; see $dir/$1/server.log"
}
# Waits (up to 60 s) until node $1, a primary, has a standby streaming with state $2 (sync or
# async).
wait_streaming() {
  local state
  for _ in $(seq 600); do
    state=$(sql "$1" -c "SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'" \
      2>/dev/null | head -n 1 || true)
    [ "$state" = "$2" ] && return 0
    sleep 0.1
  done
  die "no standby streaming to $1 as $2 within 60 s (last: '${state:-none}')"
}
set_sync_names() {  # node, value: synchronous_standby_names, reloaded
  sql "$1" -c "ALTER SYSTEM SET synchronous_standby_names = '$2'" -c "SELECT pg_reload_conf()" \
    >/dev/null
}

start() {
  if [ ! -f "$dir/a/data/PG_VERSION" ]; then
    rm -rf "$dir/a" "$dir/b"
    mkdir -p "$dir/a" "$dir/b"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir" "$dir/a" "$dir/b"
    as_server "$bindir/initdb" -D "$dir/a/data" -U bulkhead --auth=trust -E UTF8 --no-locale \
      --no-instructions >"$dir/a/initdb.log"
    # initdb's pg_hba.conf already trusts local replication connections.
    as_server tee -a "$dir/a/data/postgresql.conf" >/dev/null <<CONF
# replicated_postgres.sh
fsync = on
synchronous_commit = on
full_page_writes = on
wal_level = replica
wal_log_hints = on
max_wal_senders = 10
wal_keep_size = '1GB'
hot_standby = on
max_connections = 200
shared_buffers = '128MB'
max_wal_size = '1GB'
synchronous_standby_names = '*'
CONF
    echo a >"$dir/primary"
    echo sync >"$dir/mode"
    start_node a
    as_server "$bindir/pg_basebackup" -d "host=$dir/a user=bulkhead" -D "$dir/b/data" -R \
      -X stream -c fast >"$dir/b/basebackup.log" 2>&1 ||
      die "pg_basebackup failed; see $dir/b/basebackup.log"
  fi
  local p
  p=$(primary)
  start_node "$p"
  start_node "$(other "$p")"
  wait_streaming "$p" "$(mode)"
  echo "host=$dir/a,$dir/b user=bulkhead dbname=postgres target_session_attrs=read-write"
}

# Stops the primary with pg_ctl's shutdown MODE: immediate is a crash (kill_primary); fast
# sends the primary's remaining WAL, its shutdown checkpoint included, to the streaming standby
# before it exits (stop_primary, for a switchover).
shutdown_primary() {
  local p
  p=$(primary)
  running "$p" || die "the primary ($p) is not running"
  as_server "$bindir/pg_ctl" -D "$dir/$p/data" -m "$1" -w -t 60 stop >/dev/null
}

kill_primary() { shutdown_primary immediate; }

promote() {
  local p s
  p=$(primary)
  s=$(other "$p")
  running "$s" || die "the standby ($s) is not running"
  [ -f "$dir/$s/data/standby.signal" ] || die "$s is not a standby"
  as_server "$bindir/pg_ctl" -D "$dir/$s/data" -w -t 60 promote >/dev/null ||
    die "pg_ctl promote of $s failed; see $dir/$s/server.log"
  echo "$s" >"$dir/primary"
  # No standby yet: a synchronous commit would wait for ever.
  set_sync_names "$s" ''
}

rewind() {
  local p s
  p=$(primary)
  s=$(other "$p")
  if running "$s"; then
    [ -f "$dir/$s/data/standby.signal" ] && { echo "$s is already a standby" >&2; return 0; }
    as_server "$bindir/pg_ctl" -D "$dir/$s/data" -m fast -w -t 60 stop >/dev/null
  fi
  # A promoted server writes its new timeline into pg_control only at its next checkpoint, and
  # pg_rewind reads the timeline there ("same timeline, no rewind required" otherwise).
  sql "$p" -c CHECKPOINT >/dev/null
  # pg_rewind copies the source's configuration files too, and -R writes standby.signal and a
  # primary_conninfo pointing at the new primary.
  as_server "$bindir/pg_rewind" --target-pgdata="$dir/$s/data" \
    --source-server="host=$dir/$p user=bulkhead dbname=postgres" -R \
    >"$dir/$s/rewind.log" 2>&1 || die "pg_rewind of $s failed; see $dir/$s/rewind.log"
  start_node "$s"
  wait_streaming "$p" async
  if [ "$(mode)" = sync ]; then
    set_sync_names "$p" '*'
    wait_streaming "$p" sync
  fi
}

stop_primary() { shutdown_primary fast; }

switchover() {
  stop_primary
  promote
  rewind
}

read_only() {  # on|off
  local p
  p=$(primary)
  sql "$p" -c "ALTER SYSTEM SET default_transaction_read_only = $1" \
    -c "SELECT pg_reload_conf()" >/dev/null
}

replication_mode() {  # sync|async
  local p
  p=$(primary)
  echo "$1" >"$dir/mode"
  if [ "$1" = sync ]; then
    set_sync_names "$p" '*'
    wait_streaming "$p" sync
  else
    set_sync_names "$p" ''
    wait_streaming "$p" async
  fi
}

status() {
  local p s
  p=$(primary)
  s=$(other "$p")
  echo "primary: $p ($(running "$p" && echo running || echo stopped)), mode $(mode)"
  echo "standby: $s ($(running "$s" && echo running || echo stopped))"
  running "$p" && sql "$p" -c "SELECT 'replication: ' || application_name || ' ' || state || ' ' ||
    sync_state FROM pg_stat_replication" || true
}

stop() {
  for n in a b; do
    [ -f "$dir/$n/data/PG_VERSION" ] || continue
    as_server "$bindir/pg_ctl" -D "$dir/$n/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  done
}

case "$action" in
  start) start ;;
  recreate)
    stop
    rm -rf "${dir:?}/a" "$dir/b" "$dir/primary" "$dir/mode"
    start ;;
  kill-primary) kill_primary ;;
  stop-primary) stop_primary ;;
  promote) promote ;;
  rewind) rewind ;;
  switchover) switchover ;;
  read-only) read_only on ;;
  read-write) read_only off ;;
  sync) replication_mode sync ;;
  async) replication_mode async ;;
  status) status ;;
  stop) stop ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
