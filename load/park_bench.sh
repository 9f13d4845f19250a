#!/usr/bin/env bash
# park_bench.sh — parking a channel's backlog in one statement, and the options for making it
# cheaper, side by side in one run (issue 16, goal 6; docs/adr/0010-checks-on-write.md).
#
#   load/park_bench.sh                      # every variant below, in this order
#   load/park_bench.sh 0004 head            # only the variants given, in the order given
#
#   PARK_BENCH_JOBS=100000                  # the backlog: available jobs of channel 1
#   PARK_BENCH_ROUNDS=3                     # park + unpark rounds per variant and phase
#   PARK_BENCH_PAYLOAD_BYTES=0              # 0: the breaker bench's 90-byte payload; N: a JSON object
#                                           # of about N bytes (over ~2 KB PostgreSQL compresses or
#                                           # moves it out of line: TOAST)
#   PARK_BENCH_BYSTANDER=$PARK_BENCH_JOBS   # phase 2: this many available jobs of a second,
#                                           # untouched channel (0 skips phase 2)
#   PARK_BENCH_EXPLAIN=1                    # one EXPLAIN (ANALYZE, BUFFERS, WAL) of the park and of
#                                           # the unpark per variant, into .run/park-pg/explain/
#
# Variants — each its own database, migrated with build/bin/bulkhead, the same jobs enqueued
# with bulkhead.enqueue_many (1,000 per call), taking turns round by round so that the
# machine's load falls on all of them alike:
#   0004       the schema as it was at migration 0004 (migrated up, then down to 0004): the
#              payload's and the attempt log's CHECKs on the row, which PostgreSQL evaluates on
#              every UPDATE of a row, reading (detoasting) each parked job's payload
#   head       every migration the build carries; since 0005 those two CHECKs are on domains
#              of the columns, evaluated only when the column is written
#   ff50       head, and jobs with fillfactor 50: room on each page for a second version of
#              every row, so that a park's new row versions stay on their page (not HOT: state
#              and priority are indexed, but no page change, no lock record, smaller WAL)
#   flag       head, but parking is only the channel row (the flag a claim already reads):
#              the jobs stay `available` — a semantic change (a parked job's state is `parked`,
#              docs/schema.md), measured for its cost to the claim, which then has to step over
#              the stopped backlog in jobs_claim (the `claim` column)
#   partition  head's columns and checks in a jobs table partitioned by state (LIST), with
#              head's indexes on the partitions that hold their rows, so that a park moves each
#              row from one partition to another (delete + insert, the foreign key checked
#              again) — a semantic change too: the primary key and the idempotency key must then
#              include state, so neither is unique across states (enqueue_many's ON CONFLICT
#              cannot be inferred: its jobs are inserted with a plain INSERT of the same columns)
#
# Phase 1 times the park and the unpark with the backlog alone in bulkhead.jobs; phase 2 the
# same beside PARK_BENCH_BYSTANDER available jobs of channel 2 (the table larger than the
# backlog). Per round and variant:
#   park    OpenBreaker (worker/store/breaker_store.sql: closed → open, parking the backlog),
#           the SQL the binary prepares, read from the build's generated embedded_queries.cc
#   claim   (after a VACUUM ANALYZE) the first 10 claimable jobs of the queue in claim order
#           whose channel flows — the claim's first scan with the flowing check inside it, as
#           the flag variant would need; phase 2 only
#   unpark  (after a VACUUM ANALYZE) ResetBreaker (admin_channel_store.sql: `bulkhead breaker
#           reset`, closed and unparked)
# each run by psql (PREPARE, then EXECUTE under \timing), then a VACUUM ANALYZE. Prints every
# time with the 1-minute load average beside it (over 1.5: noisy), then the medians.
#
# The one measurement of parking: `bulkhead-load breaker` has no park mode (its `head` variant
# is what OpenBreaker and ResetBreaker do today).
#
# Starts the embedded PostgreSQL in .run/park-pg (load/embedded_postgres.sh: durability off —
# fsync, synchronous_commit and full_page_writes — but WAL is still written, wal_level replica)
# and stops it at the end; its databases park_bench_<variant> stay for inspection. Builds first
# (./setup.sh). On these 2-core machines read the figures side by side, not as a server's.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

jobs=$(knob PARK_BENCH_JOBS 100000 count)
rounds=$(knob PARK_BENCH_ROUNDS 3 count)
payload_bytes=$(knob PARK_BENCH_PAYLOAD_BYTES 0 count0)
bystander=$(knob PARK_BENCH_BYSTANDER "$jobs" count0)
explain=$(knob PARK_BENCH_EXPLAIN 1 flag)
all_variants="0004 head ff50 flag partition"
read -r -a variants <<<"${*:-$all_variants}"
for v in "${variants[@]}"; do
  case " $all_variants " in *" $v "*) ;;
    *) usage_error "unknown variant '$v' ($all_variants)" ;;
  esac
done
[ $((jobs % 1000)) -eq 0 ] && [ $((bystander % 1000)) -eq 0 ] ||
  usage_error "PARK_BENCH_JOBS and _BYSTANDER must be multiples of 1000"

load_setup
run=.run/park-pg
pg_start "$run"
db() { db_conn "park_bench_$1"; }
load1() { load_average; }

source load/statement.sh  # statement NAME: the SQL the binary prepares under NAME
open_breaker=$(statement open_breaker)
reset_breaker=$(statement reset_breaker)
[ -n "$open_breaker" ] && [ -n "$reset_breaker" ] ||
  { echo "park_bench.sh: open_breaker or reset_breaker not found in the build" >&2; exit 1; }

# The flag variant's transitions: the channel row alone, as OpenBreaker and ResetBreaker change
# it.
flag_open="WITH opened AS (
  UPDATE bulkhead.channels
     SET breaker_state = 'open', breaker_changed_at = now(),
         breaker_probe_at = now() + \$2 * interval '1 millisecond',
         breaker_trips = breaker_trips + 1, breaker_reason = \$3
   WHERE id = \$1 AND breaker_state = 'closed'
  RETURNING id)
SELECT count(*) AS done FROM opened"
flag_reset="WITH reset AS (
  UPDATE bulkhead.channels
     SET breaker_state = 'closed', breaker_probe_at = NULL, breaker_probe_job = NULL,
         breaker_trips = 0, breaker_changed_at = now()
   WHERE id = \$1
  RETURNING id)
SELECT 'open' AS before FROM reset"
# What the flag variant's transitions leave where they were: the backlog, counted untimed.
flag_backlog="SELECT count(*) AS jobs FROM bulkhead.jobs
                WHERE channel_id = 1 AND state = 'available'"

# The claim's first scan (claim_store.sql, Claim: fresh) with the flowing check inside it.
claim_probe="SELECT count(*) AS claimable FROM (
  SELECT k.id FROM bulkhead.jobs k
   WHERE k.queue = 'default' AND k.state = 'available' AND k.priority = 1
     AND k.scheduled_at <= now()
     AND (SELECT ch.breaker_state = 'closed' AND NOT ch.paused AND ch.enabled
            FROM bulkhead.channels ch WHERE ch.id = k.channel_id)
   ORDER BY k.scheduled_at, k.id LIMIT 10) AS first"

# The payload of job i (a SQL expression in i).
if [ "$payload_bytes" -eq 0 ]; then
  payload="'{\"type\": \"invoice.paid\",
              \"text\": \"a message of about a hundred bytes, like a chat note\"}'::jsonb"
else
  # md5 hex, distinct per job, which PostgreSQL cannot compress: out of line past about 2 KB.
  payload="jsonb_build_object('type', 'invoice.paid', 'id', i, 'data',
             (SELECT string_agg(md5(i::text || '.' || k), '')
                FROM generate_series(1, greatest(($payload_bytes - 40) / 32, 1)) AS k))"
fi

# n jobs of channel $2 in database $1, by enqueue_many 1,000 per call (a plain INSERT of the same
# columns in the partition variant).
enqueue() {
  local v=$1 channel=$2 n=$3
  if [ "$v" = partition ]; then
    psql "$(db "$v")" -c "
      INSERT INTO bulkhead.jobs (id, queue, tenant_id, channel_id, state, priority, payload)
      SELECT nextval('bulkhead.jobs_p_id_seq'), 'default', $channel, $channel, 'available', 1,
             $payload
        FROM generate_series(1, $n) AS i"
  else
    psql "$(db "$v")" -c "
      SELECT count(*) FROM generate_series(0, $n / 1000 - 1) AS b,
        LATERAL (SELECT bulkhead.enqueue_many(array_fill($channel::bigint, ARRAY[1000]),
                   ARRAY(SELECT $payload
                           FROM generate_series(b * 1000 + 1, b * 1000 + 1000) AS i))) AS e"
  fi >/dev/null
}

# The partition variant: jobs as migrated (columns, defaults, NOT NULLs and CHECKs, by LIKE)
# partitioned by state, the primary key and the idempotency key widened by state (a partitioned
# table's unique keys must hold its partition key), each of head's partial indexes on the
# partition that holds its rows, without the predicate.
partition_sql="
CREATE SEQUENCE bulkhead.jobs_p_id_seq;
CREATE TABLE bulkhead.jobs_p (LIKE bulkhead.jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
  FOREIGN KEY (channel_id) REFERENCES bulkhead.channels (id),
  PRIMARY KEY (id, state)) PARTITION BY LIST (state);
ALTER TABLE bulkhead.jobs_p ALTER COLUMN id SET DEFAULT nextval('bulkhead.jobs_p_id_seq');
DROP TABLE bulkhead.jobs;
ALTER TABLE bulkhead.jobs_p RENAME TO jobs;
CREATE TABLE bulkhead.jobs_available PARTITION OF bulkhead.jobs FOR VALUES IN ('available');
CREATE TABLE bulkhead.jobs_executing_p PARTITION OF bulkhead.jobs FOR VALUES IN ('executing');
CREATE TABLE bulkhead.jobs_parked_p PARTITION OF bulkhead.jobs FOR VALUES IN ('parked');
CREATE TABLE bulkhead.jobs_finished_p PARTITION OF bulkhead.jobs
  FOR VALUES IN ('completed', 'discarded', 'cancelled');
CREATE UNIQUE INDEX jobs_idempotency ON bulkhead.jobs (channel_id, idempotency_key, state)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_claim ON bulkhead.jobs_available (queue, priority, scheduled_at, id);
CREATE INDEX jobs_channel_available ON bulkhead.jobs_available
  (channel_id, priority, scheduled_at, id);
CREATE INDEX jobs_parked ON bulkhead.jobs_parked_p (channel_id, scheduled_at, id);
CREATE INDEX jobs_executing ON bulkhead.jobs_executing_p (attempted_by);
CREATE INDEX jobs_finished ON bulkhead.jobs_finished_p (finished_at, id);"

setup() {
  local v=$1
  fresh_database "park_bench_$v"
  build/bin/bulkhead migrate up --database "$(db "$v")" >/dev/null
  case "$v" in
    0004)
      local newer
      newer=$(find schema -name '[0-9][0-9][0-9][0-9]_*.up.sql' | sed 's|.*/||' |
              awk '$0 > "0004_~"' | wc -l)
      [ "$newer" -eq 0 ] ||
        build/bin/bulkhead migrate down "$newer" --database "$(db "$v")" >/dev/null ;;
    ff50) psql "$(db "$v")" -c "DO \$\$ DECLARE leaf regclass; BEGIN
            FOR leaf IN SELECT relid FROM pg_partition_tree('$(jobs_table "$(db "$v")")')
                         WHERE isleaf LOOP
              EXECUTE format('ALTER TABLE %s SET (fillfactor = 50)', leaf);
            END LOOP; END \$\$" ;;
    partition) psql "$(db "$v")" -c "$partition_sql" ;;
  esac
  psql "$(db "$v")" -c "
    INSERT INTO bulkhead.tenants (name) VALUES ('backlog'), ('bystander');
    INSERT INTO bulkhead.channels (tenant_id, url)
      VALUES (1, 'http://127.0.0.1:9/backlog'), (2, 'http://127.0.0.1:9/bystander');"
  enqueue "$v" 1 "$jobs"
  psql "$(db "$v")" -c "VACUUM ANALYZE $(jobs_table "$(db "$v")")"
}

# open_args VARIANT: open_breaker's arguments. The build's OpenBreaker takes a batch ($4): a
# node parks at most 5,000 jobs in the opening statement (kBacklogBatch) and its keeper the rest
# in batches behind it (ADR 0017); NULL parks the whole backlog in the one statement, as the
# operator's verbs do, which is what this bench times. The flag variant's has no batch.
open_args() {
  if [ "$1" = flag ]; then echo "1, 30000, 'park_bench'"; else echo "1, 30000, 'park_bench', NULL"; fi
}

# PREPAREs the variant's park and unpark as open_breaker and reset_breaker.
# $2: the variant's jobs table (jobs_table), which the build's statements name as
# bulkhead.job_rows; a variant migrated down before 0028 has it as bulkhead.jobs.
prepare() {
  local format='PREPARE open_breaker AS %s;\nPREPARE reset_breaker AS %s;\n'
  if [ "$1" = flag ]; then
    printf "$format" "${flag_open//bulkhead.job_rows/$2}" "${flag_reset//bulkhead.job_rows/$2}"
  else
    printf "$format" "${open_breaker//bulkhead.job_rows/$2}" "${reset_breaker//bulkhead.job_rows/$2}"
  fi
}

# One round of variant $1 in phase $2: prints "park_ms claim_ms unpark_ms".
round() {
  local v=$1 phase=$2 out table
  table=$(jobs_table "$(db "$v")")
  out=$( { prepare "$v" "$table"
    echo '\timing on'
    echo "EXECUTE open_breaker($(open_args "$v")) \\gset park_"
    echo '\timing off'
    [ "$v" != flag ] || echo "$flag_backlog \\gset park_"
    echo "VACUUM ANALYZE $table;"
    echo '\timing on'
    if [ "$phase" = 2 ]; then echo "$claim_probe \\gset claim_"
    else echo 'SELECT 10 AS claimable \gset claim_'; fi
    echo "EXECUTE reset_breaker(1) \\gset reset_"
    echo '\timing off'
    [ "$v" != flag ] || echo "$flag_backlog \\gset reset_"
    echo "VACUUM ANALYZE $table;"
    echo '\echo counts :park_jobs :claim_claimable :reset_jobs :reset_before'
  } | psql "$(db "$v")")
  local counts times
  counts=$(sed -n 's/^counts //p' <<<"$out")
  times=$(awk '/^Time: / {printf "%s ", $2}' <<<"$out")
  read -r parked claimable unparked before <<<"$counts"
  if [ "$parked" != "$jobs" ] || [ "$unparked" != "$jobs" ] || [ "$before" != open ] ||
     [ "$claimable" != 10 ]; then
    echo "park_bench.sh: $v phase $phase: parked $parked, claimable $claimable, unparked" \
         "$unparked (before: $before), expected $jobs, 10, $jobs (open)" >&2
    exit 1
  fi
  read -r park claim unpark <<<"$times"
  [ "$phase" = 2 ] || claim=-
  echo "$park $claim $unpark"
}

# EXPLAIN (ANALYZE, BUFFERS, WAL) of variant $1's park and unpark, rolled back, into a file;
# prints the top node's time, the WAL it wrote and any trigger time.
explain() {
  local v=$1 phase=$2 file="$run/explain/$1-phase$2.txt" table
  table=$(jobs_table "$(db "$v")")
  mkdir -p "$run/explain"
  { prepare "$v" "$table"
    echo 'BEGIN;'
    echo "EXPLAIN (ANALYZE, BUFFERS, WAL, VERBOSE) EXECUTE open_breaker($(open_args "$v"));"
    echo 'ROLLBACK;'
    echo "VACUUM ANALYZE $table;"
    echo "EXECUTE open_breaker($(open_args "$v"));"
    echo "VACUUM ANALYZE $table;"
    echo 'BEGIN;'
    echo "EXPLAIN (ANALYZE, BUFFERS, WAL, VERBOSE) EXECUTE reset_breaker(1);"
    echo 'ROLLBACK;'
    echo "EXECUTE reset_breaker(1);"
    echo "VACUUM ANALYZE $table;"
  } | psql "$(db "$v")" >"$file"
  awk -v v="$v" '
    /Execution Time/ { t[++n] = $3 }
    /^ +WAL: records=/ && !w[n + 1] { w[n + 1] = "WAL " $2 " " $3 }
    /^ +Trigger / { sub(/.*time=/, ""); split($0, a, " "); trig[n + 1] += a[1] }
    END { printf "  %-11s park %7.1f ms, %s, triggers %.1f ms;", v, t[1], w[1], trig[1]
          printf " unpark %7.1f ms, %s, triggers %.1f ms\n", t[2], w[2], trig[2] }' "$file"
}

median() {
  sort -g | awk '{v[NR] = $1}
    END {printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

size=$([ "$payload_bytes" -eq 0 ] && echo '90 bytes' || echo "about $payload_bytes bytes")
echo "park_bench: $jobs jobs in the backlog, payload $size, $rounds rounds," \
     "variants: ${variants[*]}"
echo "  server: $(psql "$conn" -At -c "
  SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings
   WHERE name IN ('wal_level', 'fsync', 'synchronous_commit', 'full_page_writes',
                  'shared_buffers', 'jit')")"
echo "  load average before setup: $(load_average all)"
for v in "${variants[@]}"; do setup "$v"; done
first_table=$(jobs_table "$(db "${variants[0]}")")
psql "$(db "${variants[0]}")" -At -c "
  SELECT 'payload: ' || round(avg(pg_column_size(payload))) || ' bytes stored, table '
         || pg_size_pretty((SELECT sum(pg_relation_size(relid))
                              FROM pg_partition_tree('$first_table') WHERE isleaf))
         || ', with TOAST '
         || pg_size_pretty((SELECT sum(pg_table_size(relid))
                              FROM pg_partition_tree('$first_table') WHERE isleaf))
    FROM bulkhead.jobs" | sed 's/^/  /'

declare -A results
for phase in 1 2; do
  if [ "$phase" = 2 ]; then
    [ "$bystander" -gt 0 ] || break
    for v in "${variants[@]}"; do
      enqueue "$v" 2 "$bystander"
      psql "$(db "$v")" -c "VACUUM ANALYZE $(jobs_table "$(db "$v")")"
    done
    echo
    echo "phase 2: the backlog beside $bystander available jobs of channel 2"
  else
    echo
    echo "phase 1: the backlog alone"
  fi
  if [ "$explain" = 1 ]; then
    echo " EXPLAIN (ANALYZE, BUFFERS, WAL), one each, rolled back (plans in $run/explain/):"
    for v in "${variants[@]}"; do explain "$v" "$phase"; done
  fi
  printf '  %5s  %-11s  %10s  %10s  %10s  %5s\n' round variant 'park ms' 'claim ms' 'unpark ms' load
  for r in $(seq 1 "$rounds"); do
    for v in "${variants[@]}"; do
      l=$(load1)
      read -r park claim unpark <<<"$(round "$v" "$phase")"
      noisy=$(awk -v l="$l" 'BEGIN {print (l > 1.5) ? " noisy" : ""}')
      printf '  %5d  %-11s  %10s  %10s  %10s  %5s%s\n' \
        "$r" "$v" "$park" "$claim" "$unpark" "$l" "$noisy"
      results[$phase,$v,park]+="$park "
      results[$phase,$v,claim]+="$claim "
      results[$phase,$v,unpark]+="$unpark "
      results[$phase,$v,load]+="$l "
    done
  done
done

echo
echo "medians over $rounds rounds (ms; load: the 1-minute load averages seen, min-max)"
printf '  %-5s  %-11s  %10s  %10s  %10s  %s\n' phase variant park claim unpark load
for phase in 1 2; do
  [ "$phase" = 1 ] || [ "$bystander" -gt 0 ] || break
  for v in "${variants[@]}"; do
    m() { tr ' ' '\n' <<<"${results[$phase,$v,$1]}" | grep -v '^$' | median; }
    claim=-; [ "$phase" = 1 ] || claim=$(m claim)
    loads=$(tr ' ' '\n' <<<"${results[$phase,$v,load]}" | grep -v '^$' | sort -g |
            sed -n '1p;$p' | paste -sd-)
    printf '  %-5s  %-11s  %10s  %10s  %10s  %s\n' \
      "$phase" "$v" "$(m park)" "$claim" "$(m unpark)" "$loads"
  done
done
echo "  load average after: $(load_average all)"
