#!/usr/bin/env bash
# tests/fuzz/report.sh — what a failed fuzz target found, readable from CI's output alone.
#
#   tests/fuzz/report.sh TARGET BINARY MARKER ARTIFACT_DIR LOG…
#
# Prints, for the inputs libFuzzer left in ARTIFACT_DIR since MARKER (a file touched before the
# run) — crash-*, timeout-*, oom-*, leak-* — the target's name, the kind of finding, the
# reason as libFuzzer and the sanitizers gave it (every "ERROR:" and "SUMMARY:" line of the
# LOGs), the input as a kept file and as base64 (`base64 -w0`, so it can be pasted back into a
# file on another machine: `echo '<base64>' | base64 -d > crash`) and the command that replays
# it. Then the last lines of each LOG. Used by tests/fuzz/ctest_target.sh (ctest) and
# tests/fuzz/run.sh; always exits 0.
set -uo pipefail

target=$1 binary=$2 marker=$3 dir=$4
shift 4
logs=("$@")

echo "==== fuzz target $target FAILED"
found=0
while IFS= read -r -d '' input; do
  found=1
  name=$(basename "$input")
  case "$name" in
    crash-*)   kind="crash (a sanitizer report, a deadly signal, or the target's contract check aborted)" ;;
    timeout-*) kind="timeout (one input ran past -timeout)" ;;
    oom-*)     kind="out of memory (one malloc past -malloc_limit_mb, this input's fault; or the process past -rss_limit_mb, where the input is only the one that was running)" ;;
    leak-*)    kind="leak (LeakSanitizer)" ;;
    *)         kind="unknown" ;;
  esac
  echo "kind:   $kind"
  echo "input:  $input ($(wc -c <"$input") bytes)"
  if [ -s "$input" ]; then echo "base64: $(base64 -w0 "$input")"; else echo "base64: (empty input)"; fi
  echo "replay: $binary $input"
done < <(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \
           -o -name 'leak-*' \) -newer "$marker" -print0 2>/dev/null)
[ "$found" = 1 ] || echo "input:  none written to $dir (the target failed before or outside an input)"

echo "reason:"
for log in "${logs[@]}"; do
  [ -f "$log" ] || continue
  grep -E '(ERROR: |runtime error: |^SUMMARY: |: contract broken: |terminate called)' \
    "$log" | head -n 20 | sed 's/^/  /'
done
for log in "${logs[@]}"; do
  [ -f "$log" ] || continue
  echo "---- last 40 lines of $log"
  tail -n 40 "$log"
done
echo "==== end of fuzz target $target"
exit 0
