#!/usr/bin/env bash
# claim_bench.sh — the claim statement alone, at the long and the short look-ahead in turn, on
# fixed states of the queue (ADR 0014, worker/engine/claim/window_look_ahead.h).
#
#   load/claim_bench.sh                  # both states below, in this order
#   load/claim_bench.sh lone             # only the states given
#
#   CLAIM_BENCH_ROUNDS=20                # timed rounds per state, after two untimed ones
#
# States (each its own database, migrated with build/bin/bulkhead, jobs enqueued with
# bulkhead.enqueue_many and made due an hour ago, then VACUUM ANALYZE):
#   lone  one tenant of 20 channels with 50,000 due jobs, at its cap of 100 (5 in flight on
#         each channel, each channel's window grown to 180), the claim's limit 80 and its
#         lending budget 60: a lone tenant borrowing idle slots, whose backlog is the whole
#         front of the queue. The caps let nothing through; everything taken is lent.
#   many  1,001 tenants of one channel each: the first at its cap of 100 with 500 due jobs at
#         the front of the queue, the other 1,000 with 2 due jobs each behind them; limit 50,
#         no lending. The held-back front the long look-ahead is kept for: in order, the windows
#         find the others behind it; at the short one, the skip scan visits all 1,001.
#
# Each round runs the claim (Claim in worker/store/claim_store.sql, the SQL the build prepares,
# read from its generated embedded_queries.cc) once at each look-ahead, the order swapped every
# round, each as EXPLAIN (ANALYZE, TIMING OFF) in a transaction rolled back, so every run
# starts from the same rows; all in one session, with the claiming connection's settings
# (generic plans, no seq or bitmap scans). Prints each look-ahead's median execution time, its
# quartiles and the rows it claimed, the ratio short/long, and the 1-minute load average.
#
# Not `load/breaker_bench.sh claim`: that one times the store's whole claim from C++ (BEGIN, the
# statement, COMMIT) at one look-ahead beside a million parked or completed rows, to show the
# claim does not read them; this one times the statement alone, in psql, on two fixed states of
# the queue, at the long and the short look-ahead in turn, to weigh the look-ahead.
#
# Starts the embedded PostgreSQL in .run/bench-pg (load/embedded_postgres.sh, load/lib.sh) and
# stops it at the end; the databases claim_bench_<state> stay for inspection. Builds first
# (./setup.sh).
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

rounds=$(knob CLAIM_BENCH_ROUNDS 20 count)
all_states="lone many"
read -r -a states <<<"${*:-$all_states}"
for s in "${states[@]}"; do
  case " $all_states " in *" $s "*) ;;
    *) usage_error "unknown state '$s' ($all_states)" ;;
  esac
done

load_setup
pg_start .run/bench-pg
db() { db_conn "claim_bench_$1"; }
source load/statement.sh
claim=$(statement claim)
[ -n "$claim" ] || { echo "claim_bench.sh: the claim statement is not in the build" >&2; exit 1; }

# ints N V: a SQL int[] of N copies of V. seq A B: a SQL bigint[] of A..B.
ints() { printf "'{%s}'::int[]" "$(yes "$2" | head -n "$1" | paste -sd,)"; }
seq_array() { printf "'{%s}'::bigint[]" "$(seq -s, "$1" "$2")"; }

# setup STATE: the database and its rows. args STATE: the claim's parameters but the last.
setup() {
  fresh_database "claim_bench_$1"
  build/bin/bulkhead migrate up --database "$(db "$1")" >/dev/null
  case $1 in
    lone) psql "$(db "$1")" <<'SQL' ;;
INSERT INTO bulkhead.tenants (name) VALUES ('lone');
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT 1, 'http://127.0.0.1:9/c' || g FROM generate_series(1, 20) g;
SELECT count(bulkhead.enqueue_many(
         ARRAY(SELECT 1 + i % 20 FROM generate_series(b * 1000, b * 1000 + 999) i)::bigint[],
         ARRAY(SELECT '{"type": "invoice.paid", "text": "about a hundred bytes of payload"}'::jsonb
                 FROM generate_series(1, 1000))))
  FROM generate_series(0, 49) b;
SQL
    many) psql "$(db "$1")" <<'SQL' ;;
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, 1001) g;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT g, 'http://127.0.0.1:9/c' || g FROM generate_series(1, 1001) g;
SELECT count(bulkhead.enqueue_many(ARRAY(SELECT 1::bigint FROM generate_series(1, 500)),
         ARRAY(SELECT '{"type": "invoice.paid"}'::jsonb FROM generate_series(1, 500))));
SELECT count(bulkhead.enqueue_many(ARRAY(SELECT 2 + i % 1000 FROM generate_series(0, 1999) i)::bigint[],
         ARRAY(SELECT '{"type": "invoice.paid"}'::jsonb FROM generate_series(1, 2000))));
SQL
  esac
  psql "$(db "$1")" -c "UPDATE bulkhead.jobs SET scheduled_at = now() - interval '1 hour' + id * interval '1 microsecond'" \
    -c "VACUUM ANALYZE bulkhead.job_rows" >/dev/null
}
args() {
  # queue, limit, node, channels in flight and counts, tenants in flight and counts, channel
  # and tenant caps, channel windows, first window, lending budget, lend windows
  case $1 in
    lone) echo "'default', 80, 'bench', $(seq_array 1 20), $(ints 20 5), '{1}'::bigint[], \
'{100}'::int[], 100, 100, $(ints 20 180), 10, 60, $(ints 20 180)" ;;
    many) echo "'default', 50, 'bench', '{1}'::bigint[], '{100}'::int[], '{1}'::bigint[], \
'{100}'::int[], 100, 100, '{100}'::int[], 10, 0, '{0}'::int[]" ;;
  esac
}

# The two look-aheads the runner chooses between (ClaimLimits, worker/store/store_types.h).
long=$(grep -o 'kLongLookAhead = [0-9]*' worker/store/store_types.h | grep -o '[0-9]*$')
short=$(grep -o 'kShortLookAhead = [0-9]*' worker/store/store_types.h | grep -o '[0-9]*$')
if [ -z "$long" ] || [ -z "$short" ]; then
  echo "claim_bench.sh: the look-aheads are not in store_types.h" >&2
  exit 1
fi

for state in "${states[@]}"; do
  setup "$state" >/dev/null
  a=$(args "$state")
  # The skip scan from the lowest head, bounded as the runner bounds it (ClaimLimits::HeadsFor:
  # twice the limit, at least 64), and no claim floor.
  limit=$(echo "$a" | cut -d, -f2 | tr -d ' ')
  heads=$((2 * limit > 64 ? 2 * limit : 64))
  {
    echo "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off;"
    echo "SET enable_bitmapscan = off;"
    echo "PREPARE claim (text, int, text, bigint[], int[], bigint[], int[], int, int, int[], int,"
    echo "               int, int[], int, bigint, smallint, int, bigint) AS $claim;"
    for ((r = 0; r < rounds + 2; r++)); do
      if ((r % 2)); then order="$short $long"; else order="$long $short"; fi
      for la in $order; do
        printf '\\echo look-ahead %s round %s\n' "$la" "$r"
        echo "BEGIN; EXPLAIN (ANALYZE, TIMING OFF) EXECUTE claim($a, $la, 0, 0, $heads, 0); ROLLBACK;"
      done
    done
  } >".run/claim_bench_$state.sql"
  load=$(load_average)
  psql -At "$(db "$state")" -f ".run/claim_bench_$state.sql" >".run/claim_bench_$state.out"
  # Per run: its look-ahead, round, execution time (ms) and rows claimed (the top node's).
  awk '/^look-ahead/ { la = $2; r = $4; rows = ""; next }
       rows == "" && /actual rows=/ { match($0, /actual rows=[0-9]+/); rows = substr($0, RSTART + 12, RLENGTH - 12) }
       /^Execution Time/ { if (r >= 2) print la, $3, rows }' ".run/claim_bench_$state.out" \
    >".run/claim_bench_$state.times"
  echo "claim_bench $state (load $load, $rounds rounds):"
  declare -A median_of=()
  for la in $long $short; do
    times=$(awk -v la="$la" '$1 == la { print $2 }' ".run/claim_bench_$state.times")
    rows=$(awk -v la="$la" '$1 == la { print $3 }' ".run/claim_bench_$state.times" | sort -u | paste -sd/)
    printf '  look-ahead %4s: median %s ms (quartiles %s), rows claimed %s\n' "$la" \
      "$(median <<<"$times")" "$(quartiles <<<"$times")" "$rows"
    median_of[$la]=$(median <<<"$times")
  done
  awk -v a="${median_of[$short]}" -v b="${median_of[$long]}" \
    'BEGIN { printf "  short/long %.3f\n", a / b }'
done
