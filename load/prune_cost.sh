#!/usr/bin/env bash
# prune_cost.sh — the leader's prune statement of this build against an older one's, side by side.
#
#   load/prune_cost.sh                    # against 60c8e4b, the build before migration 0019
#   PRUNE_COST_BEFORE=<commit> load/prune_cost.sh
#   PRUNE_COST_JOBS=300000                # finished jobs a week old (whole thousands)
#   PRUNE_COST_KEYED=10                   # one in this many has an idempotency key (0: none)
#   PRUNE_COST_ROUNDS=10                  # batches timed for each statement
#
# Why. Since migration 0019 the prune (PruneFinished in worker/store/fleet_store.sql) deletes
# each job's idempotency key with it, in the same statement; this prints what that costs a
# batch of 1,000.
#
# One database on the durable embedded PostgreSQL (.run/bench-pg-durable), migrated with
# build/bin/bulkhead: 100 channels, PRUNE_COST_JOBS jobs enqueued with enqueue_many (a payload
# of about 100 bytes, one in PRUNE_COST_KEYED with a key), all made completed a week and a day
# ago, then VACUUM ANALYZE and a CHECKPOINT. Both statements are prepared in one session:
# this build's (read from its generated embedded_queries.cc, load/statement.sh) and the one
# in PRUNE_COST_BEFORE's worker/store/fleet_store.sql (git show). Each round runs a batch of
# each, the order swapped every round, as EXPLAIN (ANALYZE, TIMING OFF) in a transaction rolled
# back, so every batch deletes the same 1,000 rows. Prints each statement's median execution
# time and quartiles, the keys left, and the 1-minute load average. The older statement must
# run on this build's schema: one from before 0019 leaves the keys behind, which is the
# difference measured.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

before_rev=${PRUNE_COST_BEFORE:-60c8e4b}
jobs=$(knob PRUNE_COST_JOBS 300000 count)
keyed=$(knob PRUNE_COST_KEYED 10 count0)
rounds=$(knob PRUNE_COST_ROUNDS 10 count)
((jobs % 1000 == 0)) || usage_error "PRUNE_COST_JOBS must be whole thousands, not $jobs"
before_sql=$(git show "$before_rev:worker/store/fleet_store.sql" 2>/dev/null |
  awk '/^-- name: PruneFinished$/ { f = 1; next } f && /^-- name:/ { exit } f && !/^--/')
[ -n "$before_sql" ] || usage_error "PRUNE_COST_BEFORE: no PruneFinished at '$before_rev'"

load_setup
pg_start .run/bench-pg-durable 1
db=$(db_conn prune_cost)
source load/statement.sh
this_sql=$(statement prune_finished)
[ -n "$this_sql" ] || { echo "prune_cost.sh: the prune statement is not in the build" >&2; exit 1; }

fresh_database prune_cost >/dev/null
build/bin/bulkhead migrate up --database "$db" >/dev/null
key="NULL"
((keyed > 0)) && key="CASE WHEN i % $keyed = 0 THEN 'key-' || i END"
psql -q "$db" <<SQL
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, 100) g;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT g, 'http://127.0.0.1:9/c' || g FROM generate_series(1, 100) g;
SELECT count(bulkhead.enqueue_many(
         ARRAY(SELECT 1 + i % 100 FROM generate_series(b * 1000, b * 1000 + 999) i)::bigint[],
         ARRAY(SELECT '{"type": "invoice.paid", "text": "about a hundred bytes of payload"}'::jsonb
                 FROM generate_series(1, 1000)),
         ARRAY(SELECT $key FROM generate_series(b * 1000, b * 1000 + 999) i)))
  FROM generate_series(0, $jobs / 1000 - 1) b \g /dev/null
UPDATE bulkhead.jobs
   SET state = 'completed', finished_at = now() - interval '8 days' + id * interval '1 ms';
VACUUM ANALYZE;
CHECKPOINT;
SQL

{
  echo "PREPARE before_0 (double precision, bigint) AS $before_sql;"
  echo "PREPARE this_0 (double precision, bigint) AS $this_sql;"
  for ((r = 0; r < rounds; r++)); do
    if ((r % 2)); then order="this before"; else order="before this"; fi
    for s in $order; do
      printf '\\echo %s\n' "$s"
      echo "BEGIN; EXPLAIN (ANALYZE, TIMING OFF) EXECUTE ${s}_0(604800000, 1000); ROLLBACK;"
    done
  done
} >.run/prune_cost.sql
load=$(load_average)
psql -At "$db" -f .run/prune_cost.sql >.run/prune_cost.out
awk '/^(before|this)$/ { s = $1 } /^Execution Time/ { print s, $3 }' .run/prune_cost.out \
  >.run/prune_cost.times

share="one in $keyed with a key"
((keyed > 0)) || share="none with a key"
echo "prune_cost ($jobs finished jobs, $share, batches of 1,000, $rounds rounds; load $load" \
  "before, $(load_average) after):"
for s in before this; do
  times=$(awk -v s="$s" '$1 == s { print $2 }' .run/prune_cost.times)
  label=$s
  [ "$s" = before ] && label="before ($before_rev)"
  printf '  %-20s median %s ms a batch (quartiles %s)\n' "$label" "$(median <<<"$times")" \
    "$(quartiles <<<"$times")"
done
echo "  keys in bulkhead.idempotency_keys: $(psql -At "$db" -c \
  'SELECT count(*) FROM bulkhead.idempotency_keys')"
