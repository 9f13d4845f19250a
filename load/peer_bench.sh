#!/usr/bin/env bash
# peer_bench.sh — Bulkhead beside graphile-worker 0.16 and pg-boss 10, side by side in one run:
# the same PostgreSQL, the same HTTP receiver, the same jobs, one table at the end (issue 16).
#
#   load/peer_bench.sh                                   # every case, default sizes (~15 min)
#   PEER_BENCH_CASES='fast-*' load/peer_bench.sh         # only the fast receiver's cases
#   PEER_BENCH_JOBS=2000 PEER_BENCH_SLOW_JOBS=1000 PEER_BENCH_SKIP_SETUP=1 load/peer_bench.sh
#
# Cases, in the order they run (PEER_BENCH_CASES picks some: comma-separated names or shell
# patterns, e.g. 'fast-*', '*-pgboss-*', 'slow-bulkhead-sized,slow-graphile-400'):
#   fast-bulkhead-1tenant    receiver answers at once; Bulkhead at the shipped tiers/default.json,
#                            one tenant with 20 channels
#   fast-bulkhead-20tenants  the same, 20 tenants with one channel each
#   fast-graphile-32         graphile-worker, concurrency 32
#   fast-graphile-400        graphile-worker, concurrency 400
#   fast-pgboss-32           pg-boss, concurrency 32
#   fast-pgboss-400          pg-boss, concurrency 400
#   slow-bulkhead-default    receiver answers after 100 ms; the shipped default tier, one tenant
#                            with 20 channels
#   slow-bulkhead-sized      the same with a "sized" tier: the shipped default.json with only
#                            workers set to PEER_BENCH_SIZED_WORKERS
#   slow-graphile-32, slow-graphile-400, slow-pgboss-32, slow-pgboss-400
# Fast rows are compared with fast-graphile-32, 100 ms rows with slow-graphile-400.
#
# Knobs (environment):
#   PEER_BENCH_JOBS            jobs per fast case (20000)
#   PEER_BENCH_SLOW_JOBS       jobs per 100 ms case (10000)
#   PEER_BENCH_CASES           which cases (every one)
#   PEER_BENCH_SIZED_WORKERS   workers of the sized tier (1000)
#   PEER_BENCH_TIMEOUT_S       a case gives up after this many seconds of draining (600)
#   PEER_BENCH_PEER_POOL       the peers' PostgreSQL pool is min(concurrency, this) (50): the
#                              embedded PostgreSQL takes 200 connections
#   PEER_BENCH_PGBOSS_WORKERS  pg-boss work() calls per process (1); must divide 32 and 400
#   PEER_BENCH_SKIP_SETUP      1: do not run ./setup.sh (the build in build/bin/ is used as is)
#   PEER_BENCH_DURABLE         1: PostgreSQL with fsync and synchronous_commit on
#                              (.run/peer-pg-durable), as production runs it; otherwise off
#
# What it does. ./setup.sh (packages and the build); Debian's nodejs or npm package for
# whichever of `node` and `npm` is missing; `npm ci` of load/peer/package.json and its
# package-lock.json (graphile-worker 0.16.6, pg-boss 10.4.2) into .run/peer-npm/, again only
# when the lock file changed; a throwaway PostgreSQL
# (load/embedded_postgres.sh start .run/peer-pg: Unix socket, durability off unless
# PEER_BENCH_DURABLE=1); one
# bulkhead-mock on a free loopback port. Then, case by case: a fresh database for the system
# (peer_bulkhead, peer_graphile, peer_pgboss), its jobs enqueued, ANALYZE, the mock's counters
# reset, and the clock started as the worker process is spawned; a psql session polls the
# database (poll_pause below) and the clock stops at the first poll that finds no job waiting or
# running. deliveries/s = jobs / those seconds: the worker's start-up (loading, connecting) is
# inside the clock for every system alike. Then the worker's peak RSS (VmHWM) and CPU time
# are read from /proc, it is stopped with SIGTERM, and the case passes when every job succeeded
# in the database and the mock answered 2xx to at least as many requests with distinct
# webhook-ids. Every system POSTs the same ~220-byte JSON payload to /hook/<system> on the
# mock, with ?delay_ms=100 for the 100 ms cases, over keep-alive connections.
#
#   Bulkhead: `bulkhead migrate up`; tenants and channels by SQL; the jobs by
#     bulkhead.enqueue_many, round-robin over the channels; `bulkhead run` with tiers_dir tiers/
#     (or the sized copy in .run/peer/tiers-sized/), tiers ["default"], allowed_networks
#     127.0.0.0/8 and a free metrics port. Done: no job `available` or `executing`.
#   graphile-worker (load/peer/graphile_worker.js): run() with `concurrency`, maxPoolSize
#     min(concurrency, PEER_BENCH_PEER_POOL), other options at their defaults; jobs added by
#     graphile_worker.add_jobs with max_attempts 1. Done: no job left not yet attempted or locked.
#   pg-boss (load/peer/pg_boss.js): pg-boss 10 has no concurrency option; concurrency C is
#     PEER_BENCH_PGBOSS_WORKERS work() calls (default 1) with batchSize C / that, the handler
#     POSTing its whole batch at once, pollingIntervalSeconds 0.5 (its minimum; the default is
#     2): pg-boss's loop waits out its polling interval after every fetch, so one work() call
#     takes at most batchSize jobs per interval. Pool max min(concurrency, PEER_BENCH_PEER_POOL).
#     Jobs inserted by boss.insert() with retryLimit 0. Done: no job created, retry or active.
#     Needs Node 20: on an older Node its rows say so and it is skipped.
# Each peer's handler does one POST with Node's http module over a keep-alive http.Agent with
# maxSockets and maxFreeSockets = concurrency (load/peer/webhook_post.js), failing the job on
# a non-2xx answer; Bulkhead also signs each request, the peers do not.
#
# Output: a line per case as it ends, then the machine, the versions and a markdown table:
# system, receiver, concurrency or tier (workers), layout, deliveries/s, ratio, the worker
# process's peak RSS and CPU seconds, and the 1-minute load average just before the worker
# started (back to back, it includes the cases before). Exit 0 when every case that ran passed,
# 1 when one failed (it goes on with the others), 2 on a bad setting. Logs in .run/peer/.
# Everything stays on this machine: the mock on 127.0.0.1, PostgreSQL on a Unix socket.
# On 2-core machines the workers, PostgreSQL and the mock share the cores: compare the ratios
# of one run, and take figures on a quiet machine.
load_script=peer_bench
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

say() { echo "peer_bench: $*"; }
die() { echo "peer_bench: $*" >&2; exit 1; }

# --- Settings (load/lib.sh's knob: a bad value exits 2) -------------------------------------

jobs_fast=$(knob PEER_BENCH_JOBS 20000 count)
jobs_slow=$(knob PEER_BENCH_SLOW_JOBS 10000 count)
sized_workers=$(knob PEER_BENCH_SIZED_WORKERS 1000 count)
timeout_s=$(knob PEER_BENCH_TIMEOUT_S 600 count)
peer_pool=$(knob PEER_BENCH_PEER_POOL 50 count)
pgboss_workers=$(knob PEER_BENCH_PGBOSS_WORKERS 1 count)
skip_setup=$(knob PEER_BENCH_SKIP_SETUP 0 flag)
durable=$(knob PEER_BENCH_DURABLE 0 flag)
((32 % pgboss_workers == 0 && 400 % pgboss_workers == 0)) ||
  usage_error "PEER_BENCH_PGBOSS_WORKERS must divide 32 and 400, not $pgboss_workers"
pgboss_interval=0.5

run=.run/peer           # logs, configs, the sized tier
npm_dir=.run/peer-npm   # graphile-worker and pg-boss
pg_dir=.run/peer-pg     # the throwaway cluster
durability=off
if [ "$durable" = 1 ]; then
  pg_dir=$(pg_durable_dir "$pg_dir" 1)
  durability=on
fi
mkdir -p "$run"

# name  system  receiver  concurrency or tier  layout
all_cases=(
  "fast-bulkhead-1tenant   bulkhead fast default 1x20"
  "fast-bulkhead-20tenants bulkhead fast default 20x1"
  "fast-graphile-32        graphile fast 32      queue"
  "fast-graphile-400       graphile fast 400     queue"
  "fast-pgboss-32          pgboss   fast 32      queue"
  "fast-pgboss-400         pgboss   fast 400     queue"
  "slow-bulkhead-default   bulkhead slow default 1x20"
  "slow-bulkhead-sized     bulkhead slow sized   1x20"
  "slow-graphile-32        graphile slow 32      queue"
  "slow-graphile-400       graphile slow 400     queue"
  "slow-pgboss-32          pgboss   slow 32      queue"
  "slow-pgboss-400         pgboss   slow 400     queue"
)
IFS=', ' read -ra patterns <<<"${PEER_BENCH_CASES:-*}"
selected=()
for spec in "${all_cases[@]}"; do
  name=${spec%% *}
  for p in "${patterns[@]}"; do
    # shellcheck disable=SC2053  # the pattern is meant as a glob
    if [[ $name == $p ]]; then selected+=("$spec"); break; fi
  done
done
for p in "${patterns[@]}"; do
  hit=false
  for spec in "${all_cases[@]}"; do
    # shellcheck disable=SC2053
    [[ ${spec%% *} == $p ]] && hit=true
  done
  names=("${all_cases[@]%% *}")
  $hit || usage_error "PEER_BENCH_CASES: '$p' names no case (the cases: ${names[*]})"
done

# bounded SECONDS COMMAND…: run COMMAND, killed if it takes longer (every wait here is bounded).
bounded() { timeout --kill-after=10 "$@"; }

# --- Build, Node.js, the peers --------------------------------------------------------------

if [ "$skip_setup" = 1 ]; then
  say "PEER_BENCH_SKIP_SETUP=1: not running ./setup.sh, using build/bin/ as it is"
else
  say "./setup.sh (log in $run/setup.log)"
  load_setup "$run/setup.log"
fi
for b in build/bin/bulkhead build/bin/bulkhead-mock; do
  [ -x "$b" ] || die "$b is missing: run ./setup.sh (or drop PEER_BENCH_SKIP_SETUP)"
done

# Debian's packages for whichever of node and npm is missing (Debian 12's nodejs is 18: pg-boss
# is then skipped).
missing=()
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then as_root=(); elif command -v sudo >/dev/null 2>&1; then as_root=(sudo)
  else die "${missing[*]} missing, and neither root nor sudo to install it"; fi
  say "installing Debian's ${missing[*]} (log in $run/apt.log)"
  { bounded 900 "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    bounded 1800 "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$run/apt.log" 2>&1 ||
    { tail -n 20 "$run/apt.log" >&2; die "apt-get install ${missing[*]} failed"; }
fi
node_version=$(node --version)
node_major=$(node -p 'process.versions.node.split(".")[0]')

# npm ci into the scratch folder, again only when the lock file changed.
mkdir -p "$npm_dir"
if [ ! -d "$npm_dir/node_modules" ] || ! cmp -s load/peer/package-lock.json "$npm_dir/package-lock.json"; then
  say "npm ci of load/peer/package-lock.json into $npm_dir (log in $run/npm.log)"
  rm -rf "$npm_dir/node_modules"
  cp load/peer/package.json load/peer/package-lock.json "$npm_dir/"
  (cd "$npm_dir" && bounded 900 npm ci --no-audit --no-fund) >"$run/npm.log" 2>&1 ||
    { tail -n 20 "$run/npm.log" >&2; rm -f "$npm_dir/package-lock.json"; die "npm ci failed"; }
fi
NODE_PATH="$PWD/$npm_dir/node_modules"
export NODE_PATH
package_version() { node -p 'require(process.argv[1]).version' "$NODE_PATH/$1/package.json"; }
graphile_version=$(package_version graphile-worker)
pgboss_version=$(package_version pg-boss)
pgboss_skip=""
if ((node_major < 20)); then
  pgboss_skip="skipped: pg-boss 10 needs Node 20 or later, this is $node_version"
fi

# --- PostgreSQL and the mock ----------------------------------------------------------------

psql=("$pg_bindir/psql" -X -q -v ON_ERROR_STOP=1)

worker_pid=""
mock_pid=""
poll_pid=""
poll_in=""
# shellcheck disable=SC2317  # called on exit
cleanup() {
  stop_worker || true
  close_poller || true
  if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; wait "$mock_pid" 2>/dev/null || true; fi
}
on_exit cleanup
trap 'exit 130' INT
trap 'exit 143' TERM

pg_start "$pg_dir" "$durable"  # stopped on exit, after cleanup
sockdir=${conn#host=}
sockdir=${sockdir%% *}
db_url() { echo "postgresql://bulkhead@/$1?host=$sockdir"; }
pg_version=$(bounded 30 "${psql[@]}" "$conn" -At -c "SHOW server_version")

rm -f "$run/mock.port"
build/bin/bulkhead-mock --listen 127.0.0.1:0 --port-file "$run/mock.port" >"$run/mock.log" 2>&1 &
mock_pid=$!
for _ in $(seq 100); do [ -s "$run/mock.port" ] && break; sleep 0.1; done
[ -s "$run/mock.port" ] || die "bulkhead-mock did not start within 10 s (see $run/mock.log)"
mock=http://127.0.0.1:$(cat "$run/mock.port")
mock_client() { bounded 30 node load/peer/mock_client.js "$mock" "$@"; }

# The payload every system sends, as PostgreSQL's jsonb prints it (Bulkhead sends
# payload::text); the peers get this text, parse it, and send JSON.stringify of it: the same
# JSON in the same key order, without jsonb's space after each ':' and ','.
payload_source='{"type": "invoice.paid", "id": "evt_1PeerBench0000000001",'
payload_source+=' "created_at": "2026-12-01T00:00:00Z", "data": {"invoice": "in_1PeerBench00000001",'
payload_source+=' "customer": "cus_PeerBench000001", "amount_due": 4200, "currency": "eur", "status": "paid"}}'
payload=$(bounded 30 "${psql[@]}" "$conn" -At -v p="$payload_source" <<<"SELECT :'p'::jsonb::text")
bulkhead_body_bytes=${#payload}
peer_body_bytes=$(node -p 'JSON.stringify(JSON.parse(process.argv[1])).length' "$payload")

# The tiers: shipped, and the sized copy (only workers changed).
shipped_workers=$(node -p 'require(process.argv[1]).workers' "$PWD/tiers/default.json")
mkdir -p "$run/tiers-sized"
node -e 'const fs = require("fs"); const t = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
  t.workers = Number(process.argv[2]); fs.writeFileSync(process.argv[3], JSON.stringify(t, null, 2) + "\n");' \
  tiers/default.json "$sized_workers" "$run/tiers-sized/default.json"

clk_tck=$(getconf CLK_TCK)
exec {sleep_fd}<> <(:)  # read -t on a pipe nobody writes to: a sleep without a fork
nap() { read -r -t "$1" -u "$sleep_fd" _ || true; }

# --- One case -------------------------------------------------------------------------------

# The psql session that polls a case's database: poll SQL sets $answer.
open_poller() {  # URL LOG
  coproc POLLER { exec "$pg_bindir/psql" -X -At -v ON_ERROR_STOP=1 "$1" 2>>"$2"; }
  poll_pid=$POLLER_PID
  poll_in=${POLLER[1]}
  poll_out=${POLLER[0]}
}
poll() {
  echo "$1;" >&"$poll_in" && IFS= read -r -t 10 -u "$poll_out" answer
}
close_poller() {
  [ -n "$poll_pid" ] || return 0
  exec {poll_in}>&- {poll_out}<&-
  local i
  for i in $(seq 50); do kill -0 "$poll_pid" 2>/dev/null || break; nap 0.1; done
  kill "$poll_pid" 2>/dev/null || true
  wait "$poll_pid" 2>/dev/null || true
  poll_pid=""
}

# poll_pause T0 NOW N LEFT: how long to wait before the next poll. Each poll counts the jobs
# left, a seq scan of the system's table: 12 ms for Bulkhead's 20,000 rows, 18 ms for
# graphile-worker's, and polled every 50 ms that was 18–23 % of a core taken from the system
# being measured (pg_stat_statements, 2026-12-02). So the pause is a quarter of what is left at
# the pace so far, between 50 ms and 1 s: a 4 s drain is polled about 15 times instead of 50,
# and the last polls are 50 ms apart. The end is seen more than 50 ms late only if the jobs
# left drain over four times faster than the drain's average so far.
poll_pause() {
  awk -v t0="$1" -v now="$2" -v n="$3" -v left="$4" 'BEGIN {
    done = n - left; p = 0.05
    if (done > 0) { p = left / (done / (now - t0)) / 4 }
    if (p < 0.05) p = 0.05
    if (p > 1) p = 1
    printf "%.3f", p }'
}

# SIGTERM, then SIGKILL if the worker is still there 20 s later.
stop_worker() {
  [ -n "$worker_pid" ] || return 0
  kill -TERM "$worker_pid" 2>/dev/null || true
  local i
  for i in $(seq 200); do kill -0 "$worker_pid" 2>/dev/null || break; nap 0.1; done
  if kill -0 "$worker_pid" 2>/dev/null; then
    echo "peer_bench: worker $worker_pid still running 20 s after SIGTERM: SIGKILL" >&2
    kill -KILL "$worker_pid" 2>/dev/null || true
  fi
  wait "$worker_pid" 2>/dev/null || true
  worker_pid=""
}

fresh_db() {  # NAME
  bounded 120 "${psql[@]}" "$conn" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1"
}

# prepare_*: a fresh database with N jobs; sets worker_cmd, remaining_sql (jobs waiting or
# running), succeeded_sql (jobs that succeeded) and waiting_sql (jobs enqueued, before the run).
prepare_bulkhead() {  # DB_URL HOOK_URL N TIER LAYOUT LOG
  local url=$1 hook=$2 n=$3 tier=$4 layout=$5 log=$6 tenants per tiers_dir port
  case "$layout" in 1x20) tenants=1 per=20 ;; 20x1) tenants=20 per=1 ;; esac
  bounded 120 build/bin/bulkhead migrate up --database "$url" >>"$log" 2>&1 || return 1
  bounded 300 "${psql[@]}" "$url" -v tenants="$tenants" -v per="$per" -v hook="$hook" -v n="$n" \
    -v payload="$payload" >>"$log" 2>&1 <<'SQL' || return 1
INSERT INTO bulkhead.tenants (name, tier)
  SELECT 'peer-bench-' || t, 'default' FROM generate_series(1, :tenants) t;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT tn.id, :'hook' FROM bulkhead.tenants tn, generate_series(1, :per);
SELECT cardinality(bulkhead.enqueue_many(
         ARRAY(SELECT c.ids[1 + g % cardinality(c.ids)] FROM generate_series(0, :n - 1) g),
         array_fill(:'payload'::jsonb, ARRAY[:n])))
  FROM (SELECT array_agg(id ORDER BY id) AS ids FROM bulkhead.channels) c;
SQL
  if [ "$tier" = sized ]; then tiers_dir=$PWD/$run/tiers-sized; else tiers_dir=$PWD/tiers; fi
  port=$(node -e 'const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });')
  cat >"$run/node.json" <<JSON
{
  "node": "peer-bench",
  "database": "$url",
  "tiers_dir": "$tiers_dir",
  "tiers": ["default"],
  "allowed_networks": ["127.0.0.0/8"],
  "metrics_listen": "127.0.0.1:$port"
}
JSON
  worker_cmd=(build/bin/bulkhead run --config "$run/node.json")
  waiting_sql="SELECT count(*) FROM bulkhead.jobs WHERE state = 'available'"
  remaining_sql="SELECT count(*) FROM bulkhead.jobs WHERE state IN ('available', 'executing')"
  succeeded_sql="SELECT count(*) FROM bulkhead.jobs WHERE state = 'completed'"
}

prepare_graphile() {  # DB_URL HOOK_URL N CONCURRENCY LOG
  local url=$1 hook=$2 n=$3 c=$4 log=$5
  bounded 600 node load/peer/graphile_worker.js enqueue --database "$url" --jobs "$n" \
    --payload "$payload" >>"$log" 2>&1 || return 1
  worker_cmd=(node load/peer/graphile_worker.js work --database "$url" --concurrency "$c"
              --pool "$((c < peer_pool ? c : peer_pool))" --url "$hook")
  waiting_sql="SELECT count(*) FROM graphile_worker.jobs WHERE attempts = 0 AND locked_at IS NULL"
  # A job that succeeded is deleted; one that failed stays with attempts = max_attempts (1).
  remaining_sql="SELECT count(*) FROM graphile_worker.jobs WHERE attempts < max_attempts OR locked_at IS NOT NULL"
  succeeded_sql="SELECT $n - count(*) FROM graphile_worker.jobs"
}

prepare_pgboss() {  # DB_URL HOOK_URL N CONCURRENCY LOG
  local url=$1 hook=$2 n=$3 c=$4 log=$5
  bounded 600 node load/peer/pg_boss.js enqueue --database "$url" --jobs "$n" \
    --payload "$payload" >>"$log" 2>&1 || return 1
  worker_cmd=(node load/peer/pg_boss.js work --database "$url" --concurrency "$c"
              --pool "$((c < peer_pool ? c : peer_pool))" --workers "$pgboss_workers"
              --polling-interval "$pgboss_interval" --url "$hook")
  waiting_sql="SELECT count(*) FROM pgboss.job WHERE name = 'deliver' AND state = 'created'"
  remaining_sql="SELECT count(*) FROM pgboss.job WHERE name = 'deliver' AND state IN ('created', 'retry', 'active')"
  succeeded_sql="SELECT count(*) FROM pgboss.job WHERE name = 'deliver' AND state = 'completed'"
}

# Results, one entry per case in the order run.
r_name=() r_system=() r_receiver=() r_setting=() r_layout=() r_jobs=() r_rate=() r_rss=()
r_cpu=() r_load=() r_note=()
declare -A rate_of
failed=0

# run_case SPEC: prepare, measure, check; appends a row. Returns 1 with $reason on failure.
# (Called from an `if`, where set -e does not apply: every step checks its own status.)
run_case() {
  local name system receiver setting layout
  read -r name system receiver setting layout <<<"$1"
  local n hook_path query="" db log="$run/$name.log" url
  if [ "$receiver" = slow ]; then n=$jobs_slow query="?delay_ms=100"; else n=$jobs_fast; fi
  hook_path=/hook/$system
  case "$system" in bulkhead) db=peer_bulkhead ;; graphile) db=peer_graphile ;; pgboss) db=peer_pgboss ;; esac
  url=$(db_url "$db")
  : >"$log"
  row_n=$n

  fresh_db "$db" >>"$log" 2>&1 || { reason="could not create database $db (see $log)"; return 1; }
  case "$system" in
    bulkhead) prepare_bulkhead "$url" "$mock$hook_path$query" "$n" "$setting" "$layout" "$log" ;;
    graphile) prepare_graphile "$url" "$mock$hook_path$query" "$n" "$setting" "$log" ;;
    pgboss) prepare_pgboss "$url" "$mock$hook_path$query" "$n" "$setting" "$log" ;;
  esac || { reason="enqueueing failed (see $log)"; return 1; }
  bounded 300 "${psql[@]}" "$url" -c ANALYZE >>"$log" 2>&1 || { reason="ANALYZE failed (see $log)"; return 1; }
  mock_client reset >>"$log" 2>&1 || { reason="the mock did not reset (see $log)"; return 1; }

  open_poller "$url" "$log"
  poll "$waiting_sql" || { reason="polling failed (see $log)"; return 1; }
  [ "$answer" = "$n" ] || { reason="$answer jobs waiting after the enqueue, not $n"; return 1; }

  row_load=$(cut -d' ' -f1 /proc/loadavg)
  local t0 t1 left=$n deadline now pause
  row_polls=0
  t0=$EPOCHREALTIME
  "${worker_cmd[@]}" >>"$log" 2>&1 &
  worker_pid=$!
  deadline=$(( ${t0/./} + timeout_s * 1000000 ))
  while :; do
    poll "$remaining_sql" || { reason="polling failed (see $log)"; return 1; }
    t1=$EPOCHREALTIME
    left=$answer
    row_polls=$((row_polls + 1))
    [ "$left" = 0 ] && break
    kill -0 "$worker_pid" 2>/dev/null ||
      { reason="the worker exited with $left jobs left (see $log)"; worker_pid=""; return 1; }
    now=${EPOCHREALTIME/./}
    ((now < deadline)) ||
      { reason="gave up after $timeout_s s (PEER_BENCH_TIMEOUT_S) with $left of $n jobs left (see $log)"; return 1; }
    pause=$(poll_pause "$t0" "$t1" "$n" "$left")
    nap "$pause"
  done

  # The worker's peak RSS and CPU time, read before it stops.
  local rss_kb stat fields
  rss_kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$worker_pid/status")
  stat=$(<"/proc/$worker_pid/stat")
  read -ra fields <<<"${stat##*) }"   # fields[11], [12]: utime, stime in clock ticks
  row_rss=$(awk -v k="$rss_kb" 'BEGIN { printf "%.1f MiB", k / 1024 }')
  row_cpu=$(awk -v u="${fields[11]}" -v s="${fields[12]}" -v t="$clk_tck" 'BEGIN { printf "%.2f s", (u + s) / t }')
  row_seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  row_rate=$(awk -v n="$n" -v s="$row_seconds" 'BEGIN { printf "%.0f", n / s }')
  stop_worker

  poll "$succeeded_sql" || { reason="polling failed (see $log)"; return 1; }
  local succeeded=$answer
  close_poller
  local requests ok distinct duplicates
  read -r requests ok distinct duplicates < <(mock_client route "$hook_path" 2>>"$log") ||
    { reason="could not read the mock's counters (see $log)"; return 1; }
  row_mock="mock: $requests requests, $ok answered 2xx, $distinct distinct webhook-ids, $duplicates repeats"
  ((succeeded == n)) || { reason="$succeeded of $n jobs succeeded; $row_mock"; return 1; }
  ((ok >= n && distinct >= n)) || { reason="$row_mock, fewer than $n"; return 1; }
  return 0
}

describe() {  # SPEC: sets d_system d_receiver d_setting d_layout
  local name system receiver setting layout
  read -r name system receiver setting layout <<<"$1"
  case "$system" in
    bulkhead) d_system="Bulkhead" ;;
    graphile) d_system="graphile-worker $graphile_version" ;;
    pgboss) d_system="pg-boss $pgboss_version" ;;
  esac
  if [ "$receiver" = slow ]; then d_receiver="100 ms"; else d_receiver="at once"; fi
  case "$setting" in
    default) d_setting="shipped default tier ($shipped_workers workers)" ;;
    sized) d_setting="sized tier ($sized_workers workers)" ;;
    *) d_setting="concurrency $setting" ;;
  esac
  case "$layout" in
    1x20) d_layout="1 tenant × 20 channels" ;;
    20x1) d_layout="20 tenants × 1 channel" ;;
    *) d_layout="1 queue" ;;
  esac
}

say "mock at $mock, PostgreSQL $pg_version at $sockdir, node $node_version;" \
    "${#selected[@]} cases, $jobs_fast jobs each at once, $jobs_slow at 100 ms"
for spec in "${selected[@]}"; do
  name=${spec%% *}
  describe "$spec"
  reason="" row_rate="" row_rss="" row_cpu="" row_load="" row_mock="" row_n="" row_polls=0
  if [[ $spec == *" pgboss "* && -n $pgboss_skip ]]; then
    say "$name: $pgboss_skip"
    status=skipped
  elif run_case "$spec"; then
    say "$name: $row_n jobs in $row_seconds s = $row_rate deliveries/s; worker peak RSS $row_rss," \
        "CPU $row_cpu; $row_mock; $row_polls polls; load $row_load before"
    rate_of[$name]=$row_rate
    status=ok
  else
    stop_worker || true
    close_poller || true
    echo "peer_bench: $name FAILED: $reason" >&2
    failed=1
    status=failed
  fi
  r_name+=("$name") r_system+=("$d_system") r_receiver+=("$d_receiver") r_setting+=("$d_setting")
  r_layout+=("$d_layout") r_jobs+=("${row_n:-–}") r_load+=("${row_load:-–}")
  case "$status" in
    ok) r_rate+=("$row_rate") r_rss+=("$row_rss") r_cpu+=("$row_cpu") r_note+=("") ;;
    skipped) r_rate+=("–") r_rss+=("–") r_cpu+=("–") r_note+=("$pgboss_skip") ;;
    failed) r_rate+=("FAILED") r_rss+=("–") r_cpu+=("–") r_note+=("$reason") ;;
  esac
done

# --- The table ------------------------------------------------------------------------------

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit+=" + uncommitted changes"; fi
mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
echo
echo "machine: $(nproc) cores, $mem, $(uname -sr); PostgreSQL $pg_version (embedded, durability $durability)"
echo "versions: $(build/bin/bulkhead --version) at $commit; node $node_version, npm $(npm --version);" \
     "graphile-worker $graphile_version; pg-boss $pgboss_version"
echo "Bulkhead's tier: tiers/default.json as shipped ($shipped_workers workers); sized: the same" \
     "with workers $sized_workers. Peers' pool: min(concurrency, $peer_pool). pg-boss:" \
     "$pgboss_workers work() call(s), batchSize = concurrency / $pgboss_workers," \
     "pollingIntervalSeconds $pgboss_interval"
echo "request body: $bulkhead_body_bytes bytes from Bulkhead (jsonb text, signed)," \
     "$peer_body_bytes from the peers (JSON.stringify of the same JSON)"
echo
echo "| Case | System | Receiver | Concurrency / tier | Layout | Jobs | Deliveries/s | vs. graphile-worker (32 at once, 400 at 100 ms) | Worker peak RSS | Worker CPU | Load (1 min) before |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for i in "${!r_name[@]}"; do
  name=${r_name[$i]}
  if [[ $name == fast-* ]]; then ref=fast-graphile-32; else ref=slow-graphile-400; fi
  ratio="–"
  if [[ ${r_rate[$i]} =~ ^[0-9]+$ && -n ${rate_of[$ref]:-} ]]; then
    ratio=$(awk -v a="${r_rate[$i]}" -v b="${rate_of[$ref]}" 'BEGIN { printf "%.2f", a / b }')
  fi
  rate=${r_rate[$i]}
  [ -n "${r_note[$i]}" ] && rate+=" (${r_note[$i]})"
  echo "| $name | ${r_system[$i]} | ${r_receiver[$i]} | ${r_setting[$i]} | ${r_layout[$i]} | ${r_jobs[$i]} | $rate | $ratio | ${r_rss[$i]} | ${r_cpu[$i]} | ${r_load[$i]} |"
done
exit "$failed"
