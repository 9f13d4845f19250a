#!/usr/bin/env bash
# intake_cost.sh — what an enqueue would cost into a narrow intake table, beside a plain insert
# and today's bulkhead.enqueue (issue 30, goal 1; ADR 0029, proposed).
#
#   load/intake_cost.sh
#   INTAKE_COST_ROUNDS=5 INTAKE_COST_SECONDS=10 load/intake_cost.sh
#
# A prototype measured, not a feature: one freshly migrated database on the durable embedded
# PostgreSQL (.run/bench-pg-durable), 100 tenants with a channel each, and beside the jobs
# table (bulkhead.job_rows)
#   plain     a three-column table, the application's own write;
#   intake    bulkhead.intake_probe: an identity key, the channel, the payload and the two
#             optional keys, its primary key only, no CHECK, no trigger;
#   function  intake_probe_enqueue(channel, payload): a plpgsql function, SECURITY DEFINER
#             with a pinned search_path as bulkhead.enqueue is, that checks the payload as
#             enqueue does, looks the channel up by its key (enabled or refused) and inserts
#             into intake_probe;
#   claimable the same function into bulkhead.intake_claimable, a row a claim could read
#             instead: also the queue, the tenant (the lookup joins the tenant, as enqueue's
#             does), the priority and the schedule, and the claim's index (queue, priority,
#             scheduled_at, id) beside the primary key (without it, with
#             INTAKE_COST_CLAIMABLE_KEY=0: the claim finds and deletes its rows by ctid);
#   enqueue   bulkhead.enqueue(channel, payload) as it is.
# For each, INTAKE_COST_ROUNDS (3) rounds, the cases in turn within a round:
#   - µs a transaction in the server: a DO block of 5,000 one-row transactions (a COMMIT
#     after each, synchronous_commit off), on an emptied table;
#   - transactions/s of 16 pgbench clients, durability on, INTAKE_COST_SECONDS (5) each,
#     after a CHECKPOINT.
#   - WAL bytes a delivery over that pgbench run (the WAL it wrote, from its CHECKPOINT on,
#     over the rows it left).
# And once a round, what the engine would write after each (a prototype of its statements, as
# batch_sql below spells them): INTAKE_COST_MOVE_ROWS (20,000) rows, inserted in one statement
# after a CHECKPOINT, then taken by one statement a batch of INTAKE_COST_MOVE_BATCH (500), a
# COMMIT after each (synchronous_commit off); µs and WAL bytes a delivery:
#   move        intake_probe's rows moved into jobs as available (ADR 0029 as proposed);
#   claim       jobs' available rows updated to executing, as today's claim writes them, then
#               each batch's result written (as the result write writes a delivery);
#   claim_move  intake_claimable's rows moved into jobs as executing: a claim that moves; then
#               the results likewise;
#   claim_fifo  intake_probe's rows, in id order, moved into jobs as executing, routed as they
#               go: a claim that moves from the narrow intake; then the results likewise.
# INTAKE_COST_TIERS=2 puts every other tenant on the shipped tier `bulk`; the claims then
# take each tier's rows in turn, a batch each, as two tiers' runners would, and the narrow
# intake's claim (claim_fifo) reads past the other tier's rows, which it cannot skip by index.
# Then the four designs side by side over a delivery's life up to its result (the prune drops
# a range whole, a few bytes a delivery): enqueue, claim and result; function, move, claim and
# result; claimable, claim_move and result; function, claim_fifo and result. Prints each round
# and the medians with the ratio to plain. What the design still lacks is in ADR 0029.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

rounds=$(knob INTAKE_COST_ROUNDS 3 count)
seconds=$(knob INTAKE_COST_SECONDS 5 count)
move_rows=$(knob INTAKE_COST_MOVE_ROWS 20000 count)
move_batch=$(knob INTAKE_COST_MOVE_BATCH 500 count)
claimable_key=$(knob INTAKE_COST_CLAIMABLE_KEY 1 count0)
tiers=$(knob INTAKE_COST_TIERS 1 count)
case $tiers in 1) tier_list="'default'" ;; 2) tier_list="'default', 'bulk'" ;;
  *) usage_error "INTAKE_COST_TIERS must be 1 or 2, not '$tiers'" ;; esac

load_setup
pg_start .run/bench-pg-durable 1
fresh_database intake_cost
db=$(db_conn intake_cost)
build/bin/bulkhead migrate up --database "$db" >/dev/null
# Every job of the run in one range of ids ahead, as the leader keeps one (ADR 0026): its
# layout, not the default range's, is the one a delivery is written to in service.
psql "$db" -q -c "SELECT bulkhead.add_job_range(last_value + 1, last_value + 100000000)
                    FROM bulkhead.jobs_id_seq" >/dev/null
claimable_bare=false
[ "$claimable_key" = 0 ] && claimable_bare=true
psql "$db" -q -v ON_ERROR_STOP=1 -v claimable_bare="$claimable_bare" -v tiers="$tiers" <<'SQL'
INSERT INTO bulkhead.tenants (name, tier)
  SELECT 't' || g, CASE WHEN :tiers = 2 AND g % 2 = 0 THEN 'bulk' ELSE 'default' END
    FROM generate_series(1, 100) g;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT id, 'http://127.0.0.1:9/' FROM bulkhead.tenants ORDER BY id;
ANALYZE bulkhead.tenants, bulkhead.channels;
CREATE TABLE public.plain (id bigserial PRIMARY KEY, k int NOT NULL, payload jsonb NOT NULL);
CREATE TABLE bulkhead.intake_probe (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  channel_id bigint NOT NULL,
  payload jsonb NOT NULL,
  idempotency_key text,
  ordering_key text);
CREATE TABLE bulkhead.intake_claimable (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue text NOT NULL,
  tenant_id bigint NOT NULL,
  channel_id bigint NOT NULL,
  priority smallint NOT NULL DEFAULT 1,
  scheduled_at timestamptz NOT NULL DEFAULT now(),
  payload jsonb NOT NULL,
  idempotency_key text,
  ordering_key text);
CREATE INDEX intake_claimable_claim
    ON bulkhead.intake_claimable (queue, priority, scheduled_at, id);
\if :claimable_bare
ALTER TABLE bulkhead.intake_claimable DROP CONSTRAINT intake_claimable_pkey;
\endif
SQL
# The two intake enqueues: a plpgsql function, SECURITY DEFINER with a pinned search_path as
# bulkhead.enqueue is, that checks the payload as enqueue does, looks its channel up (the
# record c: enabled, and what the INSERT routes by) and inserts. $1 the function's name, $2 the
# lookup (… INTO c), $3 the INSERT (… RETURNING i.id INTO id).
intake_function() {
  cat <<SQL
CREATE FUNCTION public.$1(channel_id bigint, payload jsonb) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET enable_seqscan = off AS \$fn\$
DECLARE
  kind text := jsonb_typeof($1.payload);
  c record;
  id bigint;
BEGIN
  IF kind IS NULL OR kind NOT IN ('object', 'array') THEN
    RAISE EXCEPTION 'payload must be a JSON object or array' USING ERRCODE = '22023';
  END IF;
  IF octet_length($1.payload::text) > 262144 THEN
    RAISE EXCEPTION 'payload over the limit' USING ERRCODE = '54000';
  END IF;
  $2;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no channel %', $1.channel_id USING ERRCODE = '23503';
  END IF;
  IF NOT c.enabled THEN
    RAISE EXCEPTION 'channel % is disabled', $1.channel_id USING ERRCODE = '55000';
  END IF;
  $3;
  RETURN id;
END
\$fn\$;
SQL
}
psql "$db" -q -v ON_ERROR_STOP=1 \
  -c "$(intake_function intake_probe_enqueue \
        "SELECT ch.enabled INTO c FROM bulkhead.channels ch
          WHERE ch.id = intake_probe_enqueue.channel_id" \
        "INSERT INTO bulkhead.intake_probe AS i (channel_id, payload)
         VALUES (intake_probe_enqueue.channel_id, intake_probe_enqueue.payload)
         RETURNING i.id INTO id")" \
  -c "$(intake_function intake_claimable_enqueue \
        "SELECT ch.enabled, t.id AS tenant_id, t.tier INTO c
           FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id
          WHERE ch.id = intake_claimable_enqueue.channel_id" \
        "INSERT INTO bulkhead.intake_claimable AS i (queue, tenant_id, channel_id, payload)
         VALUES (c.tier, c.tenant_id, intake_claimable_enqueue.channel_id,
                 intake_claimable_enqueue.payload)
         RETURNING i.id INTO id")"

payload='{"type": "message.created", "conversation": 7, "text": "hello"}'
cases=(plain intake function claimable enqueue)
batches=(move claim claim_move claim_fifo)
scripts=$(mktemp -d)
for case in "${cases[@]}"; do
  # The loop's statement, with `ch` the loop's channel; pgbench's is the same with :ch.
  case $case in
    plain) statement="INSERT INTO public.plain (k, payload) VALUES (ch, '$payload')" ;;
    intake) statement="INSERT INTO bulkhead.intake_probe (channel_id, payload) VALUES (ch, '$payload')" ;;
    function) statement="PERFORM public.intake_probe_enqueue(ch, '$payload')" ;;
    claimable) statement="PERFORM public.intake_claimable_enqueue(ch, '$payload')" ;;
    enqueue) statement="PERFORM bulkhead.enqueue(ch, '$payload')" ;;
  esac
  printf '\\set ch random(1, 100)\n%s;\n' \
    "$(sed -e 's/^PERFORM /SELECT /' -e 's/(ch, /(:ch, /' <<<"$statement")" >"$scripts/$case.sql"
  loop_sql "$statement" 5000 100 1 >"$scripts/$case.txn.sql"
done

empty() {
  psql "$db" -q -c "TRUNCATE public.plain, bulkhead.intake_probe, bulkhead.intake_claimable,
                             bulkhead.job_rows"
}
in_server() { empty; psql "$db" -q -f "$scripts/$1.txn.sql" 2>&1 | awk '/loop_us/ {print $NF}'; }
lsn() { psql "$db" -At -c "SELECT pg_current_wal_insert_lsn()"; }
# Prints "<transactions/s> <WAL bytes a row>" of 16 pgbench clients running the case.
commits() {
  local table from tps
  case $1 in
    plain) table=public.plain ;;
    enqueue) table=bulkhead.job_rows ;;
    claimable) table=bulkhead.intake_claimable ;;
    *) table=bulkhead.intake_probe ;;
  esac
  empty
  psql "$db" -q -c CHECKPOINT
  from=$(lsn)
  tps=$("$pg_bindir/pgbench" -n -c 16 -j 2 -T "$seconds" -f "$scripts/$1.sql" "$db" 2>&1 |
    awk '/^tps = / {printf "%.0f", $3}')
  psql "$db" -At -c "SELECT '$tps', round(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$from')
                       / greatest(count(*), 1)) FROM $table" | tr '|' ' '
}
# The batch statements, each one batch's worth in the order the claim reads, affecting no row
# once its source is empty:
#   move        the intake's rows into jobs as available, routed as enqueue routes;
#   claim       today's claim: jobs' available rows to executing (the SET of the claim's UPDATE);
#   claim_move  the claimable intake's rows into jobs as executing: a claim that moves.
fill_sql() {
  case $1 in
    move | claim_fifo) echo "INSERT INTO bulkhead.intake_probe (channel_id, payload)
                  SELECT 1 + g % 100, '$payload' FROM generate_series(1, $move_rows) g" ;;
    claim) echo "INSERT INTO bulkhead.job_rows (queue, tenant_id, channel_id, payload)
                   SELECT t.tier, t.id, ch.id, '$payload' FROM generate_series(1, $move_rows) g
                     JOIN bulkhead.channels ch ON ch.id = 1 + g % 100
                     JOIN bulkhead.tenants t ON t.id = ch.tenant_id" ;;
    claim_move) echo "INSERT INTO bulkhead.intake_claimable (queue, tenant_id, channel_id, payload)
                        SELECT t.tier, t.id, ch.id, '$payload' FROM generate_series(1, $move_rows) g
                          JOIN bulkhead.channels ch ON ch.id = 1 + g % 100
                          JOIN bulkhead.tenants t ON t.id = ch.tenant_id" ;;
  esac
}
batch_sql() {
  case $1 in
    move) cat <<SQL
    WITH batch AS (
      DELETE FROM bulkhead.intake_probe i
       WHERE i.id IN (SELECT p.id FROM bulkhead.intake_probe p ORDER BY p.id LIMIT $move_batch)
      RETURNING i.channel_id, i.payload, i.ordering_key)
    INSERT INTO bulkhead.job_rows AS j
           (queue, tenant_id, channel_id, state, priority, scheduled_at, payload, ordering_key)
    SELECT t.tier, t.id, b.channel_id,
           CASE WHEN ch.breaker_state = 'closed' AND NOT ch.paused THEN 'available'
                ELSE 'parked' END,
           CASE WHEN ch.breaker_state = 'closed' AND NOT ch.paused THEN 1 ELSE 3 END,
           now(), b.payload, b.ordering_key
      FROM batch b
      JOIN bulkhead.channels ch ON ch.id = b.channel_id
      JOIN bulkhead.tenants t ON t.id = ch.tenant_id
SQL
    ;;
    claim) cat <<SQL
    UPDATE bulkhead.job_rows AS j
       SET state = 'executing', attempt = j.attempt + 1, attempted_at = clock_timestamp(),
           attempted_by = 'probe'
     WHERE j.id IN (SELECT k.id FROM bulkhead.job_rows k
                     WHERE k.queue = want_tier AND k.state = 'available' AND k.priority = 1
                     ORDER BY k.scheduled_at, k.id LIMIT $move_batch)
SQL
    ;;
    claim_move) cat <<SQL
    WITH batch AS (
      DELETE FROM bulkhead.intake_claimable i
       WHERE i.ctid = ANY(ARRAY(SELECT p.ctid FROM bulkhead.intake_claimable p
                                 WHERE p.queue = want_tier AND p.priority = 1
                                 ORDER BY p.scheduled_at, p.id LIMIT $move_batch))
      RETURNING i.*)
    INSERT INTO bulkhead.job_rows AS j
           (queue, tenant_id, channel_id, state, priority, scheduled_at, payload, ordering_key,
            attempt, attempted_at, attempted_by)
    SELECT b.queue, b.tenant_id, b.channel_id, 'executing', b.priority, b.scheduled_at,
           b.payload, b.ordering_key, 1, clock_timestamp(), 'probe'
      FROM batch b
SQL
    ;;
    claim_fifo) cat <<SQL
    -- Walk the intake in id order and stop at the batch, as a claim's window does (left to
    -- itself, the planner sorts every intake row, each routed, for each batch). Each row is
    -- routed once, as it is walked (pick), and the insert takes the route from there.
    PERFORM set_config('enable_sort', 'off', true);
    WITH pick AS (
      SELECT p.ctid AS row_ctid, t.id AS tenant_id, t.tier
        FROM bulkhead.intake_probe p
        JOIN bulkhead.channels ch ON ch.id = p.channel_id
        JOIN bulkhead.tenants t ON t.id = ch.tenant_id
       WHERE t.tier = want_tier
       ORDER BY p.id LIMIT $move_batch),
    batch AS (
      DELETE FROM bulkhead.intake_probe i
       WHERE i.ctid = ANY(ARRAY(SELECT row_ctid FROM pick))
      RETURNING i.ctid AS row_ctid, i.channel_id, i.payload, i.ordering_key)
    INSERT INTO bulkhead.job_rows AS j
           (queue, tenant_id, channel_id, state, priority, scheduled_at, payload, ordering_key,
            attempt, attempted_at, attempted_by)
    SELECT pick.tier, pick.tenant_id, b.channel_id, 'executing', 1, now(), b.payload,
           b.ordering_key, 1, clock_timestamp(), 'probe'
      FROM batch b JOIN pick USING (row_ctid)
SQL
    ;;
    result) cat <<SQL
    UPDATE bulkhead.job_rows AS j
       SET state = 'completed', finished_at = now(), delivered_status = 200, delivered_ms = 3.2
     WHERE j.id IN (SELECT k.id FROM bulkhead.job_rows k
                     WHERE k.state = 'executing' AND k.attempted_by = 'probe'
                     ORDER BY k.id LIMIT $move_batch)
SQL
    ;;
  esac
}
# The statements a case runs one after the other, each over every row.
steps() { case $1 in move) echo move ;; *) echo "$1 result" ;; esac; }
# Prints "<µs a delivery> <WAL bytes a delivery>" of each of a batch case's steps, in turn.
batch_cost() {
  local from step
  empty
  # The CHECKPOINT before the fill, not between it and the batches: a node moves or claims
  # rows within milliseconds of their commit, so their pages are rarely imaged again for it.
  psql "$db" -q -c CHECKPOINT -c "$(fill_sql "$1")"
  for step in $(steps "$1"); do
    from=$(lsn)
    psql "$db" -q 2>&1 <<SQL | awk '/batch_us/ {printf "%s ", $NF}'
SET synchronous_commit = off;
DO \$\$
DECLARE
  started timestamptz := clock_timestamp();
  n bigint;
  done bigint := 0;
  tiers text[] := ARRAY[$tier_list];
  turn integer := 0;
  idle integer := 0;  -- batches in a row that took nothing: every tier's rows are taken
  want_tier text;     -- the tier whose turn it is (the claims' queue)
BEGIN
  LOOP
    want_tier := tiers[1 + turn % cardinality(tiers)];
    turn := turn + 1;
$(batch_sql "$step");
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
      idle := idle + 1;
      EXIT WHEN idle >= cardinality(tiers);
    ELSE
      idle := 0;
    END IF;
    done := done + n;
    COMMIT;
  END LOOP;
  IF done <> $move_rows THEN
    RAISE EXCEPTION '$step: % rows of %', done, $move_rows;
  END IF;
  RAISE NOTICE 'batch_us %', round(extract(epoch FROM clock_timestamp() - started) * 1e6 / done, 1);
END
\$\$;
SQL
    psql "$db" -At -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$from')
                                    / $move_rows)"
  done | tr '\n' ' '
  echo
}

echo "load/intake_cost.sh: durability on, $rounds rounds, pgbench $seconds s a case;" \
  "load before: $(load_average all)"
declare -A us tps wal
for ((round = 1; round <= rounds; round++)); do
  line="round $round:"
  for case in "${cases[@]}"; do
    u=$(in_server "$case")
    read -r t w < <(commits "$case")
    us[$case]+="$u " tps[$case]+="$t " wal[$case]+="$w "
    line+=" $case $u µs, $t/s, $w B;"
  done
  for batch in "${batches[@]}"; do
    read -r -a got < <(batch_cost "$batch")
    i=0
    for step in $(steps "$batch"); do
      key=$batch
      [ "$step" = result ] && key=$batch.result
      u=${got[i]} w=${got[i + 1]}
      i=$((i + 2))
      us[$key]+="$u " wal[$key]+="$w "
      line+=" $key $u µs, $w B;"
    done
  done
  echo "$line"
done
rm -rf "$scripts"
echo "load after: $(load_average all)"
echo
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
printf '%-18s %14s %8s %16s %8s %10s %8s\n' case µs_txn_server x_plain tps_16_durable x_plain \
  wal_B x_plain
up=$(median_of "${us[plain]}") tp=$(median_of "${tps[plain]}") wp=$(median_of "${wal[plain]}")
for case in "${cases[@]}"; do
  u=$(median_of "${us[$case]}") t=$(median_of "${tps[$case]}") w=$(median_of "${wal[$case]}")
  printf '%-18s %14s %8s %16s %8s %10s %8s\n' "$case" "$u" "$(ratio "$u" "$up")" "$t" \
    "$(ratio "$t" "$tp")" "$w" "$(ratio "$w" "$wp")"
done
for key in move claim claim.result claim_move claim_move.result claim_fifo claim_fifo.result; do
  u=$(median_of "${us[$key]}") w=$(median_of "${wal[$key]}")
  printf '%-18s %14s %8s %16s %8s %10s %8s\n' "$key" "$u" "$(ratio "$u" "$up")" - - "$w" \
    "$(ratio "$w" "$wp")"
done
# A design's µs and WAL up to the result: the sum of its parts' medians.
sum() {
  local -n of=$1
  local part total=0
  shift
  for part in "$@"; do
    total=$(awk -v a="$total" -v b="$(median_of "${of[$part]}")" 'BEGIN {print a + b}')
  done
  echo "$total"
}
echo
echo "a delivery's life up to its result:             µs in the server   WAL bytes"
for design in "enqueue claim claim.result" "function move claim claim.result" \
              "claimable claim_move claim_move.result" "function claim_fifo claim_fifo.result"; do
  read -ra parts <<<"$design"
  printf '  %-45s %14s %11s\n' "${design// / + }" "$(sum us "${parts[@]}")" \
    "$(sum wal "${parts[@]}")"
done
