#!/usr/bin/env bash
# wal_life.sh — what one delivery costs PostgreSQL over its whole life, phase by phase, and in
# which WAL records (issue 30, goal 3: at most 600 bytes of WAL for a 100-byte payload).
#
#   load/wal_life.sh          # WAL_LIFE_JOBS (20000) deliveries over WAL_LIFE_CHANNELS (1000)
#   WAL_LIFE_SQL="ALTER TABLE bulkhead.jobs_first SET (fillfactor = 50)" load/wal_life.sh
#                             # the same after SQL of one's own: an option tried on the schema
#   WAL_LIFE_SHAPE=production load/wal_life.sh
#                             # production's shape: beside a week of finished deliveries, over
#                             # many small tenants and a few busy ones, two nodes draining while
#                             # the application enqueues
#
# One freshly migrated database on the durable embedded PostgreSQL (.run/bench-pg-durable:
# fsync, synchronous_commit and full_page_writes on), one tenant per channel, a 100-byte
# payload. Autovacuum is off for bulkhead.jobs so that each vacuum falls in a phase of its own.
# WAL_LIFE_SHAPE=production changes four things:
#   - the table first holds WAL_LIFE_HISTORY (1,000,000) deliveries finished over the past week
#     (written with the triggers off, then vacuumed and analyzed);
#   - channels are 10 busy tenants and WAL_LIFE_CHANNELS (10,000) tenants of one channel each,
#     half the deliveries to each group;
#   - WAL_LIFE_NODES (2) nodes run while pgbench enqueues: one phase, enqueue_and_drain, from the
#     first enqueue to the last delivery;
#   - with WAL_LIFE_RANGES=0, the prune deletes the week-old rows, as many as the burst, oldest
#     first (with ranges it drops the burst's range, as in the lab's shape).
# The phases (a CHECKPOINT before the first and before the prune: a delivery is enqueued,
# claimed and finished within seconds, one checkpoint cycle, but pruned a week later, when the
# first change to each page after a checkpoint logs the whole page):
#   enqueue      pgbench, 16 clients, SELECT bulkhead.enqueue(channel, payload), one per
#                transaction: the application's commits
#   drain        one `bulkhead run` node (shipped tiers, build/bin/bulkhead) delivers every job
#                to bulkhead-mock (/hook/fast): the claims, the result writes, and the node's
#                own upkeep while it runs (heartbeat, samples)
#   vacuum       VACUUM bulkhead.jobs: the versions the claim and the result left
#   prune        the leader's, a week later: since migration 0021 the burst has a range of
#                its own (added before the enqueue, as the leader keeps one ahead), and the
#                prune deletes its keys (ForgetRangeKeys) and drops it (drop_job_range).
#                With WAL_LIFE_RANGES=0, or a build before 0021: the PruneFinished statement
#                with a retention of 0, in batches of 1,000, oldest first, until it has
#                deleted as many rows as the burst (in the lab's shape, the burst itself)
#   vacuum       again: the deleted rows
# For each phase it prints the WAL bytes per delivery (pg_current_wal_lsn() around it), of them
# the full-page images, PostgreSQL's CPU per delivery (the postmaster and every process under
# it), and the WAL record types that make up at least 2 % of the phase (pg_waldump --stats),
# each in bytes per delivery. The load average is printed before and after.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=load/wal_cost.sh
source load/wal_cost.sh

jobs=$(knob WAL_LIFE_JOBS 20000 count)
shape=${WAL_LIFE_SHAPE:-lab}
case $shape in
  lab) channels=$(knob WAL_LIFE_CHANNELS 1000 count); history=0; nodes=1 ;;
  production)
    channels=$(( $(knob WAL_LIFE_CHANNELS 10000 count) + 10 ))
    history=$(knob WAL_LIFE_HISTORY 1000000 count0)
    nodes=$(knob WAL_LIFE_NODES 2 count) ;;
  *) usage_error "WAL_LIFE_SHAPE must be lab or production, not '$shape'" ;;
esac

load_setup
pg_start .run/bench-pg-durable 1
data_dir=${conn#host=}
data_dir=${data_dir%% *}/data
# A root-run cluster may live elsewhere (embedded_postgres.sh maps DIR); ask the server.
data_dir=$(psql "$conn" -At -c "SHOW data_directory" 2>/dev/null || echo "$data_dir")
fresh_database wal_life
db=$(db_conn wal_life)
build/bin/bulkhead migrate up --database "$db" >/dev/null
psql "$db" <<SQL
DO \$\$ DECLARE leaf regclass; BEGIN
  FOR leaf IN SELECT relid FROM pg_partition_tree('bulkhead.job_rows') WHERE isleaf LOOP
    EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = off)', leaf);
  END LOOP;
END \$\$;
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, $channels) g;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT id, 'http://127.0.0.1:9/' FROM bulkhead.tenants ORDER BY id;
SQL
[ -z "${WAL_LIFE_SQL:-}" ] || psql "$db" -c "$WAL_LIFE_SQL"
if [ "$history" -gt 0 ]; then
  # A week of finished deliveries, oldest first, as the engine leaves them.
  psql "$db" <<SQL
SET session_replication_role = replica;
INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, payload, attempt, created_at,
                           scheduled_at, attempted_at, attempted_by, finished_at, attempts)
SELECT 'default', c.tenant_id, c.id, 'completed',
       jsonb_build_object('n', g, 'text', 'a message of about a hundred bytes, like an order'),
       1, f.at, f.at, f.at, 'history', f.at,
       jsonb_build_array(jsonb_build_object('attempt', 1, 'at', f.at, 'node', 'history',
                                            'duration_ms', 21.5, 'status', 200))
  FROM generate_series(1, $history) g
  JOIN bulkhead.channels c ON c.id = 1 + g % $channels
 CROSS JOIN LATERAL (SELECT now() - interval '7 days' * (1 - g::float8 / $history)) AS f(at);
SQL
  psql "$db" -c "VACUUM ANALYZE bulkhead.job_rows"
fi

# The claim floor (ADR 0027) where a leader that has run beside this history leaves it: past
# every finished job. The leader's own statements, by hand, in rounds as it runs them; skipped
# by a build from before migration 0017.
# shellcheck source=load/statement.sh
source load/statement.sh
if [ -n "$(statement advance_claim_floor)" ]; then
  raise_claim_floor "$db" "$history"
  echo "claim floor before the burst: $(psql "$db" -At -c "SELECT floor_id FROM bulkhead.claim_floor")"
fi

payload=$(payload_100)
[ ${#payload} -eq 100 ] || usage_error "the payload is ${#payload} bytes, not 100"

work=.run/wal-life
mkdir -p "$work"
postmaster=$(head -n1 "$data_dir/postmaster.pid")

lsn() { psql "$db" -At -c "SELECT pg_current_wal_lsn()"; }

# phase NAME COMMAND…: runs COMMAND between two LSNs and prints what it cost per delivery.
declare -a summary
phase() {
  local name=$1 start end cpu0 cpu1 bytes fpi
  shift
  case $name in enqueue*|prune) psql "$db" -c CHECKPOINT ;; esac
  start=$(lsn)
  cpu0=$(server_cpu "$postmaster")
  "$@"
  cpu1=$(server_cpu "$postmaster")
  end=$(lsn)
  local stats
  stats=$(wal_stats "$data_dir" "$start" "$end")  # Type N Record FPI Combined
  bytes=$(psql "$db" -At -c "SELECT pg_wal_lsn_diff('$end', '$start')")
  fpi=$(awk '$1 == "Total" {print $4}' <<<"$stats")
  printf '%s: %.0f WAL bytes a delivery (full-page images %.0f), PostgreSQL CPU %.3f ms a delivery\n' \
    "$name" "$(awk -v b="$bytes" -v n="$jobs" 'BEGIN {print b / n}')" \
    "$(awk -v b="${fpi:-0}" -v n="$jobs" 'BEGIN {print b / n}')" \
    "$(awk -v a="$cpu0" -v b="$cpu1" -v n="$jobs" 'BEGIN {print 1000 * (b - a) / n}')"
  awk -v n="$jobs" -v all="$bytes" '
      $1 ~ /\// && $5 >= 0.02 * all {
        printf "    %-28s %8d records  %7.1f bytes a delivery (images %.1f)\n", $1, $2, $5 / n, $4 / n
      }' <<<"$stats"
  summary+=("$name $(awk -v b="$bytes" -v n="$jobs" 'BEGIN {printf "%.0f", b / n}') \
$(awk -v b="${fpi:-0}" -v n="$jobs" 'BEGIN {printf "%.0f", b / n}') \
$(awk -v a="$cpu0" -v b="$cpu1" -v n="$jobs" 'BEGIN {printf "%.3f", 1000 * (b - a) / n}')")
}

enqueue() {
  local script=$work/enqueue.sql
  if [ "$shape" = production ]; then  # half to 10 busy tenants, half over the small ones
    printf '%s\n' '\set busy random(1, 10)' "\\set small random(11, $channels)" \
      '\set which random(0, 1)' \
      "SELECT bulkhead.enqueue(CASE WHEN :which = 0 THEN :busy ELSE :small END, '$payload');" \
      >"$script"
  else
    printf '\\set ch random(1, %s)\nSELECT bulkhead.enqueue(:ch, %s);\n' "$channels" \
      "'$payload'" >"$script"
  fi
  "$pg_bindir/pgbench" -n -c 16 -j 2 -t $((jobs / 16)) -f "$script" "$db" >/dev/null
  local extra=$((jobs - jobs / 16 * 16))
  [ "$extra" -eq 0 ] || "$pg_bindir/pgbench" -n -c "$extra" -t 1 -f "$script" "$db" >/dev/null
}

# The receiver, started before the phases so that pointing the channels at it is not counted.
start_mock() {
  rm -f "$work/mock.port"
  build/bin/bulkhead-mock --listen 127.0.0.1:0 --port-file "$work/mock.port" \
    >"$work/mock.log" 2>&1 &
  local pid=$!
  on_exit "kill $pid 2>/dev/null"
  for _ in $(seq 100); do [ -s "$work/mock.port" ] && break; sleep 0.1; done
  psql "$db" -c "UPDATE bulkhead.channels
                    SET url = 'http://127.0.0.1:$(cat "$work/mock.port")/hook/fast'"
  # Vacuumed now, so that autovacuum does not do it inside a phase: in production's shape the
  # 10,010 versions that UPDATE leaves (and the tenants' inserts) drew autovacuum into the
  # enqueue-and-drain phase in two of four runs, 630-760 bytes a delivery of full-page images
  # that were the bench's own.
  psql "$db" -c "VACUUM bulkhead.channels, bulkhead.tenants"
}
node_pids=()
start_nodes() {
  local sock=${db#host=}
  sock=${sock%% *}
  local i
  for ((i = 1; i <= nodes; i++)); do
    cat >"$work/node-$i.json" <<JSON
{"node": "wal-life-$i", "database": "postgresql://bulkhead@/wal_life?host=$sock",
 "tiers_dir": "$PWD/tiers", "tiers": ["default"], "allowed_networks": ["127.0.0.0/8"]}
JSON
    build/bin/bulkhead run --config "$work/node-$i.json" >"$work/node-$i.log" 2>&1 &
    node_pids+=($!)
  done
}
# wait_drained: until no job is waiting or in flight (at most 10 minutes), then stops the
# nodes, and fails unless every job is completed. The poll counts through the partial indexes
# of waiting and executing jobs, with JIT off as the nodes have it: a count of the jobs that are
# not completed read the whole table every half second, a parallel seq scan of the week's rows
# on the same 2 cores as the drain it measures (JIT-compiled, on ranges of ids).
wait_drained() {
  local left pid
  for _ in $(seq 1200); do
    left=$(psql "$db" -At -c "SET jit = off" -c "
      SELECT (SELECT count(*) FROM bulkhead.jobs WHERE state = 'available')
           + (SELECT count(*) FROM bulkhead.jobs WHERE state = 'executing')
           + (SELECT count(*) FROM bulkhead.jobs WHERE state = 'parked')")
    [ "$left" -eq 0 ] && break
    sleep 0.5
  done
  for pid in "${node_pids[@]}"; do stop_pid "$pid" "a node"; done
  node_pids=()
  [ "$left" -eq 0 ] || { echo "$load_script: $left deliveries not completed in 10 minutes" >&2; exit 1; }
  left=$(psql "$db" -At -c "SELECT count(*) FROM bulkhead.jobs WHERE state <> 'completed'")
  [ "$left" -eq 0 ] || { echo "$load_script: $left deliveries not completed" >&2; exit 1; }
}
drain() { start_nodes; wait_drained; }
enqueue_and_drain() { start_nodes; enqueue; wait_drained; }

vacuum() { psql "$db" -c "VACUUM bulkhead.job_rows"; }

prune() {
  if [ -n "$burst_range" ]; then  # the leader's: the keys of the range, then the range
    psql "$db" -At -c "PREPARE forget (bigint, bigint) AS $(statement forget_range_keys)" \
      -c "EXECUTE forget($burst_low, $burst_high)" \
      -c "SELECT bulkhead.drop_job_range('$burst_range', now())"
    return
  fi
  local sql pruned
  sql=$(statement prune_finished)
  [ -n "$sql" ] || { echo "$load_script: the build has no prune_finished statement" >&2; exit 1; }
  # As many rows as the burst, oldest first: the history's, where there is one. Every id (the
  # bounds of migration 0021; a build before it declares two parameters and uses those).
  local gone=0
  while [ "$gone" -lt "$jobs" ]; do
    # Its count of rows deleted, the first line: since migration 0019 the statement returns it
    # (and ROW_COUNT is 1); before, a plain DELETE printed nothing and ROW_COUNT was the count.
    pruned=$(psql "$db" -Atq \
               -c "PREPARE prune (double precision, bigint, bigint, bigint) AS $sql" \
               -c "EXECUTE prune(0, $((jobs - gone < 1000 ? jobs - gone : 1000)),
                                 -9223372036854775808, 9223372036854775807)" \
               -c '\echo :ROW_COUNT' | head -n1)
    [ "${pruned:-0}" -gt 0 ] || break
    gone=$((gone + pruned))
  done
}

# The burst's own range of ids (migration 0021), as the leader adds one ahead of the enqueues,
# so that the prune drops it whole; WAL_LIFE_RANGES=0, or a build before 0021, puts the burst in
# the table as it is and prunes row by row.
burst_range=
if [ "${WAL_LIFE_RANGES:-1}" = 1 ] && [ -n "$(statement drop_job_range)" ]; then
  burst_low=$(psql "$db" -At -c "SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value
                                        END FROM bulkhead.jobs_id_seq")
  burst_high=$((burst_low + jobs + 100000))  # ahead, as the leader keeps it
  burst_range=$(psql "$db" -At -c "SELECT bulkhead.add_job_range($burst_low, $burst_high)")
fi

echo "load/wal_life.sh: $shape shape, $jobs deliveries over $channels channels beside $history"\
  "finished, $nodes node(s), a ${#payload}-byte payload,"\
  "durability on (fsync $(psql "$db" -At -c "SHOW fsync"), synchronous_commit"\
  "$(psql "$db" -At -c "SHOW synchronous_commit"), full_page_writes"\
  "$(psql "$db" -At -c "SHOW full_page_writes")); load before: $(load_average all)"
psql "$db" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
start_mock
if [ "$shape" = production ]; then
  psql "$db" -c "SELECT pg_stat_statements_reset()" >/dev/null
  phase enqueue_and_drain enqueue_and_drain
else
  phase enqueue enqueue
  psql "$db" -c "SELECT pg_stat_statements_reset()" >/dev/null
  phase drain drain
fi
echo "  the drain's statements by WAL (pg_stat_statements; the first words of each):"
psql "$db" -At -F ' ' -c "
  SELECT format('    %8s calls %7s rows %6s ms a call %7s WAL records a delivery %6s bytes a delivery: %s',
                calls, rows, round(mean_exec_time::numeric, 2),
                round(wal_records::numeric / $jobs, 2), round(wal_bytes / $jobs, 1),
                left(regexp_replace(query, '\s+', ' ', 'g'), 60))
    FROM pg_stat_statements
   WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND wal_bytes >= $jobs
   ORDER BY wal_bytes DESC"
phase vacuum vacuum
# What the burst's rows take on disk once drained and vacuumed: the cost of a lower fillfactor
# (migration 0022) beside the WAL it saves. Its own range only, so the lab's shape alone.
if [ -n "$burst_range" ]; then
  psql "$db" -At -F ' ' -c "
    SELECT format('  the burst''s range after the vacuum: heap %s bytes a delivery, indexes %s; %s',
                  pg_relation_size(c.oid) / $jobs, pg_indexes_size(c.oid) / $jobs,
                  coalesce(array_to_string(array(SELECT o FROM unnest(c.reloptions) o
                                                  WHERE o LIKE 'fillfactor=%'), ''),
                           'fillfactor=100'))
      FROM pg_class c WHERE c.oid = 'bulkhead.$burst_range'::regclass"
fi
phase prune prune
phase vacuum_after_prune vacuum
echo "load after: $(load_average all)"
echo
printf '%-20s %12s %10s %12s\n' phase WAL/delivery of_images CPU_ms/delivery
total_wal=0 total_cpu=0
for row in "${summary[@]}"; do
  read -r name wal fpi cpu <<<"$row"
  printf '%-20s %12s %10s %12s\n' "$name" "$wal" "$fpi" "$cpu"
  total_wal=$((total_wal + wal))
  total_cpu=$(awk -v a="$total_cpu" -v b="$cpu" 'BEGIN {print a + b}')
done
printf '%-20s %12s %10s %12.3f\n' "whole life" "$total_wal" "" "$total_cpu"
