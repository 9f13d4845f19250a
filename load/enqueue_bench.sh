#!/usr/bin/env bash
# enqueue_bench.sh — how fast applications can enqueue, side by side in one run.
#
#   load/enqueue_bench.sh        # ENQUEUE_BENCH_SECONDS (10) per case, ENQUEUE_BENCH_CLIENTS (10)
#
# Three cases, each against a freshly migrated database on an embedded PostgreSQL (.run/bench-pg),
# with pgbench as the application, one delivery per transaction unless noted:
#   insert       a plain INSERT into bulkhead.jobs: the floor, no validation, no routing
#   enqueue      SELECT bulkhead.enqueue(channel, payload)
#   enqueue_many SELECT bulkhead.enqueue_many(…) with 100 deliveries per call and transaction
# Prints deliveries per second for each and the ratio to the plain INSERT. Compare ratios, not
# absolute figures: these are small, noisy machines.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${ENQUEUE_BENCH_SECONDS:-10}
clients=${ENQUEUE_BENCH_CLIENTS:-10}
run=.run/bench-pg
bindir=${BULKHEAD_PG_BINDIR:-$(pg_config --bindir)}

./setup.sh >/dev/null
conn=$(load/embedded_postgres.sh start "$run")
trap 'load/embedded_postgres.sh stop "$run"' EXIT
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

scripts=$(mktemp -d)
cat >"$scripts/insert.sql" <<'SQL'
INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload)
VALUES ('default', 1, 1, '{"type": "message.created", "conversation": 7, "text": "hello"}');
SQL
cat >"$scripts/enqueue.sql" <<'SQL'
SELECT bulkhead.enqueue(1, '{"type": "message.created", "conversation": 7, "text": "hello"}');
SQL
cat >"$scripts/enqueue_many.sql" <<'SQL'
SELECT bulkhead.enqueue_many(array_fill(1::bigint, ARRAY[100]),
  array_fill('{"type": "message.created", "conversation": 7, "text": "hello"}'::jsonb, ARRAY[100]));
SQL

declare -A rate
for case in insert enqueue enqueue_many; do
  psql "$conn" -c "DROP DATABASE IF EXISTS bench" -c "CREATE DATABASE bench"
  db="${conn/dbname=postgres/dbname=bench}"
  build/bin/bulkhead migrate up --database "$db" >/dev/null
  psql "$db" -c "INSERT INTO bulkhead.tenants (name) VALUES ('bench')" \
             -c "INSERT INTO bulkhead.channels (tenant_id, url) VALUES (1, 'http://127.0.0.1:9/')"
  tps=$("$bindir/pgbench" -n -c "$clients" -j 2 -T "$seconds" -f "$scripts/$case.sql" "$db" \
        | awk '/^tps = / {print $3}')
  rows=$(psql "$db" -At -c "SELECT count(*) FROM bulkhead.jobs")
  rate[$case]=$(awk -v r="$rows" -v s="$seconds" 'BEGIN {printf "%.0f", r / s}')
  echo "$case: ${rate[$case]} deliveries/s ($rows rows, $tps transactions/s, $clients clients)"
done
rm -rf "$scripts"
echo
printf '%-13s %12s %10s\n' case deliveries/s vs_insert
for case in insert enqueue enqueue_many; do
  printf '%-13s %12s %10s\n' "$case" "${rate[$case]}" \
    "$(awk -v a="${rate[$case]}" -v b="${rate[insert]}" 'BEGIN {printf "%.2f", a / b}')"
done
