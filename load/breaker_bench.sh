#!/usr/bin/env bash
# breaker_bench.sh — the circuit breaker on this machine: a dead endpoint, parking, the claim.
#
#   load/breaker_bench.sh                # all three: dead, park, claim (about 2 minutes)
#   load/breaker_bench.sh dead           # a 10,000-delivery backlog to an endpoint that never
#                                        # answers (BREAKER_BENCH_BACKLOG, _CONCURRENCY, _SECONDS)
#   load/breaker_bench.sh park           # park and unpark 100,000 jobs in one statement
#                                        # (BREAKER_BENCH_JOBS, _ROUNDS)
#   load/breaker_bench.sh claim          # claim latency with and without 1,000,000 parked or
#                                        # completed rows, three databases side by side
#                                        # (BREAKER_BENCH_AVAILABLE, _EXTRA, _DRAINS)
#   load/breaker_bench.sh dead dead dead # modes run in the order given, repeats included
#
# Builds (./setup.sh), starts an embedded PostgreSQL in .run/bench-pg (durability off, Unix
# socket only), and runs build/bin/bulkhead-breaker-bench. `dead` starts a real `bulkhead run`
# node with tiers/default.json's settings against a loopback receiver that never answers;
# `park` and `claim` time the stores' statements from C++ (`claim` in breaker_bench_claim_a, _b
# and _c, which it drops at the end). These are 2-core machines: the node, PostgreSQL and the
# receiver share them, so read figures as this machine's, not a server's.
set -euo pipefail
cd "$(dirname "$0")/.."

modes=${*:-dead park claim}
./setup.sh >/dev/null
run=.run/bench-pg
conn=$(load/embedded_postgres.sh start "$run")
trap 'load/embedded_postgres.sh stop "$run"' EXIT
bindir=${BULKHEAD_PG_BINDIR:-$(pg_config --bindir)}
"$bindir/psql" -X -q "$conn" -c "DROP DATABASE IF EXISTS breaker_bench" \
  -c "CREATE DATABASE breaker_bench"
db="${conn/dbname=postgres/dbname=breaker_bench}"

for mode in $modes; do
  case "$mode" in
    dead)
      build/bin/bulkhead-breaker-bench dead --database "$db" \
        --backlog "${BREAKER_BENCH_BACKLOG:-10000}" \
        --concurrency "${BREAKER_BENCH_CONCURRENCY:-10}" \
        --seconds "${BREAKER_BENCH_SECONDS:-15}" ;;
    park)
      build/bin/bulkhead-breaker-bench park --database "$db" \
        --jobs "${BREAKER_BENCH_JOBS:-100000}" --rounds "${BREAKER_BENCH_ROUNDS:-5}" ;;
    claim)
      build/bin/bulkhead-breaker-bench claim --database "$db" \
        --available "${BREAKER_BENCH_AVAILABLE:-5000}" --extra "${BREAKER_BENCH_EXTRA:-1000000}" \
        --drains "${BREAKER_BENCH_DRAINS:-5}" ;;
    *) echo "breaker_bench.sh: unknown mode '$mode' (dead, park, claim)" >&2; exit 2 ;;
  esac
  echo
done
