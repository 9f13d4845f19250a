#!/usr/bin/env bash
# enqueue_ab.sh — an enqueue's cost in the server at HEAD against N migrations back, on one
# database flipped between the two (issue 30, goal 2).
#
#   ENQUEUE_AB_BEFORE=1 load/enqueue_ab.sh                          # HEAD against one back
#   ENQUEUE_AB_BEFORE=1 ENQUEUE_AB_CHANNELS=10010 load/enqueue_ab.sh  # production's tenants
#
# enqueue_cost.sh compares two databases, and on this 2-core machine two databases differ by
# a few per cent on their own (measured 2026-12-06: 5 % between two fresh databases of the
# same migration), which is as much as a change to the function moves. Here one database,
# ENQUEUE_AB_CHANNELS (100) tenants with a channel each, analyzed, is migrated down
# ENQUEUE_AB_BEFORE (1) migrations and back up between runs: ENQUEUE_AB_ROUNDS (7) rounds of
# a run at HEAD then a run before, each after a TRUNCATE of bulkhead.jobs. A run is a DO block
# of ENQUEUE_AB_LOOP (5000) enqueues, each its own transaction (a COMMIT after it; no flush,
# synchronous_commit off), on channels drawn in turn: the function, the row, its indexes, the
# wake-up trigger at COMMIT and the commit record, without a client's round trip. It prints
# the µs a transaction of each run and the medians. The migrations between must have downs
# that keep the tenants and channels (every one since 0002 does).
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

back=$(knob ENQUEUE_AB_BEFORE 1 count)
channels=$(knob ENQUEUE_AB_CHANNELS 100 count)
rounds=$(knob ENQUEUE_AB_ROUNDS 7 count)
loop=$(knob ENQUEUE_AB_LOOP 5000 count)

load_setup
pg_start .run/bench-pg-durable 1
fresh_database enqueue_ab
db=$(db_conn enqueue_ab)
build/bin/bulkhead migrate up --database "$db" >/dev/null
psql "$db" -q -v n="$channels" <<'SQL'
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, :n) g;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT id, 'http://127.0.0.1:9/' FROM bulkhead.tenants ORDER BY id;
ANALYZE bulkhead.tenants, bulkhead.channels;
SQL

# A stride prime to the count, so neighbouring transactions land on distant channels.
statement="PERFORM bulkhead.enqueue(1 + (i * 7919) % $channels,
                   '{\"type\": \"message.created\", \"conversation\": 7, \"text\": \"hello\"}')"
script=$(mktemp)
on_exit "rm -f $script"
loop_sql "$statement" "$loop" "$channels" 1 >"$script"
# run: the µs a transaction of one run, on an emptied table.
run() {
  psql "$db" -q -c "TRUNCATE $(jobs_table "$db"), bulkhead.idempotency_keys"
  psql "$db" -q -f "$script" 2>&1 | awk '/loop_us/ {print $NF}'
}

echo "load/enqueue_ab.sh: HEAD against $back migration(s) back, $channels channel(s), $rounds" \
  "rounds of $loop enqueues; load before: $(load_average all)"
after="" before=""
for ((round = 1; round <= rounds; round++)); do
  a=$(run)
  build/bin/bulkhead migrate down "$back" --database "$db" >/dev/null
  b=$(run)
  build/bin/bulkhead migrate up --database "$db" >/dev/null
  echo "round $round: HEAD $a µs a transaction, before $b"
  after+="$a " before+="$b "
done
echo "load after: $(load_average all)"
echo "median: HEAD $(median_of "$after") µs a transaction, before $(median_of "$before")"
