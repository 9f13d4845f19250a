#!/usr/bin/env bash
# enqueue_bench.sh — how fast applications can enqueue, side by side in one run.
#
#   load/enqueue_bench.sh        # ENQUEUE_BENCH_SECONDS (10) per case, ENQUEUE_BENCH_CLIENTS (10)
#   load/enqueue_bench.sh commit # the application's commit path, durability on (issue 30)
#
# `commit` measures what an enqueue costs the application's own commits, with fsync and
# synchronous_commit on (.run/bench-pg-durable): transactions/s at 1, 4, 16 and 32 clients
# (ENQUEUE_BENCH_CLIENT_LIST) of one delivery each, over 100 channels, for
#   plain        an INSERT of a similar row (three columns: id, a key, the payload) into a
#                plain table: what the application's own writes cost
#   enqueue      SELECT bulkhead.enqueue(channel, payload), no runner asleep: a busy fleet's
#                case, where no enqueue notifies (migration 0010, ADR 0019); since migration
#                0027 the wake-up gate is closed and no trigger runs (ADR 0030)
#   asleep       the same with a runner of the queue marked asleep when the run starts (and,
#                since 0027, the gate opened as a runner opens it). Before migration 0014 every
#                commit notified while the mark was there (the whole run); since 0014 the first
#                commit takes the mark as it notifies, and the rest send nothing (ADR 0022);
#                since 0027 that commit closes the gate and the rest run no trigger
#   no_notify    the same with the wake-up flag set for the session (bulkhead.woken.default
#                on): the trigger returns at once
#   draining     enqueue while one `bulkhead run` node (shipped tiers) delivers to bulkhead-mock
#                (/hook/fast) on the same machine: the production shape. Its runner marks itself
#                asleep whenever it drains the queue; the share of 100 ms samples that found a
#                mark is printed (before 0014: the share of the time every enqueue notified;
#                since: a mark there is taken by the next commit). The node's CPU is
#                taken from the same two cores as pgbench's and PostgreSQL's.
# each against a freshly migrated database, side by side in one run, with the load average.
# ENQUEUE_BENCH_BEFORE=DIR (a folder holding an older build's bulkhead and bulkhead-mock) runs
# every case with that build too, right before this one's, each migrating its own schema: a
# change to the wake-up measured side by side (the table gets a row per build).
#
# Three cases, each against a freshly migrated database on an embedded PostgreSQL (.run/bench-pg),
# with pgbench as the application, one delivery per transaction unless noted:
#   insert       a plain INSERT into bulkhead.jobs: the floor, no validation, no routing
#   enqueue      SELECT bulkhead.enqueue(channel, payload)
#   enqueue_many SELECT bulkhead.enqueue_many(…) with 100 deliveries per call and transaction
# Prints deliveries per second for each and the ratio to the plain INSERT. Compare ratios, not
# absolute figures: these are small, noisy machines.
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

mode=${1:-calls}
case "$mode" in
  calls|commit) ;;
  *) echo "usage: $0 [commit]" >&2; exit 2 ;;
esac
seconds=$(knob ENQUEUE_BENCH_SECONDS 10 count)
clients=$(knob ENQUEUE_BENCH_CLIENTS 10 count)
check_knobs counts ENQUEUE_BENCH_CLIENT_LIST
durable=0
[ "$mode" = commit ] && durable=1
run=$(pg_durable_dir .run/bench-pg "$durable")

load_setup
pg_start "$run" "$durable"

scripts=$(mktemp -d)
cat >"$scripts/insert.sql" <<'SQL'
INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload)
VALUES ('default', 1, 1, '{"type": "message.created", "conversation": 7, "text": "hello"}');
SQL
cat >"$scripts/enqueue.sql" <<'SQL'
SELECT bulkhead.enqueue(1, '{"type": "message.created", "conversation": 7, "text": "hello"}');
SQL
cat >"$scripts/enqueue_many.sql" <<'SQL'
SELECT bulkhead.enqueue_many(array_fill(1::bigint, ARRAY[100]),
  array_fill('{"type": "message.created", "conversation": 7, "text": "hello"}'::jsonb, ARRAY[100]));
SQL

if [ "$mode" = commit ]; then
  cat >"$scripts/plain.sql" <<'SQL'
\set k random(1, 100)
INSERT INTO app_events (k, payload)
VALUES (:k, '{"type": "message.created", "conversation": 7, "text": "hello"}');
SQL
  cat >"$scripts/enqueue100.sql" <<'SQL'
\set ch random(1, 100)
SELECT bulkhead.enqueue(:ch, '{"type": "message.created", "conversation": 7, "text": "hello"}');
SQL
  # The draining case's node and receiver (build/bin/bulkhead, bulkhead-mock), one at a time.
  mock_pid= node_pid=
  bin=build/bin  # the build under test: this one, or ENQUEUE_BENCH_BEFORE's
  start_draining_node() {
    local db=$1 work=.run/enqueue-bench
    mkdir -p "$work"
    rm -f "$work/mock.port"
    "$bin/bulkhead-mock" --listen 127.0.0.1:0 --port-file "$work/mock.port" >"$work/mock.log" 2>&1 &
    mock_pid=$!
    for _ in $(seq 100); do [ -s "$work/mock.port" ] && break; sleep 0.1; done
    psql "$db" -c "UPDATE bulkhead.channels SET url = 'http://127.0.0.1:$(cat "$work/mock.port")/hook/fast'"
    local sock=${db#host=}
    sock=${sock%% *}
    cat >"$work/node.json" <<JSON
{"node": "enqueue-bench", "database": "postgresql://bulkhead@/bench?host=$sock",
 "tiers_dir": "$PWD/tiers", "tiers": ["default"], "allowed_networks": ["127.0.0.0/8"]}
JSON
    "$bin/bulkhead" run --config "$work/node.json" >"$work/node.log" 2>&1 &
    node_pid=$!
    for _ in $(seq 100); do
      [ "$(psql "$db" -At -c "SELECT count(*) FROM bulkhead.sleepers")" -gt 0 ] && break
      sleep 0.1
    done
  }
  stop_draining_node() {
    kill -TERM "$node_pid" && wait "$node_pid" || true
    kill "$mock_pid" && wait "$mock_pid" 2>/dev/null || true
  }
  declare -A tps
  list=${ENQUEUE_BENCH_CLIENT_LIST:-1 4 16 32}
  list=${list//,/ }
  builds=this
  before=${ENQUEUE_BENCH_BEFORE:-}
  if [ -n "$before" ]; then
    [ -x "$before/bulkhead" ] && [ -x "$before/bulkhead-mock" ] ||
      { echo "ENQUEUE_BENCH_BEFORE=$before: no bulkhead and bulkhead-mock there" >&2; exit 2; }
    builds="before this"
  fi
  echo "load/enqueue_bench.sh commit: durability on ($(psql "$conn" -At -c "SHOW fsync"),"\
    "synchronous_commit $(psql "$conn" -At -c "SHOW synchronous_commit")), ${seconds} s a case;"\
    "load before: $(load_average all)"
  for n in $list; do
   for build in $builds; do
    bin=build/bin
    [ "$build" = before ] && bin=$before
    for case in plain enqueue asleep no_notify draining; do
      fresh_database bench
      db=$(db_conn bench)
      "$bin/bulkhead" migrate up --database "$db" >/dev/null
      psql "$db" -c "CREATE TABLE app_events (id bigserial PRIMARY KEY, k int NOT NULL,
                       payload jsonb NOT NULL)" \
                 -c "INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, 100) g" \
                 -c "INSERT INTO bulkhead.channels (tenant_id, url)
                       SELECT id, 'http://127.0.0.1:9/' FROM bulkhead.tenants ORDER BY id" \
                 -c "CHECKPOINT"
      if [ "$case" = asleep ]; then
        psql "$db" -c "INSERT INTO bulkhead.sleepers (queue, node) VALUES ('default', 'bench')"
        # A runner opens the wake-up gate once its mark has committed (migration 0027); an
        # earlier build's schema has no gate.
        gate=$(psql "$db" -At -c "SELECT to_regprocedure('bulkhead.open_wake_gate()') IS NOT NULL")
        [ "$gate" = t ] && psql "$db" -c "SELECT bulkhead.open_wake_gate()" >/dev/null
      fi
      script=enqueue100.sql options=
      [ "$case" = plain ] && script=plain.sql
      [ "$case" = no_notify ] && options="-c bulkhead.woken.default=on"
      if [ "$case" = draining ]; then
        start_draining_node "$db"
        marks_file=$(mktemp)
        (end=$((SECONDS + seconds)); while [ $SECONDS -lt $end ]; do
           psql "$db" -At -c "SELECT count(*) > 0 FROM bulkhead.sleepers"; sleep 0.1; done
        ) >"$marks_file" &
        sampler=$!
      fi
      key=$case.$n.$build
      tps[$key]=$(PGOPTIONS="$options" "$pg_bindir/pgbench" -n -c "$n" -j "$((n < 2 ? 1 : 2))" \
                        -T "$seconds" -f "$scripts/$script" "$db" | awk '/^tps = / {printf "%.0f", $3}')
      note=
      if [ "$case" = draining ]; then
        wait "$sampler"
        note=" (a mark in $(grep -c t "$marks_file") of $(wc -l <"$marks_file") samples;"
        note+=" $(psql "$db" -At -c "SELECT count(*) FROM bulkhead.jobs WHERE state = 'completed'")"
        note+=" delivered)"
        rm -f "$marks_file"
        stop_draining_node
      fi
      echo "$n clients, $build, $case: ${tps[$key]} transactions/s$note"
    done
   done
  done
  rm -rf "$scripts"
  echo "load after: $(load_average all)"
  echo
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
  printf '%-8s %-7s %7s %8s %7s %10s %9s %14s %13s %16s %15s\n' clients build plain enqueue \
    asleep no_notify draining enqueue/plain asleep/plain no_notify/plain draining/plain
  for n in $list; do
    for build in $builds; do
      k=$n.$build
      printf '%-8s %-7s %7s %8s %7s %10s %9s %14s %13s %16s %15s\n' "$n" "$build" \
        "${tps[plain.$k]}" "${tps[enqueue.$k]}" "${tps[asleep.$k]}" "${tps[no_notify.$k]}" \
        "${tps[draining.$k]}" \
        "$(ratio "${tps[enqueue.$k]}" "${tps[plain.$k]}")" \
        "$(ratio "${tps[asleep.$k]}" "${tps[plain.$k]}")" \
        "$(ratio "${tps[no_notify.$k]}" "${tps[plain.$k]}")" \
        "$(ratio "${tps[draining.$k]}" "${tps[plain.$k]}")"
    done
  done
  exit 0
fi

declare -A rate
for case in insert enqueue enqueue_many; do
  fresh_database bench
  db=$(db_conn bench)
  build/bin/bulkhead migrate up --database "$db" >/dev/null
  psql "$db" -c "INSERT INTO bulkhead.tenants (name) VALUES ('bench')" \
             -c "INSERT INTO bulkhead.channels (tenant_id, url) VALUES (1, 'http://127.0.0.1:9/')"
  tps=$("$pg_bindir/pgbench" -n -c "$clients" -j 2 -T "$seconds" -f "$scripts/$case.sql" "$db" \
        | awk '/^tps = / {print $3}')
  rows=$(psql "$db" -At -c "SELECT count(*) FROM bulkhead.jobs")
  rate[$case]=$(awk -v r="$rows" -v s="$seconds" 'BEGIN {printf "%.0f", r / s}')
  echo "$case: ${rate[$case]} deliveries/s ($rows rows, $tps transactions/s, $clients clients)"
done
rm -rf "$scripts"
echo
printf '%-13s %12s %10s\n' case deliveries/s vs_insert
for case in insert enqueue enqueue_many; do
  printf '%-13s %12s %10s\n' "$case" "${rate[$case]}" \
    "$(awk -v a="${rate[$case]}" -v b="${rate[insert]}" 'BEGIN {printf "%.2f", a / b}')"
done
