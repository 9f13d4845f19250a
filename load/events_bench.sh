#!/usr/bin/env bash
# events_bench.sh — issue 33: what event types, rate limits and ordering keys cost, measured
# beside a table that holds a week of finished deliveries, with durability on
# (docs/events-rates-ordering.md; the figures are in docs/benchmarks.md).
#
#   load/events_bench.sh                  # every mode below, in this order
#   load/events_bench.sh fanout           # publish() to a tenant's 1,000 channels, against the
#                                         # same 1,000 deliveries by enqueue_many() and by 1,000
#                                         # enqueue() calls, each one transaction (pgbench,
#                                         # EVENTS_BENCH_CALLS calls each): ms a call, deliveries/s
#                                         # and WAL bytes a delivery
#   load/events_bench.sh limited          # one node draining EVENTS_BENCH_JOBS deliveries over 20
#                                         # unlimited channels, without and with a channel limited
#                                         # to EVENTS_BENCH_RATE/s and a backlog of 20 s enqueued
#                                         # just before them, in turn, EVENTS_BENCH_PAIRS times:
#                                         # the unlimited channels' deliveries/s, and what the
#                                         # limited one sent meanwhile
#   load/events_bench.sh nodes            # the limited channel's backlog alone drained by 1, 2
#                                         # and 4 nodes (EVENTS_BENCH_NODES; the fleet's workers
#                                         # add up to 200): the rate it got, the most in any 1 s,
#                                         # and the jobs sent back for want of a token
#   load/events_bench.sh ordering         # one channel's EVENTS_BENCH_KEYED deliveries under
#                                         # EVENTS_BENCH_KEYS ordering keys, against as many without
#                                         # a key, in turn, EVENTS_BENCH_PAIRS times: deliveries/s,
#                                         # the claim's and the result write's time in PostgreSQL
#                                         # per 1,000 deliveries, and a check that every key's
#                                         # deliveries went one at a time in order
#   EVENTS_BENCH_SAVE=1 load/events_bench.sh   # also keep the output in
#                                         # load/results/<UTC date>-events-bench.txt
#
# The table: EVENTS_BENCH_FINISHED jobs finished over the past 7 days on 2,000 channels of 1,000
# tenants (plain SQL, VACUUM ANALYZE before any run, so the statistics are those of a table in
# service). Kept between runs with the same size. Every run starts after a VACUUM and a
# CHECKPOINT; deliveries/s is from the node's start to the last of its deliveries completed.
#
# Knobs (environment):
#   EVENTS_BENCH_FINISHED  1000000   finished jobs in the table (the history)
#   EVENTS_BENCH_CALLS     50        pgbench calls of each fan-out variant
#   EVENTS_BENCH_JOBS      60000     the unlimited burst of `limited`
#   EVENTS_BENCH_RATE      50        the limited channel's rate_limit_per_s
#   EVENTS_BENCH_NODES     "1 2 4"   fleet sizes of `nodes`
#   EVENTS_BENCH_KEYS      10000     ordering keys of `ordering`
#   EVENTS_BENCH_KEYED     30000     deliveries of `ordering` (spread evenly over the keys)
#   EVENTS_BENCH_PAIRS     2         rounds of `limited` and `ordering`
#   EVENTS_BENCH_DIR       .run/events-bench-pg   the cluster (always durable)
#   EVENTS_BENCH_SAVE      0         1: also write the output to load/results/
#
# Does not build: it runs build/bin/bulkhead and bulkhead-mock as they are. Everything listens
# on loopback and is stopped on exit. These are 2-core machines: run it on a quiet one, and read
# the ratios of runs taken side by side.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=load/statement.sh
source "$(dirname "$0")/statement.sh"  # raise_claim_floor

finished=$(knob EVENTS_BENCH_FINISHED 1000000 count0)
calls=$(knob EVENTS_BENCH_CALLS 50 count)
jobs=$(knob EVENTS_BENCH_JOBS 60000 count)
rate=$(knob EVENTS_BENCH_RATE 50 count)
fleet_sizes=$(knob EVENTS_BENCH_NODES "1 2 4" counts)
keys=$(knob EVENTS_BENCH_KEYS 10000 count)
keyed=$(knob EVENTS_BENCH_KEYED 30000 count)
pairs=$(knob EVENTS_BENCH_PAIRS 2 count)
dir=$(knob EVENTS_BENCH_DIR .run/events-bench-pg any)
save=$(knob EVENTS_BENCH_SAVE 0 flag)
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(fanout limited nodes ordering)
for m in "${modes[@]}"; do
  case "$m" in fanout | limited | nodes | ordering) ;; *) usage_error "unknown mode '$m'" ;; esac
done
bin=build/bin
for b in bulkhead bulkhead-mock; do
  [ -x "$bin/$b" ] || { echo "$load_script: $bin/$b is missing; build first (./setup.sh)" >&2; exit 1; }
done

if [ "$save" = 1 ]; then
  mkdir -p load/results
  results=load/results/$(date -u +%F)-events-bench.txt
  exec > >(tee "$results") 2>&1
  on_exit "echo '$load_script: output written to $results'"
fi
work=.run/events-bench
mkdir -p "$work"
work=$(cd "$work" && pwd)

echo "events_bench: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')\
$(git diff --quiet HEAD 2>/dev/null || echo ' + uncommitted changes'), $(nproc) cores, load average $(load_average all)"
pg_start "$dir" 1
db=$(db_conn events_bench)
q() { psql "$db" -tAc "$1"; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
median() {
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# --- the table --------------------------------------------------------------------------------
exists=$(psql "$conn" -tAc "SELECT shobj_description(oid, 'pg_database') FROM pg_database
                             WHERE datname = 'events_bench'")
if [ "$exists" != "finished=$finished" ]; then
  fresh_database events_bench
  "$bin/bulkhead" migrate up --database "$db" >"$work/migrate.log"
  t=$(date +%s.%N)
  psql "$db" -v finished="$finished" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
INSERT INTO bulkhead.tenants (name) SELECT 'history-' || g FROM generate_series(1, 1000) g;
INSERT INTO bulkhead.channels (tenant_id, url)
SELECT t.id, 'https://hooks.example.com/' || t.name || '/' || k
  FROM bulkhead.tenants t CROSS JOIN generate_series(1, 2) k ORDER BY t.id, k;
INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, priority, scheduled_at, attempt,
                           payload, created_at, attempted_at, attempted_by, finished_at, attempts)
SELECT 'default', c.tenant_id, c.id, 'completed', 1, f.at - interval '1 s', 1,
       jsonb_build_object('type', 'order.paid', 'order', i,
                          'text', 'a message of about a hundred bytes, like an order notice'),
       f.at - interval '1 s', f.at - interval '50 ms', 'node-' || (i % 4), f.at,
       jsonb_build_array(jsonb_build_object('attempt', 1, 'at', f.at, 'node', 'node-' || (i % 4),
                                            'duration_ms', 20, 'status', 200))
  FROM generate_series(0, :finished::bigint - 1) i
 CROSS JOIN LATERAL (SELECT now() - interval '7 days' * (1 - i::float8 / greatest(:finished, 1)) AS at) f
  JOIN (SELECT id, tenant_id, row_number() OVER (ORDER BY id) - 1 AS k FROM bulkhead.channels) c
    ON c.k = i % 2000;
SQL
  psql "$db" -c "VACUUM ANALYZE bulkhead.job_rows" -c "VACUUM ANALYZE bulkhead.channels" \
    -c "CHECKPOINT" -c "COMMENT ON DATABASE events_bench IS 'finished=$finished'"
  # The claim floor where a week's leader leaves it (ADR 0027): at 0 the first runs' leader
  # would spend them catching up, 100,000 ids a round (load/statement.sh).
  raise_claim_floor "$db" "$finished"
  echo "--- filled: $finished finished jobs in $(elapsed "$t") s"
else
  "$bin/bulkhead" migrate up --database "$db" >"$work/migrate.log"
  echo "--- reusing the database events_bench (finished=$finished)"
fi
psql "$db" -P footer=off -c "SELECT state, count(*) AS jobs FROM bulkhead.jobs GROUP BY 1 ORDER BY 1" \
  -c "SELECT pg_size_pretty((SELECT sum(pg_table_size(relid)) FROM pg_partition_tree('bulkhead.job_rows')
                              WHERE isleaf)) AS jobs_table,
             pg_size_pretty((SELECT sum(pg_indexes_size(relid)) FROM pg_partition_tree('bulkhead.job_rows')
                              WHERE isleaf)) AS jobs_indexes"

# A tenant NAME with N channels to URL; prints the tenant's id. Reuses one made before.
tenant_with_channels() {
  psql "$db" -tA -v name="$1" -v n="$2" -v url="$3" <<'SQL'
INSERT INTO bulkhead.tenants (name) VALUES (:'name') ON CONFLICT (name) DO NOTHING;
INSERT INTO bulkhead.channels (tenant_id, url)
SELECT t.id, :'url' FROM bulkhead.tenants t, generate_series(1, :n) g
 WHERE t.name = :'name' AND NOT EXISTS (SELECT FROM bulkhead.channels c WHERE c.tenant_id = t.id);
UPDATE bulkhead.channels c SET url = :'url', rate_limit_per_s = NULL, event_types = NULL
  FROM bulkhead.tenants t WHERE t.id = c.tenant_id AND t.name = :'name';
SELECT id FROM bulkhead.tenants WHERE name = :'name';
SQL
}
# Removes what a run left (everything not finished in the history), so each run starts alike.
reset_runs() {
  psql "$db" -c "DELETE FROM bulkhead.jobs WHERE channel_id IN
                   (SELECT c.id FROM bulkhead.channels c JOIN bulkhead.tenants t ON t.id = c.tenant_id
                     WHERE t.name NOT LIKE 'history-%')" \
    -c "TRUNCATE bulkhead.rate_buckets" -c "VACUUM bulkhead.job_rows" -c "CHECKPOINT"
}

# --- fan-out ----------------------------------------------------------------------------------
fanout() {
  echo
  echo "=== fanout: one event to a tenant's 1,000 channels, one transaction a call, $calls calls each"
  local tenant variant lsn0 lsn1 rows out lat tps wal
  tenant=$(tenant_with_channels fanout 1000 https://hooks.example.com/fanout)
  local payload='{"type": "order.created", "data": {"order": 42, "text": "a message of about a hundred bytes, like an order notice"}}'
  cat >"$work/publish.sql" <<SQL
SELECT bulkhead.publish($tenant, 'order.created', '$payload');
SQL
  cat >"$work/enqueue_many.sql" <<SQL
SELECT bulkhead.enqueue_many(ARRAY(SELECT id FROM bulkhead.channels WHERE tenant_id = $tenant ORDER BY id),
                             ARRAY(SELECT '$payload'::jsonb FROM bulkhead.channels WHERE tenant_id = $tenant));
SQL
  cat >"$work/enqueue_loop.sql" <<SQL
DO \$\$ DECLARE c bigint; BEGIN
  FOR c IN SELECT id FROM bulkhead.channels WHERE tenant_id = $tenant ORDER BY id LOOP
    PERFORM bulkhead.enqueue(c, '$payload');
  END LOOP; END \$\$;
SQL
  printf '%-14s %10s %14s %16s %16s\n' variant "ms a call" "deliveries/s" "WAL B/delivery" "load before"
  for variant in publish enqueue_many enqueue_loop; do
    reset_runs >/dev/null
    local lb
    lb=$(load_average)
    lsn0=$(q "SELECT pg_current_wal_lsn()")
    out=$("$pg_bindir/pgbench" -n -f "$work/$variant.sql" -t "$calls" -c 1 "$db" 2>&1)
    lsn1=$(q "SELECT pg_current_wal_lsn()")
    rows=$(q "SELECT count(*) FROM bulkhead.jobs WHERE tenant_id = $tenant")
    lat=$(awk '/latency average/ { print $4 }' <<<"$out")
    tps=$(awk '/^tps/ { print $3 }' <<<"$out")
    wal=$(q "SELECT round(pg_wal_lsn_diff('$lsn1', '$lsn0') / greatest($rows, 1))")
    printf '%-14s %10s %14s %16s %16s\n' "$variant" "$lat" \
      "$(awk -v t="$tps" -v r="$rows" -v c="$calls" 'BEGIN { printf "%.0f", t * r / c }')" "$wal" "$lb"
  done
  echo "(each: $calls calls × 1,000 deliveries; a 100-byte payload; durability on)"
}

# --- the node and the mock --------------------------------------------------------------------
mock_pid=
node_pids=()
node_ports=()
# shellcheck disable=SC2016  # expanded when the script exits
on_exit 'for pid in "${node_pids[@]}"; do stop_pid "$pid" "a node"; done'
# shellcheck disable=SC2016
on_exit '[ -n "$mock_pid" ] && stop_pid "$mock_pid" "the mock"'
mock_url=
start_mock() {
  [ -n "$mock_pid" ] && return 0
  rm -f "$work/mock.port"
  "$bin/bulkhead-mock" --listen 127.0.0.1:0 --port-file "$work/mock.port" >"$work/mock.log" 2>&1 &
  mock_pid=$!
  for ((i = 0; i < 100; i++)); do [ -s "$work/mock.port" ] && break; sleep 0.1; done
  [ -s "$work/mock.port" ] || { cat "$work/mock.log" >&2; echo "$load_script: the mock did not start" >&2; exit 1; }
  mock_url=http://127.0.0.1:$(cat "$work/mock.port")/hook/fast
}
# start_nodes N: N nodes whose default tier's workers add up to 200.
start_nodes() {
  local n=$1 k port
  rm -rf "$work/tiers"
  mkdir -p "$work/tiers"
  cp tiers/*.json "$work/tiers/"
  sed -i -E "s/\"workers\": *[0-9]+/\"workers\": $((200 / n))/" "$work/tiers/default.json"
  node_pids=()
  node_ports=()
  for ((k = 1; k <= n; k++)); do
    port=$(free_port)
    cat >"$work/node-$k.json" <<JSON
{"node": "events-bench-$k", "tiers_dir": "tiers", "allowed_networks": ["127.0.0.0/8", "::1/128"],
 "metrics_listen": "127.0.0.1:$port", "shutdown_grace_ms": 2000, "retention_ms": 2592000000}
JSON
    "$bin/bulkhead" run --config "$work/node-$k.json" --database "$db" 2>"$work/node-$k.log" &
    node_pids+=($!)
    node_ports+=("$port")
  done
}
# rate_limited_total: bulkhead_rate_limited_total summed over the running nodes.
rate_limited_total() {
  local port sum=0 v
  for port in "${node_ports[@]}"; do
    v=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^bulkhead_rate_limited_total/ { s += $2 } END { print s + 0 }')
    sum=$(awk -v a="$sum" -v b="$v" 'BEGIN { print a + b }')
  done
  echo "$sum"
}
stop_nodes() {
  local pid
  for pid in "${node_pids[@]}"; do stop_pid "$pid" "a node"; done
  node_pids=()
}
# wait_drained WHERE: until no job WHERE is available or executing (an hour at most).
wait_drained() {
  local i k left
  for ((i = 0; i < 36000; i++)); do
    sleep 0.1
    for k in "${!node_pids[@]}"; do
      kill -0 "${node_pids[$k]}" 2>/dev/null || {
        tail -n 20 "$work/node-$((k + 1)).log" >&2
        echo "$load_script: a node stopped; its log is $work/node-$((k + 1)).log" >&2
        exit 1
      }
    done
    left=$(q "SELECT EXISTS (SELECT FROM bulkhead.jobs WHERE state IN ('available', 'executing')
                              AND ($1))")
    [ "$left" = f ] && return 0
  done
  echo "$load_script: not drained within an hour" >&2
  exit 1
}
# burst CHANNELS N [KEYS]: N deliveries over the channels (an array literal) in order, by
# enqueue_many in batches of 1,000 (by enqueue with ordering key 'k' || i % KEYS when KEYS).
burst() {
  local channels=$1 n=$2 k=${3:-} lo m
  {
    echo '\o /dev/null'
    for ((lo = 0; lo < n; lo += 1000)); do
      m=$((n - lo < 1000 ? n - lo : 1000))
      if [ -n "$k" ]; then
        echo "BEGIN; SELECT bulkhead.enqueue(('$channels'::bigint[])[1], jsonb_build_object('order', i,
                'text', 'a message of about a hundred bytes, like an order notice'),
                ordering_key => 'k' || (i % $k)) FROM generate_series($lo, $((lo + m - 1))) i; COMMIT;"
      else
        echo "SELECT bulkhead.enqueue_many(
                ARRAY(SELECT ('$channels'::bigint[])[1 + i % cardinality('$channels'::bigint[])]
                        FROM generate_series($lo, $((lo + m - 1))) i),
                ARRAY(SELECT jsonb_build_object('order', i, 'text',
                        'a message of about a hundred bytes, like an order notice')
                        FROM generate_series($lo, $((lo + m - 1))) i));"
      fi
    done
  } | psql "$db"
}
# limited_stats CHANNEL SINCE: "SENT SECONDS RATE MOST_IN_1S" of the channel's attempts since.
limited_stats() {
  q "WITH a AS (SELECT attempted_at AS at FROM bulkhead.jobs
                 WHERE channel_id = $1 AND attempted_at >= '$2' AND attempt >= 1)
     SELECT count(*) || ' ' || round(extract(epoch FROM max(at) - min(at))::numeric, 1) || ' '
            || round((count(*) - 1) / nullif(extract(epoch FROM max(at) - min(at)), 0)::numeric, 1) || ' '
            || (SELECT max(n) FROM (SELECT (SELECT count(*) FROM a b WHERE b.at >= a.at
                                                               AND b.at < a.at + interval '1 s') AS n
                                     FROM a) w)
       FROM a"
}

# --- limited ------------------------------------------------------------------------------
limited() {
  echo
  echo "=== limited: $jobs deliveries over 20 unlimited channels (20 tenants), one node (200"
  echo "    workers, share 0.5), without and with a channel limited to $rate/s holding $((rate * 20))"
  echo "    deliveries enqueued just before them; $pairs pair(s)"
  start_mock
  local t tenants=() k free limited_tenant limited_ch
  for ((k = 1; k <= 20; k++)); do tenants+=("$(tenant_with_channels "drain-$k" 1 "$mock_url")"); done
  free=$(q "SELECT array_agg(c.id ORDER BY c.id) FROM bulkhead.channels c JOIN bulkhead.tenants t
             ON t.id = c.tenant_id WHERE t.name LIKE 'drain-%'")
  limited_tenant=$(tenant_with_channels limited 1 "$mock_url")
  limited_ch=$(q "SELECT id FROM bulkhead.channels WHERE tenant_id = $limited_tenant")
  psql "$db" -c "UPDATE bulkhead.channels SET rate_limit_per_s = $rate WHERE id = $limited_ch"
  local rows=() p which start secs lb la since sent
  for ((p = 1; p <= pairs; p++)); do
    for which in without with; do
      reset_runs >/dev/null
      # The limited backlog first, at the front of the queue: every claim meets it before the
      # burst behind it.
      [ "$which" = with ] && burst "{$limited_ch}" $((rate * 20))
      burst "$free" "$jobs"
      psql "$db" -o /dev/null -c "SELECT pg_stat_statements_reset()"
      since=$(q "SELECT now()")
      lb=$(load_average)
      start=$(date +%s.%N)
      start_nodes 1
      wait_drained "channel_id = ANY ('$free'::bigint[])"
      secs=$(elapsed "$start")
      la=$(load_average)
      sent="-"
      [ "$which" = with ] && sent="$(limited_stats "$limited_ch" "$since") $(rate_limited_total)"
      stop_nodes
      rows+=("$which $(awk -v j="$jobs" -v s="$secs" 'BEGIN { printf "%.0f", j / s }') $secs $lb $la $sent")
      echo "  pair $p, $which: ${rows[-1]}"
    done
  done
  echo
  printf '%-8s %22s %8s %12s %11s   %s\n' run "unlimited deliveries/s" seconds "load before" "load after" \
    "limited channel: sent, over s, rate/s, most in 1 s, jobs sent back"
  local wo=() wi=() r
  for r in "${rows[@]}"; do
    read -r which dps secs lb la rest <<<"$r"
    printf '%-8s %22s %8s %12s %11s   %s\n' "$which" "$dps" "$secs" "$lb" "$la" "${rest:-}"
    if [ "$which" = with ]; then wi+=("$dps"); else wo+=("$dps"); fi
  done
  echo "median unlimited deliveries/s: without ${wo[*]} -> $(median "${wo[@]}"); with ${wi[*]} -> $(median "${wi[@]}");" \
       "with/without $(awk -v a="$(median "${wi[@]}")" -v b="$(median "${wo[@]}")" 'BEGIN { printf "%.3f", a / b }')"
}

# --- nodes --------------------------------------------------------------------------------
nodes() {
  echo
  echo "=== nodes: a channel limited to $rate/s with a backlog of $((rate * 30)), drained by each"
  echo "    fleet size (the fleet's workers add up to 200), nothing else sent"
  start_mock
  local limited_tenant limited_ch n since start secs
  limited_tenant=$(tenant_with_channels limited 1 "$mock_url")
  limited_ch=$(q "SELECT id FROM bulkhead.channels WHERE tenant_id = $limited_tenant")
  psql "$db" -c "UPDATE bulkhead.channels SET rate_limit_per_s = $rate WHERE id = $limited_ch"
  printf '%-6s %6s %10s %8s %12s %14s %12s\n' nodes sent "over s" "rate/s" "most in 1 s" "jobs sent back" "load before"
  for n in $fleet_sizes; do
    reset_runs >/dev/null
    burst "{$limited_ch}" $((rate * 30))
    since=$(q "SELECT now()")
    local lb
    lb=$(load_average)
    start_nodes "$n"
    wait_drained "channel_id = $limited_ch"
    local back
    back=$(rate_limited_total)
    stop_nodes
    read -r sent over got most <<<"$(limited_stats "$limited_ch" "$since")"
    printf '%-6s %6s %10s %8s %12s %14s %12s\n' "$n" "$sent" "$over" "$got" "$most" "$back" "$lb"
  done
  echo "(the limit: $rate/s; at most $((rate * 2)) in any second: one second's burst and one second's rate)"
}

# --- ordering -----------------------------------------------------------------------------
ordering() {
  echo
  echo "=== ordering: $keyed deliveries to one channel, under $keys ordering keys and without"
  echo "    keys, in turn, one node (200 workers, share 0.5: the channel's cap is 100); $pairs pair(s)"
  start_mock
  local tenant ch rows=() p which start secs lb la claim bad
  tenant=$(tenant_with_channels ordered 1 "$mock_url")
  ch=$(q "SELECT id FROM bulkhead.channels WHERE tenant_id = $tenant")
  for ((p = 1; p <= pairs; p++)); do
    for which in unkeyed keyed; do
      reset_runs >/dev/null
      if [ "$which" = keyed ]; then burst "{$ch}" "$keyed" "$keys"; else burst "{$ch}" "$keyed"; fi
      psql "$db" -o /dev/null -c "SELECT pg_stat_statements_reset()"
      lb=$(load_average)
      start=$(date +%s.%N)
      start_nodes 1
      wait_drained "channel_id = $ch"
      secs=$(elapsed "$start")
      la=$(load_average)
      stop_nodes
      # The claim's and the result write's time in PostgreSQL, per 1,000 deliveries.
      claim=$(q "SELECT coalesce(round((sum(total_exec_time) / $keyed * 1000)::numeric, 1), 0)
                   FROM pg_stat_statements WHERE query LIKE 'WITH RECURSIVE flying AS%'")
      record=$(q "SELECT coalesce(round((sum(total_exec_time) / $keyed * 1000)::numeric, 1), 0)
                    FROM pg_stat_statements WHERE query LIKE 'UPDATE bulkhead.job_rows AS j%SET state = CASE WHEN r.delivered%'")
      # Every key's deliveries one at a time in order: each attempt began after the one before
      # it (by id) had finished.
      bad=$(q "SELECT count(*) FROM (SELECT attempted_at,
                                            lag(finished_at) OVER (PARTITION BY ordering_key ORDER BY id) AS prev
                                       FROM bulkhead.jobs WHERE channel_id = $ch AND ordering_key IS NOT NULL) s
                WHERE attempted_at < prev")
      rows+=("$which $(awk -v j="$keyed" -v s="$secs" 'BEGIN { printf "%.0f", j / s }') $secs $claim $record $lb $la $bad")
      echo "  pair $p, $which: ${rows[-1]}"
    done
  done
  echo
  printf '%-8s %14s %8s %20s %21s %12s %11s %13s\n' run deliveries/s seconds "claim ms/1,000 jobs" \
    "result ms/1,000 jobs" "load before" "load after" "out of order"
  local un=() ke=() r
  for r in "${rows[@]}"; do
    read -r which dps secs claim record lb la bad <<<"$r"
    printf '%-8s %14s %8s %20s %21s %12s %11s %13s\n' "$which" "$dps" "$secs" "$claim" "$record" "$lb" "$la" \
      "$bad"
    if [ "$which" = keyed ]; then ke+=("$dps"); else un+=("$dps"); fi
  done
  echo "median deliveries/s: unkeyed ${un[*]} -> $(median "${un[@]}"); keyed ${ke[*]} -> $(median "${ke[@]}");" \
       "keyed/unkeyed $(awk -v a="$(median "${ke[@]}")" -v b="$(median "${un[@]}")" 'BEGIN { printf "%.3f", a / b }')"
}

for m in "${modes[@]}"; do "$m"; done
echo
echo "load average at the end: $(load_average all)"
