#!/usr/bin/env bash
# claim_sizes.sh — what one claim costs at each size: its fixed part and its part a row.
#
#   load/claim_sizes.sh                  # limits 0, 12, 25, 75, 150
#   CLAIM_SIZES="0 12 75" load/claim_sizes.sh
#   CLAIM_SIZES_ROUNDS=20                # timed rounds, after two untimed ones
#   CLAIM_SIZES_STATEMENTS=claim         # the whole claim only (default: it and its front,
#                                        # ClaimFront, ADR 0031, side by side)
#
# Why. A fleet of small nodes makes many small claims: at 8 nodes of 25 workers a claim took
# 12 rows, at one node of 200 it took 74 (load/pool_bench.sh, issue 30 goal 4), and the fleet
# spent more of PostgreSQL's CPU a delivery. This prints how a claim's time splits into a part
# every call pays and a part each row adds, on a quiet queue, so that the two can be weighed.
#
# One database (migrated with build/bin/bulkhead): 200 tenants of one channel each, 50 due jobs
# each (10,000, made due an hour ago, then VACUUM ANALYZE), nothing in flight, no lending. Each
# round runs the claim (Claim in worker/store/claim_store.sql, the SQL the build prepares, read
# from its generated embedded_queries.cc) and its front (ClaimFront) once each at each limit,
# the order of the limits reversed every round,
# each as EXPLAIN (ANALYZE, TIMING OFF) in a transaction rolled back, so every run starts from
# the same rows; in one session with the claiming connection's settings (generic plans, no seq
# or bitmap scans). Limit 0 claims nothing: the statement's start, its empty windows and its
# end. Prints, for each statement, each limit's median execution time and quartiles, the rows
# it claimed and a line fitted through the medians (fixed ms + ms a row); the front's medians
# over the whole claim's at each limit; and the 1-minute load average. (Here the front takes
# what the whole claim takes at every limit: no cap binds and every job is at priority 1.)
#
# Starts the embedded PostgreSQL in .run/bench-pg (load/embedded_postgres.sh, load/lib.sh) and
# stops it at the end; the database claim_sizes stays for inspection. Builds first (./setup.sh).
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

rounds=$(knob CLAIM_SIZES_ROUNDS 20 count)
read -r -a limits <<<"${CLAIM_SIZES:-0 12 25 75 150}"
for l in "${limits[@]}"; do
  if ! [[ $l =~ ^[0-9]+$ ]] || ((l > 1000)); then
    usage_error "CLAIM_SIZES: '$l' is not a limit of 0 to 1000"
  fi
done

load_setup
pg_start .run/bench-pg
db=$(db_conn claim_sizes)
source load/statement.sh
read -r -a statements <<<"${CLAIM_SIZES_STATEMENTS:-claim claim_front}"
for st in "${statements[@]}"; do
  [ -n "$(statement "$st")" ] || usage_error "CLAIM_SIZES_STATEMENTS: '$st' is not in the build"
done

fresh_database claim_sizes >/dev/null
build/bin/bulkhead migrate up --database "$db" >/dev/null
psql -q "$db" <<'SQL'
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, 200) g;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT g, 'http://127.0.0.1:9/c' || g FROM generate_series(1, 200) g;
SELECT count(bulkhead.enqueue_many(ARRAY(SELECT 1 + i % 200 FROM generate_series(0, 9999) i)::bigint[],
         ARRAY(SELECT '{"type": "invoice.paid", "text": "about a hundred bytes of payload"}'::jsonb
                 FROM generate_series(1, 10000)))) \g /dev/null
UPDATE bulkhead.jobs SET scheduled_at = now() - interval '1 hour' + id * interval '1 microsecond';
VACUUM ANALYZE bulkhead.job_rows;
SQL

# The skip scan bounded as the runner bounds it (twice the limit, at least 64), the long
# look-ahead (1,000), no claim floor.
{
  echo "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off;"
  echo "SET enable_bitmapscan = off;"
  for st in "${statements[@]}"; do  # both take the same parameters
    echo "PREPARE $st (text, int, text, bigint[], int[], bigint[], int[], int, int, int[], int,"
    echo "               int, int[], int, bigint, smallint, int, bigint) AS $(statement "$st");"
  done
  for ((r = 0; r < rounds + 2; r++)); do
    order=("${limits[@]}")
    if ((r % 2)); then
      order=()
      for ((i = ${#limits[@]} - 1; i >= 0; i--)); do order+=("${limits[i]}"); done
    fi
    for l in "${order[@]}"; do
      heads=$((2 * l > 64 ? 2 * l : 64))
      for st in "${statements[@]}"; do
        printf '\\echo limit %s round %s statement %s\n' "$l" "$r" "$st"
        echo "BEGIN; EXPLAIN (ANALYZE, TIMING OFF) EXECUTE $st('default', $l, 'bench',"
        echo "  '{}'::bigint[], '{}'::int[], '{}'::bigint[], '{}'::int[], 100, 100, '{}'::int[], 10,"
        echo "  0, '{}'::int[], 1000, 0, 0, $heads, 0); ROLLBACK;"
      done
    done
  done
} >.run/claim_sizes.sql
load=$(load_average)
psql -At "$db" -f .run/claim_sizes.sql >.run/claim_sizes.out
# Per run: its statement, limit, round, execution time (ms) and rows claimed (the top node's).
awk '/^limit/ { l = $2; r = $4; st = $6; rows = ""; next }
     rows == "" && /actual rows=/ { match($0, /actual rows=[0-9]+/); rows = substr($0, RSTART + 12, RLENGTH - 12) }
     /^Execution Time/ { if (r >= 2) print st, l, $3, rows }' .run/claim_sizes.out >.run/claim_sizes.times

echo "claim_sizes (load $load before, $(load_average) after; $rounds rounds; 200 tenants x 50 due jobs):"
for st in "${statements[@]}"; do
  echo "  $st:"
  : >.run/claim_sizes.medians
  : >".run/claim_sizes.$st"  # this run's medians only, for the ratio below
  for l in "${limits[@]}"; do
    times=$(awk -v st="$st" -v l="$l" '$1 == st && $2 == l { print $3 }' .run/claim_sizes.times)
    rows=$(awk -v st="$st" -v l="$l" '$1 == st && $2 == l { print $4 }' .run/claim_sizes.times |
             sort -u | paste -sd/)
    m=$(median <<<"$times")
    printf '    limit %4s: median %s ms (quartiles %s), rows claimed %s\n' "$l" "$m" \
      "$(quartiles <<<"$times")" "$rows"
    echo "$rows $m" >>.run/claim_sizes.medians
    echo "$l $m" >>".run/claim_sizes.$st"
  done
  # Least squares through (rows claimed, median ms).
  awk '{ n++; x += $1; y += $2; xx += $1 * $1; xy += $1 * $2 }
       END { if (n < 2 || n * xx == x * x) exit
             b = (n * xy - x * y) / (n * xx - x * x); a = (y - b * x) / n
             printf "    fitted: %.3f ms a call + %.4f ms a row claimed\n", a, b }' .run/claim_sizes.medians
done
if [ ${#statements[@]} -eq 2 ]; then
  echo "  ${statements[1]} / ${statements[0]}, the medians at each limit:"
  join ".run/claim_sizes.${statements[0]}" ".run/claim_sizes.${statements[1]}" |
    awk '{ printf "    limit %4s: %.2f\n", $1, ($2 > 0 ? $3 / $2 : 0) }'
fi
for st in "${statements[@]}"; do rm -f ".run/claim_sizes.$st"; done
