#!/usr/bin/env bash
# wake_gate_cost.sh — what the wake-up trigger costs an enqueue, with and without the gate of
# migration 0027 (issue 30, goal 1; ADR 0030).
#
#   load/wake_gate_cost.sh
#
# One freshly migrated database on the durable embedded PostgreSQL (.run/bench-pg-durable),
# 100 tenants with a channel each, one enqueue a transaction on a channel drawn in turn. Four
# states of the one database, set in turn within each of WAKE_GATE_ROUNDS (10) rounds:
#   before      migration 0027 reversed (migrated down to 0026): the trigger runs at every commit
#   closed      0027 in, the gate closed (no runner asleep: a busy fleet)
#   open-other  0027 in, the gate held open by another queue's runner asleep (a quiet tier
#               beside a busy one): the trigger runs at every commit and finds no mark of its
#               queue
#   no-trigger  0027 in, the trigger disabled: the floor
# For each state and round:
#   - the backend's own CPU µs a transaction (utime + stime of /proc/<pid>/stat around a DO
#     block of WAKE_GATE_LOOP (3000) committed enqueues, synchronous_commit off): wall time
#     moves by a quarter between runs on a 2-core VM, the backend's CPU much less;
#   - with WAKE_GATE_SECONDS (8) > 0, transactions/s of 16 and 32 pgbench clients,
#     durability on, after a CHECKPOINT.
# Prints each round's figures and the medians. Run it as root on the machine that runs the
# cluster (it reads the backend's /proc entry).
# shellcheck source=load/lib.sh
source "$(dirname "$0")/lib.sh"

rounds=$(knob WAKE_GATE_ROUNDS 10 count)
loop=$(knob WAKE_GATE_LOOP 3000 count)
seconds=$(knob WAKE_GATE_SECONDS 8 count0)

load_setup
pg_start .run/bench-pg-durable 1
fresh_database wake_gate_cost
db=$(db_conn wake_gate_cost)
build/bin/bulkhead migrate up --database "$db" >/dev/null
psql "$db" <<'SQL'
INSERT INTO bulkhead.tenants (name) SELECT 't' || g FROM generate_series(1, 100) g;
INSERT INTO bulkhead.channels (tenant_id, url)
  SELECT id, 'http://127.0.0.1:9/' FROM bulkhead.tenants ORDER BY id;
ANALYZE bulkhead.tenants, bulkhead.channels;
SQL
payload='{"type": "message.created", "conversation": 7, "text": "hello"}'
script=$(mktemp)
on_exit "rm -f '$script'"
printf '%s\n' '\set ch random(1, 100)' "SELECT bulkhead.enqueue(:ch, '$payload');" >"$script"

# set_state STATE: the schema, the marks and the trigger as STATE says.
set_state() {
  local version
  version=$(psql "$db" -At -c "SELECT to_regprocedure('bulkhead.fell_asleep()') IS NOT NULL")
  if [ "$1" = before ] && [ "$version" = t ]; then
    migrate_down_to "$db" 26
  elif [ "$1" != before ] && [ "$version" = f ]; then
    build/bin/bulkhead migrate up --database "$db" >/dev/null
  fi
  jobs=$(jobs_table "$db")
  psql "$db" -c "DELETE FROM bulkhead.sleepers" -c "TRUNCATE $jobs"
  case "$1" in
    closed) psql "$db" -c "SELECT bulkhead.enqueue(1, '{}')" >/dev/null ;;  # the commit closes it
    open-other)
      psql "$db" -c "INSERT INTO bulkhead.sleepers (queue, node) VALUES ('other', 'bench')" \
        -c "SELECT bulkhead.fell_asleep()" >/dev/null ;;
    no-trigger) psql "$db" -c "ALTER TABLE $jobs DISABLE TRIGGER jobs_wake_sleepers" ;;
  esac
  psql "$db" -c "TRUNCATE $jobs" -c CHECKPOINT
}

# cpu_us: the backend's CPU µs a transaction over the loop.
cpu_us() {
  local pid before after
  coproc SESSION { "$pg_bindir/psql" -X -q -At "$db" 2>&1; }
  echo "SELECT pg_backend_pid();" >&"${SESSION[1]}"
  read -r pid <&"${SESSION[0]}"
  before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  cat >&"${SESSION[1]}" <<SQL
SET synchronous_commit = off;
DO \$\$ BEGIN FOR i IN 1..$loop LOOP
  PERFORM bulkhead.enqueue(1 + i % 100, '$payload'); COMMIT; END LOOP; END \$\$;
SELECT 'done';
SQL
  read -r _ <&"${SESSION[0]}"
  after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  echo '\q' >&"${SESSION[1]}"
  wait "${SESSION_PID:-}" 2>/dev/null || true
  awk -v a="$before" -v b="$after" -v n="$loop" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }'
}

tps() {
  "$pg_bindir/pgbench" -n -c "$1" -j 2 -T "$seconds" -f "$script" "$db" |
    awk '/^tps = / {printf "%.0f", $3}'
}

echo "load/wake_gate_cost.sh: $rounds rounds, $loop transactions a loop, ${seconds} s of" \
  "pgbench a case; load before: $(load_average)"
states=(before closed open-other no-trigger)
declare -A cpu t16 t32
for ((r = 1; r <= rounds; r++)); do
  for state in "${states[@]}"; do
    set_state "$state"
    figures="$(cpu_us) µs CPU a transaction"
    cpu[$state]+="${figures%% *} "
    if ((seconds > 0)); then
      a=$(tps 16)
      b=$(tps 32)
      t16[$state]+="$a "
      t32[$state]+="$b "
      figures+=", $a and $b transactions/s at 16 and 32 clients"
    fi
    echo "round $r, $state: $figures"
    [ "$state" = no-trigger ] &&
      psql "$db" -c "ALTER TABLE $(jobs_table "$db") ENABLE TRIGGER jobs_wake_sleepers"
  done
done
echo "load after: $(load_average)"
echo
printf '%-11s %12s %8s %8s\n' state "CPU µs/txn" "tps 16" "tps 32"
for state in "${states[@]}"; do
  printf '%-11s %12s %8s %8s\n' "$state" "$(median_of "${cpu[$state]}")" \
    "$( ((seconds > 0)) && median_of "${t16[$state]}" || echo -)" \
    "$( ((seconds > 0)) && median_of "${t32[$state]}" || echo -)"
done
