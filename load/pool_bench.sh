#!/usr/bin/env bash
# pool_bench.sh — issue 30, goal 5: what a node pays to send its claim, result, breaker and
# lease traffic through PgBouncer in transaction mode (`database_pool`, docs/configuration.md)
# instead of on connections of its own, side by side on one durable cluster.
#
#   load/pool_bench.sh        # POOL_BENCH_JOBS (60,000) over 20 tenants, POOL_BENCH_PAIRS (3)
#   POOL_BENCH_NODES=8 load/pool_bench.sh   # the same through 8 nodes (each at the shipped
#                             # tiers): how many server connections the fleet holds
#   POOL_BENCH_FLEET_WORKERS=200 …   # the nodes share this many `default` workers evenly
#                             # instead (200 / 8 = 25 each), as load/engine_bench.sh fleet sizes
#                             # them: 8 nodes of 200 send 1,600 requests at once to the mock on
#                             # the same 2 cores, and its answers then take up to 2 s
#   POOL_BENCH_WARM=1 …         # production's shape with the nodes started and warmed by a first
#                             # batch before the burst commits (one transaction), measured from
#                             # its commit: a fleet in service, without the nodes' start-up (their
#                             # connections, statements and first plans) in the cost a delivery
#   POOL_BENCH_NODE_BIN=/x/bulkhead …  # the nodes run that binary (another build's)
#   POOL_BENCH_NODE_SETTINGS='"completion_flush_ms": 20' …  # more keys of the nodes' config
#                             # (docs/configuration.md), written into each node's JSON as given
#   POOL_BENCH_STATEMENTS=1 …  # also prints each drain's costliest statements to stderr: calls,
#                             # times planned, rows a call, planning and execution ms a call
#   POOL_BENCH_EXPLAIN=0.1 …   # also logs that share of the nodes' statements with their plans
#                             # (auto_explain, EXPLAIN ANALYZE's timing) and prints, per drain, the
#                             # claims' mean time in each step (load/claim_trace.awk) to stderr;
#                             # the timing slows the drains: read its figures apart
#   POOL_BENCH_SHAPE=production load/pool_bench.sh   # production's shape: the burst lands beside
#                             # POOL_BENCH_FINISHED (1,000,000) finished deliveries of the last
#                             # week (vacuumed, analyzed, the claim floor raised past them as a
#                             # leader leaves it), and half of it goes to 20 busy tenants, half
#                             # to 10,000 tenants of 3 deliveries each; every drain starts
#                             # from a copy of that database (a template built once)
#
# Each pair, in turn and in alternating order: a fresh database with the burst enqueued (one
# statement of bulkhead.enqueue over 20 tenants of one channel each, to bulkhead-mock's
# /hook/fast), one `bulkhead run` node with the shipped tiers drains it, directly, then with
# `database_pool` pointing at Debian's PgBouncer (its defaults but pool_mode = transaction, over
# the cluster's Unix socket). Per drain: deliveries/s (node start to the last completed), the
# PostgreSQL server processes' CPU per delivery (their user + system time over the drain, read
# before the node stops), the most client backends seen during it, and the planning and execution
# time of the node's statements a delivery (pg_stat_statements, track_planning on), the
# deliveries that needed a second attempt and the breakers that opened (either stretches a
# drain by seconds: a retry's 5 s, a cooldown's 30 s; a breaker opening on "attempts in flight
# longer than slow_call_ms" means the machine, not the database, set the pace); then the ratio
# of the medians. Durability on (.run/bench-pg-durable). Builds first (./setup.sh).
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

[ $# -eq 0 ] || usage_error "takes no arguments; the knobs are POOL_BENCH_JOBS and POOL_BENCH_PAIRS"
jobs=$(knob POOL_BENCH_JOBS 60000 count)
pairs=$(knob POOL_BENCH_PAIRS 3 count)
nodes=$(knob POOL_BENCH_NODES 1 count)
fleet_workers=$(knob POOL_BENCH_FLEET_WORKERS 0 count0)  # 0: each node the shipped tiers
finished=$(knob POOL_BENCH_FINISHED 1000000 count0)
shape=${POOL_BENCH_SHAPE:-lab}
case $shape in lab|production) ;; *) usage_error "POOL_BENCH_SHAPE must be lab or production, not '$shape'" ;; esac
warm=$(knob POOL_BENCH_WARM 0 count0)
explain=${POOL_BENCH_EXPLAIN:-0}
[[ "$explain" =~ ^(0|0?\.[0-9]+|1)$ ]] || usage_error "POOL_BENCH_EXPLAIN must be a share from 0 to 1, not '$explain'"
[ "$warm" = 0 ] || [ "$shape" = production ] || usage_error "POOL_BENCH_WARM=1 needs POOL_BENCH_SHAPE=production"
[ -x /usr/sbin/pgbouncer ] || usage_error "needs /usr/sbin/pgbouncer (./setup.sh installs it)"

load_setup
# POOL_BENCH_NODE_BIN: the `bulkhead` the nodes run (another build's, to hold two side by side
# on the same schema); the migrations are always this build's.
node_bin=${POOL_BENCH_NODE_BIN:-build/bin/bulkhead}
node_settings=${POOL_BENCH_NODE_SETTINGS:+, $POOL_BENCH_NODE_SETTINGS}
[ -x "$node_bin" ] || usage_error "POOL_BENCH_NODE_BIN: '$node_bin' is not an executable"
# shellcheck source=load/statement.sh
source load/statement.sh  # raise_claim_floor
run=.run/bench-pg-durable
pg_start "$run" 1
work=$(mktemp -d /tmp/pool_bench.XXXXXX)
chmod 755 "$work"

# PgBouncer in transaction mode in front of the cluster's socket, as the postgres user.
sock=$(sed -n 's/.*host=\([^ ]*\).*/\1/p' <<<"$conn")
pgport=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$conn")  # empty: libpq's 5432
user=$(sed -n 's/.*user=\([^ ]*\).*/\1/p' <<<"$conn")
echo "\"${user:-postgres}\" \"\"" >"$work/users.txt"
# A port below Linux's ephemeral range (32768 and up), where the last run's TIME_WAIT client
# sockets (the nodes' requests to the mock) can hold a port PgBouncer would fail to listen on;
# and another one if it fails all the same (up to 5 tries).
for ((try = 1; try <= 5; try++)); do
  bouncer_port=$((20000 + RANDOM % 12000))
  cat >"$work/pgbouncer.ini" <<INI
[databases]
* = host=$sock${pgport:+ port=$pgport}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer_port
unix_socket_dir =
auth_type = trust
auth_file = $work/users.txt
logfile = $work/pgbouncer.log
pidfile = $work/pgbouncer.pid
pool_mode = transaction
INI
  chown -R postgres "$work"
  runuser -u postgres -- /usr/sbin/pgbouncer -d "$work/pgbouncer.ini" || true
  for ((i = 0; i < 30; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$bouncer_port") 2>/dev/null && break 2
    sleep 0.1
  done
  kill "$(cat "$work/pgbouncer.pid" 2>/dev/null)" 2>/dev/null || true
done
if [ "$try" -gt 5 ]; then
  tail -n 5 "$work/pgbouncer.log" >&2
  echo "$load_script: PgBouncer did not start in 5 tries; see above" >&2
  exit 1
fi
on_exit "kill \$(cat '$work/pgbouncer.pid') 2>/dev/null"

mock_pid=
node_pids=()
# shellcheck disable=SC2016  # expanded when the script exits
on_exit 'for pid in "${node_pids[@]}"; do stop_pid "$pid" "a node"; done'
# shellcheck disable=SC2016
on_exit '[ -n "$mock_pid" ] && stop_pid "$mock_pid" "the mock"'
on_exit "rm -rf '$work'"
build/bin/bulkhead-mock --listen 127.0.0.1:0 --port-file "$work/mock.port" >"$work/mock.log" 2>&1 &
mock_pid=$!
for ((i = 0; i < 100; i++)); do [ -s "$work/mock.port" ] && break; sleep 0.1; done
[ -s "$work/mock.port" ] || { cat "$work/mock.log" >&2; exit 1; }
mock_url=http://127.0.0.1:$(cat "$work/mock.port")/hook/fast

tiers_dir=$PWD/tiers
if [ "$fleet_workers" -gt 0 ]; then
  [ $((fleet_workers / nodes)) -ge 1 ] || usage_error "POOL_BENCH_FLEET_WORKERS must be at least POOL_BENCH_NODES"
  tiers_dir=$work/tiers
  mkdir -p "$tiers_dir"
  cp tiers/*.json "$tiers_dir/"
  sed -i -E "s/\"workers\": *[0-9]+/\"workers\": $((fleet_workers / nodes))/" "$tiers_dir/default.json"
fi

# Clock ticks of every PostgreSQL server process alive now (utime + stime).
server_ticks() {
  local pid total=0 stat
  for pid in $(pgrep -u postgres -x postgres); do
    stat=$(cut -d' ' -f14,15 "/proc/$pid/stat" 2>/dev/null) || continue
    total=$((total + ${stat% *} + ${stat#* }))
  done
  echo "$total"
}
hz=$(getconf CLK_TCK)

# drain MODE: one drain of a fresh burst; prints "rate cpu_ms_per_delivery max_backends".
drain() {
  local mode=$1 db pool start end ticks0 ticks1 done_count=0 max_backends=0 backends
  local lock_waiting lwlock_waiting waits samples=0 lock_samples=0 lwlocks=0 wait_kinds=""
  # FORCE: PgBouncer keeps its server connections to the last drain's database open.
  if [ "$shape" = production ]; then
    psql "$conn" -c "SET client_min_messages = warning" \
      -c "DROP DATABASE IF EXISTS pool_bench WITH (FORCE)" \
      -c "CREATE DATABASE pool_bench TEMPLATE pool_bench_template STRATEGY FILE_COPY" \
      -c "ALTER DATABASE pool_bench SET pg_stat_statements.track_planning = on"
    db=$(db_conn pool_bench)
    # The burst: half to the 20 busy tenants, half over small ones, 3 each; one transaction.
    cat >"$work/burst.sql" <<'SQL'
BEGIN;
SELECT count(bulkhead.enqueue(c.id, '{"type":"bench","data":{"n":1}}'))
  FROM bulkhead.channels c JOIN bulkhead.tenants t ON t.id = c.tenant_id,
       generate_series(1, :n / 20) WHERE t.name LIKE 'busy-%';
SELECT count(bulkhead.enqueue(c.id, '{"type":"bench","data":{"n":1}}'))
  FROM (SELECT c.id FROM bulkhead.channels c JOIN bulkhead.tenants t ON t.id = c.tenant_id
         WHERE t.name LIKE 'small-%' ORDER BY c.id LIMIT :small) c, generate_series(1, 3);
COMMIT;
SQL
    # What burst.sql enqueues: the small tenants are the template's 10,000 at most.
    small=$(( jobs / 2 / 3 < 10000 ? jobs / 2 / 3 : 10000 ))
    jobs_here=$(( jobs / 2 / 20 * 20 + small * 3 ))
    if [ "$warm" != 1 ]; then
      psql "$db" -v n="$((jobs / 2))" -v small="$((jobs / 2 / 3))" -f "$work/burst.sql" >/dev/null
      psql "$db" -c CHECKPOINT >/dev/null
    fi
  else
    psql "$conn" -c "SET client_min_messages = warning" \
      -c "DROP DATABASE IF EXISTS pool_bench WITH (FORCE)" -c "CREATE DATABASE pool_bench" \
      -c "ALTER DATABASE pool_bench SET pg_stat_statements.track_planning = on"
    db=$(db_conn pool_bench)
    build/bin/bulkhead migrate up --database "$db" >/dev/null
    psql "$db" -v url="$mock_url" -v n="$((jobs / 20))" >/dev/null <<'SQL'
INSERT INTO bulkhead.tenants (name, tier) SELECT 'drain-' || g, 'default' FROM generate_series(1, 20) g;
INSERT INTO bulkhead.channels (tenant_id, url) SELECT id, :'url' FROM bulkhead.tenants;
SELECT count(bulkhead.enqueue(c.id, '{"type":"bench","data":{"n":1}}'))
  FROM bulkhead.channels c, generate_series(1, :n);
CHECKPOINT;
SQL
    jobs_here=$(( jobs / 20 * 20 ))
  fi
  pool=""
  [ "$mode" = pooled ] && pool=", \"database_pool\": \"host=127.0.0.1 port=$bouncer_port dbname=pool_bench user=${user:-postgres}\""
  for ((n = 1; n <= nodes; n++)); do
    cat >"$work/node-$n.json" <<JSON
{"database": "$db", "node": "pool-bench-$n", "tiers_dir": "$tiers_dir",
 "metrics_listen": "127.0.0.1:$((bouncer_port + n))", "allowed_networks": ["127.0.0.0/8"]$pool$node_settings}
JSON
  done
  psql "$db" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
  # POOL_BENCH_EXPLAIN: every new session of the drain's database loads auto_explain, which
  # logs that share of its statements with their plans; the log's new lines are read after.
  local log_from=0
  if [ "$explain" != 0 ]; then
    psql "$conn" >/dev/null -c "ALTER DATABASE pool_bench SET session_preload_libraries = 'auto_explain'" \
      -c "ALTER DATABASE pool_bench SET auto_explain.log_min_duration = 0" \
      -c "ALTER DATABASE pool_bench SET auto_explain.log_analyze = on" \
      -c "ALTER DATABASE pool_bench SET auto_explain.sample_rate = $explain"
    log_from=$(stat -c %s "$run/server.log")
  fi
  start_nodes() {
    node_pids=()
    for ((n = 1; n <= nodes; n++)); do
      "$node_bin" run --config "$work/node-$n.json" >"$work/node-$mode-$n.log" 2>&1 &
      node_pids+=($!)
    done
  }
  if [ "$warm" = 1 ]; then
    # Warm nodes, as a fleet in service is: started, their connections open and their statements
    # planned by a first batch (one delivery to each busy tenant's channel, 100 times), which
    # they drain and then sleep. The burst then commits at once, and the measure starts after
    # its commit: neither the nodes' start nor the application's enqueue is in it.
    start_nodes
    local warm_from w
    warm_from=$(psql "$db" -At -c "SELECT coalesce(max(id), 0) FROM bulkhead.jobs")
    psql "$db" >/dev/null -c "SELECT count(bulkhead.enqueue(c.id, '{\"type\":\"warm\"}'))
      FROM bulkhead.channels c JOIN bulkhead.tenants t ON t.id = c.tenant_id,
           generate_series(1, 100) WHERE t.name LIKE 'busy-%'"
    for ((w = 0; w < 600; w++)); do  # bounded: 60 s
      [ "$(psql "$db" -At -c "SELECT count(*) FROM bulkhead.jobs
                               WHERE id > $warm_from AND state <> 'completed'")" = 0 ] && break
      sleep 0.1
    done
    sleep 2  # the runners find nothing more and mark themselves asleep
    first_id=$(psql "$db" -At -c "SELECT coalesce(max(id), 0) FROM bulkhead.jobs")
    psql "$db" -v n="$((jobs / 2))" -v small="$((jobs / 2 / 3))" -f "$work/burst.sql" >/dev/null
    psql "$db" -c "SELECT pg_stat_statements_reset()" >/dev/null
    ticks0=$(server_ticks)
    start=$(date +%s.%N)
  else
    first_id=$(psql "$db" -At -c "SELECT coalesce(min(id), 1) - 1 FROM bulkhead.jobs WHERE state = 'available'")
    psql "$db" -c "SELECT pg_stat_statements_reset()" >/dev/null
    ticks0=$(server_ticks)
    start=$(date +%s.%N)
    start_nodes
  fi
  local last=-1 still=0
  # Bounded: gives up after 30 s without a delivery. Each look also samples the drain's backends
  # waiting (issue 30, goal 4): for a lock (a row's, a transaction's: Lock), and for one of the
  # server's lightweight locks (a buffer's content, the WAL's insertion: LWLock).
  while [ "$still" -lt 300 ]; do
    read -r done_count backends lock_waiting lwlock_waiting waits < <(psql "$db" -At -F' ' -c \
      "SELECT (SELECT count(*) FROM bulkhead.jobs WHERE state = 'completed' AND id > $first_id),
              (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'),
              count(*) FILTER (WHERE a.wait_event_type = 'Lock'),
              count(*) FILTER (WHERE a.wait_event_type = 'LWLock'),
              coalesce(string_agg(DISTINCT a.wait_event_type || ':' || a.wait_event, ','), '-')
         FROM pg_stat_activity a
        WHERE a.datname = 'pool_bench' AND a.wait_event_type IN ('Lock', 'LWLock')")
    [ "$backends" -gt "$max_backends" ] && max_backends=$backends
    samples=$((samples + 1))
    [ "$lock_waiting" -gt 0 ] && lock_samples=$((lock_samples + 1))
    lwlocks=$((lwlocks + lwlock_waiting))
    [ "$waits" != - ] && wait_kinds="$wait_kinds,$waits"
    [ "$done_count" -ge "$jobs_here" ] && break
    if [ "$done_count" -eq "$last" ]; then still=$((still + 1)); else still=0; last=$done_count; fi
    sleep 0.1
  done
  end=$(date +%s.%N)
  ticks1=$(server_ticks)
  # Planning and execution time the server spent on the node's statements (pg_stat_statements).
  read -r plan_ms exec_ms < <(psql "$db" -At -F' ' -c \
    "SELECT round(sum(total_plan_time)::numeric, 1), round(sum(total_exec_time)::numeric, 1)
       FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
      WHERE d.datname = 'pool_bench' AND s.query NOT LIKE '%pg_stat%'")
  # POOL_BENCH_STATEMENTS=1: where that time went, the node's costliest statements (to stderr).
  if [ "${POOL_BENCH_STATEMENTS:-0}" = 1 ]; then
    echo "  $mode: the costliest statements (calls, times planned, calls a delivery, rows a call;" \
      "ms a call planning and executing, and both a delivery)" >&2
    psql "$db" -At -F' ' -v n="$jobs_here" >&2 <<'SQL'
SELECT format('  %-9s %7s %8s %7s %7s %8s %8s  %s', 'calls', 'plans', 'calls/d', 'rows/c',
              'plan/c', 'exec/c', 'ms/dlv', 'statement')
UNION ALL
(SELECT format('  %-9s %7s %8s %7s %7s %8s %8s  %s', calls, plans, round(calls::numeric / :n, 4),
               round(rows::numeric / greatest(calls, 1), 1),
               round((total_plan_time / greatest(calls, 1))::numeric, 3),
               round((total_exec_time / greatest(calls, 1))::numeric, 3),
               round(((total_plan_time + total_exec_time) / :n)::numeric, 4),
               left(regexp_replace(query, '\s+', ' ', 'g'), 70))
   FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
  WHERE d.datname = 'pool_bench' AND s.query NOT LIKE '%pg_stat%'
  ORDER BY total_plan_time + total_exec_time DESC LIMIT 8)
SQL
  fi
  wait_kinds=$(tr ',' '\n' <<<"$wait_kinds" | sed '/^$/d' | sort | uniq -c | sort -rn |
    awk '{ printf "%s%s %d", (NR > 1 ? ", " : ""), $2, $1 }')
  echo "  $mode: lock waits: $lock_samples of $samples samples had a backend waiting for a lock;" \
    "$(awk -v l="$lwlocks" -v s="$samples" 'BEGIN { printf "%.2f", l / (s > 0 ? s : 1) }')" \
    "backends a sample waiting for a lightweight lock (samples seeing each: ${wait_kinds:-none})" >&2
  # What stretches a drain past its pace: deliveries that needed a second attempt (the first
  # retry waits 5 s) and breakers that opened (a cooldown of 30 s; the nodes log each opening).
  retried=$(psql "$db" -At -c "SELECT count(*) FROM bulkhead.jobs WHERE id > $first_id AND attempt > 1")
  tripped=$(cat "$work"/node-"$mode"-*.log | grep -c '"breaker_opened"' || true)
  for pid in "${node_pids[@]}"; do stop_pid "$pid" "a node"; done
  node_pids=()
  if [ "$explain" != 0 ]; then
    echo "  $mode: the claims' steps (auto_explain of a share $explain of the statements)" >&2
    tail -c +$((log_from + 1)) "$run/server.log" | awk -f load/claim_trace.awk >&2
  fi
  if [ "$done_count" -lt "$jobs_here" ]; then
    tail -n 20 "$work/node-$mode-1.log" "$work/pgbouncer.log" >&2
    echo "$load_script: the $mode drain stopped at $done_count of $jobs_here" >&2
    exit 1
  fi
  # Each drain's backends include this script's own psql (1).
  awk -v n="$jobs_here" -v s="$start" -v e="$end" -v t="$((ticks1 - ticks0))" -v hz="$hz" -v b="$max_backends" \
    -v p="$plan_ms" -v x="$exec_ms" -v r="$retried" -v o="$tripped" \
    'BEGIN { printf "%.0f %.4f %d %.4f %.4f %d %d\n", n / (e - s), t * 1000 / hz / n, b, p / n, x / n, r, o }'
}

if [ "$shape" = production ]; then
  echo "pool_bench: building the production-shape template ($finished finished deliveries, 10,020 tenants)"
  t0=$(date +%s)
  psql "$conn" -c "SET client_min_messages = warning" \
    -c "DROP DATABASE IF EXISTS pool_bench WITH (FORCE)" \
    -c "DROP DATABASE IF EXISTS pool_bench_template" -c "CREATE DATABASE pool_bench_template"
  tdb=$(db_conn pool_bench_template)
  build/bin/bulkhead migrate up --database "$tdb" >/dev/null
  psql "$tdb" -v url="$mock_url" -v finished="$finished" >/dev/null <<'SQL'
INSERT INTO bulkhead.tenants (name, tier) SELECT 'busy-' || g, 'default' FROM generate_series(1, 20) g;
INSERT INTO bulkhead.tenants (name, tier) SELECT 'small-' || g, 'default' FROM generate_series(1, 10000) g;
INSERT INTO bulkhead.channels (tenant_id, url) SELECT id, :'url' FROM bulkhead.tenants;
-- A week of finished deliveries, 30 % to the busy tenants, the rest spread over the small ones.
INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, priority, scheduled_at, attempt,
                           max_attempts, payload, created_at, attempted_at, attempted_by,
                           finished_at, attempts)
SELECT 'default', c.tenant_id, c.id, 'completed', 1, f.at - interval '20 s', 1, 8,
       jsonb_build_object('type', 'order.paid', 'order', i,
                          'text', 'a message of about a hundred bytes, like an order notice'),
       f.at - interval '20 s', f.at - interval '50 ms', 'node-' || (i % 4), f.at,
       jsonb_build_array(jsonb_build_object('attempt', 1, 'at', f.at, 'node', 'node-' || (i % 4),
                                            'duration_ms', 20 + i % 50, 'status', 200))
  FROM generate_series(0, :finished::bigint - 1) i
 CROSS JOIN LATERAL (SELECT now() - interval '7 days' * (1 - i::float8 / greatest(:finished, 1)) AS at) f
  JOIN bulkhead.channels c
    ON c.id = CASE WHEN i % 10 < 3 THEN 1 + i % 20 ELSE 21 + i % 10000 END;
VACUUM ANALYZE bulkhead.job_rows;
VACUUM ANALYZE bulkhead.channels;
VACUUM ANALYZE bulkhead.tenants;
CHECKPOINT;
SQL
  # The claim floor where a week's leader has left it (ADR 0027): at 0 the drains' leader would
  # spend them catching up, 100,000 ids a 2-s round, each walk 0.3-0.6 s (its execution time).
  raise_claim_floor "$tdb" "$finished"
  echo "pool_bench: template built in $(( $(date +%s) - t0 )) s; claim floor $(psql "$tdb" -At -c "SELECT floor_id FROM bulkhead.claim_floor")"
fi
[ "$warm" = 1 ] && shape_label="$shape shape, warm nodes" || shape_label="$shape shape"
echo "pool_bench: $jobs deliveries ($shape_label), $nodes node(s) with $(sed -n -E 's/.*"workers": *([0-9]+).*/\1/p' "$tiers_dir/default.json") default workers each, durability on; load $(load_average all)"
printf '%-6s %-8s %12s %18s %14s %14s %14s %8s %8s\n' pair mode deliveries/s "server CPU ms/dlv" \
  "max backends" "plan ms/dlv" "exec ms/dlv" retried breakers
declare -a direct_rates pooled_rates direct_cpu pooled_cpu
for ((p = 1; p <= pairs; p++)); do
  order="direct pooled"
  [ $((p % 2)) -eq 0 ] && order="pooled direct"
  for mode in $order; do
    read -r rate cpu backends plan exec retried tripped < <(drain "$mode")
    printf '%-6s %-8s %12s %18s %14s %14s %14s %8s %8s   (load %s)\n' "$p" "$mode" "$rate" "$cpu" \
      "$backends" "$plan" "$exec" "$retried" "$tripped" "$(load_average)"
    if [ "$mode" = direct ]; then direct_rates+=("$rate"); direct_cpu+=("$cpu"); else pooled_rates+=("$rate"); pooled_cpu+=("$cpu"); fi
  done
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
awk -v dr="$(med "${direct_rates[@]}")" -v pr="$(med "${pooled_rates[@]}")" \
    -v dc="$(med "${direct_cpu[@]}")" -v pc="$(med "${pooled_cpu[@]}")" \
  'BEGIN { printf "median: direct %.0f/s, %.4f ms CPU/dlv; pooled %.0f/s, %.4f ms CPU/dlv; pooled/direct: rate %.2f, CPU %.2f\n", dr, dc, pr, pc, pr / dr, pc / dc }'
echo "load after: $(load_average all)"
