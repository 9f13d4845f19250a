#!/usr/bin/env bash
# intake_cost.sh — what an enqueue would cost into a narrow intake table, beside a plain insert
# and today's bulkhead.enqueue (issue 30, goal 1; ADR 0029, proposed).
#
#   load/intake_cost.sh
#   INTAKE_COST_ROUNDS=5 INTAKE_COST_SECONDS=10 load/intake_cost.sh
#
# A prototype measured, not a feature: one freshly migrated database on the durable embedded
# PostgreSQL (.run/bench-pg-durable), 100 tenants with a channel each, and beside
# bulkhead.jobs
#   plain     a three-column table, the application's own write;
#   intake    bulkhead.intake_probe: an identity key, the channel, the payload and the two
#             optional keys, its primary key only, no CHECK, no trigger;
#   function  intake_probe_enqueue(channel, payload): a plpgsql function, SECURITY DEFINER
#             with a pinned search_path as bulkhead.enqueue is, that checks the payload as
#             enqueue does, looks the channel up by its key (enabled or refused) and inserts
#             into intake_probe;
#   enqueue   bulkhead.enqueue(channel, payload) as it is.
# For each, INTAKE_COST_ROUNDS (3) rounds, the cases in turn within a round:
#   - µs a transaction in the server: a DO block of 5,000 one-row transactions (a COMMIT
#     after each, synchronous_commit off), on an emptied table;
#   - transactions/s of 16 pgbench clients, durability on, INTAKE_COST_SECONDS (5) each,
#     after a CHECKPOINT.
# Prints each round and the medians with the ratio to plain. What the design still lacks —
# the move from intake to jobs, and a wake-up without a trigger — is in ADR 0029.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

rounds=$(knob INTAKE_COST_ROUNDS 3 count)
seconds=$(knob INTAKE_COST_SECONDS 5 count)

load_setup
pg_start .run/bench-pg-durable 1
fresh_database intake_cost
db=$(db_conn intake_cost)
build/bin/bulkhead migrate up --database "$db" >/dev/null
psql "$db" -q -v ON_ERROR_STOP=1 <<'SQL'
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, 100) g;
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
CREATE FUNCTION public.intake_probe_enqueue(channel_id bigint, payload jsonb) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET enable_seqscan = off AS $$
DECLARE
  kind text := jsonb_typeof(intake_probe_enqueue.payload);
  enabled boolean;
  id bigint;
BEGIN
  IF kind IS NULL OR kind NOT IN ('object', 'array') THEN
    RAISE EXCEPTION 'payload must be a JSON object or array' USING ERRCODE = '22023';
  END IF;
  IF octet_length(intake_probe_enqueue.payload::text) > 262144 THEN
    RAISE EXCEPTION 'payload over the limit' USING ERRCODE = '54000';
  END IF;
  SELECT ch.enabled INTO enabled FROM bulkhead.channels ch
   WHERE ch.id = intake_probe_enqueue.channel_id;
  IF enabled IS NOT true THEN
    RAISE EXCEPTION 'no enabled channel %', intake_probe_enqueue.channel_id
      USING ERRCODE = '23503';
  END IF;
  INSERT INTO bulkhead.intake_probe AS i (channel_id, payload)
  VALUES (intake_probe_enqueue.channel_id, intake_probe_enqueue.payload)
  RETURNING i.id INTO id;
  RETURN id;
END
$$;
SQL

payload='{"type": "message.created", "conversation": 7, "text": "hello"}'
cases=(plain intake function enqueue)
scripts=$(mktemp -d)
for case in "${cases[@]}"; do
  # The loop's statement, with `ch` the loop's channel; pgbench's is the same with :ch.
  case $case in
    plain) statement="INSERT INTO public.plain (k, payload) VALUES (ch, '$payload')" ;;
    intake) statement="INSERT INTO bulkhead.intake_probe (channel_id, payload) VALUES (ch, '$payload')" ;;
    function) statement="PERFORM public.intake_probe_enqueue(ch, '$payload')" ;;
    enqueue) statement="PERFORM bulkhead.enqueue(ch, '$payload')" ;;
  esac
  printf '\\set ch random(1, 100)\n%s;\n' \
    "$(sed -e 's/^PERFORM /SELECT /' -e 's/(ch, /(:ch, /' <<<"$statement")" >"$scripts/$case.sql"
  loop_sql "$statement" 5000 100 1 >"$scripts/$case.txn.sql"
done

empty() { psql "$db" -q -c "TRUNCATE public.plain, bulkhead.intake_probe, bulkhead.jobs"; }
in_server() { empty; psql "$db" -q -f "$scripts/$1.txn.sql" 2>&1 | awk '/loop_us/ {print $NF}'; }
commits() {
  empty
  psql "$db" -q -c CHECKPOINT
  "$pg_bindir/pgbench" -n -c 16 -j 2 -T "$seconds" -f "$scripts/$1.sql" "$db" 2>&1 |
    awk '/^tps = / {printf "%.0f", $3}'
}

echo "load/intake_cost.sh: durability on, $rounds rounds, pgbench $seconds s a case;" \
  "load before: $(load_average all)"
declare -A us tps
for ((round = 1; round <= rounds; round++)); do
  line="round $round:"
  for case in "${cases[@]}"; do
    u=$(in_server "$case")
    t=$(commits "$case")
    us[$case]+="$u " tps[$case]+="$t "
    line+=" $case $u µs, $t/s;"
  done
  echo "$line"
done
rm -rf "$scripts"
echo "load after: $(load_average all)"
echo
printf '%-10s %14s %8s %16s %8s\n' case µs_txn_server x_plain tps_16_durable x_plain
up=$(median_of "${us[plain]}") tp=$(median_of "${tps[plain]}")
for case in "${cases[@]}"; do
  u=$(median_of "${us[$case]}") t=$(median_of "${tps[$case]}")
  printf '%-10s %14s %8s %16s %8s\n' "$case" "$u" \
    "$(awk -v a="$u" -v b="$up" 'BEGIN {printf "%.2f", a / b}')" "$t" \
    "$(awk -v a="$t" -v b="$tp" 'BEGIN {printf "%.2f", a / b}')"
done
