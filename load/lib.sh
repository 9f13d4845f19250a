# shellcheck shell=bash
# lib.sh — sourced first by every script in load/, so that each does these things one way:
#
#   source "$(dirname "$0")/lib.sh"   # set -euo pipefail, cd to the repository; messages are
#                                     # "$load_script: …" (the script's file name unless set)
#
#   knob NAME DEFAULT KIND           the environment knob NAME's value, or DEFAULT when unset
#                                    or empty, checked against KIND (below); a bad value is a
#                                    usage error: "SCRIPT: NAME must be …, not 'x'", exit 2
#   check_knobs KIND NAME…           the same check of each NAME that is set, for knobs whose
#                                    default depends on the mode (read with ${NAME:-default})
#   usage_error MESSAGE              "SCRIPT: MESSAGE" on stderr, exit 2
#   load_setup [LOG]                 ./setup.sh (installs what is missing, builds): quiet, or
#                                    into LOG with its tail shown on failure (given an hour)
#   pg_start DIR [DURABLE]           load/embedded_postgres.sh start DIR, with durability on
#                                    (fsync, synchronous_commit, full_page_writes) when DURABLE
#                                    is 1, else as BULKHEAD_PG_DURABLE says (off when unset);
#                                    sets $conn (its connection string) and stops the cluster
#                                    when the script exits
#   pg_durable_dir DIR DURABLE       DIR, or DIR-durable when DURABLE is 1: a cluster keeps the
#                                    settings it was started with, so each has a folder of its own
#   fresh_database NAME              DROP and CREATE DATABASE NAME in $conn's cluster
#   db_conn NAME                     the connection string of database NAME in that cluster
#   psql ARGS…                       the cluster's psql, -X -q, stopping at the first error
#   load_average [all]               the 1-minute load average (all: 1, 5 and 15 minutes)
#   free_port                        a loopback TCP port for a server the script starts (a
#                                    node's status page, the console): below the kernel's
#                                    ephemeral range, so no outgoing connection holds it, and
#                                    with nothing listening on it when asked
#   stop_pid PID NAME                SIGTERM to PID and wait for it; SIGKILL (and a line naming
#                                    NAME) if it has not stopped within 15 s
#   on_exit COMMAND                  run COMMAND (a shell string) when the script exits, after
#                                    the ones given before it
#   loop_sql STATEMENT N CHANNELS [COMMIT]
#                                    a DO block that runs the plpgsql STATEMENT N times, with
#                                    `i` the round and `ch` a channel (1 + i % CHANNELS), and
#                                    ends with the NOTICE 'loop_us µs' a round took; COMMIT 1
#                                    commits after each (synchronous_commit off for the session
#                                    first; the block must not then be inside a transaction)
#
# KIND: count (an integer of 1 or more), count0 (0 or more), share (a number in (0, 1]),
# flag (0 or 1), counts (a list of counts, space- or comma-separated), dir (an existing folder),
# any (not checked).
set -euo pipefail
load_script=${load_script:-$(basename "$0")}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pg_bindir=${BULKHEAD_PG_BINDIR:-$(pg_config --bindir)}

usage_error() {
  echo "$load_script: $*" >&2
  exit 2
}

# knob_ok KIND VALUE: whether VALUE is a KIND; sets $knob_wants to what a KIND is.
knob_ok() {
  case $1 in
    count) knob_wants="a whole number of 1 or more"; [[ $2 =~ ^[1-9][0-9]*$ ]] ;;
    count0) knob_wants="a whole number of 0 or more"; [[ $2 =~ ^[0-9]+$ ]] ;;
    share) knob_wants="a number in (0, 1]"
           [[ $2 =~ ^(0?\.[0-9]*[1-9][0-9]*|1(\.0*)?)$ ]] ;;
    flag) knob_wants="0 or 1"; [[ $2 =~ ^[01]$ ]] ;;
    counts) knob_wants="whole numbers of 1 or more, space- or comma-separated"
            [[ $2 =~ ^[1-9][0-9]*([ ,]+[1-9][0-9]*)*$ ]] ;;
    dir) knob_wants="an existing folder"; [ -d "$2" ] ;;
    any) knob_wants="anything"; true ;;
    *) echo "$load_script: knob kind '$1' unknown (load/lib.sh)" >&2; exit 2 ;;
  esac
}

knob() {
  local name=$1 default=$2 kind=$3 value
  value=${!name:-$default}
  knob_ok "$kind" "$value" || usage_error "$name must be $knob_wants, not '$value'"
  echo "$value"
}

check_knobs() {
  local kind=$1 name
  shift
  for name in "$@"; do
    [ -z "${!name:-}" ] || knob_ok "$kind" "${!name}" ||
      usage_error "$name must be $knob_wants, not '${!name}'"
  done
}

load_setup() {
  if [ $# -eq 0 ]; then
    ./setup.sh >/dev/null
  elif ! timeout --kill-after=10 3600 ./setup.sh >"$1" 2>&1; then
    tail -n 30 "$1" >&2
    echo "$load_script: ./setup.sh failed; see $1" >&2
    exit 1
  fi
}

load_exit_actions=()
load_on_exit() {
  local action
  for action in "${load_exit_actions[@]}"; do eval "$action" || true; done
}
on_exit() {
  load_exit_actions+=("$1")
  trap load_on_exit EXIT
}

pg_durable_dir() {
  if [ "$2" = 1 ]; then echo "$1-durable"; else echo "$1"; fi
}

pg_start() {
  local dir=$1 durable=${2:-}
  [ "$durable" = 1 ] || durable=${BULKHEAD_PG_DURABLE:-0}
  conn=$(BULKHEAD_PG_DURABLE=$durable load/embedded_postgres.sh start "$dir")
  on_exit "load/embedded_postgres.sh stop '$dir'"
}

psql() { "$pg_bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

db_conn() { echo "${conn/dbname=postgres/dbname=$1}"; }

# jobs_table DB: the table that holds DB's jobs, for what cannot go through the view
# bulkhead.jobs (TRUNCATE, VACUUM, ALTER TABLE, its ranges): bulkhead.job_rows since migration
# 0028, bulkhead.jobs on a database migrated down before it.
jobs_table() {
  psql "$1" -At -c "SELECT coalesce(to_regclass('bulkhead.job_rows'), 'bulkhead.jobs')"
}

# migrate_down_to DB VERSION: reverses DB's migrations newer than VERSION, if any.
migrate_down_to() {
  local at
  at=$(psql "$1" -At -c "SELECT coalesce(max(version), 0) FROM bulkhead.migrations")
  ((at <= $2)) || build/bin/bulkhead migrate down $((at - $2)) --database "$1" >/dev/null
}

fresh_database() {
  psql "$conn" -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $1" \
    -c "CREATE DATABASE $1"
}

# median, quartiles: of the numbers on stdin, one a line: the median; the first and third
# quartiles as "q1–q3" (claim_bench.sh, claim_sizes.sh, prune_cost.sh).
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# median_of "X Y Z…": the same of numbers separated by spaces.
median_of() { tr ' ' '\n' <<<"$1" | grep . | median; }
quartiles() { sort -n | awk '{ v[NR] = $1 } END { printf "%s–%s", v[int(NR / 4) + 1], v[int(3 * NR / 4)] }'; }

load_average() {
  if [ "${1:-}" = all ]; then cut -d' ' -f1-3 /proc/loadavg; else cut -d' ' -f1 /proc/loadavg; fi
}

# Ports from 32768 up are the kernel's to hand to outgoing connections (ip_local_port_range);
# a random pick there once met a live one, and the node ran without a status page.
free_port() {
  local low=20000 high port try
  high=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  ((high > low + 1000)) || low=$((high / 2))
  for ((try = 0; try < 50; try++)); do
    port=$((low + RANDOM % (high - low)))
    # A connection that opens means a listener holds the port.
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "$load_script: no free loopback port in $low-$((high - 1)) after 50 tries" >&2
  return 1
}

stop_pid() {
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$load_script: $2 did not stop within 15 s; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

loop_sql() {
  local statement=$1 n=$2 channels=$3 commit=${4:-0} each=""
  if ((commit)); then
    echo "SET synchronous_commit = off;"
    each="COMMIT;"
  fi
  cat <<SQL
DO \$\$
DECLARE
  started timestamptz := clock_timestamp();
  ch integer;
BEGIN
  FOR i IN 1..$n LOOP
    ch := 1 + i % $channels;
    $statement;
    $each
  END LOOP;
  RAISE NOTICE 'loop_us %', round(extract(epoch FROM clock_timestamp() - started) * 1e6 / $n, 1);
END
\$\$;
SQL
}
