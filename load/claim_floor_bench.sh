#!/usr/bin/env bash
# claim_floor_bench.sh — what the claim floor (ADR 0027) saves a claim on bulkhead.jobs split into
# ranges of ids. One claim of 100 jobs, run by hand as a runner's connection runs it (its
# generic plan, seq and bitmap scans off), beside a week of 1,000,000 finished deliveries and a
# burst of 20,000 available ones over 1,000 channels, durability on. Two databases side by side:
# the table as migrated, and the table split into CLAIM_FLOOR_RANGES (32) ranges by
# tests/schema/jobs_in_ranges.sql (the week in the older ranges, the burst in the newest, as
# load/ranges_cost.sh lays them out). In each, the leader's own statements raise the floor past
# the week first; then the claim runs with $18 = 0 (no floor: every range is started) and with
# $18 = the floor, in turns, CLAIM_FLOOR_ROUNDS (20) times each after a warm-up, each in a
# transaction rolled back, and the script prints the median and the 90th percentile of
# EXPLAIN ANALYZE's execution time (TIMING OFF) for each case.
#
#   load/claim_floor_bench.sh
#   CLAIM_FLOOR_RANGES=8 CLAIM_FLOOR_ROUNDS=50 load/claim_floor_bench.sh
#
# Execution time is the executor's: it leaves out the locks the generic plan takes on every
# range before it starts (PostgreSQL 15 locks them all, pruned or not), which the engine's
# claims pay on top (load/ranges_cost.sh measures those).
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

check_knobs count CLAIM_FLOOR_RANGES CLAIM_FLOOR_ROUNDS
ranges=$(knob CLAIM_FLOOR_RANGES 32 count)
rounds=$(knob CLAIM_FLOOR_ROUNDS 20 count)
history=1000000
burst=20000
channels=1000

load_setup
pg_start .run/bench-pg-durable 1
# shellcheck source=load/statement.sh
source load/statement.sh
[ -n "$(statement advance_claim_floor)" ] \
  || { echo "$load_script: this build has no claim floor (migration 0017)" >&2; exit 1; }

# setup NAME RANGES: a fresh database NAME, migrated, split into RANGES ranges (1: as migrated),
# with the week of history, the floor raised past it, and the burst.
setup() {
  local name=$1 n=$2 db
  fresh_database "$name" >/dev/null
  db=$(db_conn "$name")
  build/bin/bulkhead migrate up --database "$db" >/dev/null
  psql "$db" <<SQL
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, $channels) g;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT id, 'http://127.0.0.1:9/' FROM bulkhead.tenants ORDER BY id;
SQL
  if [ "$n" -gt 1 ]; then
    { echo "SET bulkhead.test_ranges = $n;"
      echo "SET bulkhead.test_range_size = $(( (history + burst + n - 1) / n ));"
      cat tests/schema/jobs_in_ranges.sql; } | psql "$db" >/dev/null
  fi
  psql "$db" <<SQL
SET session_replication_role = replica;
INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, payload, attempt, created_at,
                           scheduled_at, attempted_at, attempted_by, finished_at)
SELECT 'default', c.tenant_id, c.id, 'completed', jsonb_build_object('n', g), 1, f.at, f.at,
       f.at, 'history', f.at
  FROM generate_series(1, $history) g
  JOIN bulkhead.channels c ON c.id = 1 + g % $channels
 CROSS JOIN LATERAL (SELECT now() - interval '7 days' * (1 - g::float8 / $history)) AS f(at);
SQL
  psql "$db" -c "VACUUM ANALYZE bulkhead.job_rows"
  raise_claim_floor "$db" "$history"
  psql "$db" -c "SELECT count(bulkhead.enqueue(1 + g % $channels, '{}'::jsonb))
                   FROM generate_series(1, $burst) g" >/dev/null
  psql "$db" -c "CHECKPOINT"
}

# run NAME: the rounds on NAME; prints "floor MS" lines, one a claim.
run() {
  local db floor claim args
  db=$(db_conn "$1")
  floor=$(psql "$db" -At -c "SELECT floor_id FROM bulkhead.claim_floor")
  claim=$(statement claim)
  args="'default', 100, 'bench', '{}', '{}', '{}', '{}', 100, 100, '{}', 100, 0, '{}', 1000, 0, 0, 200"
  {
    echo "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off;"
    echo "SET enable_bitmapscan = off;"
    echo "PREPARE claim (text, int, text, bigint[], int[], bigint[], int[], int, int, int[], int,"
    echo "               int, int[], int, bigint, smallint, int, bigint) AS $claim;"
    local r f
    for ((r = 0; r < rounds + 2; r++)); do
      for f in 0 "$floor"; do
        [ "$r" -lt 2 ] || printf '\\echo floor %s\n' "$f"
        echo "BEGIN; EXPLAIN (ANALYZE, TIMING OFF) EXECUTE claim($args, $f); ROLLBACK;"
      done
    done
  } >".run/claim_floor_$1.sql"
  psql "$db" -At -f ".run/claim_floor_$1.sql" \
    | awk '/^floor / {f = $2} /Execution Time/ && f != "" {print f, $3; f = ""}'
}

# stats: "median p90 n" of the numbers on stdin.
stats() {
  sort -n | awk '{a[NR] = $1} END {printf "%.2f %.2f %d\n", a[int((NR + 1) / 2)], a[int(NR * 0.9 + 0.5)], NR}'
}

echo "load/claim_floor_bench.sh: one claim of 100 beside $history finished and $burst available" \
  "jobs, 1 and $ranges range(s), $rounds rounds; fsync $(psql "$conn" -At -c "SHOW fsync");" \
  "load before: $(load_average all)"
setup floor_one 1
setup floor_ranges "$ranges"
printf '%-24s %14s %12s %12s %8s %6s\n' table floor median_ms p90_ms claims load
for name in floor_one floor_ranges; do
  load=$(load_average)
  out=$(run "$name")
  floor=$(psql "$(db_conn "$name")" -At -c "SELECT floor_id FROM bulkhead.claim_floor")
  label="as migrated"
  [ "$name" = floor_one ] || label="$ranges ranges"
  for f in 0 "$floor"; do
    read -r median p90 n < <(awk -v f="$f" '$1 == f {print $2}' <<<"$out" | stats)
    printf '%-24s %14s %12s %12s %8s %6s\n' "$label" "$f" "$median" "$p90" "$n" "$load"
  done
done
echo "load after: $(load_average all)"
