#!/usr/bin/env bash
# wal_layouts.sh — the WAL and CPU of a delivery's life on candidate row layouts, side by side
# (issue 30, goal 3; ADR 0026). Models in SQL, not the engine: load/wal_life.sh measures the
# engine itself on today's layout, and this script's `today` is its model, to hold the models to.
#
#   load/wal_layouts.sh               # every layout
#   load/wal_layouts.sh today inplace # some of them
#
# One database on the durable embedded PostgreSQL (.run/bench-pg-durable: fsync,
# synchronous_commit and full_page_writes on), WAL_LAYOUTS_JOBS (20000) deliveries over 1,000
# channels, a 100-byte payload. Autovacuum is off for the tables measured. Each layout lives
# in a schema of its own and goes through the same life:
#   enqueue  pgbench, 16 clients, one INSERT per transaction (after a CHECKPOINT)
#   claim    4 clients take the oldest available rows, 50 a transaction, FOR UPDATE SKIP LOCKED
#            (the engine locks about 3 rows for each it takes, load/wal_life.sh; the models 1)
#   result   4 clients finish the claimed rows by id (the primary key, as the engine's result
#            write), 50 a transaction: completed, with finished_at and one attempt-log entry
#   vacuum   VACUUM of the layout's tables
#   prune    a week later (after a CHECKPOINT): every finished row goes
#   vacuum   again
# The layouts:
#   today      bulkhead.jobs before migration 0016 (LIKE … INCLUDING ALL: its columns, CHECKs,
#              all eight indexes; fillfactor 90; a result that appends to the attempt log);
#              prune deletes in batches of 1,000 along jobs_finished
#   inplace    the same columns with the payload and the attempt log last, so that an update's
#              record holds only the changed middle of the row when the new version stays on
#              its page (PostgreSQL logs the common prefix and suffix by length only); fillfactor
#              WAL_LAYOUTS_FILLFACTOR (50), so that it does; the same indexes and prune
#   partitioned  inplace, range-partitioned by id (a partition per WAL_LAYOUTS_JOBS / 4 ids): a
#              week later a partition whose rows have all finished is dropped, no row deleted
#   moved      live rows in place as inplace (no jobs_finished, jobs_discarded); the result
#              deletes the row and inserts its final version into an insert-only log
#              partitioned the same way (its only index the id), which a week later is dropped
#   planned    partitioned without the finished rows' index (a dropped partition needs none)
#              and with a result that writes the delivering attempt's HTTP status and duration
#              into two columns (as the engine does since migration 0016) instead of an
#              attempt-log entry: the layout ADR 0026 chooses
#   lean       a floor, not a design: partitioned with two indexes only (the id, the claim's),
#              and a result that writes no attempt-log entry (state and finished_at only)
#   plain      the application's own row: a three-column table (id, a key, the payload) with
#              its primary key, inserted and, a week later, dropped with its partition
# For each layout and phase: WAL bytes per delivery, of them full-page images (marked * when a
# timed checkpoint fell inside the phase: rerun it), and the
# PostgreSQL CPU per delivery (the postmaster and every process under it); the whole life at
# the end, with the load average before and after.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=load/wal_cost.sh
source load/wal_cost.sh

jobs=$(knob WAL_LAYOUTS_JOBS 20000 count)
fillfactor=$(knob WAL_LAYOUTS_FILLFACTOR 50 count)
layouts=("$@")
[ ${#layouts[@]} -gt 0 ] || layouts=(plain today inplace partitioned moved planned lean)
for layout in "${layouts[@]}"; do
  case $layout in
    plain|today|inplace|partitioned|moved|planned|lean) ;;
    *) usage_error "no layout '$layout' (plain, today, inplace, partitioned, moved, planned, lean)" ;;
  esac
done
channels=1000
part=$((jobs / 4))

load_setup
pg_start .run/bench-pg-durable 1
fresh_database wal_layouts
db=$(db_conn wal_layouts)
data_dir=$(psql "$db" -At -c "SHOW data_directory")
postmaster=$(head -n1 "$data_dir/postmaster.pid")
build/bin/bulkhead migrate up --database "$db" >/dev/null

# The columns of bulkhead.jobs with the payload and the attempt log last.
columns_payload_last="
  id bigint NOT NULL, queue text NOT NULL, tenant_id bigint NOT NULL, channel_id bigint NOT NULL,
  state text NOT NULL DEFAULT 'available', priority smallint NOT NULL DEFAULT 1,
  scheduled_at timestamptz NOT NULL DEFAULT now(), attempt smallint NOT NULL DEFAULT 0,
  max_attempts smallint NOT NULL DEFAULT 8, created_at timestamptz NOT NULL DEFAULT now(),
  attempted_at timestamptz, attempted_by text, finished_at timestamptz, idempotency_key text,
  ordering_key text, last_error text, attempts bulkhead.attempt_log NOT NULL DEFAULT '[]',
  payload bulkhead.job_payload NOT NULL"
# The live indexes of bulkhead.jobs, on table $1 (the final states' two only when $2 is 1).
live_indexes() {
  cat <<SQL
CREATE INDEX ON $1 (queue, priority, scheduled_at, id)
  WHERE state = 'available' AND priority BETWEEN 1 AND 3;
CREATE INDEX ON $1 (channel_id, priority, scheduled_at, id) WHERE state = 'available';
CREATE INDEX ON $1 (attempted_by) WHERE state = 'executing';
CREATE INDEX ON $1 (channel_id, scheduled_at, id) WHERE state = 'parked';
CREATE INDEX ON $1 (channel_id, ordering_key, id)
  WHERE ordering_key IS NOT NULL AND state IN ('available', 'executing', 'parked');
CREATE UNIQUE INDEX ON $1 (channel_id, idempotency_key, id) WHERE idempotency_key IS NOT NULL;
SQL
  [ "$2" != 1 ] || cat <<SQL
CREATE INDEX ON $1 (finished_at, id) WHERE state IN ('completed', 'discarded', 'cancelled');
CREATE INDEX ON $1 (channel_id, finished_at, id) WHERE state = 'discarded';
SQL
}
# Partitions of table $1 covering ids 1 to $jobs, $part ids each.
partitions() {
  local from
  for ((from = 1; from <= jobs; from += part)); do
    echo "CREATE TABLE $1_$from PARTITION OF $1 FOR VALUES FROM ($from) TO ($((from + part)))" \
         "WITH (fillfactor = $fillfactor, autovacuum_enabled = off);"
  done
}

setup() {
  local s=$1
  echo "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $s CASCADE;
        CREATE SCHEMA $s; CREATE SEQUENCE $s.ids; CREATE SEQUENCE $s.results;"
  case $s in
    today)
      echo "CREATE TABLE today.q (LIKE bulkhead.job_rows INCLUDING ALL)
              WITH (fillfactor = 90, autovacuum_enabled = off);"
      echo "ALTER TABLE today.q ALTER id DROP IDENTITY IF EXISTS;" ;;
    inplace)
      echo "CREATE TABLE inplace.q ($columns_payload_last, PRIMARY KEY (id))
              WITH (fillfactor = $fillfactor, autovacuum_enabled = off);"
      live_indexes inplace.q 1 ;;
    plain)
      echo "CREATE TABLE plain.q (id bigint PRIMARY KEY, channel_id bigint NOT NULL,
                                  payload jsonb NOT NULL) PARTITION BY RANGE (id);"
      partitions plain.q ;;
    lean)
      echo "CREATE TABLE lean.q ($columns_payload_last, PRIMARY KEY (id)) PARTITION BY RANGE (id);
            CREATE INDEX ON lean.q (queue, priority, scheduled_at, id)
              WHERE state = 'available' AND priority BETWEEN 1 AND 3;"
      partitions lean.q ;;
    planned)
      # The two new columns ahead of the attempt log and the payload, so that the result's
      # change stays in the row's middle.
      echo "CREATE TABLE planned.q (${columns_payload_last/last_error text,/last_error text,
                                    delivered_status smallint, delivered_ms real,},
                                    PRIMARY KEY (id))
              PARTITION BY RANGE (id);"
      partitions planned.q
      live_indexes planned.q 0
      echo "CREATE INDEX ON planned.q (channel_id, finished_at, id) WHERE state = 'discarded';" ;;
    partitioned)
      echo "CREATE TABLE partitioned.q ($columns_payload_last, PRIMARY KEY (id))
              PARTITION BY RANGE (id);"
      partitions partitioned.q
      live_indexes partitioned.q 1 ;;
    moved)
      echo "CREATE TABLE moved.q ($columns_payload_last, PRIMARY KEY (id))
              WITH (fillfactor = $fillfactor, autovacuum_enabled = off);"
      live_indexes moved.q 0
      echo "CREATE TABLE moved.done ($columns_payload_last, PRIMARY KEY (id))
              PARTITION BY RANGE (id);"
      partitions moved.done ;;
  esac
}

payload=$(payload_100)

work=.run/wal-layouts
mkdir -p "$work"
lsn() { psql "$db" -At -c "SELECT pg_current_wal_lsn()"; }
per() { awk -v a="$1" -v n="$jobs" -v k="${2:-1}" 'BEGIN {printf "%.0f", k * a / n}'; }

# phase LAYOUT NAME COMMAND…: COMMAND between two LSNs; appends "NAME wal images cpu_ms".
phase() {
  local s=$1 name=$2 start end cpu0 cpu1 fpi
  shift 2
  start=$(lsn); cpu0=$(server_cpu "$postmaster")
  "$@"
  cpu1=$(server_cpu "$postmaster"); end=$(lsn)
  local stats
  stats=$(wal_stats "$data_dir" "$start" "$end")  # Type N Record FPI Combined
  fpi=$(awk '$1 == "Total" {print $4}' <<<"$stats")
  # A timed checkpoint inside the phase images the first change to every page after it.
  local mark=
  ! grep -q '^XLOG/CHECKPOINT_ONLINE' <<<"$stats" || mark='*'

  # The record types of at least 10 bytes a delivery.
  awk -v n="$jobs" -v what="$s $name" '
      $1 ~ /\// && $5 >= 10 * n {
        printf "%-30s %-24s %6.2f a delivery, %6.1f bytes (images %.1f)\n", what, $1, $2 / n,
          $5 / n, $4 / n
      }' <<<"$stats"
  rows[$s]+="$name $(per "$(psql "$db" -At -c "SELECT pg_wal_lsn_diff('$end', '$start')")") \
$(per "${fpi:-0}")$mark $(awk -v a="$cpu0" -v b="$cpu1" -v n="$jobs" 'BEGIN {printf "%.3f", 1000 * (b - a) / n}');"
}

run_pgbench() {  # run_pgbench CLIENTS TRANSACTIONS_EACH SCRIPT
  "$pg_bindir/pgbench" -n -c "$1" -j "$(($1 < 2 ? 1 : 2))" -t "$2" -f "$3" "$db" >/dev/null
}
enqueue() {
  local insert="INSERT INTO $1.q (id, queue, tenant_id, channel_id, payload)
                  VALUES (nextval('$1.ids'), 'default', :ch, :ch, '$payload');"
  [ "$1" != plain ] ||
    insert="INSERT INTO plain.q VALUES (nextval('plain.ids'), :ch, '$payload');"
  printf '\\set ch random(1, %s)\n%s\n' "$channels" "$insert" >"$work/enqueue.sql"
  run_pgbench 16 $((jobs / 16)) "$work/enqueue.sql"
}
claim() {
  cat >"$work/claim.sql" <<SQL
WITH c AS (SELECT ctid FROM $1.q
            WHERE queue = 'default' AND state = 'available' AND priority BETWEEN 1 AND 3
              AND scheduled_at <= now()
            ORDER BY queue, priority, scheduled_at, id LIMIT 50 FOR UPDATE SKIP LOCKED)
UPDATE $1.q AS j
   SET state = 'executing', attempt = j.attempt + 1, attempted_at = clock_timestamp(),
       attempted_by = 'node-' || :client_id
  FROM c WHERE j.ctid = c.ctid;
SQL
  run_pgbench 4 $((jobs / 200)) "$work/claim.sql"
  catch_up "$1" available "$work/claim.sql"
}
# catch_up LAYOUT STATE SCRIPT: SCRIPT as each of the 4 clients in turn while rows are in STATE
# (a claim that skipped a locked row took fewer than 50).
catch_up() {
  local id
  while [ "$(psql "$db" -At -c "SELECT count(*) FROM $1.q WHERE state = '$2'")" -gt 0 ]; do
    for id in 0 1 2 3; do psql "$db" -v client_id=$id -f "$3" >/dev/null; done
  done
}
# The result's new row values, for an UPDATE … SET or the log's INSERT.
finished="state = 'completed', finished_at = now(),
          attempts = j.attempts || jsonb_build_array(jsonb_build_object(
            'attempt', j.attempt, 'at', j.attempted_at, 'node', j.attempted_by,
            'duration_ms', 12.5, 'status', 200))"
result() {
  if [ "$1" = moved ]; then
    cat >"$work/result.sql" <<SQL
WITH r AS (SELECT (nextval('moved.results') - 1) * 50 + 1 AS lo),
gone AS (
  DELETE FROM moved.q AS j USING r
   WHERE j.id BETWEEN r.lo AND r.lo + 49 AND j.state = 'executing'
  RETURNING j.*)
INSERT INTO moved.done
SELECT id, queue, tenant_id, channel_id, 'completed', priority, scheduled_at, attempt,
       max_attempts, created_at, attempted_at, attempted_by, now(), idempotency_key,
       ordering_key, last_error,
       attempts || jsonb_build_array(jsonb_build_object(
         'attempt', attempt, 'at', attempted_at, 'node', attempted_by, 'duration_ms', 12.5,
         'status', 200)),
       payload
  FROM gone;
SQL
  else
    local set=$finished
    [ "$1" != lean ] || set="state = 'completed', finished_at = now()"
    [ "$1" != planned ] || set="state = 'completed', finished_at = now(),
                                delivered_status = 200, delivered_ms = 12.5"
    cat >"$work/result.sql" <<SQL
WITH r AS (SELECT (nextval('$1.results') - 1) * 50 + 1 AS lo)
UPDATE $1.q AS j SET $set
  FROM r WHERE j.id BETWEEN r.lo AND r.lo + 49 AND j.state = 'executing';
SQL
  fi
  run_pgbench 4 $((jobs / 200)) "$work/result.sql"
}
vacuum() {
  case $1 in
    moved) psql "$db" -c "VACUUM moved.q" -c "VACUUM moved.done" ;;
    *) psql "$db" -c "VACUUM $1.q" ;;
  esac
}
prune() {
  case $1 in
    today|inplace)
      local n
      while :; do
        n=$(psql "$db" -At -c "DELETE FROM $1.q WHERE id IN (SELECT id FROM $1.q
                 WHERE state IN ('completed', 'discarded', 'cancelled') AND finished_at < now()
                 ORDER BY finished_at, id LIMIT 1000)" -c '\echo :ROW_COUNT')
        [ "$n" -gt 0 ] || break
      done ;;
    partitioned|moved|planned|lean|plain)
      local table=q from
      [ "$1" != moved ] || table="done"
      for ((from = 1; from <= jobs; from += part)); do
        psql "$db" -c "DROP TABLE $1.${table}_$from"
      done ;;
  esac
}

echo "load/wal_layouts.sh: $jobs deliveries over $channels channels, a ${#payload}-byte payload,"\
  "fillfactor $fillfactor where a layout sets it, durability on (fsync $(psql "$db" -At -c "SHOW fsync"),"\
  "synchronous_commit $(psql "$db" -At -c "SHOW synchronous_commit")); load before: $(load_average all)"
declare -A rows
for s in "${layouts[@]}"; do
  setup "$s" | psql "$db" >/dev/null
  psql "$db" -c CHECKPOINT
  phase "$s" enqueue enqueue "$s"
  if [ "$s" = plain ]; then  # nothing between the insert and the week after
    rows[$s]+="claim 0 0 0;result 0 0 0;vacuum 0 0 0;"
  else
    phase "$s" claim claim "$s"
    phase "$s" result result "$s"
    left=$(psql "$db" -At -c "SELECT count(*) FROM $s.q WHERE state <> 'completed'")
    [ "$left" -eq 0 ] || { echo "$load_script: $s: $left rows not completed" >&2; exit 1; }
    phase "$s" vacuum vacuum "$s"
  fi
  psql "$db" -c CHECKPOINT
  phase "$s" prune prune "$s"
  phase "$s" vacuum_after_prune vacuum "$s"
  psql "$db" -c "SET client_min_messages = warning" -c "DROP SCHEMA $s CASCADE"
done
echo "load after: $(load_average all)"
echo
echo "WAL bytes a delivery (of them full-page images), PostgreSQL CPU ms a delivery:"
printf '%-12s' layout
for p in enqueue claim result vacuum prune vacuum_after_prune; do printf ' %18s' "$p"; done
printf ' %18s\n' "whole life"
for s in "${layouts[@]}"; do
  printf '%-12s' "$s"
  total=0 total_cpu=0
  IFS=';' read -ra cells <<<"${rows[$s]}"
  for cell in "${cells[@]}"; do
    read -r _ wal fpi cpu <<<"$cell"
    printf ' %18s' "$wal ($fpi) $cpu"
    total=$((total + wal))
    total_cpu=$(awk -v a="$total_cpu" -v b="$cpu" 'BEGIN {print a + b}')
  done
  printf ' %18s\n' "$total $(printf '%.3f' "$total_cpu")"
done
