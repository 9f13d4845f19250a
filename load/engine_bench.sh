#!/usr/bin/env bash
# engine_bench.sh — the delivery engine's throughput, pick-up latency and caps on this machine.
#
#   load/engine_bench.sh                 # throughput, then latency
#   load/engine_bench.sh throughput      # only the burst (ENGINE_BENCH_JOBS, _CHANNELS, _WORKERS,
#                                        # _SHARE: 0.5 as shipped, 1 for no caps)
#   load/engine_bench.sh latency         # only the latency run (ENGINE_BENCH_RATE, _SECONDS)
#   load/engine_bench.sh latency-busy    # the latency run while another tenant's burst of
#                                        # ENGINE_BENCH_BACKGROUND (300,000) deliveries to an
#                                        # endpoint that answers at once keeps the node (and the
#                                        # machine's CPU) busy throughout
#   load/engine_bench.sh latency-busy-separate  # latency-busy with the burst's tenant on a tier
#                                        # of its own (`bulk`, the same settings): the pick-up
#                                        # when no claim of the burst's stands in front of it
#   load/engine_bench.sh latency-slots   # the same beside a burst (100,000) to an endpoint that
#                                        # answers after 100 ms: the other tenant holds its cap
#                                        # of the worker slots throughout
#   load/engine_bench.sh inflight        # the latency run on a tier of 10,000 workers while
#                                        # 10,000 requests of 4 other tenants (1,000 channels:
#                                        # slow start holds a channel that does not answer to
#                                        # its first window of 10) are held open for 40 s: the
#                                        # node's memory and the claim with 10,000 in flight
#   load/engine_bench.sh caps-lone       # the caps' cost for a lone tenant: the caps-cost burst
#                                        # over 20 channels of one tenant, share 0.5 and 1
#   load/engine_bench.sh caps-cost       # the caps' cost when nothing is broken: the burst over
#                                        # 20 channels (a tenant each) with share 0.5 and 1 in
#                                        # turn, ENGINE_BENCH_PAIRS (3) times each, 50,000 jobs
#                                        # (ENGINE_BENCH_JOBS); the ratio of the medians
#   load/engine_bench.sh caps-bind       # the same on 2 channels of one tenant, 20,000 jobs: the
#                                        # tenant cap (100 of 200 workers) binds
#   load/engine_bench.sh isolation       # a healthy tenant beside a hanging channel and a
#                                        # hanging 40-channel tenant, the breaker out of the way:
#                                        # 20 workers with shares 0.5 and 1, then 40 workers with
#                                        # 0.5, 0.25 and 1 (about 3 minutes)
#   load/engine_bench.sh churn           # table health: ENGINE_BENCH_ROUNDS (10) bursts of
#                                        # ENGINE_BENCH_JOBS (100,000) through one node, 200
#                                        # workers; the jobs table's and its indexes' sizes and
#                                        # autovacuum's work after each (1,000,000 in all)
#   load/engine_bench.sh metrics-cost    # what recording metrics costs: the caps-cost burst with
#                                        # recording on and off (BULKHEAD_METRICS_RECORDING=off,
#                                        # docs/metrics.md) in turn, ENGINE_BENCH_PAIRS (3) times
#                                        # each, 50,000 jobs; the ratio of the medians
#   load/engine_bench.sh binary-swap     # this build's node against an earlier one's, side by
#                                        # side: ENGINE_BENCH_BEFORE names a folder with the
#                                        # earlier build's bulkhead and bulkhead-load (or, from
#                                        # before the benches were modes of bulkhead-load, its
#                                        # bulkhead-engine-bench), copied out of this tree's
#                                        # build/bin/ (each bench binary
#                                        # starts build/bin/bulkhead and migrates to its own
#                                        # schema, so both are swapped, and the database is made
#                                        # afresh for every run); the caps-cost burst with each in
#                                        # turn, ENGINE_BENCH_PAIRS (3) times, the order swapped
#                                        # every other pair; the ratio of the medians
#   load/engine_bench.sh binary-swap-lone  # the same for caps-lone's layout (20 channels of one
#                                        # tenant, share 0.5)
#   load/engine_bench.sh binary-swap-busy  # the same for latency-busy: each build's p50 and
#                                        # p99, and the ratio of the median p99s
#   load/engine_bench.sh binary-swap-idle  # ... for latency (nothing beside)
#   load/engine_bench.sh binary-swap-slots # ... for latency-slots
#   load/engine_bench.sh rotation-cost   # what a rotation costs the claim and the send: the
#                                        # caps-cost burst with every channel holding one old
#                                        # secret (--old-secrets 1: two signatures a request) and
#                                        # none in turn, ENGINE_BENCH_PAIRS (3) times each; the
#                                        # ratio of the medians
#   load/engine_bench.sh table           # issue 34: one node drains 60,000 deliveries (20
#                                        # tenants) beside 10,000,000 finished and 1,000,000
#                                        # parked jobs with statistics stale, fresh and stale
#                                        # again (the history vacuumed before each burst after
#                                        # the first, as autovacuum would between them), and
#                                        # on an empty table in a database beside it
#                                        # before, between and after (ENGINE_BENCH_JOBS,
#                                        # _FINISHED, _PARKED); deliveries/s against the empty
#                                        # drains around, and the claim's and the result write's
#                                        # buffers and WAL a row and time a call
#                                        # (pg_stat_statements); about 10 minutes
#   load/engine_bench.sh shape           # issue 34: the same 60,000 over 20 tenants, over
#                                        # 60,000 tenants of one delivery, and half on 4 busy
#                                        # tenants beside 30,000 of one
#   load/engine_bench.sh fleet           # issue 30, goal 4: the same burst (ENGINE_BENCH_JOBS,
#                                        # 60,000, over 20 tenants) through 1, 2, 4 and 8 nodes
#                                        # (ENGINE_BENCH_NODES) sharing 200 workers evenly, side
#                                        # by side: deliveries/s, PostgreSQL's CPU and WAL per
#                                        # delivery, lock waits, the claim's and the result
#                                        # write's cost (pg_stat_statements); each against 1 node;
#                                        # with ENGINE_BENCH_BEFORE (a folder with an earlier
#                                        # build's bulkhead), that node and this one in turn
#   load/engine_bench.sh caps-cost caps-bind   # modes run in the order given
#
# table, shape and fleet run on a cluster of their own with durability on (.run/bench-pg-durable,
# BULKHEAD_PG_DURABLE=1); every other mode on one with it off, unless ENGINE_BENCH_DURABLE=1
# (or 0) says otherwise for the whole run.
#
# Builds (./setup.sh), starts an embedded PostgreSQL in .run/bench-pg (durability off, Unix
# socket only; load/lib.sh), and runs `build/bin/bulkhead-load engine MODE`, which starts a real
# `bulkhead run` node against a loopback receiver. These are 2-core machines: the node,
# PostgreSQL and the receiver share them, so read figures as this machine's, not a server's, and
# compare the ratios of runs taken side by side (every run prints the load average around it).
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

modes=${*:-throughput latency}
all_modes="throughput latency latency-busy latency-busy-separate latency-slots inflight caps-cost \
caps-lone caps-bind metrics-cost binary-swap binary-swap-lone binary-swap-busy binary-swap-idle \
binary-swap-slots rotation-cost table shape fleet isolation churn"
for mode in $modes; do
  case " $all_modes " in *" $mode "*) ;;
    *) usage_error "unknown mode '$mode' (${all_modes// /, })" ;;
  esac
done
# The knobs; each mode gives its own defaults (${ENGINE_BENCH_JOBS:-…} below).
check_knobs count ENGINE_BENCH_JOBS ENGINE_BENCH_CHANNELS ENGINE_BENCH_WORKERS ENGINE_BENCH_RATE \
  ENGINE_BENCH_SECONDS ENGINE_BENCH_BACKGROUND ENGINE_BENCH_PAIRS ENGINE_BENCH_ROUNDS
check_knobs count0 ENGINE_BENCH_FINISHED ENGINE_BENCH_PARKED
check_knobs share ENGINE_BENCH_SHARE
check_knobs counts ENGINE_BENCH_NODES
check_knobs flag ENGINE_BENCH_DURABLE
check_knobs dir ENGINE_BENCH_BEFORE

load_setup
durable=${ENGINE_BENCH_DURABLE:-}
if [ -z "$durable" ]; then
  durable=0
  for mode in $modes; do case "$mode" in table|shape|fleet) durable=1 ;; esac; done
fi
run=$(pg_durable_dir .run/bench-pg "$durable")
pg_start "$run" "$durable"
fresh_database engine_bench
db=$(db_conn engine_bench)
bench=(build/bin/bulkhead-load engine)

# median N…: the median of the numbers given.
median() {
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# side_by_side LABEL JOBS ARGS…: the burst of ENGINE_BENCH_JOBS (default JOBS) deliveries with
# share 0.5 and 1 in turn, ENGINE_BENCH_PAIRS times each, the order swapped every other pair
# (0.5 1, 1 0.5, 0.5 1) so that neither always runs first; prints every run, the deliveries/s
# of each, and the ratio of the medians.
side_by_side() {
  local jobs=${ENGINE_BENCH_JOBS:-$2}
  local label="$1, $jobs jobs"; shift 2
  local capped=() uncapped=() pairs=${ENGINE_BENCH_PAIRS:-3} out rate load order
  for ((i = 1; i <= pairs; i++)); do
    if ((i % 2)); then order="0.5 1"; else order="1 0.5"; fi
    for share in $order; do
      echo "--- $label, pair $i, share $share"
      out=$("${bench[@]}" throughput --database "$db" --jobs "$jobs" --share "$share" "$@")
      echo "$out"
      rate=$(sed -n 's/.*s: \([0-9]*\) deliveries\/s.*/\1/p' <<<"$out")
      load=$(sed -n 's/.*load average (1, 5, 15 min) before \([0-9.]*\).*/\1/p' <<<"$out")
      if [ "$share" = 1 ]; then uncapped+=("$rate"); else capped+=("$rate"); fi
      summary+=("$label  pair $i  share $share  $rate deliveries/s  load $load")
    done
  done
  local mc mu ratio
  mc=$(median "${capped[@]}")
  mu=$(median "${uncapped[@]}")
  ratio=$(awk -v a="$mc" -v b="$mu" 'BEGIN { printf "%.3f", a / b }')
  local line="$label: capped (0.5) ${capped[*]} -> median $mc; "
  line+="uncapped (1) ${uncapped[*]} -> median $mu; capped/uncapped $ratio"
  summary+=("$line")
}

# metrics_side_by_side JOBS ARGS…: the burst with metrics recording on and off in turn (the
# order swapped every other pair), ENGINE_BENCH_PAIRS times each; the ratio of the medians.
# The node inherits BULKHEAD_METRICS_RECORDING from the bench's environment.
metrics_side_by_side() {
  local jobs=${ENGINE_BENCH_JOBS:-$1}; shift
  local label="metrics-cost (20 channels, 20 tenants, 200 workers, share 0.5), $jobs jobs"
  local on=() off=() pairs=${ENGINE_BENCH_PAIRS:-3} out rate load order
  for ((i = 1; i <= pairs; i++)); do
    if ((i % 2)); then order="on off"; else order="off on"; fi
    for recording in $order; do
      echo "--- $label, pair $i, recording $recording"
      out=$(BULKHEAD_METRICS_RECORDING=$recording \
            "${bench[@]}" throughput --database "$db" --jobs "$jobs" --share 0.5 "$@")
      echo "$out"
      rate=$(sed -n 's/.*s: \([0-9]*\) deliveries\/s.*/\1/p' <<<"$out")
      load=$(sed -n 's/.*load average (1, 5, 15 min) before \([0-9.]*\).*/\1/p' <<<"$out")
      if [ "$recording" = on ]; then on+=("$rate"); else off+=("$rate"); fi
      summary+=("$label  pair $i  recording $recording  $rate deliveries/s  load $load")
    done
  done
  local mon moff ratio
  mon=$(median "${on[@]}")
  moff=$(median "${off[@]}")
  ratio=$(awk -v a="$mon" -v b="$moff" 'BEGIN { printf "%.3f", a / b }')
  summary+=("$label: recording on ${on[*]} -> median $mon; off ${off[*]} -> median $moff; on/off $ratio")
}

# rotation_side_by_side JOBS ARGS…: the burst with one old secret per channel and with none in
# turn (the order swapped every other pair), ENGINE_BENCH_PAIRS times each.
rotation_side_by_side() {
  local jobs=${ENGINE_BENCH_JOBS:-$1}; shift
  local label="rotation-cost (20 channels, 20 tenants, 200 workers, share 0.5), $jobs jobs"
  local one=() none=() pairs=${ENGINE_BENCH_PAIRS:-3} out rate load order
  for ((i = 1; i <= pairs; i++)); do
    if ((i % 2)); then order="1 0"; else order="0 1"; fi
    for old in $order; do
      echo "--- $label, pair $i, old secrets $old"
      out=$("${bench[@]}" throughput --database "$db" --jobs "$jobs" --share 0.5 --old-secrets "$old" "$@")
      echo "$out"
      rate=$(sed -n 's/.*s: \([0-9]*\) deliveries\/s.*/\1/p' <<<"$out")
      load=$(sed -n 's/.*load average (1, 5, 15 min) before \([0-9.]*\).*/\1/p' <<<"$out")
      if [ "$old" = 1 ]; then one+=("$rate"); else none+=("$rate"); fi
      summary+=("$label  pair $i  old secrets $old  $rate deliveries/s  load $load")
    done
  done
  local m1 m0 ratio
  m1=$(median "${one[@]}")
  m0=$(median "${none[@]}")
  ratio=$(awk -v a="$m1" -v b="$m0" 'BEGIN { printf "%.3f", a / b }')
  summary+=("$label: one old secret ${one[*]} -> median $m1; none ${none[*]} -> median $m0; one/none $ratio")
}

# The node the benches start is build/bin/bulkhead (each bench binary has its path built in), so
# comparing builds means swapping that file. use_node PATH copies PATH there, moved into place
# whole; keep_this_node sets this build's node aside ($this), once, and puts it back however the
# script ends.
this=.run/bench-swap/bulkhead.this
this_kept=0
use_node() { cp "$1" build/bin/bulkhead.swap && mv -f build/bin/bulkhead.swap build/bin/bulkhead; }
keep_this_node() {
  [ "$this_kept" = 1 ] && return
  mkdir -p .run/bench-swap
  cp build/bin/bulkhead "$this"
  # shellcheck disable=SC2016  # expanded when the script exits
  on_exit 'use_node "$this"'
  this_kept=1
}

# binary_swap KIND LABEL ARGS…: `bulkhead-load engine KIND ARGS…` with the earlier build
# (ENGINE_BENCH_BEFORE) and this one in turn, ENGINE_BENCH_PAIRS (3) times each, the order
# swapped every other pair, on a database made afresh for each run; build/bin/bulkhead is put
# back however the run ends. KIND throughput compares deliveries/s, latency the p99 (and
# prints each run's p50); the summary gives the ratio of the medians, this/before.
binary_swap() {
  local before=${ENGINE_BENCH_BEFORE:?binary-swap needs ENGINE_BENCH_BEFORE=DIR}
  local kind=$1 label=$2; shift 2
  keep_this_node
  # The earlier build's bench: bulkhead-load's engine mode, or the bulkhead-engine-bench of a
  # build from before the benches became its modes.
  local before_runner=("$before/bulkhead-load" engine)
  [ -x "$before/bulkhead-load" ] || before_runner=("$before/bulkhead-engine-bench")
  local old=() new=() pairs=${ENGINE_BENCH_PAIRS:-3} out figure p50 load order node runner unit
  for ((i = 1; i <= pairs; i++)); do
    if ((i % 2)); then order="before this"; else order="this before"; fi
    for which in $order; do
      if [ "$which" = before ]; then
        node="$before/bulkhead" runner=("${before_runner[@]}")
      else
        node="$this" runner=("${bench[@]}")
      fi
      use_node "$node"
      fresh_database engine_bench
      echo "--- $label, pair $i, $which"
      out=$("${runner[@]}" "$kind" --database "$db" "$@")
      echo "$out"
      load=$(sed -n 's/.*load average (1, 5, 15 min) before \([0-9.]*\).*/\1/p' <<<"$out")
      if [ "$kind" = latency ]; then
        figure=$(sed -n 's/.* p99 \([0-9.]*\) ms.*/\1/p' <<<"$out")
        p50=$(sed -n 's/.*receiver: p50 \([0-9.]*\) ms.*/\1/p' <<<"$out")
        unit="ms p99 (p50 $p50 ms)"
      else
        figure=$(sed -n 's/.*s: \([0-9]*\) deliveries\/s.*/\1/p' <<<"$out")
        unit="deliveries/s"
      fi
      if [ "$which" = before ]; then old+=("$figure"); else new+=("$figure"); fi
      summary+=("$label  pair $i  $which  $figure $unit  load $load")
    done
  done
  use_node "$this"
  local mo mn ratio
  mo=$(median "${old[@]}")
  mn=$(median "${new[@]}")
  ratio=$(awk -v a="$mn" -v b="$mo" 'BEGIN { printf "%.3f", a / b }')
  summary+=("$label: before ${old[*]} -> median $mo; this ${new[*]} -> median $mn; this/before $ratio")
}

summary=()
for mode in $modes; do
  case "$mode" in
    throughput)
      "${bench[@]}" throughput --database "$db" \
        --jobs "${ENGINE_BENCH_JOBS:-100000}" --channels "${ENGINE_BENCH_CHANNELS:-20}" \
        --workers "${ENGINE_BENCH_WORKERS:-200}" --share "${ENGINE_BENCH_SHARE:-0.5}" ;;
    latency)
      "${bench[@]}" latency --database "$db" \
        --rate "${ENGINE_BENCH_RATE:-50}" --seconds "${ENGINE_BENCH_SECONDS:-20}" ;;
    latency-busy)
      "${bench[@]}" latency --database "$db" \
        --rate "${ENGINE_BENCH_RATE:-50}" --seconds "${ENGINE_BENCH_SECONDS:-20}" \
        --background "${ENGINE_BENCH_BACKGROUND:-300000}" ;;
    latency-busy-separate)
      "${bench[@]}" latency --database "$db" \
        --rate "${ENGINE_BENCH_RATE:-50}" --seconds "${ENGINE_BENCH_SECONDS:-20}" \
        --background "${ENGINE_BENCH_BACKGROUND:-300000}" --background-tier bulk ;;
    latency-slots)
      "${bench[@]}" latency --database "$db" \
        --rate "${ENGINE_BENCH_RATE:-50}" --seconds "${ENGINE_BENCH_SECONDS:-20}" \
        --background "${ENGINE_BENCH_BACKGROUND:-100000}" --background-delay-ms 100 ;;
    inflight)
      "${bench[@]}" latency --database "$db" \
        --rate "${ENGINE_BENCH_RATE:-50}" --seconds "${ENGINE_BENCH_SECONDS:-20}" \
        --workers 10000 --background 10000 --background-tenants 4 \
        --background-channels 1000 --background-delay-ms 40000 ;;
    caps-cost)
      side_by_side "caps-cost (20 channels, 20 tenants, 200 workers)" 50000 \
        --channels 20 --workers 200 ;;
    caps-lone)
      side_by_side "caps-lone (20 channels, 1 tenant, 200 workers)" 50000 \
        --channels 20 --tenants 1 --workers 200 ;;
    caps-bind)
      side_by_side "caps-bind (2 channels, 1 tenant, 200 workers)" 20000 \
        --channels 2 --tenants 1 --workers 200 ;;
    churn)
      "${bench[@]}" churn --database "$db" --rounds "${ENGINE_BENCH_ROUNDS:-10}" \
        --jobs "${ENGINE_BENCH_JOBS:-100000}" --channels "${ENGINE_BENCH_CHANNELS:-20}" \
        --workers "${ENGINE_BENCH_WORKERS:-200}" ;;
    metrics-cost)
      metrics_side_by_side 50000 --channels 20 --workers 200 ;;
    binary-swap)
      binary_swap throughput "binary-swap (20 channels, 20 tenants, 200 workers, share 0.5), \
${ENGINE_BENCH_JOBS:-50000} jobs" --jobs "${ENGINE_BENCH_JOBS:-50000}" --share 0.5 \
        --channels 20 --workers 200 ;;
    binary-swap-lone)
      binary_swap throughput "binary-swap-lone (20 channels, 1 tenant, 200 workers, share \
0.5), ${ENGINE_BENCH_JOBS:-50000} jobs" --jobs "${ENGINE_BENCH_JOBS:-50000}" --share 0.5 \
        --channels 20 --tenants 1 --workers 200 ;;
    binary-swap-idle)
      binary_swap latency "binary-swap-idle (50/s, nothing beside)" \
        --rate "${ENGINE_BENCH_RATE:-50}" --seconds "${ENGINE_BENCH_SECONDS:-20}" ;;
    binary-swap-slots)
      binary_swap latency "binary-swap-slots (50/s beside a burst of \
${ENGINE_BENCH_BACKGROUND:-100000} to a 100 ms endpoint)" --rate "${ENGINE_BENCH_RATE:-50}" \
        --seconds "${ENGINE_BENCH_SECONDS:-20}" --background "${ENGINE_BENCH_BACKGROUND:-100000}" \
        --background-delay-ms 100 ;;
    binary-swap-busy)
      binary_swap latency "binary-swap-busy (50/s beside a burst of \
${ENGINE_BENCH_BACKGROUND:-300000})" --rate "${ENGINE_BENCH_RATE:-50}" \
        --seconds "${ENGINE_BENCH_SECONDS:-20}" --background "${ENGINE_BENCH_BACKGROUND:-300000}" ;;
    rotation-cost)
      rotation_side_by_side 50000 --channels 20 --workers 200 ;;
    table)
      "${bench[@]}" table --database "$db" --jobs "${ENGINE_BENCH_JOBS:-60000}" \
        --finished "${ENGINE_BENCH_FINISHED:-10000000}" --parked "${ENGINE_BENCH_PARKED:-1000000}" ;;
    shape)
      "${bench[@]}" shape --database "$db" --jobs "${ENGINE_BENCH_JOBS:-60000}" ;;
    fleet)
      # With ENGINE_BENCH_BEFORE, every node count runs with that build's node and this one's
      # in turn (the order swapped at every other count), each on a fresh database, both
      # measured by this tree's bench; each build's rows are held against its own 1 node.
      builds=this
      if [ -n "${ENGINE_BENCH_BEFORE:-}" ]; then
        builds="before this"
        keep_this_node
      fi
      fleet_rows=()
      k=0
      for n in ${ENGINE_BENCH_NODES:-1 2 4 8}; do
        order=$builds
        if [ "$builds" != this ] && ((k++ % 2)); then order="this before"; fi
        for which in $order; do
          if [ "$builds" != this ]; then
            if [ "$which" = before ]; then node="$ENGINE_BENCH_BEFORE/bulkhead"; else node=$this; fi
            use_node "$node"
            fresh_database engine_bench
          fi
          echo "--- fleet: $n node(s), $which"
          out=$("${bench[@]}" throughput --database "$db" --jobs "${ENGINE_BENCH_JOBS:-60000}" \
                  --channels 20 --workers 200 --nodes "$n")
          echo "$out"
          fleet_rows+=("$which $n $(sed -n 's/.*s: \([0-9]*\) deliveries\/s.*/\1/p' <<<"$out") \
$(sed -n 's/.*PostgreSQL CPU per delivery while draining: \([0-9.]*\) ms.*/\1/p' <<<"$out") \
$(sed -n 's/.*, \([0-9]*\) to claim and record.*/\1/p' <<<"$out") \
$(sed -n 's/.*waiting for a lock: in \([0-9]* of [0-9]*\) samples.*/\1/p' <<<"$out" | tr ' ' _) \
$(sed -n 's/.*load average (1, 5, 15 min) before \([0-9.]*\).*/\1/p' <<<"$out") \
$(sed -n 's/^  claim: [0-9]* calls, \([0-9.]*\) rows a call, \([0-9.]*\) buffers a row.*, \([0-9.]*\) ms a call.*/\1_\2_\3/p' <<<"$out") \
$(sed -n 's/^  result write: [0-9]* calls, .*, \([0-9.]*\) ms a call.*/\1/p' <<<"$out")")
        done
      done
      [ "$builds" = this ] || use_node "$this"
      summary+=("fleet, durability on: build, nodes, deliveries/s (x 1 node), PostgreSQL CPU ms \
per delivery (x 1 node), claim + result WAL bytes per delivery, samples with a lock wait, load \
before, claim rows a call / buffers a row / ms a call, result write ms a call")
      for build in $builds; do
        base_rate='' base_cpu=''
        for row in "${fleet_rows[@]}"; do
          read -r which n rate cpu wal locks load claim result <<<"$row"
          [ "$which" = "$build" ] || continue
          [ -n "$base_rate" ] || { base_rate=$rate; base_cpu=$cpu; }
          summary+=("$(printf '%-6s %2s nodes  %6s/s (%s)  %s ms (%s)  %s B  %s  %s  %s  %s ms' \
            "$which" "$n" "$rate" \
            "$(awk -v a="$rate" -v b="$base_rate" 'BEGIN {printf "%.2f", a / b}')" "$cpu" \
            "$(awk -v a="$cpu" -v b="$base_cpu" 'BEGIN {printf "%.2f", a / b}')" "$wal" \
            "${locks//_/ }" "$load" "${claim//_/ \/ }" "$result")")
        done
      done ;;
    isolation)
      "${bench[@]}" isolation --database "$db" --workers 20 --shares 0.5,1
      echo
      "${bench[@]}" isolation --database "$db" --workers 40 --shares 0.5,0.25,1 ;;
  esac
  echo
done
if [ ${#summary[@]} -gt 0 ]; then
  echo "summary:"
  printf '  %s\n' "${summary[@]}"
fi
