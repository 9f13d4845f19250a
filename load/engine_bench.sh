#!/usr/bin/env bash
# engine_bench.sh — the delivery engine's throughput and pick-up latency on this machine.
#
#   load/engine_bench.sh                 # both: 100,000-delivery burst, then 50/s for 20 s
#   load/engine_bench.sh throughput      # only the burst (ENGINE_BENCH_JOBS, _CHANNELS, _WORKERS)
#   load/engine_bench.sh latency         # only the latency run (ENGINE_BENCH_RATE, _SECONDS)
#
# Builds (./setup.sh), starts an embedded PostgreSQL in .run/bench-pg (durability off, Unix
# socket only), and runs build/bin/bulkhead-engine-bench, which starts a real `bulkhead run`
# node against a loopback receiver that answers 200 at once. These are 2-core machines: the
# node, PostgreSQL and the receiver share them, so read figures as this machine's, not a
# server's.
set -euo pipefail
cd "$(dirname "$0")/.."

modes=${1:-throughput latency}
./setup.sh >/dev/null
run=.run/bench-pg
conn=$(load/embedded_postgres.sh start "$run")
trap 'load/embedded_postgres.sh stop "$run"' EXIT
bindir=${BULKHEAD_PG_BINDIR:-$(pg_config --bindir)}
"$bindir/psql" -X -q "$conn" -c "DROP DATABASE IF EXISTS engine_bench" \
  -c "CREATE DATABASE engine_bench"
db="${conn/dbname=postgres/dbname=engine_bench}"

for mode in $modes; do
  case "$mode" in
    throughput)
      build/bin/bulkhead-engine-bench throughput --database "$db" \
        --jobs "${ENGINE_BENCH_JOBS:-100000}" --channels "${ENGINE_BENCH_CHANNELS:-20}" \
        --workers "${ENGINE_BENCH_WORKERS:-200}" ;;
    latency)
      build/bin/bulkhead-engine-bench latency --database "$db" \
        --rate "${ENGINE_BENCH_RATE:-50}" --seconds "${ENGINE_BENCH_SECONDS:-20}" ;;
    *) echo "engine_bench.sh: unknown mode '$mode' (throughput, latency)" >&2; exit 2 ;;
  esac
done
