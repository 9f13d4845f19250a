#!/usr/bin/env bash
# breaker_bench.sh — the circuit breaker on this machine: a dead endpoint, and the claim beside
# dead rows.
#
#   load/breaker_bench.sh                # both: dead, claim (about 2 minutes)
#   load/breaker_bench.sh dead           # a 10,000-delivery backlog to an endpoint that never
#                                        # answers (BREAKER_BENCH_BACKLOG, _CONCURRENCY, _SECONDS)
#   load/breaker_bench.sh claim          # claim latency with and without 1,000,000 parked or
#                                        # completed rows, three databases side by side
#                                        # (BREAKER_BENCH_AVAILABLE, _EXTRA, _DRAINS)
#   load/breaker_bench.sh dead dead dead # modes run in the order given, repeats included
#
# Parking and unparking a backlog in one statement is load/park_bench.sh's (its `head` variant is
# today's schema). `claim` times the store's whole claim beside a million rows it must not read;
# load/claim_bench.sh times the claim statement alone at the long and the short look-ahead.
#
# Builds (./setup.sh), starts an embedded PostgreSQL in .run/bench-pg (durability off, Unix
# socket only; load/lib.sh), and runs `build/bin/bulkhead-load breaker MODE`. `dead` starts a
# real `bulkhead run` node with tiers/default.json's settings against a loopback receiver that
# never answers; `claim` times the store's statement from C++ (in breaker_bench_claim_a, _b and
# _c, which it drops at the end). These are 2-core machines: the node, PostgreSQL and the
# receiver share them, so read figures as this machine's, not a server's.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

modes=${*:-dead claim}
for mode in $modes; do
  case "$mode" in
    dead|claim) ;;
    park) usage_error "park moved to load/park_bench.sh (its head variant is today's schema)" ;;
    *) usage_error "unknown mode '$mode' (dead, claim)" ;;
  esac
done
backlog=$(knob BREAKER_BENCH_BACKLOG 10000 count)
concurrency=$(knob BREAKER_BENCH_CONCURRENCY 10 count)
seconds=$(knob BREAKER_BENCH_SECONDS 15 count)
available=$(knob BREAKER_BENCH_AVAILABLE 5000 count)
extra=$(knob BREAKER_BENCH_EXTRA 1000000 count0)
drains=$(knob BREAKER_BENCH_DRAINS 5 count)

load_setup
pg_start .run/bench-pg
fresh_database breaker_bench
db=$(db_conn breaker_bench)

for mode in $modes; do
  case "$mode" in
    dead)
      build/bin/bulkhead-load breaker dead --database "$db" --backlog "$backlog" \
        --concurrency "$concurrency" --seconds "$seconds" ;;
    claim)
      build/bin/bulkhead-load breaker claim --database "$db" --available "$available" \
        --extra "$extra" --drains "$drains" ;;
  esac
  echo
done
