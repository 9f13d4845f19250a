#!/usr/bin/env bash
# load/run.sh — the load harness: starts a whole stack, runs scenarios, stops what it started.
#
#   LOAD_PROFILE=smoke load/run.sh                      # the README's demo: dead_channel, smoke
#   load/run.sh                                         # dead_channel, full profile (the seed's)
#   LOAD_SCENARIOS=dead_channel LOAD_DEAD_TIER=bulk load/run.sh   # dead tenant on its own tier
#   LOAD_SCENARIOS=crash,pg_restart,fleet load/run.sh   # the fleet scenarios (issue 8)
#   LOAD_SCENARIOS=soak load/run.sh                     # 30 min, kills and restarts (issue 17)
#   LOAD_SCENARIOS=failover load/run.sh                 # a primary killed, a standby promoted,
#                                                       # a switchover, read-only (issue 31)
#
# Steps: ./setup.sh (installs missing packages, builds); a throwaway PostgreSQL in
# $LOAD_RUN_DIR/pg (load/embedded_postgres.sh; a fresh database `bulkhead_load` each run) unless
# DATABASE_URL is set; `bulkhead migrate up`; bulkhead-mock on a free loopback port; one node,
# `bulkhead run`, with the tier files copied from $LOAD_TIERS_DIR into the run folder; then
# `bulkhead-load <scenario>` for each of LOAD_SCENARIOS. crash, pg_restart, fleet and soak start
# more nodes themselves from this node's config (their logs: $LOAD_RUN_DIR/<scenario>-*.log), and
# pg_restart and soak restart the embedded PostgreSQL (they need the throwaway one: not with
# DATABASE_URL). With failover among the scenarios the database is a primary and a streaming
# standby instead (load/replicated_postgres.sh in $LOAD_RUN_DIR/replicated, created anew each
# run), and the node and the scenario connect through the pair's multi-host connection string;
# the scenario steps the pair through --pg-control. Whatever was started is stopped on exit, on failure and on Ctrl-C. Exit status: 0 when every scenario's gate passed, 1 otherwise.
#
# Environment (the scenarios' own knobs, LOAD_PROFILE and LOAD_DEAD_*, are in docs/load.md):
#   LOAD_SCENARIOS     comma-separated scenarios (dead_channel; also webhook_burst, throughput,
#                      latency, hostile, crash, pg_restart, fleet, soak, failover)
#   LOAD_RESULTS_DIR   where results go (load/results)
#   LOAD_RUN_DIR       the run's files: database, logs, config, tiers (.run/load)
#   LOAD_TIERS_DIR     tier files to run the node with (tiers)
#   LOAD_BIN_DIR       the binaries (build/bin)
#   LOAD_SKIP_SETUP=1  do not run ./setup.sh (the ctest entry: the build is already done)
#   DATABASE_URL       use this database instead of a throwaway one (it is migrated up)
load_script=load/run.sh
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"
check_knobs flag LOAD_SKIP_SETUP

scenarios=${LOAD_SCENARIOS:-dead_channel}
results=${LOAD_RESULTS_DIR:-load/results}
run=${LOAD_RUN_DIR:-.run/load}
tiers=${LOAD_TIERS_DIR:-tiers}
bin=${LOAD_BIN_DIR:-build/bin}

replicated=false
restarts=
for s in ${scenarios//,/ }; do
  case "$s" in
    dead_channel|webhook_burst|throughput|latency|hostile|crash|fleet) ;;
    pg_restart|soak|failover)
      if [ -n "${DATABASE_URL:-}" ]; then
        echo "load/run.sh: $s restarts or fails over the PostgreSQL it starts; unset DATABASE_URL" >&2
        exit 2
      fi
      if [ "$s" = failover ]; then replicated=true; else restarts=$s; fi ;;
    *) echo "load/run.sh: unknown scenario '$s' in LOAD_SCENARIOS" \
         "(dead_channel, webhook_burst, throughput, latency, hostile, crash, pg_restart, fleet," \
         "soak, failover)" >&2
       exit 2 ;;
  esac
done
if $replicated && [ -n "$restarts" ]; then
  echo "load/run.sh: $restarts restarts the single embedded PostgreSQL; run it apart from failover" >&2
  exit 2
fi

mkdir -p "$run"
run=$(cd "$run" && pwd)
if [ "${LOAD_SKIP_SETUP:-0}" != 1 ]; then
  echo "load/run.sh: ./setup.sh (install what is missing, build; log in $run/setup.log)"
  load_setup "$run/setup.log"
fi

node_pid=
mock_pid=
load_pid=
pg_dir=
rep_dir=
stop_process() {  # pid, name: SIGTERM, then SIGKILL after 15 s
  local pid=$1 name=$2
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "load/run.sh: $name did not stop within 15 s; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  [ -n "$load_pid" ] && stop_process "$load_pid" "bulkhead-load"
  [ -n "$node_pid" ] && stop_process "$node_pid" "the node"
  [ -n "$mock_pid" ] && stop_process "$mock_pid" "the mock provider"
  [ -n "$pg_dir" ] && load/embedded_postgres.sh stop "$pg_dir"
  [ -n "$rep_dir" ] && load/replicated_postgres.sh stop "$rep_dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The database.
if [ -n "${DATABASE_URL:-}" ]; then
  db=$DATABASE_URL
else
  if $replicated; then
    rep_dir=$run/replicated
    conn=$(load/replicated_postgres.sh recreate "$rep_dir")
  else
    pg_dir=$run/pg
    conn=$(load/embedded_postgres.sh start "$pg_dir")
  fi
  fresh_database bulkhead_load
  db=$(db_conn bulkhead_load)
fi
"$bin/bulkhead" migrate up --database "$db" >"$run/migrate.log"

# The mock provider, on a free loopback port.
rm -f "$run/mock.port"
"$bin/bulkhead-mock" --listen 127.0.0.1:0 --port-file "$run/mock.port" >"$run/mock.log" 2>&1 &
mock_pid=$!
for _ in $(seq 100); do [ -s "$run/mock.port" ] && break; sleep 0.1; done
if [ ! -s "$run/mock.port" ]; then
  cat "$run/mock.log" >&2
  echo "load/run.sh: the mock provider did not start" >&2
  exit 1
fi
mock_url=http://127.0.0.1:$(cat "$run/mock.port")

# One node, on copies of the tier files (so a run can change them without touching tiers/).
rm -rf "$run/tiers"
mkdir -p "$run/tiers"
cp "$tiers"/*.json "$run/tiers/"
node=load-$$
cat >"$run/node.json" <<JSON
{
  "node": "$node",
  "tiers_dir": "tiers",
  "allowed_networks": ["127.0.0.0/8", "::1/128"],
  "metrics_listen": "127.0.0.1:$(free_port)",
  "shutdown_grace_ms": 2000
}
JSON
"$bin/bulkhead" run --config "$run/node.json" --database "$db" 2>"$run/node.log" &
node_pid=$!
# Started once it logs node_started (it has registered in bulkhead.nodes by then).
for _ in $(seq 600); do
  grep -q '"node_started"' "$run/node.log" 2>/dev/null && break
  if ! kill -0 "$node_pid" 2>/dev/null; then
    cat "$run/node.log" >&2
    echo "load/run.sh: the node did not start; its log is $run/node.log" >&2
    exit 1
  fi
  sleep 0.1
done

commit=$(git rev-parse --short HEAD 2>/dev/null || true)
if [ -n "$commit" ] && [ -n "$(git status --porcelain -- worker schema tiers load ':!load/results' 2>/dev/null)" ]; then
  commit="$commit+changes"
fi
failed=0
for s in ${scenarios//,/ }; do
  if ! kill -0 "$node_pid" 2>/dev/null; then
    tail -n 20 "$run/node.log" >&2
    echo "load/run.sh: the node stopped; its log is $run/node.log" >&2
    exit 1
  fi
  echo "load/run.sh: scenario $s (node log: $run/node.log)"
  # In the background and waited for: `wait` returns as soon as a signal arrives, so Ctrl-C or
  # a SIGTERM to this script alone (a CI timeout) stops everything at once, not after the
  # scenario.
  fleet_args=(--bulkhead "$bin/bulkhead" --node-config "$run/node.json" --run-dir "$run")
  [ -n "$pg_dir" ] && fleet_args+=(--pg-restart "load/embedded_postgres.sh restart '$pg_dir'")
  [ -n "$rep_dir" ] && fleet_args+=(--pg-control "load/replicated_postgres.sh {} '$rep_dir'")
  "$bin/bulkhead-load" "$s" --database "$db" --mock "$mock_url" --results-dir "$results" \
    --node "$node" --commit "$commit" "${fleet_args[@]}" &
  load_pid=$!
  wait "$load_pid" || failed=1
  load_pid=
done
exit $failed
