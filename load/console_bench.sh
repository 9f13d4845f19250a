#!/usr/bin/env bash
# console_bench.sh — issue 32: the operator console (`bulkhead console`, docs/console.md) beside
# a production-sized jobs table: how fast every page and API call answers, and what a console in
# use costs the claim.
#
#   load/console_bench.sh                       # fill (or reuse), time the console, then the claim
#   CONSOLE_BENCH_SAVE=1 load/console_bench.sh  # the same, the output also kept in
#                                               # load/results/<UTC date>-console-bench.txt
#
# Steps:
#  1. An embedded PostgreSQL with durability on (load/embedded_postgres.sh, BULKHEAD_PG_DURABLE=1)
#     in CONSOLE_BENCH_DIR, a database `console_bench`, `bulkhead migrate up`.
#  2. Production's shape in plain SQL (INSERT … SELECT generate_series, 1,000,000 rows a
#     statement): CONSOLE_BENCH_TENANTS tenants of one channel (every fifth of two) and 4 busy
#     tenants of 5 channels each, which take 30 % of the history; CONSOLE_BENCH_FINISHED jobs
#     finished over the past 7 days in id order (about 1 % discarded after 8 attempts with their
#     attempt log, the rest completed after one); CONSOLE_BENCH_PARKED jobs parked behind 100
#     channels whose breaker is open (a quarter of them on the first, so that one channel holds
#     more than the console's count cap of 100,000 at full size; the breakers' next probe a day
#     away, so no node probes them meanwhile); CONSOLE_BENCH_AVAILABLE retries waiting on the
#     busy channels (available, due 1 h to 1 day from now: no node sends them during the bench).
#     As load/bench/table_bench.cc does, the history's newest twentieth is written after a
#     VACUUM (a table in service has long filled the free space vacuum finds), then VACUUM
#     ANALYZE. Prints the rows by state and the table's and its indexes' sizes. The database is
#     kept: a later run with the same sizes reuses it (CONSOLE_BENCH_REFILL=1 fills afresh).
#  3. `bulkhead console` on a free loopback port with a throwaway admin token.
#  4. Each request below CONSOLE_BENCH_RUNS times with curl (a process, a connection and the
#     bearer token each time), after one untimed first call (its time is shown as "first"):
#     p50, p95 and max ms, and the HTTP status. A p95 over 100 ms is flagged. The overview is
#     asked twice: back to back (answered from the console's 1 s cache) and 1.1 s apart
#     ("#afresh": each made by its query).
#  5. The claim with and without the console, in turn (without, with, hammer, …,
#     CONSOLE_BENCH_PAIRS rounds): CONSOLE_BENCH_JOBS deliveries over 20 tenants of one channel
#     each to bulkhead-mock's /hook/fast, enqueued with bulkhead.enqueue_many into the same
#     big table, drained by one real node (`bulkhead run`, the shipped tiers: 200 workers,
#     share 0.5). "without": the console is not running at all (it counts finished rows every 5 s
#     on its own). "with": the console runs and 4 simulated browsers each ask /api/overview every
#     2 s and /api/channels every 20 s — four operators with the console open. "hammer": the same, and
#     one client asking the deliveries/count requests without pause — far more than any
#     operator, to show what the console can cost at worst. Each request is a curl process,
#     whose own CPU counts against the node on these 2 cores. Each run starts after a VACUUM of
#     the jobs table and a CHECKPOINT; deliveries/s is from the node's start to the last of the
#     burst completed. Also the claim statement's mean time in PostgreSQL (pg_stat_statements),
#     the load average around each run, and the console requests answered during the run.
#     Summary: the medians, with/without and hammer/without.
#
# Knobs (environment):
#   CONSOLE_BENCH_FINISHED   10000000  finished jobs (the history)
#   CONSOLE_BENCH_PARKED     1000000   parked jobs behind the 100 open breakers
#   CONSOLE_BENCH_AVAILABLE  50000     retries waiting on the busy channels
#   CONSOLE_BENCH_TENANTS    20000     ordinary tenants
#   CONSOLE_BENCH_RUNS       20        timed calls of each request
#   CONSOLE_BENCH_JOBS       60000     the burst drained in each run of step 5
#   CONSOLE_BENCH_PAIRS      2         rounds of runs (without, with, hammer) in step 5; 0 skips it
#   CONSOLE_BENCH_DIR        .run/console-bench-pg   the cluster's folder (kept; -durable is not
#                                      appended: the cluster is always started durable)
#   CONSOLE_BENCH_REFILL     0         1: drop the database and fill afresh even if sizes match
#   CONSOLE_BENCH_SAVE       0         1: also write the output to load/results/
#   CONSOLE_BENCH_RUNS_OF    "without with hammer"  the runs of each round in step 5; also
#                                      "idle": the console running, nobody asking it anything;
#                                      "empty": the four browsers asking /api/session, which
#                                      reads no table (both counted with "with" in the summary)
#
# Does not build: it runs build/bin/bulkhead, bulkhead-mock as they are. Everything listens on
# loopback; the console, the node, the mock, the console's load and the cluster are stopped on
# exit. These are 2-core machines: PostgreSQL, the console, the node, the mock and curl share
# them, so run it on a quiet machine and read the ratio of runs taken side by side.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

finished=$(knob CONSOLE_BENCH_FINISHED 10000000 count)
parked=$(knob CONSOLE_BENCH_PARKED 1000000 count)
available=$(knob CONSOLE_BENCH_AVAILABLE 50000 count0)
tenants=$(knob CONSOLE_BENCH_TENANTS 20000 count)
runs=$(knob CONSOLE_BENCH_RUNS 20 count)
jobs=$(knob CONSOLE_BENCH_JOBS 60000 count)
pairs=$(knob CONSOLE_BENCH_PAIRS 2 count0)
dir=$(knob CONSOLE_BENCH_DIR .run/console-bench-pg any)
refill=$(knob CONSOLE_BENCH_REFILL 0 flag)
save=$(knob CONSOLE_BENCH_SAVE 0 flag)
[ "$tenants" -ge 200 ] || usage_error "CONSOLE_BENCH_TENANTS must be 200 or more (100 breakers open among them)"
bin=build/bin
for b in bulkhead bulkhead-mock; do
  [ -x "$bin/$b" ] || { echo "$load_script: $bin/$b is missing; build first (./setup.sh)" >&2; exit 1; }
done
command -v curl >/dev/null || { echo "$load_script: curl is required" >&2; exit 1; }

if [ "$save" = 1 ]; then
  mkdir -p load/results
  results=load/results/$(date -u +%F)-console-bench.txt
  exec > >(tee "$results") 2>&1
  on_exit "echo '$load_script: output written to $results'"
fi

work=.run/console-bench
mkdir -p "$work"
work=$(cd "$work" && pwd)
rm -f "$work"/*.stop "$work"/*.times

# --- 1. the cluster ---------------------------------------------------------------------------
echo "console_bench: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), \
$(nproc) cores, load average $(load_average all)"
pg_start "$dir" 1
sizes="finished=$finished parked=$parked available=$available tenants=$tenants"
db=$(db_conn console_bench)
exists=$(psql "$conn" -tAc "SELECT shobj_description(oid, 'pg_database') FROM pg_database
                             WHERE datname = 'console_bench'")
if [ "$refill" = 1 ] || [ "$exists" != "$sizes" ]; then
  fresh_database console_bench
  fill=1
else
  fill=0
fi
"$bin/bulkhead" migrate up --database "$db" >"$work/migrate.log"
psql "$db" -c "SET client_min_messages = warning" \
  -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"

# elapsed SINCE: seconds since SINCE (date +%s.%N), one decimal.
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# --- 2. the table -----------------------------------------------------------------------------
# finished_rows FROM TO: history rows FROM ≤ i < TO of $finished, in statements of 1,000,000.
# Row i finished at now - 7 days × (1 - i/N) (ids in time order, as a table in service has
# them); three in ten go to the busy channels, the rest spread over the others by a hash.
finished_rows() {
  local from=$1 to=$2 lo hi t
  for ((lo = from; lo < to; lo += 1000000)); do
    hi=$((lo + 1000000 < to ? lo + 1000000 : to))
    t=$(date +%s.%N)
    psql "$db" -v lo="$lo" -v hi="$hi" -v n="$finished" <<'SQL'
INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, priority, scheduled_at, attempt,
                           max_attempts, payload, created_at, attempted_at, attempted_by,
                           finished_at, last_error, attempts)
SELECT 'default', p.tenant_id, p.channel_id, s.state, 1, f.at - interval '20 s',
       CASE s.state WHEN 'completed' THEN 1 ELSE 8 END, 8,
       jsonb_build_object('order', i, 'event', 'order.paid',
                          'text', 'a message of about a hundred bytes, like an order notice'),
       f.at - interval '20 s' - CASE s.state WHEN 'completed' THEN interval '0' ELSE interval '12 h' END,
       f.at - interval '50 ms', 'node-' || (i % 4), f.at,
       CASE s.state WHEN 'discarded' THEN 'HTTP 503 after 8 attempts: upstream unavailable' END,
       CASE s.state
         WHEN 'completed' THEN
           jsonb_build_array(jsonb_build_object('attempt', 1, 'at', f.at, 'node', 'node-' || (i % 4),
                                                'duration_ms', 20 + i % 50, 'status', 200))
         ELSE (SELECT jsonb_agg(jsonb_build_object('attempt', a, 'at', f.at - (8 - a) * interval '90 min',
                                                   'node', 'node-' || (a % 4), 'duration_ms', 35.5,
                                                   'status', 503) ORDER BY a)
                 FROM generate_series(1, 8) a)
       END
  FROM generate_series(:lo::bigint, :hi::bigint - 1) i
 CROSS JOIN LATERAL (SELECT now() - interval '7 days' * (1 - i::float8 / :n) AS at,
                            i % 10 < 3 AS busy) f
 CROSS JOIN LATERAL (SELECT CASE WHEN i % 97 = 5 THEN 'discarded' ELSE 'completed' END AS state) s
  JOIN console_bench.pick p
    ON p.busy = f.busy
   AND p.k = CASE WHEN f.busy THEN (i / 10) % (SELECT count(*) FROM console_bench.pick WHERE busy)
                  ELSE (hashint8(i)::bigint + 2147483648) % (SELECT count(*) FROM console_bench.pick WHERE NOT busy) END;
SQL
    echo "  finished rows $lo..$((hi - 1)) in $(elapsed "$t") s"
  done
}

if [ "$fill" = 1 ]; then
  echo "--- filling: $sizes"
  fill_start=$(date +%s.%N)
  psql "$db" -v tenants="$tenants" <<'SQL'
CREATE SCHEMA console_bench;
-- Tenants acme-00001, globex-00002 …: the console's search finds them by a name's substring.
INSERT INTO bulkhead.tenants (name)
SELECT (ARRAY['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark', 'wayne', 'wonka'])[1 + g % 8]
       || '-' || lpad(g::text, 5, '0')
  FROM generate_series(1, :tenants) g;
INSERT INTO bulkhead.tenants (name) SELECT 'busy-' || g FROM generate_series(1, 4) g;
INSERT INTO bulkhead.channels (tenant_id, url)
SELECT t.id, 'https://hooks.example.com/' || t.name || '/' || k
  FROM bulkhead.tenants t
 CROSS JOIN LATERAL generate_series(1, CASE WHEN t.name LIKE 'busy-%' THEN 5
                                            WHEN t.id % 5 = 0 THEN 2 ELSE 1 END) k
 ORDER BY t.id, k;
-- The channels the history goes to, numbered 0… among the busy ones and among the others.
CREATE TABLE console_bench.pick AS
SELECT (t.name LIKE 'busy-%') AS busy,
       (row_number() OVER (PARTITION BY t.name LIKE 'busy-%' ORDER BY c.id) - 1)::bigint AS k,
       c.id AS channel_id, c.tenant_id
  FROM bulkhead.channels c JOIN bulkhead.tenants t ON t.id = c.tenant_id;
ALTER TABLE console_bench.pick ADD PRIMARY KEY (busy, k);
ANALYZE console_bench.pick;
-- 100 open breakers among the ordinary channels, scattered; opened a day ago, the next probe a
-- day away. The UPDATE writes each one's breaker history (the channels_breaker_history trigger).
CREATE TABLE console_bench.open AS
SELECT channel_id, tenant_id, row_number() OVER (ORDER BY channel_id) - 1 AS k
  FROM (SELECT channel_id, tenant_id FROM console_bench.pick WHERE NOT busy
         ORDER BY (channel_id * 7919) % 10007, channel_id LIMIT 100) o;
UPDATE bulkhead.channels c
   SET breaker_state = 'open', breaker_changed_at = now() - interval '1 day',
       breaker_probe_at = now() + interval '1 day', breaker_trips = 3,
       breaker_reason = '5 failures in a row, last: timeout: no answer within 10000 ms'
  FROM console_bench.open o WHERE c.id = o.channel_id;
UPDATE bulkhead.breaker_events SET at = now() - interval '1 day';
SQL
  echo "  tenants and channels in $(elapsed "$fill_start") s"
  recent=$((finished / 20))
  finished_rows 0 $((finished - recent))
  t=$(date +%s.%N)
  psql "$db" -c "VACUUM bulkhead.job_rows"
  echo "  VACUUM in $(elapsed "$t") s"
  finished_rows $((finished - recent)) "$finished"
  t=$(date +%s.%N)
  # Parked: a quarter on the first open channel, the rest round the other 99; created over the
  # day since the breakers opened. Then the busy channels' waiting retries.
  psql "$db" -v parked="$parked" -v available="$available" <<'SQL'
INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, priority, scheduled_at, payload,
                           created_at)
SELECT 'default', o.tenant_id, o.channel_id, 'parked', 3, f.at,
       jsonb_build_object('order', i, 'event', 'order.paid',
                          'text', 'a message of about a hundred bytes, like an order notice'), f.at
  FROM generate_series(0, :parked::bigint - 1) i
 CROSS JOIN LATERAL (SELECT now() - interval '1 day' * (1 - i::float8 / :parked) AS at,
                            CASE WHEN i < :parked / 4 THEN 0 ELSE 1 + i % 99 END AS k) f
  JOIN console_bench.open o ON o.k = f.k;
INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, priority, scheduled_at, attempt,
                           payload, created_at, attempted_at, attempted_by, last_error, attempts)
SELECT 'default', p.tenant_id, p.channel_id, 'available', 1,
       now() + interval '1 hour' + interval '23 hours' * (i::float8 / greatest(:available, 1)),
       1, jsonb_build_object('order', i, 'event', 'order.paid',
                             'text', 'a message of about a hundred bytes, like an order notice'),
       now() - interval '5 min', now() - interval '4 min', 'node-1', 'HTTP 503',
       jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now() - interval '4 min',
                                            'node', 'node-1', 'duration_ms', 35.5, 'status', 503))
  FROM generate_series(0, :available::bigint - 1) i
  JOIN console_bench.pick p ON p.busy AND p.k = i % 20;
SQL
  echo "  parked and available rows in $(elapsed "$t") s"
  t=$(date +%s.%N)
  psql "$db" -c "VACUUM ANALYZE bulkhead.job_rows" -c "VACUUM ANALYZE bulkhead.channels" \
    -c "VACUUM ANALYZE bulkhead.tenants" -c "CHECKPOINT" \
    -c "COMMENT ON DATABASE console_bench IS '$sizes'"
  echo "  VACUUM ANALYZE and CHECKPOINT in $(elapsed "$t") s"
  echo "  filled in $(elapsed "$fill_start") s"
else
  echo "--- reusing the database console_bench ($sizes; CONSOLE_BENCH_REFILL=1 fills afresh)"
fi
psql "$db" -P footer=off -c "SELECT state, count(*) AS jobs FROM bulkhead.jobs GROUP BY 1 ORDER BY 1" \
  -c "SELECT (SELECT count(*) FROM bulkhead.tenants) AS tenants,
             (SELECT count(*) FROM bulkhead.channels) AS channels,
             (SELECT count(*) FROM bulkhead.channels WHERE breaker_state <> 'closed') AS open_breakers,
             pg_size_pretty((SELECT sum(pg_table_size(relid)) FROM pg_partition_tree('bulkhead.job_rows')
                              WHERE isleaf)) AS jobs_table,
             pg_size_pretty((SELECT sum(pg_indexes_size(relid)) FROM pg_partition_tree('bulkhead.job_rows')
                              WHERE isleaf)) AS jobs_indexes"

# What the requests ask about.
q() { psql "$db" -tAc "$1"; }
busy_channel=$(q "SELECT channel_id FROM console_bench.pick WHERE busy AND k = 0")
busy_tenant=$(q "SELECT tenant_id FROM console_bench.pick WHERE busy AND k = 0")
small_tenant=$(q "SELECT tenant_id FROM console_bench.pick WHERE NOT busy ORDER BY k OFFSET 1000 LIMIT 1")
open_channel=$(q "SELECT channel_id FROM console_bench.open WHERE k = 0")
mid_channel=$(q "SELECT id FROM bulkhead.channels ORDER BY id
                  OFFSET (SELECT count(*) / 2 FROM bulkhead.channels) LIMIT 1")
delivery=$(q "SELECT id FROM bulkhead.jobs WHERE state = 'discarded' AND channel_id = $busy_channel
               ORDER BY finished_at DESC, id DESC LIMIT 1")
open_parked=$(q "SELECT count(*) FROM bulkhead.jobs WHERE state = 'parked' AND channel_id = $open_channel")
day_ago=$(date -u -d '1 day ago' +%FT%TZ)
echo "asking about: busy channel $busy_channel (tenant $busy_tenant), small tenant $small_tenant,"
echo "  open-breaker channel $open_channel ($open_parked parked), mid channel $mid_channel,"
echo "  discarded delivery $delivery, since $day_ago"

# --- 3. the console ---------------------------------------------------------------------------
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
umask_was=$(umask)
umask 077
printf '%s\n' "$token" >"$work/admin.token"
umask "$umask_was"
console_pid=
port=
console_start() {
  local try i code
  for ((try = 0; try < 5; try++)); do
    port=$(free_port)
    "$bin/bulkhead" console --listen "127.0.0.1:$port" --token-file "$work/admin.token" \
      --database "$db" 2>>"$work/console.log" &
    console_pid=$!
    for ((i = 0; i < 100; i++)); do
      kill -0 "$console_pid" 2>/dev/null || break
      code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
               "http://127.0.0.1:$port/api/session" || true)
      [ "$code" = 200 ] && return 0
      sleep 0.1
    done
    stop_pid "$console_pid" "the console"
    console_pid=
  done
  tail -n 20 "$work/console.log" >&2
  echo "$load_script: the console did not start; its log is $work/console.log" >&2
  exit 1
}
console_stop() {
  [ -n "$console_pid" ] && stop_pid "$console_pid" "the console"
  console_pid=
}
on_exit 'console_stop'
: >"$work/console.log"
console_start
echo "console on 127.0.0.1:$port (log: $work/console.log)"

# --- 4. every request, timed -----------------------------------------------------------------
# get PATH: one request; prints "STATUS SECONDS".
get() {
  curl -s -o /dev/null -w '%{http_code} %{time_total}\n' --max-time 30 \
    -H "Authorization: Bearer $token" "http://127.0.0.1:$port$1" || echo "000 30"
}
requests=(
  "/"
  "/assets/app.js"
  "/api/overview"
  "/api/overview#afresh"
  "/api/channels"
  "/api/channels?q=globex-0123"
  "/api/channels?q=acme"
  "/api/channels?after=$mid_channel"
  "/api/channels/$open_channel"
  "/api/channels/$busy_channel"
  "/api/deliveries"
  "/api/deliveries?state=discarded&channel=$busy_channel"
  "/api/deliveries?state=completed&since=$day_ago"
  "/api/deliveries?state=parked&channel=$open_channel"
  "/api/deliveries?state=available"
  "/api/deliveries?tenant=$busy_tenant"
  "/api/deliveries?tenant=$small_tenant"
  "/api/deliveries/$delivery"
  "/api/deliveries/count?action=replay&channel=$busy_channel"
  "/api/deliveries/count?action=replay&tenant=$busy_tenant"
  "/api/deliveries/count?action=cancel&channel=$open_channel"
  "/api/actions"
)
echo
echo "--- each request $runs times (after one untimed first call); load average $(load_average all)"
slow=0
rows=()
for path in "${requests[@]}"; do
  read -r _ first < <(get "$path")
  : >"$work/request.times"
  for ((r = 0; r < runs; r++)); do
    # "#afresh": 1.1 s apart, past the console's 1 s cache of the overview, so that each is
    # made by its query (the plain row shows what the browsers polling it together get).
    [[ $path == *"#afresh" ]] && sleep 1.1
    get "$path" >>"$work/request.times"
  done
  row=$(sort -n -k2 "$work/request.times" | awk -v path="$path" -v first="$first" '
    { s[NR] = $2 * 1000; codes[$1]++ }
    END {
      n = NR
      p50 = s[int((n * 50 + 99) / 100)]; p95 = s[int((n * 95 + 99) / 100)]
      for (c in codes) status = status (status == "" ? "" : ",") c
      printf "%-62s %7.1f %7.1f %7.1f %7.1f  %s%s\n", path, first * 1000, p50, p95, s[n], status,
             (p95 > 100 ? "  <-- p95 over 100 ms" : "")
    }')
  [[ $row == *"over 100 ms"* ]] && slow=$((slow + 1))
  rows+=("$row")
done
printf '%-62s %7s %7s %7s %7s  %s\n' request "first" "p50 ms" "p95 ms" "max ms" status
printf '%s\n' "${rows[@]}"
echo "load average after: $(load_average all); requests with p95 over 100 ms: $slow"

# --- 5. the claim with and without the console -----------------------------------------------
if [ "$pairs" -eq 0 ]; then
  echo
  echo "CONSOLE_BENCH_PAIRS=0: the claim's side by side skipped"
  exit 0
fi
console_stop
mock_pid=
node_pid=
load_pids=()
# shellcheck disable=SC2016  # expanded when the script exits
on_exit '[ -n "$mock_pid" ] && stop_pid "$mock_pid" "the mock"'
# shellcheck disable=SC2016
on_exit '[ -n "$node_pid" ] && stop_pid "$node_pid" "the node"'
# shellcheck disable=SC2016
on_exit 'touch "$work/load.stop"; for pid in "${load_pids[@]}"; do stop_pid "$pid" "console load"; done'
rm -f "$work/mock.port"
"$bin/bulkhead-mock" --listen 127.0.0.1:0 --port-file "$work/mock.port" >"$work/mock.log" 2>&1 &
# shellcheck disable=SC2034  # read by the exit action
mock_pid=$!
for ((i = 0; i < 100; i++)); do [ -s "$work/mock.port" ] && break; sleep 0.1; done
[ -s "$work/mock.port" ] || { cat "$work/mock.log" >&2; echo "$load_script: the mock did not start" >&2; exit 1; }
mock_url=http://127.0.0.1:$(cat "$work/mock.port")/hook/fast

# The burst's 20 tenants of one channel each (made once, pointed at this run's mock).
psql "$db" -v url="$mock_url" <<'SQL'
INSERT INTO bulkhead.tenants (name)
SELECT 'drain-' || g FROM generate_series(1, 20) g
    ON CONFLICT (name) DO NOTHING;
INSERT INTO bulkhead.channels (tenant_id, url)
SELECT t.id, :'url' FROM bulkhead.tenants t
 WHERE t.name LIKE 'drain-%' AND NOT EXISTS (SELECT FROM bulkhead.channels c WHERE c.tenant_id = t.id);
UPDATE bulkhead.channels c SET url = :'url'
  FROM bulkhead.tenants t WHERE t.id = c.tenant_id AND t.name LIKE 'drain-%';
SQL
drain_channels=$(q "SELECT array_agg(c.id ORDER BY c.id) FROM bulkhead.channels c
                     JOIN bulkhead.tenants t ON t.id = c.tenant_id WHERE t.name LIKE 'drain-%'")

rm -rf "$work/tiers"
mkdir -p "$work/tiers"
cp tiers/*.json "$work/tiers/"
cat >"$work/node.json" <<JSON
{
  "node": "console-bench",
  "tiers_dir": "tiers",
  "allowed_networks": ["127.0.0.0/8", "::1/128"],
  "metrics_listen": "127.0.0.1:$(free_port)",
  "shutdown_grace_ms": 2000,
  "retention_ms": 2592000000
}
JSON

# browser: an operator with the console open, as app.js asks: the overview every 2 s (its
# refresh), and the channels list every 20 s (a move to another page and back). As "session"
# (the "empty" runs) it asks /api/session instead, which reads no table: the same requests,
# processes and connections without the console's queries.
browser() {
  local i
  for ((i = 0; i < 3600; i++)); do
    [ -e "$work/load.stop" ] && return 0
    if [ "${1:-}" = session ]; then
      get /api/session
      ((i % 10 == 9)) && get /api/session
    else
      get /api/overview
      ((i % 10 == 9)) && get /api/channels
    fi
    sleep 2
  done
}
# counter: the bulk actions' counts, one after another without pause.
counter() {
  local i
  for ((i = 0; i < 1000000; i++)); do
    [ -e "$work/load.stop" ] && return 0
    get "/api/deliveries/count?action=replay&channel=$busy_channel"
    get "/api/deliveries/count?action=replay&tenant=$busy_tenant"
    get "/api/deliveries/count?action=cancel&channel=$open_channel"
  done
}

# drain WHICH: one run; appends "WHICH RATE SECONDS CLAIM_MS LOAD_BEFORE LOAD_AFTER
# CONSOLE_REQUESTS CONSOLE_P50 CONSOLE_P95" to $summary_rows.
summary_rows=()
drain() {
  local which=$1 t start i lo n done_ left lb la rate claim_ms pid creq=0 cp50=- cp95=-
  # The same start for every run: last run's dead rows vacuumed, nothing left to checkpoint.
  psql "$db" -c "VACUUM bulkhead.job_rows" -c "CHECKPOINT"
  t=$(date +%s.%N)
  {
    echo '\o /dev/null'
    for ((lo = 0; lo < jobs; lo += 1000)); do
      n=$((jobs - lo < 1000 ? jobs - lo : 1000))
      echo "SELECT bulkhead.enqueue_many(
              ARRAY(SELECT ('$drain_channels'::bigint[])[1 + i % 20] FROM generate_series($lo, $((lo + n - 1))) i),
              ARRAY(SELECT jsonb_build_object('order', i, 'event', 'order.paid', 'text',
                      'a message of about a hundred bytes, like an order notice')
                      FROM generate_series($lo, $((lo + n - 1))) i));"
    done
  } | psql "$db"
  echo "  enqueued $jobs in $(elapsed "$t") s"
  psql "$db" -o /dev/null -c "SELECT pg_stat_statements_reset()"
  rm -f "$work/load.stop" "$work"/load-*.times
  load_pids=()
  if [ "$which" != without ]; then
    : >"$work/console.log"
    console_start
    if [ "$which" = empty ]; then
      for i in 1 2 3 4; do browser session >"$work/load-browser-$i.times" & load_pids+=($!); done
    elif [ "$which" != idle ]; then
      for i in 1 2 3 4; do browser >"$work/load-browser-$i.times" & load_pids+=($!); done
    fi
    if [ "$which" = hammer ]; then
      counter >"$work/load-counter.times" & load_pids+=($!)
    fi
  fi
  lb=$(load_average)
  start=$(date +%s.%N)
  "$bin/bulkhead" run --config "$work/node.json" --database "$db" 2>"$work/node.log" &
  node_pid=$!
  done_=0
  for ((i = 0; i < 36000; i++)); do  # 0.1 s each: an hour at most
    sleep 0.1
    if ! kill -0 "$node_pid" 2>/dev/null; then
      tail -n 20 "$work/node.log" >&2
      echo "$load_script: the node stopped; its log is $work/node.log" >&2
      exit 1
    fi
    left=$(q "SELECT EXISTS (SELECT FROM bulkhead.jobs WHERE state = 'available'
                              AND channel_id = ANY ('$drain_channels'::bigint[]))
                 OR EXISTS (SELECT FROM bulkhead.jobs WHERE state = 'executing')")
    [ "$left" = f ] && { done_=1; break; }
  done
  t=$(elapsed "$start")
  la=$(load_average)
  [ "$done_" = 1 ] || { echo "$load_script: the burst did not drain within an hour" >&2; exit 1; }
  stop_pid "$node_pid" "the node"
  node_pid=
  if [ "$which" != without ]; then
    touch "$work/load.stop"
    for pid in "${load_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    load_pids=()
    console_stop
    read -r creq cp50 cp95 < <(cat "$work"/load-*.times | sort -n -k2 | awk '
      { s[NR] = $2 * 1000 }
      END { n = NR; if (n == 0) { print 0, "-", "-"; exit }
            printf "%d %.1f %.1f\n", n, s[int((n * 50 + 99) / 100)], s[int((n * 95 + 99) / 100)] }')
  fi
  rate=$(awk -v j="$jobs" -v s="$t" 'BEGIN { printf "%.0f", j / s }')
  claim_ms=$(q "SELECT coalesce(round((sum(total_exec_time) / nullif(sum(calls), 0))::numeric, 3), 0)
                       || ' ' || coalesce(sum(calls), 0)
                  FROM pg_stat_statements WHERE query LIKE 'WITH RECURSIVE flying AS%'")
  echo "  $which: drained in $t s: $rate deliveries/s; claim ${claim_ms% *} ms a call" \
       "(${claim_ms#* } calls); load $lb -> $la; console requests $creq (p50 $cp50 ms, p95 $cp95 ms)"
  summary_rows+=("$which $rate $t ${claim_ms% *} $lb $la $creq $cp50 $cp95")
}

echo
echo "--- the claim without and with the console: $jobs deliveries over 20 channels, one node"
echo "    (200 workers, share 0.5), beside the table above; $pairs pair(s), load average $(load_average all)"
for ((p = 1; p <= pairs; p++)); do
  for which in ${CONSOLE_BENCH_RUNS_OF:-without with hammer}; do
    echo "--- pair $p, $which the console"
    drain "$which"
  done
done

median() {
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo
echo "the claim without and with the console (console requests: those the simulated browsers and,"
echo "in the hammer runs, the counting client had answered during the drain, and their p50 and p95)"
printf '%-8s %12s %9s %14s %11s %10s %16s %8s %8s\n' run deliveries/s seconds "claim ms/call" \
  "load before" "load after" "console requests" "p50 ms" "p95 ms"
without=() with=() hammer=()
for row in "${summary_rows[@]}"; do
  read -r which rate secs claim lb la creq cp50 cp95 <<<"$row"
  printf '%-8s %12s %9s %14s %11s %10s %16s %8s %8s\n' "$which" "$rate" "$secs" "$claim" "$lb" "$la" \
    "$creq" "$cp50" "$cp95"
  case "$which" in
    with | idle | empty) with+=("$rate") ;;
    hammer) hammer+=("$rate") ;;
    *) without+=("$rate") ;;
  esac
done
mo=$(median "${without[@]}")
mw=$(median "${with[@]}")
mh=$(median "${hammer[@]}")
echo "median deliveries/s: without ${without[*]} -> $mo; with ${with[*]} -> $mw;" \
     "hammer ${hammer[*]} -> $mh"
echo "with/without $(awk -v a="$mw" -v b="$mo" 'BEGIN { printf "%.3f", a / b }');" \
     "hammer/without $(awk -v a="$mh" -v b="$mo" 'BEGIN { printf "%.3f", a / b }')"
echo "load average at the end: $(load_average all)"
