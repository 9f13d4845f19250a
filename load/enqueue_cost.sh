#!/usr/bin/env bash
# enqueue_cost.sh — where one enqueue's cost goes, step by step (issue 30, goal 2).
#
#   load/enqueue_cost.sh     # ENQUEUE_COST_SECONDS (10) per case and measure
#   ENQUEUE_COST_CHANNELS=1 load/enqueue_cost.sh   # every client on one channel: a burst's shape
#   ENQUEUE_COST_CHANNELS=10010 load/enqueue_cost.sh   # production's count of tenants
#
# One freshly migrated database on the durable embedded PostgreSQL (.run/bench-pg-durable:
# fsync and synchronous_commit on), ENQUEUE_COST_CHANNELS (100) channels in use, each
# transaction on one drawn at random (at least 100 tenants with a channel each are made, and
# analyzed), and tables that add the parts of bulkhead.jobs one at a time. pgbench inserts one
# row per transaction into each:
#   plain       a three-column table (id, a key, the payload): the application's own write
#   bare        a table of bulkhead.jobs' columns and defaults, its primary key only
#   row         the same with bulkhead.jobs' CHECKs (since migration 0025 the one that calls
#               bulkhead.job_row_valid; before it, nine: ADR 0028)
#   +claim      the same with the claim's index (jobs_claim)
#   +channel    and the channel's waiting index (jobs_channel_available)
#   +fk         and a foreign key to bulkhead.channels (a KEY SHARE lock on the channel row;
#               bulkhead.jobs itself has none since migration 0015, ADR 0023)
#   jobs        an INSERT into bulkhead.jobs itself: every partial index (the row enters
#               none of the others) and the wake-up trigger (no runner asleep)
#   enqueue     SELECT bulkhead.enqueue(channel, payload): the checks, route() and plpgsql
#   +key        the same with an idempotency key, a new one each time: since migration 0019
#               the key is a row of bulkhead.idempotency_keys (ADR 0026); before it, an entry
#               of the unique index jobs_idempotency, inserted with ON CONFLICT
# ENQUEUE_COST_BEFORE=N adds `enqueue` and `+key` once more on a second database, migrated N
# migrations back (`bulkhead migrate down N`), each run right after its case here: a change to
# the enqueue measured side by side (N=1 before 0019: the key in the index).
# For each it prints
#   - WAL bytes per transaction (pg_current_wal_lsn() around the run, after a CHECKPOINT, so
#     full-page images are counted as a busy table pays them right after a checkpoint);
#   - microseconds per transaction with one client and synchronous_commit off for the session:
#     the CPU and round trip of the statement without the flush, what the rows cost PostgreSQL;
#   - transactions/s with 16 clients and durability on, the application's commit rate;
#   - MultiXacts created per transaction by the 16 clients (next_multixact_id around the run):
#     a row lock that two transactions hold at once becomes one;
#   - microseconds per statement inside the server: a DO block runs the case's statement
#     ENQUEUE_COST_LOOP (5000) times, one row each, times itself and is rolled back. No round
#     trip, no parse of the client's statement, no commit: what PostgreSQL spends on the row
#     and, for `enqueue`, on the function's body. Every case's loop runs in turn, five rounds,
#     after a CHECKPOINT and before the pgbench runs, and the median is given. It repeats
#     within a few per cent, where the client's µs move by a fifth, so a change to the function
#     is measured here.
#   - microseconds per transaction inside the server: the same loop with a COMMIT after each
#     statement (synchronous_commit off, so no flush), in the same five rounds. It adds what
#     a transaction pays once: the locks on the table, its partitions and indexes, the
#     deferred wake-up trigger that fires at COMMIT (the statement loop rolls back, so it
#     never fires there) and the commit record. The rows it commits are truncated before
#     the pgbench runs.
# Ratios to `plain` are what to compare; the figures move by ±20 % between runs on a 2-core
# machine.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

seconds=$(knob ENQUEUE_COST_SECONDS 10 count)
channels=$(knob ENQUEUE_COST_CHANNELS 100 count)
back=$(knob ENQUEUE_COST_BEFORE 0 count0)
loop=$(knob ENQUEUE_COST_LOOP 5000 count)

load_setup
pg_start .run/bench-pg-durable 1
fresh_database enqueue_cost
db=$(db_conn enqueue_cost)
build/bin/bulkhead migrate up --database "$db" >/dev/null
# At least 100 tenants, a channel each; the runs use the first ENQUEUE_COST_CHANNELS.
seeded=$((channels > 100 ? channels : 100))
psql "$db" -v seeded="$seeded" <<'SQL'
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, :seeded) g;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT id, 'http://127.0.0.1:9/' FROM bulkhead.tenants ORDER BY id;
-- Statistics now, as a running database has them, rather than whenever autovacuum comes by:
-- the plans of the enqueue's lookups depend on them (migration 0026).
ANALYZE bulkhead.tenants, bulkhead.channels;
CREATE TABLE plain (id bigserial PRIMARY KEY, k int NOT NULL, payload jsonb NOT NULL);
-- bulkhead.jobs' columns, defaults, identity and CHECKs (its domains' CHECKs come with the
-- column types), its primary key, then one part more per table.
CREATE TABLE bare (LIKE bulkhead.job_rows INCLUDING DEFAULTS INCLUDING IDENTITY, PRIMARY KEY (id));
CREATE TABLE "row" (LIKE bulkhead.job_rows INCLUDING DEFAULTS INCLUDING CONSTRAINTS
                    INCLUDING IDENTITY, PRIMARY KEY (id));
CREATE TABLE "+claim" (LIKE "row" INCLUDING ALL);
CREATE INDEX ON "+claim" (queue, priority, scheduled_at, id)
  WHERE state = 'available' AND priority BETWEEN 1 AND 3;
CREATE TABLE "+channel" (LIKE "+claim" INCLUDING ALL);
CREATE INDEX ON "+channel" (channel_id, priority, scheduled_at, id) WHERE state = 'available';
CREATE TABLE "+fk" (LIKE "+channel" INCLUDING ALL,
                    FOREIGN KEY (channel_id) REFERENCES bulkhead.channels (id));
SQL
if ((back > 0)); then
  fresh_database enqueue_cost_before
  db_before=$(db_conn enqueue_cost_before)
  build/bin/bulkhead migrate up --database "$db_before" >/dev/null
  build/bin/bulkhead migrate down "$back" --database "$db_before" >/dev/null
  psql "$db_before" -v seeded="$seeded" <<'SQL'
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, :seeded) g;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT id, 'http://127.0.0.1:9/' FROM bulkhead.tenants ORDER BY id;
ANALYZE bulkhead.tenants, bulkhead.channels;
SQL
fi

scripts=$(mktemp -d)
payload='{"type": "message.created", "conversation": 7, "text": "hello"}'
cases=(plain bare row +claim +channel +fk jobs enqueue)
((back > 0)) && cases+=(enqueue-before)
cases+=(+key)
((back > 0)) && cases+=(+key-before)
for case in "${cases[@]}"; do
  {
    echo "\\set ch random(1, $channels)"
    echo "\\set key random(1, 9000000000000000000)"
    case "${case%-before}" in
      plain) echo "INSERT INTO plain (k, payload) VALUES (:ch, '$payload');" ;;
      jobs) echo "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload)" \
                 "VALUES ('default', :ch, :ch, '$payload');" ;;
      enqueue) echo "SELECT bulkhead.enqueue(:ch, '$payload');" ;;
      +key) echo "SELECT bulkhead.enqueue(:ch, '$payload', 'key-' || :key);" ;;
      *) echo "INSERT INTO \"$case\" (queue, tenant_id, channel_id, payload)" \
              "VALUES ('default', :ch, :ch, '$payload');" ;;
    esac
  } >"$scripts/$case.sql"
  # The same statement for the loop, with the channel (and key) from the loop's counter.
  case "${case%-before}" in
    plain) statement="INSERT INTO plain (k, payload) VALUES (ch, '$payload')" ;;
    jobs) statement="INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload)
                     VALUES ('default', ch, ch, '$payload')" ;;
    enqueue) statement="PERFORM bulkhead.enqueue(ch, '$payload')" ;;
    +key) statement="PERFORM bulkhead.enqueue(ch, '$payload', 'loop-' || i || '-' || random())" ;;
    *) statement="INSERT INTO \"$case\" (queue, tenant_id, channel_id, payload)
                  VALUES ('default', ch, ch, '$payload')" ;;
  esac
  { echo "BEGIN;"; loop_sql "$statement" "$loop" "$channels"; echo "ROLLBACK;"; } \
    >"$scripts/$case.loop.sql"
  # The same, a transaction each.
  loop_sql "$statement" "$loop" "$channels" 1 >"$scripts/$case.txn.sql"
done

# in_server CASE: prints the µs a statement of the loop took.
in_server() {
  local on=$db
  [[ $1 == *-before ]] && on=$db_before
  psql "$on" -q -f "$scripts/$1.loop.sql" 2>&1 | awk '/loop_us/ {print $NF}'
}
# in_server_txn CASE: prints the µs a transaction of one statement took.
in_server_txn() {
  local on=$db
  [[ $1 == *-before ]] && on=$db_before
  psql "$on" -q -f "$scripts/$1.txn.sql" 2>&1 | awk '/loop_us/ {print $NF}'
}
# The tables the transaction loops filled, emptied before the pgbench runs.
truncate_cases() {
  psql "$db" -q -c 'TRUNCATE plain, bare, "row", "+claim", "+channel", "+fk", bulkhead.job_rows,
                    bulkhead.idempotency_keys'
  ((back == 0)) ||
    psql "$db_before" -q -c "TRUNCATE $(jobs_table "$db_before"), bulkhead.idempotency_keys"
}

# bench CASE CLIENTS [PGOPTIONS]: prints "tps wal_bytes_per_transaction multixacts_per_transaction".
next_multixact() { psql "$db" -At -c "SELECT next_multixact_id FROM pg_control_checkpoint()"; }
bench() {
  local on=$db
  [[ $1 == *-before ]] && on=$db_before
  psql "$on" -c CHECKPOINT
  local before after out tps n mx_before mx_after
  mx_before=$(next_multixact)
  before=$(psql "$on" -At -c "SELECT pg_current_wal_lsn()")
  out=$(PGOPTIONS="${3:-}" "$pg_bindir/pgbench" -n -c "$2" -j "$(($2 < 2 ? 1 : 2))" -T "$seconds" \
          -f "$scripts/$1.sql" "$on")
  after=$(psql "$on" -At -c "SELECT pg_current_wal_lsn()")
  tps=$(awk '/^tps = / {printf "%.0f", $3}' <<<"$out")
  n=$(awk '/number of transactions actually processed/ {print $NF}' <<<"$out")
  psql "$on" -c CHECKPOINT  # pg_control_checkpoint() reads the counter as of a checkpoint
  mx_after=$(next_multixact)
  echo "$tps $(psql "$on" -At -c "SELECT round(pg_wal_lsn_diff('$after', '$before') / $n)")" \
    "$(awk -v a="$mx_after" -v b="$mx_before" -v n="$n" 'BEGIN {printf "%.2f", (a - b) / n}')"
}

echo "load/enqueue_cost.sh: durability on ($(psql "$db" -At -c "SHOW fsync"), synchronous_commit"\
  "$(psql "$db" -At -c "SHOW synchronous_commit")), ${seconds} s a case and measure,"\
  "$channels channel(s);"\
  "load before: $(load_average all)"
declare -A wal us tps mx server txn
declare -A rounds txn_rounds
psql "$db" -q -c CHECKPOINT
for round in 1 2 3 4 5; do
  for case in "${cases[@]}"; do
    rounds[$case]+="$(in_server "$case") "
    txn_rounds[$case]+="$(in_server_txn "$case") "
  done
done
for case in "${cases[@]}"; do
  server[$case]=$(median_of "${rounds[$case]}")
  txn[$case]=$(median_of "${txn_rounds[$case]}")
  echo "$case: $(echo "${rounds[$case]}") µs a statement in the server;" \
    "$(echo "${txn_rounds[$case]}") µs a transaction; five rounds"
done
truncate_cases
for case in "${cases[@]}"; do
  read -r one_tps one_wal _ < <(bench "$case" 1 "-c synchronous_commit=off")
  read -r many_tps many_wal many_mx < <(bench "$case" 16)
  wal[$case]=$many_wal
  mx[$case]=$many_mx
  us[$case]=$(awk -v t="$one_tps" 'BEGIN {printf "%.0f", 1e6 / t}')
  tps[$case]=$many_tps
  echo "$case: ${wal[$case]} WAL bytes (one client: $one_wal), ${us[$case]} µs with one client" \
    "and no flush, ${tps[$case]} transactions/s with 16 clients, ${mx[$case]} MultiXacts a" \
    "transaction"
done
rm -rf "$scripts"
echo "load after: $(load_average all)"
echo
printf '%-14s %10s %8s %12s %9s %16s %11s %12s %10s %8s %9s %8s\n' case WAL/txn x_plain \
  µs_no_flush x_plain tps_16_durable x_plain multixact/txn µs_server x_plain µs_txn x_plain
for case in "${cases[@]}"; do
  printf '%-14s %10s %8s %12s %9s %16s %11s %12s %10s %8s %9s %8s\n' "$case" "${wal[$case]}" \
    "$(awk -v a="${wal[$case]}" -v b="${wal[plain]}" 'BEGIN {printf "%.2f", a / b}')" \
    "${us[$case]}" "$(awk -v a="${us[$case]}" -v b="${us[plain]}" 'BEGIN {printf "%.2f", a / b}')" \
    "${tps[$case]}" "$(awk -v a="${tps[$case]}" -v b="${tps[plain]}" 'BEGIN {printf "%.2f", a / b}')" \
    "${mx[$case]}" "${server[$case]}" \
    "$(awk -v a="${server[$case]}" -v b="${server[plain]}" 'BEGIN {printf "%.2f", a / b}')" \
    "${txn[$case]}" "$(awk -v a="${txn[$case]}" -v b="${txn[plain]}" 'BEGIN {printf "%.2f", a / b}')"
done
