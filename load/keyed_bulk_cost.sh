#!/usr/bin/env bash
# keyed_bulk_cost.sh — the keyed bulk enqueues of this build against the schema some migrations
# back, side by side: enqueue_many with 100 keyed items a call, and a keyed publish to one
# tenant's 1,000 channels (issue 30; migration 0019 moved the keys into their own table, 0020
# takes a call's keys in one INSERT).
#
#   load/keyed_bulk_cost.sh                       # this build against one migration back
#   KEYED_BULK_BEFORE="1 2" load/keyed_bulk_cost.sh  # ... and against two back
#   KEYED_BULK_HISTORY=1000000 load/keyed_bulk_cost.sh  # beside a million keyed finished jobs
#
# Two rounds of 8 s a case, 4 clients, durability on. One database per schema on the durable
# embedded PostgreSQL (.run/bench-pg-durable), migrated with build/bin/bulkhead: `new`, and
# `backN` for each N of KEYED_BULK_BEFORE (default 1), taken down N migrations (`bulkhead
# migrate down N`). Each holds 100 tenants of one channel each for enqueue_many (item i to
# channel i), and a tenant of 1,000 channels for publish. KEYED_BULK_HISTORY=N (default 0) first
# gives each database N finished deliveries with keys (md5 of a counter, spread as UUIDs
# are), written on this build's schema before any migration down: production's shape, where a
# new key goes into an index of a week's keys. Each case runs pgbench for 8 s, every
# call with new keys; prints calls/s and WAL bytes a delivery (pg_current_wal_lsn() around the
# run, after a CHECKPOINT), and the load average before and after.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

before=$(knob KEYED_BULK_BEFORE 1 counts)
history=$(knob KEYED_BULK_HISTORY 0 count0)
load_setup
pg_start .run/bench-pg-durable 1
scripts=$(mktemp -d)
schemas="new"
for n in ${before//,/ }; do schemas+=" back$n"; done
for v in $schemas; do
  fresh_database keyed_$v >/dev/null
  build/bin/bulkhead migrate up --database "$(db_conn keyed_$v)" >/dev/null
  psql -q "$(db_conn keyed_$v)" <<'SQL'
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, 101) g;
INSERT INTO bulkhead.channels (tenant_id, url) SELECT 1 + g % 100, 'http://127.0.0.1:9/c' || g FROM generate_series(1, 100) g;
INSERT INTO bulkhead.channels (tenant_id, url) SELECT 101, 'http://127.0.0.1:9/p' || g FROM generate_series(1, 1000) g;
SQL
  if ((history > 0)); then
    # The history on this build's schema, so every database holds the same; a down migration
    # carries its keys over (0019's down builds the unique index from the jobs).
    psql -q "$(db_conn keyed_$v)" <<SQL
SELECT bulkhead.enqueue_many(
         ARRAY(SELECT 1 + i % 100 FROM generate_series(b * 1000, b * 1000 + 999) i)::bigint[],
         ARRAY(SELECT '{"type": "invoice.paid", "text": "about a hundred bytes of payload"}'::jsonb
                 FROM generate_series(1, 1000)),
         ARRAY(SELECT md5(i::text) FROM generate_series(b * 1000, b * 1000 + 999) i))
  FROM generate_series(0, ($history + 999) / 1000 - 1) b \g /dev/null
UPDATE bulkhead.jobs
   SET state = 'completed', finished_at = now() - interval '7 days' + id * interval '1 ms';
VACUUM ANALYZE;
SQL
  fi
  if [ "$v" != new ]; then
    build/bin/bulkhead migrate down "${v#back}" --database "$(db_conn keyed_$v)" >/dev/null
  fi
done
cat > "$scripts/many.pgb" <<'SQL'
\set k random(1, 9000000000000000000)
SELECT bulkhead.enqueue_many(ARRAY(SELECT 1 + i % 100 FROM generate_series(1, 100) i)::bigint[], ARRAY(SELECT '{"type": "invoice.paid", "text": "about a hundred bytes of payload"}'::jsonb FROM generate_series(1, 100)), ARRAY(SELECT 'k' || :k || '-' || i FROM generate_series(1, 100) i));
SQL
cat > "$scripts/pub.pgb" <<'SQL'
\set k random(1, 9000000000000000000)
SELECT bulkhead.publish(101, 'invoice.paid', '{"type": "invoice.paid", "text": "about a hundred bytes of payload"}', 'k' || :k);
SQL
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in 1 2; do
  for v in $schemas; do
    for f in many pub; do
      D=$(db_conn keyed_$v)
      psql -q "$D" -c CHECKPOINT
      b=$(psql -At "$D" -c "SELECT pg_current_wal_lsn()")
      out=$("$pg_bindir/pgbench" -n -c 4 -j 2 -T 8 -f "$scripts/$f.pgb" "$D" 2>&1)
      a=$(psql -At "$D" -c "SELECT pg_current_wal_lsn()")
      n=$(awk '/actually processed/ {print $NF}' <<<"$out")
      tps=$(awk '/^tps = / {printf "%.1f", $3}' <<<"$out")
      echo "round $r $v $f: $tps calls/s, $(psql -At "$D" -c "SELECT round(pg_wal_lsn_diff('$a', '$b') / $n / (CASE WHEN '$f' = 'many' THEN 100 ELSE 1000 END))") WAL bytes a delivery"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$scripts"
