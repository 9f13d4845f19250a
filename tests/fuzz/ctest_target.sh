#!/usr/bin/env bash
# tests/fuzz/ctest_target.sh — how ctest runs one fuzz target (tests/fuzz/CMakeLists.txt).
#
#   tests/fuzz/ctest_target.sh BINARY ARTIFACT_DIR -- LIBFUZZER_ARGS…
#
# Runs BINARY with -artifact_prefix=ARTIFACT_DIR/ (so a finding's input lands there, not in
# whatever folder ctest runs in) and LIBFUZZER_ARGS, its whole output kept in
# ARTIFACT_DIR/last-run.log. On success it prints libFuzzer's final stats (the stat:: lines
# tests/run.sh adds up). On failure it prints tests/fuzz/report.sh's account — the target, the
# kind of finding, the ERROR/SUMMARY lines, the input as a path and as base64, the replay
# command — so that CI's output alone is enough to reproduce it. Exits with the target's code.
set -uo pipefail

binary=$1 dir=$2
shift 2
[ "${1:-}" = "--" ] && shift
target=$(basename "$binary")
mkdir -p "$dir"
log=$dir/last-run.log
marker=$dir/.run-started
touch "$marker"

"$binary" -artifact_prefix="$dir/" "$@" >"$log" 2>&1
rc=$?

grep '^stat::' "$log"
if [ "$rc" -eq 0 ]; then
  echo "$target: no finding ($(grep -c '' "$log") lines of libFuzzer output in $log)"
else
  echo "$target: exit $rc"
  "$(dirname "$0")/report.sh" "$target" "$binary" "$marker" "$dir" "$log"
fi
exit "$rc"
