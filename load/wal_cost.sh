# shellcheck shell=bash
# wal_cost.sh — sourced after lib.sh by the benchmarks of a delivery's WAL (wal_life.sh,
# wal_layouts.sh), so that both measure a phase the same way.
#
#   payload_100                  a JSON object whose text is exactly 100 bytes (goal 3's payload)
#   server_cpu POSTMASTER        seconds of CPU the postmaster POSTMASTER (a pid) and every
#                                process under it have used, the exited ones included (the
#                                postmaster's cutime and cstime)
#   wal_stats DATA_DIR START END pg_waldump --stats=record between two LSNs of the cluster in
#                                DATA_DIR, its percentages dropped: "Type N Record FPI Combined"
#                                a line, the last "Total …"; nothing when no WAL lies between
payload_100() {
  local payload='{"type": "message.created", "conversation": 7, "text": "'
  payload+=$(printf 'x%.0s' $(seq $((100 - ${#payload} - 2))))'"}'
  echo "$payload"
}

server_cpu() {
  local ticks
  # cat, not awk on the files: a process that exits between the glob and the read is skipped.
  ticks=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v pm="$1" '
      {
        pid = $1
        sub(/^.*\) /, "")          # the fields after the command name: state is $1, ppid $2
        if (pid == pm) t += $12 + $13 + $14 + $15
        else if ($2 == pm) t += $12 + $13
      }
      END { print t + 0 }')
  awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.3f", t / hz}'
}

wal_stats() {
  "${pg_bindir:?source load/lib.sh first}/pg_waldump" --path="$1/pg_wal" --start="$2" --end="$3" --stats=record \
    2>/dev/null | sed -e 's/([^)]*)//g' -e 's/\[[^]]*\]//g' || true
}
