#!/usr/bin/env bash
# ranges_cost.sh — what splitting bulkhead.jobs into ranges of ids costs the engine, before the
# migration of ADR 0026 moves a live table onto them: the drain's PostgreSQL CPU a delivery, the
# claim's and the result write's time a call, and the enqueue's CPU, with the table whole and
# split into RANGES_COST_COUNTS ranges, one load/wal_life.sh run each, one after the other.
#
#   load/ranges_cost.sh                          # the lab's shape: 1 (the table as migrated),
#                                                # 8 and 32 ranges
#   RANGES_COST_COUNTS="1 8 64" load/ranges_cost.sh
#   WAL_LIFE_SHAPE=production load/ranges_cost.sh
#                                                # beside a week of finished deliveries, two
#                                                # nodes draining while the application enqueues
#
# The ranges are tests/schema/jobs_in_ranges.sql's (the layout the tests run on with
# BULKHEAD_TEST_TEMPLATE_SQL): the migrated table attached as the first, the others created
# empty, and a default range above them. Each range holds (history + burst) / N ids, so in
# production's shape the week's rows fill the first ranges and the burst the last, as ranges
# made ahead by the day would; in the lab's shape the burst spreads over all of them, the worst
# case for the claim, whose window merges every range's jobs_claim. Autovacuum is off on every
# range, as wal_life.sh turns it off on the table. Other knobs are wal_life.sh's (WAL_LIFE_JOBS,
# WAL_LIFE_CHANNELS, WAL_LIFE_HISTORY, WAL_LIFE_NODES).
#
# The claim runs a generic plan (ClaimStore sets plan_cache_mode), which on PostgreSQL 15 locks
# every range at each execution and prunes at run time; the result write names its rows by id.
# Each run's whole output is kept in .run/ranges-cost/N.txt; the table at the end puts the runs
# side by side, with the load average before each. Between runs it waits RANGES_COST_SETTLE
# seconds (60), so that the load before a run is not the last run's own.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

check_knobs counts RANGES_COST_COUNTS
settle=$(knob RANGES_COST_SETTLE 60 count0)
counts=${RANGES_COST_COUNTS:-1 8 32}
counts=${counts//,/ }
shape=${WAL_LIFE_SHAPE:-lab}
jobs=$(knob WAL_LIFE_JOBS 20000 count)
history=0
[ "$shape" != production ] || history=$(knob WAL_LIFE_HISTORY 1000000 count0)

out=.run/ranges-cost
mkdir -p "$out"
fixture=$(cat tests/schema/jobs_in_ranges.sql)
# After the fixture: autovacuum off on every range (the parent takes no storage options).
no_autovacuum="DO \$\$
DECLARE r regclass;
BEGIN
  FOR r IN SELECT inhrelid::regclass FROM pg_inherits
            WHERE inhparent = 'bulkhead.job_rows'::regclass LOOP
    EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = off)', r);
  END LOOP;
END \$\$;"

# field FILE PATTERN COLUMN: the COLUMN-th word of the first line of FILE matching PATTERN.
field() { awk -v p="$2" -v c="$3" '$0 ~ p {print $c; exit}' "$1"; }

# per_call FILE PATTERN: "MS/MS_A_ROW" of the pg_stat_statements line of FILE matching PATTERN
# ("N calls M rows X ms a call …"): its time a call, and a delivery's share of it.
per_call() {
  awk -v p="$2" '$0 ~ p {printf "%s/%.3f", $5, $5 * $1 / $3; exit}' "$1"
}

rows=()
for n in $counts; do
  size=$(( (history + jobs + n - 1) / n ))
  sql=""
  if [ "$n" -gt 1 ]; then
    sql="SET bulkhead.test_ranges = $n; SET bulkhead.test_range_size = $size;
$fixture
$no_autovacuum"
  fi
  [ ${#rows[@]} -eq 0 ] || sleep "$settle"
  before=$(load_average)
  echo "== $n range(s) of $size ids, load $before"
  WAL_LIFE_SQL=$sql WAL_LIFE_SHAPE=$shape load/wal_life.sh >"$out/$n.txt" 2>&1 \
    || { tail -20 "$out/$n.txt" >&2
         echo "$load_script: wal_life.sh failed with $n ranges" >&2
         exit 1; }
  tail -8 "$out/$n.txt"
  f=$out/$n.txt
  if [ "$shape" = production ]; then
    drain_cpu=$(field "$f" '^enqueue_and_drain ' 4)
    enqueue_cpu=-
  else
    drain_cpu=$(field "$f" '^drain ' 4)
    enqueue_cpu=$(field "$f" '^enqueue ' 4)
  fi
  grep -E 'WITH RECURSIVE flying|SET state = CASE WHEN r.delivered' "$f"
  claim_ms=$(per_call "$f" 'WITH RECURSIVE flying')
  result_ms=$(per_call "$f" 'SET state = CASE WHEN r.delivered')
  life=$(field "$f" '^whole life ' 3)
  rows+=("$n $size $before ${enqueue_cpu:--} ${drain_cpu:--} ${claim_ms:--} ${result_ms:--}\
 ${life:--}")
done

echo
echo "load/ranges_cost.sh: $shape shape, $jobs deliveries beside $history finished, durability on"
printf '%-7s %9s %6s %14s %14s %16s %16s %10s\n' ranges ids_each load \
  enqueue_cpu_ms drain_cpu_ms claim_ms_call/dlv result_ms_call/dlv life_WAL
for row in "${rows[@]}"; do
  # shellcheck disable=SC2086
  printf '%-7s %9s %6s %14s %14s %16s %16s %10s\n' $row
done
echo "(CPU: PostgreSQL's, a delivery; claim and result: ms a call / ms a delivery,"\
  "pg_stat_statements; in production's shape the drain's CPU is enqueue and drain together)"
echo "load after: $(load_average all)"
